"""Lowerings of ATen's reductions: sum, mean, prod, amax/amin, argmax/argmin, var, var_mean, max/min.dim, any/all.

Dims are normalized against the input's rank (negatives wrapped); "all dims" (dim=None or []) is the IR's ``axes=[]``.
A ``dtype=`` keyword becomes a cast of the input before the reduction, as eager does, except where eager reduces a
float16 / bfloat16 result in float32 and casts once: mean from another dtype (``_mean``) and sum over reduced dims
that ATen's TensorIterator keeps apart (``_eager_sums_in_float32``); docs/precision.md, "Reductions with dtype=".
"""

from __future__ import annotations

import torch

from .lowering import Lowerer, Unsupported, register

aten = torch.ops.aten


def _axes(dims, rank: int):
    if dims is None:
        return []
    if isinstance(dims, int):
        dims = [dims]
    dims = list(dims)
    if rank == 0:
        return []
    out = sorted({d % rank for d in dims})
    return out


def _scalar_reduce(L: Lowerer, op: str, x: int, dtype, attrs) -> int:
    """A reduction of a 0-d value (one element), which kernels do not support, as elementwise IR.

    prod/amax/amin: ``x * 1`` (a fresh node keeping NaN and the sign of zero); sum/mean: ``x + 0`` (eager's
    accumulator starts at +0, so the sum of -0.0 is +0.0); argmax/argmin: 0;
    any/all: ``x != 0`` (NaN counts as true, as in eager); var with correction c: ``(x - x)^2 / max(0, 1 - c)`` (0
    for c <= 0, NaN for c >= 1 and for an infinite or NaN x, as eager's one-element variance, which divides by
    max(0, N - c); review 16b: c >= 2 gave -0.0).
    """
    xd = L.node(x).dtype
    if op in ("argmax", "argmin"):
        return L.constant(0, torch.int64)
    if op in ("any", "all"):
        return L.add("ne", [x, L.constant(0, xd)], {}, torch.bool, ())
    if op == "var":
        d = L.add("sub", [x, x], {}, xd, ())
        sq = L.add("mul", [d, d], {}, xd, ())
        return L.add("div", [sq, L.constant(max(0, 1 - int(attrs["correction"])), xd)], {}, xd, ())
    y = L.cast(x, dtype or xd)
    yd = L.node(y).dtype
    if op in ("sum", "mean") and yd != torch.bool:
        return L.add("add", [y, L.constant(0, yd)], {}, yd, ())  # eager's accumulator starts at +0: sum(-0.0) = +0.0
    return L.add("mul", [y, L.constant(1, yd)], {}, yd, ())


def _reduce(L: Lowerer, op: str, x: int, axes, keepdim: bool, dtype=None, attrs=None) -> int:
    n = L.node(x)
    rank = len(n.shape)
    if rank == 0:
        return _scalar_reduce(L, op, x, dtype, attrs or {})
    all_axes = axes if axes else list(range(rank))
    if keepdim:
        shape = tuple(1 if i in all_axes else s for i, s in enumerate(n.shape))
    else:
        shape = tuple(s for i, s in enumerate(n.shape) if i not in all_axes)
    a = {"axes": list(axes), "keepdim": bool(keepdim)}
    a.update(attrs or {})
    return L.add(op, [x], a, dtype or n.dtype, shape)


def _arg(node, i: int, name: str, default):
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


def _input(L: Lowerer, node, dtype_kw=True) -> int:
    x = L.value(node.args[0])
    dt = node.kwargs.get("dtype") if dtype_kw else None
    if dt is not None:
        x = L.cast(x, dt)
    return x


def _accum_dtype(dt: torch.dtype) -> torch.dtype:
    return dt if dt.is_floating_point else torch.int64


_HALF = (torch.float16, torch.bfloat16)


def _hint(v):
    """An int size or stride, a SymInt's example value, or None (an unbacked SymInt)."""
    return v.node.hint if isinstance(v, torch.SymInt) else int(v)


def _eager_sums_in_float32(node, dtype: torch.dtype, axes) -> bool:
    """Whether eager's CPU ``sum(x, dims, dtype=float16 / bfloat16)`` of an ``x`` of another dtype sums ``x``
    converted to float32 and rounds once, instead of summing ``x`` converted to ``dtype``.

    ATen's sum_out does the former when its TensorIterator (over ``x.to(dtype)``, reduced dims moved innermost,
    adjacent dims coalesced) keeps two reduced dims apart (``should_use_acc_buffer``, pytorch issue 83149): the
    reduced dims of size > 1, in the order of their strides, do not tile one block of memory. E.g. dims (0, 2) of a
    contiguous [3, 5, 33], not (0, 1), (1, 2), one dim or all dims (review 19: int64 ``sum((0, 2),
    dtype=float16)`` of values up to 1e5 was NaN here, the converted elements being +-inf, where eager gives
    -23872). ``x.to(dtype)`` keeps a dense ``x``'s strides and makes any other one dense (here: the strides a meta
    tensor gets, as ATen's own rule gives them). nansum of a float tensor has its own kernel, which converts first
    always; an integer nansum is sum_out."""
    src = node.args[0]
    val = src.meta.get("val") if isinstance(src, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or val.dim() < 2:
        return False
    orig = node.meta.get("original_aten")
    if orig is not None and orig.overloadpacket is aten.nansum and val.dtype.is_floating_point:
        return False
    sizes, strides = [_hint(v) for v in val.shape], [_hint(v) for v in val.stride()]
    if None in sizes or None in strides:
        return False
    conv = torch.empty_strided(sizes, strides, dtype=val.dtype, device="meta").to(dtype).stride()
    dims = sorted((conv[d], sizes[d]) for d in (axes or range(len(sizes))) if sizes[d] > 1)
    return any(st * n != nxt for (st, n), (nxt, _) in zip(dims, dims[1:]))


@register(aten.sum.dim_IntList, aten.sum.default)
def _sum(L: Lowerer, node) -> int:
    """sum(x, dim, keepdim, dtype=): ``x`` cast to ``dtype``, then summed (eager: the elements converted first), except
    where eager's sum to float16 / bfloat16 sums in float32 (``_eager_sums_in_float32``)."""
    x = L.value(node.args[0])
    dt = node.kwargs.get("dtype")
    dims = _arg(node, 1, "dim", None) if node.target is aten.sum.dim_IntList else None
    keep = _arg(node, 2, "keepdim", False) if node.target is aten.sum.dim_IntList else False
    axes = _axes(dims, len(L.node(x).shape))
    if dt in _HALF and L.node(x).dtype != dt and _eager_sums_in_float32(node, dt, axes):
        s = _reduce(L, "sum", L.cast(x, torch.float32), axes, keep, dtype=torch.float32)
        return L.cast(s, dt)
    x = L.cast(x, dt) if dt is not None else x
    return _reduce(L, "sum", x, axes, keep, dtype=_accum_dtype(L.node(x).dtype))


@register(aten.prod.dim_int, aten.prod.default)
def _prod(L: Lowerer, node) -> int:
    x = _input(L, node)
    dims = _arg(node, 1, "dim", None) if node.target is aten.prod.dim_int else None
    keep = _arg(node, 2, "keepdim", False) if node.target is aten.prod.dim_int else False
    return _reduce(L, "prod", x, _axes(dims, len(L.node(x).shape)), keep, dtype=_accum_dtype(L.node(x).dtype))


@register(aten.mean.dim, aten.mean.default)
def _mean(L: Lowerer, node) -> int:
    """mean(x, dim, keepdim, dtype=): the input cast to ``dtype``, then the mean, except for a float16 / bfloat16
    ``dtype`` of another input dtype: eager's CPU mean_out then sums in float32 (the input cast to float32, not to
    ``dtype``), divides and rounds once to ``dtype``, so this is cast(mean(cast(x, float32)), dtype). Casting the input
    to bfloat16 first, as sum(dtype=) does, rounded every element (review 19: f32 randn(7, 300) * 100 ``.mean(1,
    dtype=bfloat16)`` gave -0.1738 where eager and float64 give -0.1914)."""
    x = L.value(node.args[0])
    dt = node.kwargs.get("dtype")
    half_out = dt in _HALF and L.node(x).dtype != dt
    x = L.cast(x, torch.float32 if half_out else (dt or L.node(x).dtype))
    if not L.node(x).dtype.is_floating_point:
        raise Unsupported("mean of a non-float tensor")
    dims = _arg(node, 1, "dim", None) if node.target is aten.mean.dim else None
    keep = _arg(node, 2, "keepdim", False) if node.target is aten.mean.dim else False
    m = _reduce(L, "mean", x, _axes(dims, len(L.node(x).shape)), keep)
    return L.cast(m, dt) if half_out else m


def _require_nonempty(node, axes, name: str) -> None:
    """Leave to ATen (Unsupported) a max / min / argmax / argmin whose reduced dims (``axes``; [] = every dim) may be
    empty: eager raises there (IndexError "max(): Expected reduction dim 1 to have non-zero size."; amax / argmax
    "Expected reduction dim ... to have non-zero size"), a kernel cannot raise and would return -inf / +inf and index
    0 (review 18: ``torch.max(x, -1)`` on a [4, 0] tensor). Dynamo checks amax / argmax itself, not max.dim / min.dim.
    A static size 0 raises here; a symbolic size not known to be nonzero (an unbacked size, e.g. of a boolean-mask
    selection) too, so ATen raises if it is 0 when the graph runs. Dynamo's backed sizes are >= 2 (sizes 0 and 1 are
    specialized: a size that becomes 0 recompiles the graph with a static 0), so dynamic shapes keep their kernels."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    val = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or val.dim() == 0:
        return
    for d in axes or range(val.dim()):
        size = val.shape[d]
        if isinstance(size, int) and size == 0:
            raise Unsupported(f"{name} over dim {d} of size 0 (eager raises IndexError)")
        if isinstance(size, torch.SymInt) and not statically_known_true(size != 0):
            raise Unsupported(f"{name} over dim {d} of size {size}, which may be 0 (eager raises IndexError)")


@register(aten.amax.default, aten.amin.default)
def _amax(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    dims = _arg(node, 1, "dim", [])
    keep = _arg(node, 2, "keepdim", False)
    op = "amax" if node.target is aten.amax.default else "amin"
    axes = _axes(dims, len(L.node(x).shape))
    _require_nonempty(node, axes, op)
    return _reduce(L, op, x, axes, keep)


@register(aten.argmax.default, aten.argmin.default)
def _argmax(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    dim = _arg(node, 1, "dim", None)
    if dim is None and len(L.node(x).shape) > 1:
        raise Unsupported("arg-reduction over a flattened tensor")
    keep = _arg(node, 2, "keepdim", False)
    op = "argmax" if node.target is aten.argmax.default else "argmin"
    axes = _axes(dim, len(L.node(x).shape))
    _require_nonempty(node, axes, op)
    return _reduce(L, op, x, axes, keep, dtype=torch.int64)


@register(aten.max.default, aten.min.default)
def _max_all(L: Lowerer, node) -> int:
    """torch.max(x) / torch.min(x) without a dim: amax/amin over every axis."""
    x = L.value(node.args[0])
    _require_nonempty(node, [], "max" if node.target is aten.max.default else "min")
    return _reduce(L, "amax" if node.target is aten.max.default else "amin", x, [], False)


@register(aten.linalg_vector_norm.default)
def _vector_norm(L: Lowerer, node) -> int:
    """linalg.vector_norm (what torch.norm decomposes to): ord 2 -> sqrt(sum(x*x)), inf/-inf -> amax/amin(|x|),
    0 -> count of non-zeros, 1 -> sum(|x|), other p -> sum(|x|^p)^(1/p). ``dtype=`` casts the input first.
    float16/bfloat16 inputs are computed in float32 and the result rounded once, as eager's kernel does (its
    accumulate type): in the input dtype the constants p and 1/p would be rounded too (bf16(1/3) = 0.33398, 0.2% high,
    which made most bf16 3-norms one ulp too large)."""
    x = _input(L, node)
    out_dt = L.node(x).dtype
    if not out_dt.is_floating_point:
        raise Unsupported(f"vector_norm of {out_dt}")
    if out_dt in (torch.float16, torch.bfloat16):
        x = L.cast(x, torch.float32)
    ord_ = float(_arg(node, 1, "ord", 2))
    r = _vector_norm_of(L, x, ord_, _arg(node, 2, "dim", None), _arg(node, 3, "keepdim", False))
    return L.cast(r, out_dt)


def _vector_norm_of(L: Lowerer, x: int, ord_: float, dim, keep: bool) -> int:
    """The ``ord``-norm of float32/float64 value ``x`` over ``dim`` (the cases of _vector_norm), in x's dtype."""
    dt = L.node(x).dtype
    axes = _axes(dim, len(L.node(x).shape))
    shape = L.node(x).shape
    ax = L.add("abs", [x], {}, dt, shape)
    if ord_ == float("inf"):
        return _reduce(L, "amax", ax, axes, keep)
    if ord_ == float("-inf"):
        return _reduce(L, "amin", ax, axes, keep)
    if ord_ == 0:
        nz = L.add("cast", [L.add("ne", [x, L.constant(0, dt)], {}, torch.bool, shape)], {"dtype": _ir(dt)}, dt, shape)
        return _reduce(L, "sum", nz, axes, keep)
    if ord_ == 1:
        return _reduce(L, "sum", ax, axes, keep)
    if ord_ == 2:
        s = _reduce(L, "sum", L.add("mul", [x, x], {}, dt, shape), axes, keep)
        return L.add("sqrt", [s], {}, dt, L.node(s).shape)
    p = L.add("pow", [ax, L.constant(ord_, dt)], {}, dt, shape)
    s = _reduce(L, "sum", p, axes, keep)
    return L.add("pow", [s, L.constant(1.0 / ord_, dt)], {}, dt, L.node(s).shape)


def _ir(dt: torch.dtype) -> str:
    from .lowering import DTYPE_TO_IR

    return DTYPE_TO_IR[dt]


@register(aten.max.dim, aten.min.dim)
def _max_dim(L: Lowerer, node):
    x = L.value(node.args[0])
    dim = node.args[1]
    keep = _arg(node, 2, "keepdim", False)
    is_max = node.target is aten.max.dim
    axes = _axes(dim, len(L.node(x).shape))
    _require_nonempty(node, axes, "max.dim" if is_max else "min.dim")
    vals = _reduce(L, "amax" if is_max else "amin", x, axes, keep)
    # eager's max/min.dim accept bool (the IR's argmax/argmin do not, as eager's argmax/argmin): index a uint8 copy
    xi = L.cast(x, torch.uint8) if L.node(x).dtype == torch.bool else x
    idx = _reduce(L, "argmax" if is_max else "argmin", xi, axes, keep, dtype=torch.int64)
    return (vals, idx)


def _correction(node) -> int:
    c = node.kwargs.get("correction", None)
    if c is None:
        return 1
    if isinstance(c, float) and not c.is_integer():
        raise Unsupported(f"non-integer correction {c}")
    return int(c)


@register(aten.var.correction)
def _var(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    if not L.node(x).dtype.is_floating_point:
        raise Unsupported("var of a non-float tensor")
    dims = _arg(node, 1, "dim", None)
    keep = node.kwargs.get("keepdim", False)
    return _reduce(L, "var", x, _axes(dims, len(L.node(x).shape)), keep, attrs={"correction": _correction(node)})


@register(aten.var_mean.correction)
def _var_mean(L: Lowerer, node):
    x = L.value(node.args[0])
    if not L.node(x).dtype.is_floating_point:
        raise Unsupported("var_mean of a non-float tensor")
    dims = _arg(node, 1, "dim", None)
    keep = node.kwargs.get("keepdim", False)
    axes = _axes(dims, len(L.node(x).shape))
    var = _reduce(L, "var", x, axes, keep, attrs={"correction": _correction(node)})
    mean = _reduce(L, "mean", x, axes, keep)
    return (var, mean)


@register(aten.any.default, aten.any.dim, aten.any.dims, aten.all.default, aten.all.dim, aten.all.dims)
def _any_all(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    dims = _arg(node, 1, "dim", None) if node.target not in (aten.any.default, aten.all.default) else None
    keep = _arg(node, 2, "keepdim", False) if node.target not in (aten.any.default, aten.all.default) else False
    op = "any" if node.target.overloadpacket is aten.any else "all"
    return _reduce(L, op, x, _axes(dims, len(L.node(x).shape)), keep, dtype=torch.bool)
