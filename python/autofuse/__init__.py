"""Autofuse: an automatic operator-fusion compiler for PyTorch on x86-64 CPUs.

Use it from PyTorch with ``torch.compile(model, backend="autofuse")``, or build / parse IR graphs here and run them
(see autofuse.ir). The C++ core is the extension module ``autofuse._core``; this package re-exports its public names.
"""

from autofuse.ir import (DType, Graph, IRError, Node, ParseError, VerifyError, interpret, numpy_dtype, op_names,
                         op_schema, parse, parse_expr, torch_dtype, verify)

__all__ = ["DType", "Graph", "Node", "IRError", "ParseError", "VerifyError", "parse", "parse_expr", "verify", "interpret",
           "op_names", "op_schema", "torch_dtype", "numpy_dtype"]

# The runtime: kernel cache counters, the launcher's thread count, the machine model; owned by "runtime".
from autofuse._core import (  # noqa: E402,F401
    CompileError,
    cache_stats,
    get_num_threads,
    machine_info,
    reset_cache_stats,
    set_num_threads,
)

__all__ += ["CompileError", "cache_stats", "reset_cache_stats", "set_num_threads", "get_num_threads", "machine_info"]

# Every AUTOFUSE_* variable of fixed form is checked once at import: a bad value warns now (env.py).
from autofuse import env as _env  # noqa: E402

_env.check_environment()

# The torch.compile backend (registers "autofuse" with Dynamo) and explain(); owned by "torch".
from autofuse import backend as _backend  # noqa: E402,F401
from autofuse.explain import explain  # noqa: E402,F401

__all__ += ["explain"]

# Warm starts that skip Dynamo's tracing (caching precompile with Autofuse's own store); owned by "warm4".
from autofuse.warm_start import enable_warm_start  # noqa: E402,F401
from autofuse import warm_start as _warm_start  # noqa: E402

_warm_start.maybe_enable_from_env()
__all__ += ["enable_warm_start"]
