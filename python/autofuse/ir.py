"""The Autofuse IR from Python: build, parse, print, verify, and run graphs on the reference interpreter.

    g = autofuse.Graph("f")
    x = g.add_input("x", "f32", ["s0", 8])          # sizes: ints or expression strings ("s0", "s0*2")
    y = g.add("exp", [x])
    s = g.add("sum", [y], {"axes": [1], "keepdim": True})
    g.set_outputs([s])
    print(g)                                         # IR text; autofuse.parse(str(g)) reads it back
    out, = autofuse.interpret(g, [torch.randn(3, 8)])

Tensors are torch tensors or numpy arrays on the CPU, of any strides; they are read in place, never copied.
"""

from __future__ import annotations

from typing import Any, Sequence

from autofuse import _core
from autofuse._core import (DType, Graph, IRError, Node, ParseError, VerifyError, op_names, op_schema, parse,
                            parse_expr, verify)

__all__ = ["DType", "Graph", "Node", "IRError", "ParseError", "VerifyError", "parse", "parse_expr", "verify",
           "op_names", "op_schema", "interpret", "torch_dtype", "numpy_dtype"]


def torch_dtype(dtype: Any):
    """The torch dtype of an IR dtype (a DType, or a name such as "f32" / "bfloat16")."""
    import torch

    return getattr(torch, _dtype(dtype).name)


def numpy_dtype(dtype: Any):
    """The numpy dtype of an IR dtype; raises ValueError for bfloat16, which numpy lacks."""
    import numpy as np

    d = _dtype(dtype)
    if d == DType.bfloat16:
        raise ValueError("numpy has no bfloat16: pass torch tensors for bfloat16 graphs")
    return np.dtype(d.name)


def _dtype(dtype: Any) -> DType:
    if isinstance(dtype, DType):
        return dtype
    return getattr(DType, {"bool": "bool", "u8": "uint8", "i8": "int8", "i16": "int16", "i32": "int32",
                           "i64": "int64", "f16": "float16", "bf16": "bfloat16", "f32": "float32",
                           "f64": "float64"}.get(str(dtype), str(dtype).removeprefix("torch.")))


def _is_numpy(x: Any) -> bool:
    return type(x).__module__ == "numpy"


def interpret(graph: Graph, inputs: Sequence[Any]) -> list:
    """Run graph on the reference interpreter (eager PyTorch semantics, op by op).

    inputs: one torch tensor or numpy array per graph input, in declaration order, any strides. Returns one new
    contiguous output per graph output: numpy arrays when every input is a numpy array (and the graph has inputs),
    torch tensors otherwise. Raises IRError on a rank / size / dtype mismatch or a run-time error such as an integer
    division by zero.
    """
    inputs = list(inputs)
    if inputs and all(_is_numpy(x) for x in inputs):
        import numpy as np

        def allocate(sizes, dtype):
            return np.empty(sizes, dtype=numpy_dtype(dtype))
    else:
        import torch

        def allocate(sizes, dtype):
            return torch.empty(sizes, dtype=torch_dtype(dtype))

    return _core.interpret_with(graph, inputs, allocate)
