"""Lowerings of ``aten.gather`` and ``aten.scatter`` whose index has size 1 along the (last) dim: cross-entropy's and
NLL's pattern (``gather(log_softmax, -1, target[:, None])`` forward, ``scatter(zeros, -1, target[:, None], -1.0)``
backward), written as IR the fusion pass can put in the row kernel that computes the rows.

With ``C`` the size of ``dim`` and ``m = eq(iota(C), index)`` (true at exactly one position per row when the index is
in range):

- gather: pushed through elementwise ops to the row-wide values (``_pushed_gather``), then
  ``amax(where(m, x, LOW), dim, keepdim)``, LOW = -inf for floats (the dtype's minimum for integers). Every
  position but the target holds LOW, so the result is the target element itself, bit for bit: max(-inf, v) is v for
  every v including -0.0, +-inf and NaN (the emitted and the reference amax propagate NaN). Values elsewhere in the
  row never reach the max (``where`` replaces them, NaN included). A sum form (``sum(where(m, x, 0))``) would not be
  exact: the accumulator starts at +0.0, which turns a -0.0 target into +0.0.
- scatter: ``where(m, src_or_value, self)`` is a per-element selection, exact by construction.

Out-of-range indices: eager raises ``RuntimeError: index I is out of bounds for dimension D with size C``; a kernel
cannot raise, so each lowering records ``(index value, C, dim, op)`` in ``LoweredGraph.index_checks``. The fusion
input marks those index values as outputs (native.to_core), so they are materialized, and the generated program
(program.py) checks them on the host right after they are computed (one min/max pass over one int per row) and
raises eager's error before any result is returned.

Other gathers/scatters (index wider than 1 along dim, a dim other than the last, smaller index extents in the other
dims, scatter with ``reduce=``) stay ATen calls.
"""

from __future__ import annotations

import functools

import torch

from .lowering import Lowerer, Unsupported, register
from .lowering_layout import VIEW_REASON
from .lowering_reduction import _reduce
from .lowering_shapes import broadcast_sizes
from .lowering_unit_reshape import ELEMENTWISE

#: How many elementwise ops deep a gather is pushed towards the row-wide values it selects from.
MAX_PUSH = 8

aten = torch.ops.aten


def _unsupported(detail: str) -> Unsupported:
    """The fallback of a gather/scatter outside the lowered pattern: an ATen call like the other layout ops (the
    reason starts with lowering_layout.VIEW_REASON, which reports count as by design)."""
    return Unsupported(f"{VIEW_REASON} ({detail})")


def _row_pattern(L: Lowerer, node, self_arg, dim, index_arg):
    """Check the pattern; returns (self value, index value as i64, normalized dim, self shape)."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise _unsupported("gather/scatter with a symbolic dim")
    xs = L.shape_of(self_arg)
    ishape = L.shape_of(index_arg)
    rank = len(xs)
    if rank == 0:
        raise _unsupported("gather/scatter of a 0-d tensor")
    d = dim % rank
    if d != rank - 1:
        raise _unsupported("gather/scatter along a dim other than the last")
    if len(ishape) != rank or ishape[d] != 1:
        raise _unsupported("gather/scatter index wider than 1 along dim (only the one-per-row pattern is lowered)")
    for k in range(rank):
        if k != d and ishape[k] != xs[k]:
            raise _unsupported("gather/scatter index smaller than the input in a dim other than dim")
    x = L.value(self_arg)
    if L.node(x).dtype == torch.bool:
        raise _unsupported("gather/scatter of a bool tensor")
    idx = L.value(index_arg)
    if L.node(idx).dtype != torch.int64:
        raise _unsupported("gather/scatter index of a dtype other than int64")
    return x, idx, d, xs


def _mask(L: Lowerer, idx: int, d: int, xs) -> int:
    """``eq(iota(C), index)``: bool of the input's shape, true where the position along dim equals the index.

    The comparison runs in int32 when C is a constant below 2**31 (int64 vectors are twice as wide: the row pass
    measured 2x slower with them). An index outside int32 wraps in the cast and may then match some position, but it
    is out of range, so the host check (which reads the int64 index itself) raises before any result is returned."""
    c = xs[d]
    narrow = isinstance(c, int) and c < 2**31
    dt, name = (torch.int32, "i32") if narrow else (torch.int64, "i64")
    iota = L.add("iota", [], {"length": c, "start": 0, "step": 1, "dtype": name}, dt, (c,))
    return L.add("eq", [iota, L.cast(idx, dt)], {}, torch.bool, xs)


def _record_check(L: Lowerer, idx: int, d: int, xs, op: str) -> None:
    L.g.index_checks.append((idx, xs[d], d, op))


def _record_nll_check(L: Lowerer, node) -> None:
    """The index check of nll_loss's gather when the gather itself stays an ATen call (input [N, C, d...], class dim
    1): the program checks the target before the call and raises eager's IndexError (review, session 28: 3-D and 4-D
    cross_entropy raised gather's RuntimeError). Nothing is recorded when the index or the sizes are not lowered."""
    self_arg, dim, index_arg = node.args[0], node.args[1], node.args[2]
    idx = L.g.fx_value.get(index_arg) if isinstance(index_arg, torch.fx.Node) else None
    if not isinstance(idx, int) or not isinstance(dim, int) or L.node(idx).dtype != torch.int64:
        return
    xs = L.shape_of(self_arg)
    if not xs:
        return
    _record_check(L, idx, dim % len(xs), xs, "nll_loss")


def _select(L: Lowerer, x: int, mask: int, d: int) -> int:
    """``amax(where(mask, x, LOW), dim, keepdim)``: the element of each row the mask selects, bit for bit."""
    dt = L.node(x).dtype
    low = float("-inf") if dt.is_floating_point else torch.iinfo(dt).min
    sel = L.add("where", [mask, x, L.constant(low, dt)], {}, dt, L.node(x).shape)
    return _reduce(L, "amax", sel, [d], True)


def _pushed_gather(L: Lowerer, x: int, mask, d: int, xs, depth: int = 0) -> int:
    """gather(x) with the gather pushed through elementwise ops to their row-wide operands.

    For an elementwise ``f`` whose operands are row-wide (shape ``xs``), per-row (size 1 along dim, e.g. the max and
    log-sum of log_softmax) or 0-d: ``gather(f(a, r)) = f(gather(a), r)``, the same op on the same operand values,
    so the result is bit-identical. log_softmax's ``(x - max) - log(sum)`` then selects from ``x`` itself, and the
    selection joins the max's pass over the row instead of a pass of its own after the sum. ``mask`` is a callable
    making the mask (once, on first use)."""
    n = L.node(x)
    out_shape = tuple(1 if k == d else s for k, s in enumerate(xs))
    if depth < MAX_PUSH and n.op in ELEMENTWISE and tuple(n.shape) == tuple(xs):
        ins = []
        for i in n.inputs:
            s = tuple(L.node(i).shape)
            if len(s) == 0 or (len(s) == len(xs) and s[d] == 1 and
                               all(s[k] == xs[k] or s[k] == 1 for k in range(len(xs)) if k != d)):
                ins.append(i)  # constant along dim: gather(r) = r
            elif s == tuple(xs) and L.node(i).dtype != torch.bool:  # (bool rows: no -inf to select against)
                ins.append(_pushed_gather(L, i, mask, d, xs, depth + 1))
            else:
                ins = None
                break
        if ins is not None:
            shape = functools.reduce(broadcast_sizes, [tuple(L.node(i).shape) for i in ins], ())
            if shape == out_shape:
                return L.add(n.op, ins, dict(n.attrs), n.dtype, out_shape)
    return _select(L, x, mask(), d)


@register(aten.gather.default)
def _gather(L: Lowerer, node) -> int:
    if node.kwargs.get("sparse_grad") or (len(node.args) > 3 and node.args[3]):
        raise _unsupported("gather with sparse_grad=True")
    # nll_loss / cross_entropy decompose to this gather of the target (decompositions.py); eager checks the target
    # itself and raises IndexError, which the program's check raises too for op "nll_loss"
    from_nll = str(node.meta.get("original_aten", "")).startswith("aten.nll_loss")
    try:
        x, idx, d, xs = _row_pattern(L, node, node.args[0], node.args[1], node.args[2])
    except Unsupported:
        if from_nll:  # [N, C, d...] inputs gather along dim 1: an ATen call, whose check would raise RuntimeError
            _record_nll_check(L, node)
        raise
    made = []

    def mask() -> int:
        if not made:
            made.append(_mask(L, idx, d, xs))
        return made[0]

    out = _pushed_gather(L, x, mask, d, xs)
    _record_check(L, idx, d, xs, "nll_loss" if from_nll else "gather")
    return out


@register(aten.scatter.value, aten.scatter.src)
def _scatter(L: Lowerer, node) -> int:
    if node.kwargs.get("reduce") is not None:
        raise _unsupported("scatter with reduce=")
    x, idx, d, xs = _row_pattern(L, node, node.args[0], node.args[1], node.args[2])
    dt = L.node(x).dtype
    value = node.args[3] if len(node.args) > 3 else node.kwargs.get("value", node.kwargs.get("src"))
    if node.target is aten.scatter.src:
        if L.shape_of(value) != L.shape_of(node.args[2]):
            raise _unsupported("scatter src of a shape other than the index's")
        v = L.cast(L.value(value), dt)
    else:
        if not isinstance(value, (bool, int, float)):
            raise _unsupported("scatter with a symbolic value")
        v = L.constant(value, dt)
    out = L.add("where", [_mask(L, idx, d, xs), v, x], {}, dt, xs)
    _record_check(L, idx, d, xs, "scatter")
    return out
