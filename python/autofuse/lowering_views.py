"""Lowerings of ATen view ops to the IR's layout ops (``reshape``, ``permute``, ``slice``, ``concat``).

- ``view`` / ``_unsafe_view`` / ``reshape`` / ``unsqueeze`` / ``squeeze``: ``reshape`` to the FX node's own shape.
- ``permute`` / ``transpose`` / ``t``: ``permute``.
- ``slice`` / ``narrow`` / ``select`` (a slice of length 1, then a ``reshape`` dropping the axis) and ``split`` /
  ``split_with_sizes`` / ``unbind`` (one slice per piece, a tuple of values).
- ``cat``: ``concat`` (inputs cast to the result dtype, as eager promotes; inputs empty along the axis and legacy
  empty 1-d inputs are dropped, as ATen skips them).
- ``clone`` to a contiguous result: an elementwise copy (``mul`` by 1) that fuses with its neighbours.

The fusion pass makes each layout op a host step; the generated program (program.py) runs it inline as the torch
view or copy it stands for (``x.reshape``, ``x.permute``, ``x.narrow``, ``torch.cat``), so a view costs one tensor
method call and no dispatcher round trip through an ``OpOverload``, and it is no longer reported as a fallback.
Bounds follow Python slicing (negative indices count from the end, out-of-range ends are clamped); an index that
cannot be normalised because its axis has a symbolic size (a negative start, say) raises Unsupported, and the op
stays an ATen call.
"""

from __future__ import annotations

from typing import List, Tuple

import sympy
import torch

from .lowering import Lowerer, Unsupported, register
from .lowering_unit_reshape import fold_unit_reshape
from .lowering_shapes import as_size

aten = torch.ops.aten

#: An end index at least this large means "to the end of the axis" (ATen passes INT64_MAX for ``x[a:]``).
_TO_END = 1 << 62


def _axis(d: int, rank: int) -> int:
    """A dimension index normalised to 0..rank-1 (rank 0 accepts 0 and -1, as torch does)."""
    r = max(rank, 1)
    if not -r <= d < r:
        raise Unsupported(f"dimension {d} out of range for rank {rank}")
    return d % r


@register(aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.unsqueeze.default,
          aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.view_copy.default, aten.squeeze_copy.dim)
def _reshape(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    shape = L.shape_of(node)
    if tuple(L.node(x).shape) == tuple(shape):
        return x
    # unsqueeze/squeeze of a computed value: no host step (keeps one kernel); not where an output must stay a view
    folded = None if node in L.keep_views else fold_unit_reshape(L, x, shape)
    if folded is not None:
        L.folded_reshapes.setdefault(folded, (x, tuple(shape)))  # an aliased output rebuilds the view from it
        return folded
    return L.add("reshape", [x], {"shape": list(shape)}, L.node(x).dtype, shape)


def _permute_node(L: Lowerer, x: int, dims: List[int]) -> int:
    n = L.node(x)
    if dims == list(range(len(dims))):
        return x
    shape = tuple(n.shape[d] for d in dims)
    return L.add("permute", [x], {"dims": dims}, n.dtype, shape)


@register(aten.permute.default, aten.permute_copy.default)
def _permute(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    rank = len(L.node(x).shape)
    return _permute_node(L, x, [_axis(int(d), rank) for d in node.args[1]])


@register(aten.transpose.int)
def _transpose(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    rank = len(L.node(x).shape)
    a, b = _axis(int(node.args[1]), rank), _axis(int(node.args[2]), rank)
    dims = list(range(rank))
    dims[a], dims[b] = dims[b], dims[a]
    return _permute_node(L, x, dims)


@register(aten.t.default)
def _t(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    rank = len(L.node(x).shape)
    return _permute_node(L, x, [1, 0]) if rank == 2 else x


def _bounds(size, start, end, step: int) -> Tuple[object, object]:
    """Python-slice bounds ``(start, stop)`` on an axis of ``size`` (an int or sympy expression), clamped to
    0 <= start <= stop <= size. Raises Unsupported when a symbolic size prevents the normalisation."""
    if step < 1:
        raise Unsupported(f"slice step {step} (must be >= 1)")
    start = 0 if start is None else start
    end = _TO_END if end is None else end
    if not isinstance(start, int) or not isinstance(end, int):
        raise Unsupported("slice bounds given by symbolic values")
    if isinstance(size, int):
        s, e, _ = slice(start, end, step).indices(size)
        return s, max(s, e)
    if start < 0 or end < 0:
        raise Unsupported("negative slice bound on an axis of symbolic size")
    if end >= _TO_END:
        if start != 0:
            raise Unsupported("slice starting inside an axis of symbolic size (start may exceed the size)")
        return 0, size
    raise Unsupported("slice end on an axis of symbolic size (it may exceed the size)")


def _slice_node(L: Lowerer, x: int, axis: int, start, stop, step: int) -> int:
    n = L.node(x)
    size = n.shape[axis]
    if start == 0 and step == 1 and (stop is size or (isinstance(size, int) and stop == size)):
        return x
    if isinstance(start, int) and isinstance(stop, int):
        length = max(0, (stop - start + step - 1) // step)
    elif step == 1:
        length = as_size(stop - start)
    else:
        raise Unsupported("strided slice of an axis of symbolic size")
    shape = list(n.shape)
    shape[axis] = length
    return L.add("slice", [x], {"axis": axis, "start": start, "stop": stop, "step": step}, n.dtype, shape)


@register(aten.slice.Tensor)
def _slice(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    args = list(node.args) + [None] * (5 - len(node.args))
    rank = len(L.node(x).shape)
    axis = _axis(int(args[1] if args[1] is not None else node.kwargs.get("dim", 0)), rank)
    start = args[2] if args[2] is not None else node.kwargs.get("start")
    end = args[3] if args[3] is not None else node.kwargs.get("end")
    step = args[4] if args[4] is not None else node.kwargs.get("step", 1)
    size = L.node(x).shape[axis]
    if _to_end_of_symbolic(size, start, end, step, L.shape_of(node)[axis]):
        return _slice_node(L, x, axis, start, size, 1)  # ``x[..., k:]``: the fake result proves k <= size
    s, e = _bounds(size, start, end, int(step))
    return _slice_node(L, x, axis, s, e, int(step))


def _to_end_of_symbolic(size, start, end, step, length) -> bool:
    """Whether a slice ``[start:]`` (step 1, a non-negative int start) of an axis of symbolic ``size`` has the fake
    result length ``size - start``: tracing proved ``start <= size`` under the guards Dynamo installs, so the slice is
    ``[start, size)`` (``y.expand(...)[:, 1:]`` under dynamic shapes stays an IR view, as an aliased output needs)."""
    if isinstance(size, int) or not isinstance(start, int) or start < 0 or step not in (None, 1):
        return False
    if end is not None and not (isinstance(end, int) and end >= _TO_END):
        return False
    try:
        return sympy.expand(sympy.sympify(length) - (size - start)) == 0
    except (TypeError, ValueError, sympy.SympifyError):
        return False


@register(aten.narrow.default)
def _narrow(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    axis = _axis(int(node.args[1]), len(L.node(x).shape))
    start, length = node.args[2], node.args[3]
    if not isinstance(start, int) or not isinstance(length, int) or start < 0:
        raise Unsupported("narrow with symbolic or negative bounds")
    return _slice_node(L, x, axis, *_bounds(L.node(x).shape[axis], start, start + length, 1), 1)


@register(aten.select.int)
def _select(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    n = L.node(x)
    axis = _axis(int(node.args[1]), len(n.shape))
    index = node.args[2]
    if not isinstance(index, int):
        raise Unsupported("select with a symbolic index")
    size = n.shape[axis]
    if index < 0:
        if not isinstance(size, int):
            raise Unsupported("negative select index on an axis of symbolic size")
        index += size
    sliced = _slice_node(L, x, axis, index, index + 1, 1)
    shape = L.shape_of(node)
    return L.add("reshape", [sliced], {"shape": list(shape)}, n.dtype, shape)


def _pieces(L: Lowerer, x: int, axis: int, sizes: List[int]) -> tuple:
    out, start = [], 0
    for s in sizes:
        if not isinstance(s, int):
            raise Unsupported("split with symbolic piece sizes")
        out.append(_slice_node(L, x, axis, start, start + s, 1))
        start += s
    return tuple(out)


@register(aten.split_with_sizes.default)
def _split_with_sizes(L: Lowerer, node) -> tuple:
    x = L.value(node.args[0])
    axis = _axis(int(node.args[2]) if len(node.args) > 2 else int(node.kwargs.get("dim", 0)), len(L.node(x).shape))
    return _pieces(L, x, axis, list(node.args[1]))


@register(aten.split.Tensor)
def _split(L: Lowerer, node) -> tuple:
    x = L.value(node.args[0])
    axis = _axis(int(node.args[2]) if len(node.args) > 2 else int(node.kwargs.get("dim", 0)), len(L.node(x).shape))
    sizes = [t.shape[axis] for t in node.meta["val"]]
    return _pieces(L, x, axis, [as_size(s) for s in sizes])


@register(aten.unbind.int)
def _unbind(L: Lowerer, node) -> tuple:
    x = L.value(node.args[0])
    n = L.node(x)
    axis = _axis(int(node.args[1]) if len(node.args) > 1 else 0, len(n.shape))
    if not isinstance(n.shape[axis], int):
        raise Unsupported("unbind along an axis of symbolic size")
    out = []
    for i, t in enumerate(node.meta["val"]):
        shape = tuple(as_size(s) for s in t.shape)
        out.append(L.add("reshape", [_slice_node(L, x, axis, i, i + 1, 1)], {"shape": list(shape)}, n.dtype, shape))
    return tuple(out)


def _static_zero(d) -> bool:
    """A size known to be 0 when the graph is built (a SymInt is never taken for 0)."""
    return isinstance(d, int) and d == 0


@register(aten.cat.default)
def _cat(L: Lowerer, node) -> int:
    """``concat`` of the inputs cast to the result dtype. Inputs with no elements along the axis (and legacy empty
    1-d inputs, which ATen skips) are dropped: a cat onto an empty KV cache is then a copy of its one real input."""
    tensors = list(node.args[0])
    val = node.meta["val"]
    rank = val.dim()
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    axis = _axis(int(dim), rank)
    ins = []
    for t in tensors:
        m = L.meta(t)
        if not isinstance(m, torch.Tensor):
            raise Unsupported("cat of a non-tensor")
        if m.dim() == 1 and rank != 1 and _static_zero(m.shape[0]):
            continue  # a legacy empty 1-d input (an empty KV cache's first cat): ATen skips it
        if m.dim() != rank:
            raise Unsupported("cat with an input of another rank")
        if _static_zero(m.shape[axis]):
            continue  # contributes nothing (its dtype is already in the result's, val.dtype)
        ins.append(L.cast(L.value(t), val.dtype))
    if not ins:
        raise Unsupported("cat of empty inputs only")
    if len(ins) == 1:  # a fresh copy, as eager's result: it fuses into the input's producer kernel (x * 1 is exact)
        n = L.node(ins[0])
        return L.add("mul", [ins[0], L.constant(1, n.dtype)], {}, n.dtype, n.shape)
    shape = L.shape_of(node)
    return L.add("concat", ins, {"axis": axis}, val.dtype, shape)


@register(aten.clone.default)
def _clone(L: Lowerer, node) -> int:
    """``clone`` as an elementwise copy (``x * 1``, exact for every value including -0.0 and NaN), so it fuses with
    its producer and consumers. Its output is a fresh contiguous tensor, like eager's for ``contiguous_format`` or a
    contiguous input; a clone keeping a non-contiguous layout stays an ATen call (later ATen ops may rely on it)."""
    x = L.value(node.args[0])
    fmt = node.kwargs.get("memory_format")
    val = L.meta(node.args[0])
    if fmt is not torch.contiguous_format and not val.is_contiguous():
        raise Unsupported("clone preserving a non-contiguous layout stays an ATen copy")
    if fmt not in (None, torch.preserve_format, torch.contiguous_format):
        raise Unsupported(f"clone with memory_format={fmt}")
    n = L.node(x)
    return L.add("mul", [x, L.constant(1, n.dtype)], {}, n.dtype, n.shape)
