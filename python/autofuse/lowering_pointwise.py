"""Lowerings of ATen's pointwise ops: unary math, binary arithmetic and comparisons, addcmul, lerp, where, clamp,
backward helpers.

Each function receives the Lowerer and the FX node and returns the index of the IR node holding the result. Eager's
type promotion is made explicit: operands are cast to the common dtype (``Lowerer.promote``), the op runs in it, and
the Lowerer casts the result to the dtype torch recorded for the node (e.g. true division of integers gives float).
"""

from __future__ import annotations

import math

import torch

from .env import env_bool
from .lowering import Lowerer, Unsupported, UnsupportedGraph, check_scalar_fits, register, scalar_as
from .lowering_shapes import broadcast_sizes

aten = torch.ops.aten
prims = torch.ops.prims


def _out_dtype(node) -> torch.dtype:
    return node.meta["val"].dtype


def _shape(L: Lowerer, *vs) -> tuple:
    shape: tuple = ()
    for v in vs:
        shape = broadcast_sizes(shape, L.node(v).shape)
    return shape


def _op(L: Lowerer, op: str, vs, dtype=None, attrs=None) -> int:
    """Append elementwise ``op`` on IR values ``vs`` (already of one dtype)."""
    dtype = dtype or L.node(vs[0]).dtype
    return L.add(op, list(vs), attrs or {}, dtype, _shape(L, *vs))


# ---- unary ----------------------------------------------------------------------------------------------------------

#: ATen op -> IR op; floating point in and out (integer inputs are promoted to the default float type first).
_UNARY_FLOAT = {
    aten.exp: "exp", aten.exp2: "exp2", aten.expm1: "expm1", aten.log: "log", aten.log2: "log2", aten.log10: "log10",
    aten.log1p: "log1p", aten.sqrt: "sqrt", aten.rsqrt: "rsqrt", aten.reciprocal: "reciprocal", aten.sin: "sin",
    aten.cos: "cos", aten.tan: "tan", aten.tanh: "tanh", aten.sigmoid: "sigmoid", aten.erf: "erf",
}
#: Same dtype in and out.
_UNARY_SAME = {
    aten.abs: "abs", aten.neg: "neg", aten.relu: "relu", aten.floor: "floor", aten.ceil: "ceil",
    aten.trunc: "trunc", aten.sign: "sign", aten.bitwise_not: "bitwise_not",
}
#: Any dtype in, bool out.
_UNARY_BOOL = {aten.isnan: "isnan", aten.isinf: "isinf", aten.isfinite: "isfinite", aten.logical_not: "logical_not"}


def _unary_float(L: Lowerer, node) -> int:
    dt = _out_dtype(node)
    if not dt.is_floating_point:
        raise Unsupported(f"{dt} result")
    return _op(L, _UNARY_FLOAT[node.target.overloadpacket], [L.cast(L.value(node.args[0]), dt)])


def _unary_same(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    if L.node(x).dtype == torch.bool and node.target.overloadpacket is aten.sign:
        # sign of a bool is the bool itself in eager (True -> True); x != False computes that copy in a kernel
        return _op(L, "ne", [x, L.constant(False, torch.bool)], dtype=torch.bool)
    if L.node(x).dtype == torch.bool and node.target.overloadpacket is not aten.bitwise_not:
        raise Unsupported("bool input")
    return _op(L, _UNARY_SAME[node.target.overloadpacket], [x])


def _unary_bool(L: Lowerer, node) -> int:
    return _op(L, _UNARY_BOOL[node.target.overloadpacket], [L.value(node.args[0])], dtype=torch.bool)


register(*_UNARY_FLOAT)(_unary_float)
register(*_UNARY_SAME)(_unary_same)
register(*_UNARY_BOOL)(_unary_bool)


@register(aten.round.default)
def _round(L: Lowerer, node) -> int:
    return _op(L, "round", [L.value(node.args[0])])


@register(aten.round.decimals)
def _round_decimals(L: Lowerer, node) -> int:
    """round(x, decimals=d) as ATen's CPU kernel computes it, in the tensor's dtype: d >= 0: round(x * 10^d) / 10^d;
    d < 0: round(x / 10^-d) * 10^-d."""
    x = L.value(node.args[0])
    dt = L.node(x).dtype
    if not dt.is_floating_point:
        raise Unsupported(f"round with decimals on {dt}")
    d = int(node.kwargs.get("decimals", node.args[1] if len(node.args) > 1 else 0))
    if d == 0:
        return _op(L, "round", [x])
    ten = L.constant(10.0 ** abs(d), dt)
    if d > 0:
        return _op(L, "div", [_op(L, "round", [_op(L, "mul", [x, ten])]), ten])
    return _op(L, "mul", [_op(L, "round", [_op(L, "div", [x, ten])]), ten])


# ---- binary -------------------------------------------------------------------------------------------------------

_BINARY = {
    aten.mul: "mul", aten.maximum: "maximum", aten.minimum: "minimum", aten.fmax: "fmax", aten.fmin: "fmin",
    aten.atan2: "atan2", aten.remainder: "remainder", aten.fmod: "fmod", aten.floor_divide: "floordiv",
    aten.bitwise_and: "bitwise_and", aten.bitwise_or: "bitwise_or", aten.bitwise_xor: "bitwise_xor",
    aten.bitwise_left_shift: "shl", aten.bitwise_right_shift: "shr", aten.__lshift__: "shl", aten.__rshift__: "shr",
}
_COMPARE = {aten.eq: "eq", aten.ne: "ne", aten.lt: "lt", aten.le: "le", aten.gt: "gt", aten.ge: "ge",
            aten.logical_and: "logical_and", aten.logical_or: "logical_or", aten.logical_xor: "logical_xor"}


_INT_DIVISION = ("floordiv", "remainder", "fmod")


def _check_integer_divisor(dt: torch.dtype, divisor) -> None:
    """Integer //, % and fmod by a zero divisor raise ZeroDivisionError in eager; a kernel cannot raise, so an integer
    division by a tensor (which may hold a zero) stays with ATen. A nonzero Python-scalar divisor is lowered."""
    if dt.is_floating_point:
        return
    if isinstance(divisor, int) and not isinstance(divisor, bool) and divisor % (1 << (8 * dt.itemsize)) == 0:
        # eager converts the scalar to the dtype without a range check: 2**32 on int32 is a zero divisor there too
        raise Unsupported(f"integer division on {dt} by {divisor}, 0 in {dt} (eager raises ZeroDivisionError)")
    if isinstance(divisor, (int, float)) and not isinstance(divisor, bool) and divisor != 0:
        return
    raise Unsupported(f"integer division on {dt} by a tensor or zero (eager raises ZeroDivisionError on a zero divisor)")


def _binary_operands(L: Lowerer, node, a, b):
    dt = L.promote(a, b)
    return dt, L.operand(a, dt), L.operand(b, dt)


@register(*_BINARY)
def _binary(L: Lowerer, node) -> int:
    op = _BINARY[node.target.overloadpacket]
    if op in ("mul", "floordiv"):
        a, b = node.args[0], node.args[1]
        dt = L.promote(a, b)
        cdt = _opmath(dt, b)
        if op == "mul" or cdt.is_floating_point:  # integer floor division: checked below
            x, y = _in(L, a, dt, cdt), L.operand(b, cdt)
            return _op(L, op, [x, y]) if op == "mul" else _floordiv(L, x, y)
    if op in _INT_DIVISION:
        _check_integer_divisor(L.promote(node.args[0], node.args[1]), node.args[1])
    dt, x, y = _binary_operands(L, node, node.args[0], node.args[1])
    if op == "atan2" and not dt.is_floating_point:
        dt = _out_dtype(node)
        x, y = L.cast(x, dt), L.cast(y, dt)
    return _op(L, op, [x, y])


@register(*_COMPARE)
def _compare(L: Lowerer, node) -> int:
    _, x, y = _binary_operands(L, node, node.args[0], node.args[1])
    return _op(L, _COMPARE[node.target.overloadpacket], [x, y], dtype=torch.bool)


def _in(L: Lowerer, v, dt, cdt) -> int:
    """Operand ``v`` converted to the op's dtype ``dt`` (a 0-d float32 tensor added to a float16 one is rounded to
    float16, as in eager), then to the compute dtype ``cdt``."""
    return L.cast(L.operand(v, dt), cdt)


def _scaled(L: Lowerer, node, b, dt, cdt=None) -> int:
    """``alpha * b`` for add/sub's alpha keyword (absent or 1: just b), b in dtype ``dt``, computed in ``cdt``
    (default dt) with alpha rounded to dt. An alpha out of dt's range stays with ATen (eager raises)."""
    cdt = cdt or dt
    y = _in(L, b, dt, cdt)
    alpha = node.kwargs.get("alpha", 1)
    if alpha != 1:
        check_scalar_fits(alpha, dt, "alpha")
        if cdt != dt:
            alpha = torch.tensor(alpha, dtype=dt).item()
        y = _op(L, "mul", [y, L.constant(alpha, cdt)])
    return y


_LOWP = (torch.float16, torch.bfloat16)


def _is_cpu_scalar(arg) -> bool:
    """Whether eager's TensorIterator sees ``arg`` as a CPU scalar whose original value it can read: a Python number
    (a bool is 0 or 1 in any dtype: left out) or a 0-d tensor of any dtype (Dynamo's dynamic Python floats arrive as
    one, converted to float32 in the graph; so do ``torch.tensor(0.7)`` constants)."""
    if isinstance(arg, torch.fx.Node):
        val = arg.meta.get("val")
        return isinstance(val, torch.Tensor) and val.dim() == 0
    return isinstance(arg, (int, float)) and not isinstance(arg, bool)


def _opmath(dt: torch.dtype, other) -> torch.dtype:
    """The dtype mul, div and floor / trunc division compute in: float32 when the op's dtype ``dt`` is float16 /
    bfloat16 and its second operand ``other`` is a CPU scalar (``_is_cpu_scalar``); else ``dt``.

    Eager's CPU mul, div_true, div_floor and div_trunc kernels read such a second operand at float32 (ATen's
    ``original_scalar_value<opmath_t>``, from its own dtype) rather than rounding it to the tensor's dtype, compute in
    float32 and round the result once; computing the node in float32 (the Lowerer casts it back to the node's dtype,
    one rounding under both precision policies) gives the same bits. The first operand is converted to ``dt`` first
    (``_in``): eager's TensorIterator casts an integer / bool tensor to the common dtype before the kernel reads it
    (int32 2049 * a 0-d float16 1.5 is 2048 * 1.5 = 3072; review 16c). A scalar first operand, and add/sub (alpha too),
    remainder, fmod, pow, atan2, comparisons, are converted to the tensor's dtype in eager, so they do not use this
    (tests/python/test_lowp_scalar_operands.py; ``x * 0.1`` in f16 differed by an ulp, f16 ``7 // 0.7`` was 9
    instead of 10, ``x * torch.tensor(0.7)`` differed in 1717 of 4096 f16 elements).
    """
    if dt in _LOWP and _is_cpu_scalar(other):
        return torch.float32
    return dt


def _check_add_sub(L: Lowerer, node, dt: torch.dtype, *args) -> None:
    """Leave to ATen (which raises eager's error) a subtraction with a bool operand, tensor or Python scalar (eager's
    ``x - True`` raises "Subtraction, the `-` operator, with a bool tensor is not supported"), and a bool alpha on a
    non-bool result ("Boolean alpha only supported for Boolean results"); review 16b: both gave numbers."""
    if node.target.overloadpacket in (aten.sub, aten.rsub):
        for v in args:
            if isinstance(v, bool) or (isinstance(v, torch.fx.Node) and getattr(L.meta(v), "dtype", None) == torch.bool):
                raise Unsupported("subtraction with a bool operand (eager raises)")
    if isinstance(node.kwargs.get("alpha"), bool) and dt != torch.bool:
        raise Unsupported("bool alpha on a non-bool result (eager raises)")


@register(aten.add, aten.sub)
def _add_sub(L: Lowerer, node) -> int:
    a, b = node.args[0], node.args[1]
    dt = L.promote(a, b)
    _check_add_sub(L, node, dt, a, b)
    if dt == torch.bool:
        y = L.operand(b, dt)
        if not node.kwargs.get("alpha", 1):  # add(x, y, alpha=False) is x (broadcast to y's shape), as in eager
            y = _op(L, "logical_and", [y, L.constant(False, dt)], dtype=torch.bool)
        return _op(L, "logical_or", [L.operand(a, dt), y], dtype=torch.bool)
    op = "add" if node.target.overloadpacket is aten.add else "sub"
    cdt = _alpha_opmath(node, dt, a, b)
    return _op(L, op, [_in(L, a, dt, cdt), _scaled(L, node, b, dt, cdt)])


def _alpha_opmath(node, dt: torch.dtype, *args) -> torch.dtype:
    """The dtype add/sub/rsub with an ``alpha`` other than 1 compute in: float32 for float16/bfloat16 tensors.

    Eager's vectorized CPU loop computes ``a + alpha * b`` of reduced-precision tensors in float32 with alpha rounded
    to the tensor's dtype, and rounds once (torch 2.13, measured: the same bits on 100000 random float16 and bfloat16
    pairs for alpha 3 and 0.1 except ~10 elements at the end of each thread's chunk, where its scalar loop rounds the
    product first; that loop also does all of a tensor shorter than its vector block). Lowered as a float16 mul then
    add, the product was rounded too under AUTOFUSE_EMULATE_PRECISION_CASTS=1: ~27 % of the elements of a long
    tensor differed from eager for alpha=3 (review, session 14); now short tensors differ instead (docs/precision.md).
    Operands are rounded to the op's dtype first (``_in``); Python-scalar operands keep the tensor's dtype."""
    if dt in _LOWP and node.kwargs.get("alpha", 1) != 1 and all(isinstance(x, torch.fx.Node) for x in args):
        return torch.float32
    return dt


@register(aten.rsub)
def _rsub(L: Lowerer, node) -> int:
    a, b = node.args[0], node.args[1]
    dt = L.promote(a, b)
    _check_add_sub(L, node, dt, a, b)
    cdt = _alpha_opmath(node, dt, a, b)
    return _op(L, "sub", [_in(L, b, dt, cdt), _scaled(L, node, a, dt, cdt)])


def _floordiv(L: Lowerer, x: int, y: int) -> int:
    """Floating-point ``x // y`` (IR values of one float dtype): one ``floordiv`` node, except for float16 / bfloat16
    under AUTOFUSE_EMULATE_PRECISION_CASTS=1, where it is eager's algorithm spelled out in nodes of that dtype, so
    that each step is rounded as eager rounds it.

    Eager's CPU floor division of two float16 / bfloat16 tensors (or a scalar by a tensor) is c10's vectorized
    ``div_floor_floating_vec`` on ``Vectorized<Half/BFloat16>``, whose every arithmetic step (the quotient, fmod,
    ``a - mod``, the division, ``- 1``, the fraction test, ``+ 1``) computes in float32 and rounds to the dtype.
    One node computes the same steps in float32 and rounds once: 2-4 % of random bfloat16 / float16 quotients then
    differed from eager by one (bf16 ``1536 // 0.83984375``: eager 1832, one rounding 1824; review, session 28).
    A Python-scalar divisor is read at float32 by eager (``_opmath``), so ``x`` and ``y`` are float32 there and this
    returns the one node.
    """
    dt = L.node(x).dtype
    if dt not in _LOWP or not env_bool("AUTOFUSE_EMULATE_PRECISION_CASTS", False):
        return _op(L, "floordiv", [x, y])
    zero, one = L.constant(0, dt), L.constant(1, dt)
    bool_ = torch.bool
    basic = _op(L, "div", [x, y])
    mod = _op(L, "fmod", [x, y])
    # eager's fix-up where the quotient overflows but x is finite: x itself, not x - mod, is divided
    overflow = _op(L, "logical_and", [_op(L, "isinf", [basic], dtype=bool_),
                                      _op(L, "logical_not", [_op(L, "isinf", [x], dtype=bool_)], dtype=bool_)],
                   dtype=bool_)
    q = _op(L, "div", [_op(L, "where", [overflow, x, _op(L, "sub", [x, mod])]), y])
    # the remainder's sign differs from the divisor's: one less
    fix = _op(L, "logical_and", [_op(L, "ne", [mod, zero], dtype=bool_),
                                 _op(L, "logical_xor", [_op(L, "lt", [y, zero], dtype=bool_),
                                                        _op(L, "lt", [mod, zero], dtype=bool_)], dtype=bool_)],
              dtype=bool_)
    q = _op(L, "where", [fix, _op(L, "sub", [q, one]), q])
    fl = _op(L, "floor", [q])
    half = L.constant(0.5, dt)
    up = _op(L, "gt", [_op(L, "sub", [q, fl]), half], dtype=bool_)
    fl = _op(L, "where", [up, _op(L, "add", [fl, one]), fl])
    # a zero quotient takes the sign of x / y (0 * a finite value is a zero of that value's sign); a zero divisor
    # gives x / y itself (inf or NaN)
    fl = _op(L, "where", [_op(L, "eq", [q, zero], dtype=bool_), _op(L, "mul", [zero, basic]), fl])
    return _op(L, "where", [_op(L, "eq", [y, zero], dtype=bool_), basic, fl])


@register(aten.div)
def _div(L: Lowerer, node) -> int:
    a, b = node.args[0], node.args[1]
    mode = node.kwargs.get("rounding_mode", node.args[2] if len(node.args) > 2 else None)
    dt = L.promote(a, b)
    if mode is None:
        dt = _out_dtype(node)  # integer / integer is true division in the default float type
        cdt = _opmath(dt, b)
        return _op(L, "div", [_in(L, a, dt, cdt), L.operand(b, cdt)])
    _check_integer_divisor(dt, b)
    cdt = _opmath(dt, b)
    x, y = _in(L, a, dt, cdt), L.operand(b, cdt)
    dt = cdt
    if mode == "floor":
        return _floordiv(L, x, y) if dt.is_floating_point else _op(L, "floordiv", [x, y])
    if mode == "trunc" and dt.is_floating_point:
        return _op(L, "trunc", [_op(L, "div", [x, y])])
    if mode == "trunc":
        # integers, by a nonzero scalar c (_check_integer_divisor): floor(a/c), plus 1 where the quotient is negative
        # and inexact (fmod(a, c) != 0 and a, c of opposite signs), which is where floor and trunc differ
        q = _op(L, "floordiv", [x, y])
        r = _op(L, "fmod", [x, y])
        zero = L.constant(0, dt)
        inexact = _op(L, "ne", [r, zero], dtype=torch.bool)
        # the sign of c as the kernel sees it: eager converts the scalar to dt without a range check (200 on int8 is
        # -56; review, session 14)
        bits = 8 * dt.itemsize
        c = b % (1 << bits)
        c = c - (1 << bits) if dt != torch.uint8 and c >= 1 << (bits - 1) else c
        opposite = _op(L, "lt" if c > 0 else "gt", [x, zero], dtype=torch.bool)
        fix = L.cast(_op(L, "logical_and", [inexact, opposite], dtype=torch.bool), dt)
        return _op(L, "add", [q, fix])
    raise Unsupported(f"rounding_mode={mode!r} on {dt}")


@register(aten.pow)
def _pow(L: Lowerer, node) -> int:
    a, b = node.args[0], node.args[1]
    dt = _out_dtype(node)
    if isinstance(b, torch.fx.Node) and L.meta(b).dtype == torch.bool and (
            isinstance(a, bool) or (isinstance(a, torch.fx.Node) and L.meta(a).dtype == torch.bool)):
        raise Unsupported("pow of bool by a bool tensor (eager: not implemented for 'Bool')")
    if not isinstance(a, torch.fx.Node):
        return _op(L, "pow", [L.operand(a, dt), L.operand(b, dt)])
    # eager converts a scalar exponent of a float16 / bfloat16 / integer tensor to the dtype with a range check
    # (float32 / float64 keep it in double)
    check_scalar_fits(b, dt, "pow exponent", floats=dt in _LOWP)
    if isinstance(b, bool) and L.meta(a).dtype == torch.bool:
        if dt != torch.bool:
            # eager's pow copies the base (or fills ones) and keeps bool, torch's metadata says int64 (torch 2.13):
            # nodes downstream are typed from it too, so the graph runs as-is (review 16b)
            raise UnsupportedGraph(f"bool tensor ** {b}: torch's metadata says {dt}, eager returns bool")
        raise Unsupported("pow of a bool tensor")
    x = L.operand(a, dt)
    if isinstance(b, (int, float)) and not isinstance(b, bool):
        # ATen's pow(tensor, scalar) kernel special-cases these exponents the same way (exact results).
        if b == 1:
            return x
        if b == 2:
            return _op(L, "mul", [x, x])
        # x ** 3 and x ** -2 are one eager op: in float16 it computes them in float32 and rounds once, in bfloat16
        # (and the other dtypes) it rounds x * x first; float32 nodes make emulated casts round float16 once too
        # (review 16b: 579 of 3000 float16 cubes differed from eager under AUTOFUSE_EMULATE_PRECISION_CASTS=1)
        if dt == torch.float16 and b in (3, -2):
            x = L.cast(x, torch.float32)
        if b == 3:
            return _op(L, "mul", [_op(L, "mul", [x, x]), x])
        if not dt.is_floating_point and b < 0:
            raise Unsupported("integer tensor to a negative integer power (eager raises)")
        # eager's float16 kernel calls std::pow for +-0.5 (pow(-inf, 0.5) = +inf, pow(-0.0, -0.5) = +inf), the other
        # dtypes sqrt / rsqrt (NaN, -inf): follow each
        if dt.is_floating_point and dt != torch.float16:
            if b == 0.5:
                return _op(L, "sqrt", [x])
            if b == -0.5:
                return _op(L, "rsqrt", [x])
        if dt.is_floating_point:
            if b == -1:
                return _op(L, "reciprocal", [x])
            if b == -2:
                return _op(L, "reciprocal", [_op(L, "mul", [x, x])])
        if not math.isfinite(b) and not dt.is_floating_point:
            raise Unsupported("non-finite exponent on an integer tensor")
    return _op(L, "pow", [x, L.operand(b, dt)])


@register(aten.addcmul.default)
def _addcmul(L: Lowerer, node) -> int:
    """``x + value * t1 * t2`` as eager's CPU kernel computes it. Float dtypes: ``fma(value * t1, t2, x)``, one
    rounding, in the kernel's compute type (float32 for float16 / bfloat16, ``value`` read in it, the result rounded
    once to the dtype); measured, torch 2.13: every element of float16 / bfloat16 / float32 / float64 tensors,
    vectorized body and tails, strided or broadcast, any value, where the unfused ``x + (value * t1) * t2`` differs in
    10-30 % of the float32 / float64 elements and ~2 in 10^4 float16 / bfloat16 ones. ``value`` 1 multiplies by
    nothing (1 * t1 is t1 exactly). Integers wrap through mul, mul, add. The tensors are converted to the common dtype
    first (TensorIterator). A value eager's range check refuses, a float value on an integer tensor, a bool or
    symbolic value and bool tensors stay with ATen (eager raises or decides)."""
    x, t1, t2 = node.args[:3]
    value = node.kwargs.get("value", 1)
    dt = _out_dtype(node)
    if not all(isinstance(a, torch.fx.Node) for a in (x, t1, t2)):
        raise Unsupported("addcmul with a non-tensor operand")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Unsupported(f"addcmul value of type {type(value).__name__}")
    if dt == torch.bool:
        raise Unsupported("addcmul on bool tensors (eager: not implemented)")
    if not dt.is_floating_point:
        if isinstance(value, float):
            raise Unsupported(f"float value {value} on an integer addcmul (eager truncates it)")
        check_scalar_fits(value, dt, "addcmul value")
        scaled = _op(L, "mul", [L.constant(value, dt), L.operand(t1, dt)])
        return _op(L, "add", [L.operand(x, dt), _op(L, "mul", [scaled, L.operand(t2, dt)])])
    cdt = torch.float32 if dt in _LOWP else dt
    check_scalar_fits(value, cdt, "addcmul value")
    scaled = _in(L, t1, dt, cdt)
    if value != 1:
        scaled = _op(L, "mul", [L.constant(value, cdt), scaled])
    return _op(L, "fma", [scaled, _in(L, t2, dt, cdt), _in(L, x, dt, cdt)])


@register(aten.lerp.Scalar, aten.lerp.Tensor)
def _lerp(L: Lowerer, node) -> int:
    """``start + weight * (end - start)`` as eager's CPU kernel computes it: a fused multiply-add on one of two
    formulas chosen per element by ``|weight| < 0.5``, ``fma(weight, end - start, start)`` when it holds and
    ``fma(weight - 1, end - start, end)`` otherwise (so a NaN weight, and any weight <= -0.5 or >= 0.5, takes the
    second), in the kernel's compute type: float32 for float16 / bfloat16, rounded once to the dtype at the end.
    Measured, torch 2.13: every element of float16 / bfloat16 / float32 / float64 tensors (vectorized body and tails,
    strided, transposed, broadcast; weights in [-1.5, 2.5], 0, +-0.5, 1, NaN, +-inf; NaN / inf values), where torch's
    decomposition (``coeff * (end - start) + base``, the product rounded) differs in 10-39 % of the float32 / float64
    elements for weights 0.1-0.9 (docs/precision.md). A scalar weight is read in the compute type (eager's
    ``weight.to<float>()`` for float16 / bfloat16; an out-of-range one stays with ATen, which raises) and picks its
    formula here; a tensor weight (a 0-d one of another float dtype is first converted to the tensors' dtype, as
    TensorIterator does) gets a select per element. Non-float dtypes, symbolic weights and non-tensor ends stay
    with ATen."""
    start, end, weight = node.args[:3]
    dt = _out_dtype(node)
    if not dt.is_floating_point:
        raise Unsupported(f"lerp on {dt} (eager: not implemented)")
    if not all(isinstance(a, torch.fx.Node) for a in (start, end)):
        raise Unsupported("lerp with a non-tensor start or end")
    cdt = torch.float32 if dt in _LOWP else dt
    s, e = _in(L, start, dt, cdt), _in(L, end, dt, cdt)
    diff = _op(L, "sub", [e, s])
    if isinstance(weight, torch.fx.Node):
        w = _in(L, weight, dt, cdt)  # Unsupported for a symbolic scalar
        small = _op(L, "lt", [_op(L, "abs", [w]), L.constant(0.5, cdt)], dtype=torch.bool)
        coeff = _op(L, "where", [small, w, _op(L, "sub", [w, L.constant(1, cdt)])], dtype=cdt)
        base = _op(L, "where", [small, s, e], dtype=cdt)
        return _op(L, "fma", [coeff, diff, base])
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise Unsupported(f"lerp weight of type {type(weight).__name__}")
    check_scalar_fits(weight, cdt, "lerp weight")
    w = scalar_as(weight, cdt)
    if abs(w) < 0.5:
        return _op(L, "fma", [L.constant(w, cdt), diff, s])
    w_minus_1 = (torch.tensor(w, dtype=cdt) - 1).item()  # rounded in the compute type, as the kernel's weight - 1
    return _op(L, "fma", [L.constant(w_minus_1, cdt), diff, e])


@register(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def _where(L: Lowerer, node) -> int:
    cond, a, b = node.args
    dt = _out_dtype(node)
    for v in (a, b):
        check_scalar_fits(v, dt, "where scalar", floats=dt not in _LOWP)
    c = L.cast(L.value(cond), torch.bool)
    return _op(L, "where", [c, L.operand(a, dt), L.operand(b, dt)], dtype=dt)


def _value_dtype_can_overflow(src: torch.dtype, dt: torch.dtype) -> bool:
    """Whether some value of dtype ``src``, read as a Python-like scalar (``item()``: int64 or double), fails eager's
    range check on conversion to ``dt`` (``check_scalar_fits``): a float into an integer dtype (NaN), a wider float
    into a narrower one, an integer beyond the target's range ([-max, max] for unsigned targets; bool never)."""
    if src == torch.bool or dt == torch.bool:
        return False
    if dt.is_floating_point:
        lim = torch.finfo(src) if src.is_floating_point else torch.iinfo(src)
        return max(abs(lim.min), lim.max) > torch.finfo(dt).max
    if src.is_floating_point:
        return True
    s, d = torch.iinfo(src), torch.iinfo(dt)
    lo = -d.max if d.min == 0 else d.min
    return s.min < lo or s.max > d.max


@register(aten.masked_fill.Scalar, aten.masked_fill.Tensor)
def _masked_fill(L: Lowerer, node) -> int:
    """``where(mask, value, x)``. A Python value out of eager's range stays with ATen (``check_scalar_fits``); so does
    a 0-d tensor value whose dtype can hold one: eager checks ``value.item()`` at run time (even under an all-False
    mask), which a kernel cannot (review 16c)."""
    x, mask, value = node.args
    dt = _out_dtype(node)
    check_scalar_fits(value, dt, "masked_fill value")
    if isinstance(value, torch.fx.Node) and _value_dtype_can_overflow(L.meta(value).dtype, dt):
        raise Unsupported(f"masked_fill value of {L.meta(value).dtype} on {dt}: eager checks its range at run time")
    c = L.cast(L.value(mask), torch.bool)
    return _op(L, "where", [c, L.operand(value, dt), L.operand(x, dt)], dtype=dt)


@register(aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default)
def _clamp(L: Lowerer, node) -> int:
    x = L.value(node.args[0])
    dt = _out_dtype(node)
    x = L.cast(x, dt)
    packet = node.target.overloadpacket
    lo = hi = None
    if packet is aten.clamp:
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
    elif packet is aten.clamp_min:
        lo = node.args[1]
    else:
        hi = node.args[1]
    attrs = {}
    for key, bound in (("min", lo), ("max", hi)):
        if bound is None:
            continue
        if not isinstance(bound, (int, float)) or isinstance(bound, bool):
            raise Unsupported("non-constant clamp bound")
        check_scalar_fits(bound, dt, f"clamp {key}")
        attrs[key] = scalar_as(bound, dt)
    if not attrs:
        return x
    return _op(L, "clamp", [x], attrs=attrs)


@register(aten.clamp.Tensor, aten.clamp_min.Tensor, aten.clamp_max.Tensor)
def _clamp_tensor(L: Lowerer, node) -> int:
    dt = _out_dtype(node)
    x = L.operand(node.args[0], dt)
    packet = node.target.overloadpacket
    if packet is aten.clamp:
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
    else:
        lo, hi = (node.args[1], None) if packet is aten.clamp_min else (None, node.args[1])
    if lo is not None:
        x = _op(L, "maximum", [x, L.operand(lo, dt)])
    if hi is not None:
        x = _op(L, "minimum", [x, L.operand(hi, dt)])
    return x


# ---- backward helpers that AOTAutograd emits ------------------------------------------------------------------------

@register(aten.tanh_backward.default)
def _tanh_backward(L: Lowerer, node) -> int:
    dt = _out_dtype(node)
    g, y = L.operand(node.args[0], dt), L.operand(node.args[1], dt)
    one = L.constant(1, dt)
    return _op(L, "mul", [g, _op(L, "sub", [one, _op(L, "mul", [y, y])])])


@register(aten.sigmoid_backward.default)
def _sigmoid_backward(L: Lowerer, node) -> int:
    dt = _out_dtype(node)
    g, y = L.operand(node.args[0], dt), L.operand(node.args[1], dt)
    one = L.constant(1, dt)
    return _op(L, "mul", [_op(L, "mul", [g, y]), _op(L, "sub", [one, y])])


@register(aten.threshold_backward.default)
def _threshold_backward(L: Lowerer, node) -> int:
    dt = _out_dtype(node)
    g, x = L.operand(node.args[0], dt), L.operand(node.args[1], dt)
    c = _op(L, "le", [x, L.constant(node.args[2], dt)], dtype=torch.bool)
    return _op(L, "where", [c, L.constant(0, dt), g], dtype=dt)
