"""Unit-dim reshapes folded into the values they reshape, so they do not split kernels.

A ``reshape`` is a layout op: the fusion pass runs it as a host step and forms kernels around it (NF-LAYOUT), and a
host step between two kernel groups can also make merging them a cycle (NF-CYCLE). Many reshapes only insert or
remove size-1 dims (``unsqueeze``, ``squeeze``, ``view`` to ``[N, 1]``): cross-entropy's ``target.unsqueeze(1)``
before its gather and ``gather(...).squeeze(1)`` after it. ``fold_unit_reshape`` rewrites such a reshape of

- a reduction with ``keepdim=True`` whose reshape drops exactly the kept unit dims: the same reduction with
  ``keepdim=False`` (same values, same order of accumulation);
- an elementwise op whose operands are 0-d or of the op's own shape: the op on the reshaped operands (recursively,
  at most ``MAX_DEPTH`` ops deep); a reshaped graph input stays a reshape (a view at the kernel's boundary, which does
  not split kernels).

Anything else is left as a reshape (returns None). Only the shape changes, never a value: every element of the result
is computed by the same op on the same operand elements as before.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from .lowering import Lowerer
from .lowering_reference import _BINARY, _UNARY

#: Ops rebuilt with a new shape: elementwise (their operands broadcast NumPy-style).
ELEMENTWISE = set(_UNARY) | set(_BINARY) | {"where", "cast", "clamp"}
#: Reductions whose keepdim=True form can become keepdim=False.
REDUCTIONS = {"sum", "mean", "prod", "amax", "amin", "any", "all", "argmax", "argmin", "var"}
#: How many elementwise ops deep a reshape is pushed towards the inputs.
MAX_DEPTH = 6


def _non_unit(shape: Sequence[Any]) -> Tuple[Any, ...]:
    return tuple(s for s in shape if not (isinstance(s, int) and s == 1))


def is_unit_reshape(src: Sequence[Any], dst: Sequence[Any]) -> bool:
    """Whether reshaping ``src`` to ``dst`` only inserts or removes size-1 dims (symbolic sizes count as non-1)."""
    return _non_unit(src) == _non_unit(dst)


def fold_unit_reshape(L: Lowerer, x: int, shape: Sequence[Any], depth: int = 0) -> Optional[int]:
    """A node computing ``reshape(x, shape)`` without a layout op, or None (the caller then emits the reshape).

    A failed attempt may leave nodes behind (operands folded before a later operand failed): they are dead, never
    graph outputs, and the fusion pass drops them."""
    n = L.node(x)
    shape = tuple(shape)
    if tuple(n.shape) == shape:
        return x
    if not is_unit_reshape(n.shape, shape) or depth > MAX_DEPTH:
        return None
    if n.op in REDUCTIONS and n.attrs.get("keepdim") and n.attrs.get("axes"):
        kept = tuple(s for i, s in enumerate(n.shape) if i not in n.attrs["axes"])
        if kept == shape:
            return L.add(n.op, list(n.inputs), {**n.attrs, "keepdim": False}, n.dtype, shape)
        return None
    if n.op not in ELEMENTWISE or len(n.shape) == 0:
        return None  # (a 0-d op's 0-d operands would need reshaping too: left as a reshape)
    ins = []
    for i in n.inputs:
        inp = L.node(i)
        if len(inp.shape) == 0:
            ins.append(i)
        elif tuple(inp.shape) == tuple(n.shape):
            if inp.op == "input":
                ins.append(L.add("reshape", [i], {"shape": list(shape)}, inp.dtype, shape))
                continue
            r = fold_unit_reshape(L, i, shape, depth + 1)
            if r is None:
                return None
            ins.append(r)
        else:
            return None  # a broadcast operand of lower rank may not line up with the new dims
    return L.add(n.op, ins, dict(n.attrs), n.dtype, shape)
