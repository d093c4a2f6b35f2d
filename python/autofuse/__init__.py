"""Autofuse: an automatic operator-fusion compiler for PyTorch on x86-64 CPUs.

Use it from PyTorch with ``torch.compile(model, backend="autofuse")``, or build / parse IR graphs here and run them.
The C++ core is the extension module ``autofuse._core``; this package re-exports its public names.
"""

from autofuse._core import DType, op_names  # noqa: F401

__all__ = ["DType", "op_names"]

# The torch.compile backend (registers "autofuse" with Dynamo) and explain(); owned by "torch".
from autofuse import backend as _backend  # noqa: E402,F401
from autofuse.explain import explain  # noqa: E402,F401

__all__ += ["explain"]
