"""``aten.embedding`` in the generated program as one call into C++ (``_core.gather_rows``, runtime/host_gather.h)
instead of ATen's embedding.

Why: in a model the embedding runs right after the previous call's vocabulary matmul, when every code path is cold.
ATen's embedding (dispatcher, ``index_select``, TensorIterator) then took 40-55 us for the 32 rows of the LLaMA-style
1x32 case, about as long as a 256x256 matmul; the gather itself is 32 row copies (docs/demo.md, session 9, ovh10).
The program allocates the contiguous result (what eager's embedding returns) and the C++ loop copies the rows, bit
for bit. An index outside the table raises IndexError with eager's text (``index out of range in self``) before
anything is written. The backward graph's ``embedding_dense_backward`` stays an ATen call.
"""

from __future__ import annotations

from typing import Callable, List, Optional

import torch

aten = torch.ops.aten


def _gather_fn() -> Optional[Callable]:
    """``_core.gather_rows``, or None when the extension is absent or older than this file."""
    try:
        from . import _core  # type: ignore[attr-defined]
    except ImportError:
        return None
    return getattr(_core, "gather_rows", None)


#: The C++ row gather the program calls (None: every embedding stays an ATen call).
GATHER_ROWS_FN = _gather_fn()


def embedding_lines(lg, v: int, alloc: Callable[[int], List[str]]) -> Optional[List[str]]:
    """Program lines computing extern node ``v`` (an ``aten.embedding`` call) with the C++ gather: the output's
    allocation (``alloc(v)``: the lines allocating a contiguous tensor of the node's shape and dtype) and
    ``GR(weight, indices, out)``;
    None when the node is not an embedding the gather covers (it then stays an ATen call): the gather is
    unavailable, the weight is not a 2-d tensor or the indices not int64 / int32 tensors of the program."""
    n = lg.nodes[v]
    fx = n.fx
    if GATHER_ROWS_FN is None or fx is None or n.item is not None or fx.target is not aten.embedding.default:
        return None
    if len(fx.args) < 2 or fx.kwargs:
        return None
    w, idx = (lg.fx_value.get(a) if isinstance(a, torch.fx.Node) else None for a in fx.args[:2])
    if not isinstance(w, int) or not isinstance(idx, int):
        return None
    wval, ival = (a.meta.get("val") for a in fx.args[:2])
    if not (isinstance(wval, torch.Tensor) and wval.dim() == 2 and isinstance(ival, torch.Tensor)
            and ival.dtype in (torch.int64, torch.int32) and wval.device.type == "cpu"):
        return None
    return alloc(v) + [f"    GR(v{w}, v{idx}, v{v})  # {fx.name} (C++ row gather)"]
