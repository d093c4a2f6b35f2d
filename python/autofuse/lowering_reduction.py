"""Lowerings of ATen's reductions: sum, mean, prod, amax/amin, argmax/argmin, var, var_mean, max/min.dim, any/all.

Dims are normalized against the input's rank (negatives wrapped); "all dims" (dim=None or []) is the IR's ``axes=[]``.
A ``dtype=`` keyword becomes a cast of the input before the reduction, as eager does.
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


def _reduce(L: Lowerer, op: str, x: int, axes, keepdim: bool, dtype=None, attrs=None) -> int:
    n = L.node(x)
    rank = len(n.shape)
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


@register(aten.sum.dim_IntList, aten.sum.default)
def _sum(L: Lowerer, node) -> int:
    x = _input(L, node)
    dims = _arg(node, 1, "dim", None) if node.target is aten.sum.dim_IntList else None
    keep = _arg(node, 2, "keepdim", False) if node.target is aten.sum.dim_IntList else False
    axes = _axes(dims, len(L.node(x).shape))
    return _reduce(L, "sum", x, axes, keep, dtype=_accum_dtype(L.node(x).dtype))


@register(aten.prod.dim_int, aten.prod.default)
def _prod(L: Lowerer, node) -> int:
    x = _input(L, node)
    dims = _arg(node, 1, "dim", None) if node.target is aten.prod.dim_int else None
    keep = _arg(node, 2, "keepdim", False) if node.target is aten.prod.dim_int else False
    return _reduce(L, "prod", x, _axes(dims, len(L.node(x).shape)), keep, dtype=_accum_dtype(L.node(x).dtype))


@register(aten.mean.dim, aten.mean.default)
def _mean(L: Lowerer, node) -> int:
    x = _input(L, node)
    if not L.node(x).dtype.is_floating_point:
        raise Unsupported("mean of a non-float tensor")
    dims = _arg(node, 1, "dim", None) if node.target is aten.mean.dim else None
    keep = _arg(node, 2, "keepdim", False) if node.target is aten.mean.dim else False
    return _reduce(L, "mean", x, _axes(dims, len(L.node(x).shape)), keep)


@register(aten.amax.default, aten.amin.default)
def _amax(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    dims = _arg(node, 1, "dim", [])
    keep = _arg(node, 2, "keepdim", False)
    op = "amax" if node.target is aten.amax.default else "amin"
    return _reduce(L, op, x, _axes(dims, len(L.node(x).shape)), keep)


@register(aten.argmax.default, aten.argmin.default)
def _argmax(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    dim = _arg(node, 1, "dim", None)
    if dim is None and len(L.node(x).shape) > 1:
        raise Unsupported("arg-reduction over a flattened tensor")
    keep = _arg(node, 2, "keepdim", False)
    op = "argmax" if node.target is aten.argmax.default else "argmin"
    return _reduce(L, op, x, _axes(dim, len(L.node(x).shape)), keep, dtype=torch.int64)


@register(aten.max.dim, aten.min.dim)
def _max_dim(L: Lowerer, node):
    x = L.value(node.args[0])
    dim = node.args[1]
    keep = _arg(node, 2, "keepdim", False)
    is_max = node.target is aten.max.dim
    axes = _axes(dim, len(L.node(x).shape))
    vals = _reduce(L, "amax" if is_max else "amin", x, axes, keep)
    idx = _reduce(L, "argmax" if is_max else "argmin", x, axes, keep, dtype=torch.int64)
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
