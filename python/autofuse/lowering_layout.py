"""Lowerings of type conversions, tensor factories and the few layout ops a kernel can absorb.

- ``_to_copy`` / ``prims.convert_element_type``: a ``cast`` (only a dtype change; device/layout changes stay ATen).
- ``expand``: ``broadcast_to`` (a kernel reads the input with stride 0); an expand to the input's own shape is the
  input itself.
- ``detach``, ``alias``, ``lift_fresh_copy``: the value itself (functional graph). ``clone`` stays an ATen copy: it
  fixes a memory layout that later views rely on (lowering_views.py lowers the contiguous case as a copy).
- ``full``, ``scalar_tensor``, ``full_like``/``zeros_like``/``ones_like``, ``arange``: source ops.
View ops (view, reshape, permute, transpose, slice, select, split, unsqueeze, squeeze, cat, ...) are lowered to the
IR's layout ops in lowering_views.py. The remaining layout ops (as_strided, gather, index, flip, roll, padding, ...)
are not lowered: they run as ATen calls, and their fallback message says so.
"""

from __future__ import annotations

import torch

from .lowering import DTYPE_TO_IR, LOWERINGS, Lowerer, Unsupported, check_scalar_fits, register, scalar_as
from .lowering_shapes import as_size

aten = torch.ops.aten
prims = torch.ops.prims

#: ATen view/layout ops deliberately left to ATen (a view is free there); reported with this reason.
VIEW_REASON = "view/layout op without an IR lowering runs as an ATen call"
#: Overloads of these packets without a lowering in lowering_views.py (e.g. ``select.Dimname``) use this reason too.
VIEW_OPS = [
    aten.view, aten._unsafe_view, aten.reshape, aten.permute, aten.transpose, aten.t, aten.unsqueeze, aten.squeeze,
    aten.slice, aten.select, aten.as_strided, aten.cat, aten.split, aten.split_with_sizes, aten.unbind,
    aten.narrow, aten.flip, aten.roll, aten.constant_pad_nd, aten.index, aten.gather, aten.scatter,
    aten.index_select, aten.slice_scatter, aten.select_scatter, aten.diagonal, aten.squeeze_copy, aten.view_copy,
    aten.permute_copy, aten.expand_copy, aten.unfold, aten.repeat, aten.tril, aten.triu, aten.copy, aten.clone,
]


def _view_fallback(L: Lowerer, node):
    raise Unsupported(VIEW_REASON)


for _op in VIEW_OPS:
    LOWERINGS.setdefault(_op, _view_fallback)


@register(aten._to_copy.default, prims.convert_element_type.default)
def _to_copy(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    if node.target is prims.convert_element_type.default:
        dt = node.args[1]
    else:
        for k in ("device", "layout", "pin_memory"):
            v = node.kwargs.get(k)
            if v is not None and not (k == "device" and torch.device(v).type == "cpu") \
                    and not (k == "layout" and v == torch.strided) and not (k == "pin_memory" and v is False):
                raise Unsupported(f"_to_copy with {k}={v}")
        mf = node.kwargs.get("memory_format")
        if mf not in (None, torch.preserve_format, torch.contiguous_format):
            raise Unsupported(f"_to_copy with memory_format={mf}")
        dt = node.kwargs.get("dtype") or L.node(x).dtype
    if dt == L.node(x).dtype:
        raise Unsupported("a copy without a dtype change stays an ATen copy (it fixes a memory layout)")
    return L.cast(x, dt)


@register(aten.detach.default, aten.alias.default, aten.lift_fresh_copy.default)
def _identity(L: Lowerer, node) -> int:
    return L.value(node.args[0])


@register(aten.expand.default)
def _expand(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    shape = L.shape_of(node)
    if list(L.node(x).shape) == list(shape):
        # An expand to the input's own shape (matmul's expand before bmm) is the input itself: no broadcast_to, so
        # no copy kernel when a reshape for bmm follows (bmm reads the strided view).
        return x
    return L.add("broadcast_to", [x], {"shape": list(shape)}, L.node(x).dtype, shape)


def _fill_value(dt: torch.dtype, v, checked: bool = True):
    if not isinstance(v, (bool, int, float)):
        raise Unsupported("non-constant fill value")
    if dt == torch.bool:
        return int(bool(v))
    # integer fills are range-checked in eager; float ones by full / full_like, and by scalar_tensor for float32
    # only (which where(c, x, scalar) becomes: where(c, x, 1e5) in float16 is inf, where(c, x, 1e300) in float32
    # raises; measured, torch 2.13)
    check_scalar_fits(v, dt, "fill value", floats=checked)
    return scalar_as(v, dt)


def _factory(L: Lowerer, node, value, checked: bool = True) -> int:
    val = node.meta["val"]
    if val.dtype not in DTYPE_TO_IR:
        raise Unsupported(f"dtype {val.dtype}")
    if val.device.type != "cpu":
        raise Unsupported(f"device {val.device}")
    shape = L.shape_of(node)
    value = _fill_value(val.dtype, value, checked)
    if not shape:
        return L.constant(value, val.dtype)
    return L.add("full", [], {"value": value, "dtype": DTYPE_TO_IR[val.dtype], "shape": list(shape)}, val.dtype, shape)


@register(aten.full.default)
def _full(L: Lowerer, node) -> int:
    return _factory(L, node, node.args[1])


@register(aten.scalar_tensor.default)
def _scalar_tensor(L: Lowerer, node) -> int:
    return _factory(L, node, node.args[0], checked=node.meta["val"].dtype not in (torch.float16, torch.bfloat16))


@register(aten.full_like.default)
def _full_like(L: Lowerer, node) -> int:
    return _factory(L, node, node.args[1])


@register(aten.zeros_like.default, aten.zeros.default)
def _zeros(L: Lowerer, node) -> int:
    return _factory(L, node, 0)


@register(aten.ones_like.default, aten.ones.default)
def _ones(L: Lowerer, node) -> int:
    return _factory(L, node, 1)


@register(aten.arange.start_step, aten.arange.start, aten.arange.default)
def _arange(L: Lowerer, node) -> int:
    val = node.meta["val"]
    args = list(node.args)
    if node.target is aten.arange.default:
        start, step = 0, 1
    else:
        start = args[0]
        step = args[2] if len(args) > 2 else node.kwargs.get("step", 1)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, step)):
        raise Unsupported("arange with non-integer or symbolic start/step")
    if val.dtype not in DTYPE_TO_IR:
        raise Unsupported(f"dtype {val.dtype}")
    length = as_size(val.shape[0])
    return L.add("iota", [], {"length": length, "start": start, "step": step, "dtype": DTYPE_TO_IR[val.dtype]},
                 val.dtype, (length,))
