"""The reference interpreter against eager PyTorch: every op of the IR's op table, on every dtype the op accepts, on
random values and on hard ones (NaN, ±inf, -0.0, denormals, ties, integer extremes and overflow, negative operands of
division), on contiguous, transposed, expanded (stride 0), broadcast, size-1, 0-size and 0-d inputs.

Exact where eager is exact (integers, bool, comparisons, indices, NaN positions, and the correctly rounded float ops);
a few ulps for transcendental functions, because eager uses SLEEF's vectorized functions (error bound 1 ulp in f32 and
f64) while the interpreter rounds float64 results; sums compared within the error bound of eager's f32 accumulation.
The seed is printed on failure; replay with AUTOFUSE_TEST_SEED=<seed>.
"""

import pytest
import torch

from interp_eager_util import (ALL, FLOATS, INTEGRAL, INTS, NUMERIC, SEED, TORCH_DTYPE, assert_close, graph_text,
                               hard_values, int_range, ir_dtype_of, pairs, random_values, rng_for, to_tensor)

autofuse = pytest.importorskip("autofuse", reason="the autofuse package (python/autofuse) is not built")
_core = autofuse._core
interpret_fn = getattr(autofuse, "interpret", None) or getattr(_core, "interpret", None)
if interpret_fn is None:
    pytest.skip("the interpreter is not bound in autofuse yet (bind_interpreter.cpp)", allow_module_level=True)


def run_interp(text, inputs):
    return list(interpret_fn(_core.parse(text), list(inputs)))


def eager_or_skip(fn, *args):
    try:
        return fn(*args)
    except (RuntimeError, TypeError, NotImplementedError) as e:
        pytest.skip(f"eager refuses this case: {str(e).splitlines()[0]}")


# Transcendental ops and their allowance in ulps of the dtype (f16/bf16: 1 ulp, where f32 results that differ in
# their last bit round to neighbouring f16 values).
ULPS_F32 = {"exp": 4, "exp2": 4, "expm1": 4, "log": 4, "log2": 4, "log10": 4, "log1p": 4, "sin": 4, "cos": 4,
            "tan": 4, "tanh": 4, "sigmoid": 4, "erf": 4, "rsqrt": 2, "pow": 4, "atan2": 4,
            "sqrt": 1}
# Ops whose result for equal zeros of different sign eager leaves to its code path (see interp_scalar.h).
ZERO_SIGN_FREE = {"maximum", "minimum", "fmax", "fmin", "relu", "clamp", "amax", "amin"}


def ulps_for(op, dt):
    if dt in ("f16", "bf16") and op == "floordiv":
        return 1  # eager's vectorized f16/bf16 floor division differs by 1 ulp from its own scalar path
    if op not in ULPS_F32 or dt not in FLOATS:
        return 0
    return 1 if dt in ("f16", "bf16") else ULPS_F32[op]


def atol_for(op, dt):
    """Transcendental results in the subnormal range: eager's vectorized functions are not accurate there (erf of a
    bf16 denormal gives 0), so allow an absolute error of the dtype's smallest normal."""
    if op not in ULPS_F32 or dt not in FLOATS:
        return None
    if op == "erf" and dt == "bf16":
        return 2.0 ** -20  # eager's bf16 erf is inexact for tiny arguments: erf(1e-8) gives 0, erf(1e-6) 1.19e-6
    return float(torch.finfo(TORCH_DTYPE[dt]).smallest_normal)


UNARY = {
    "exp": torch.exp, "exp2": torch.exp2, "expm1": torch.expm1, "log": torch.log, "log2": torch.log2,
    "log10": torch.log10, "log1p": torch.log1p, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
    "reciprocal": torch.reciprocal, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "tanh": torch.tanh,
    "sigmoid": torch.sigmoid, "erf": torch.erf,
    "abs": torch.abs, "neg": torch.neg, "relu": torch.relu, "floor": torch.floor, "ceil": torch.ceil,
    "round": torch.round, "trunc": torch.trunc, "sign": torch.sign,
    "isnan": torch.isnan, "isinf": torch.isinf, "isfinite": torch.isfinite, "logical_not": torch.logical_not,
    "bitwise_not": torch.bitwise_not,
}
UNARY_DTYPES = {**{op: FLOATS for op in list(UNARY)[:16]},
                **{op: NUMERIC for op in ["abs", "neg", "relu", "floor", "ceil", "round", "trunc", "sign"]},
                **{op: ALL for op in ["isnan", "isinf", "isfinite", "logical_not"]}, "bitwise_not": INTEGRAL}

BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "floordiv": torch.floor_divide,
    "remainder": torch.remainder, "fmod": torch.fmod, "pow": torch.pow, "maximum": torch.maximum,
    "minimum": torch.minimum, "fmax": torch.fmax, "fmin": torch.fmin, "atan2": torch.atan2, "eq": torch.eq,
    "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
    "logical_and": torch.logical_and, "logical_or": torch.logical_or, "logical_xor": torch.logical_xor,
    "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor,
    "shl": torch.bitwise_left_shift, "shr": torch.bitwise_right_shift,
}
BINARY_DTYPES = {
    **{op: NUMERIC for op in ["add", "sub", "floordiv", "remainder", "fmod", "pow"]},
    **{op: ALL for op in ["mul", "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge",
                          "logical_and", "logical_or", "logical_xor"]},
    "div": FLOATS, "atan2": FLOATS, **{op: INTEGRAL for op in ["bitwise_and", "bitwise_or", "bitwise_xor"]},
    "shl": INTS, "shr": INTS,
}
INT_DIVISION = {"floordiv", "remainder", "fmod"}


def unary_cases():
    return [(op, dt) for op, dts in UNARY_DTYPES.items() for dt in dts]


def binary_cases():
    return [(op, dt) for op, dts in BINARY_DTYPES.items() for dt in dts]


def layouts(base_vals, dt, rng):
    """(name, tensor) variants of one operand built from random values: contiguous 2-d, transposed view, expanded
    (stride 0), size-1, 0-size, 0-d."""
    t = to_tensor(base_vals[:12], dt, (3, 4))
    return [
        ("contiguous", t),
        ("transposed", t.t()),
        ("expanded", t[:, :1].expand(3, 4)),
        ("size1", t[:1, :1]),
        ("empty", t[:0]),
        ("0-d", t[0, 0].clone()),
    ]


def binary_operands(op, dt, rng):
    """The two operands' values for a binary op: hard × hard pairs plus random values, with eager's refusals and
    crashes kept out (integer division by zero raises in eager; INT_MIN // -1 traps in i32/i64)."""
    hv = hard_values(dt)
    a, b = pairs(hv, hv)
    ra = list(random_values(dt, 64, rng, small=op == "pow"))
    rb = list(random_values(dt, 64, rng, small=op == "pow"))
    a, b = a + ra, b + rb
    if dt in INTS and op in ("shl", "shr"):
        bits = torch.iinfo(TORCH_DTYPE[dt]).bits
        counts = [-3, -1, 0, 1, 2, bits - 1, bits, bits + 1, bits + 5]
        b = [counts[i % len(counts)] for i in range(len(b))]
    if dt in FLOATS and op in ("fmod", "remainder"):
        # Eager's vectorized fmod goes through the quotient a / b and returns NaN where it overflows (its scalar path
        # and the interpreter give the exact remainder): keep such pairs out.
        big = float(torch.finfo(TORCH_DTYPE[dt]).max)
        b = [1.0 if y != 0 and abs(x) != float("inf") and abs(x) / big > abs(y) else y for x, y in zip(a, b)]
    if dt in INTS and op in INT_DIVISION:
        lo, _ = int_range(dt)
        b = [1 if y == 0 or (x == lo and y == -1 and dt in ("i32", "i64")) else y for x, y in zip(a, b)]
    return a, b


@pytest.mark.parametrize("op,dt", unary_cases())
def test_unary(op, dt):
    rng = rng_for(f"unary-{op}-{dt}")
    vals = hard_values(dt) + list(random_values(dt, 64, rng))
    cases = [("hard+random", to_tensor(vals, dt))] + layouts(list(random_values(dt, 12, rng)), dt, rng)
    for name, x in cases:
        want = eager_or_skip(UNARY[op], x)
        got = run_interp(graph_text(op, [(dt, tuple(x.shape))]), [x])[0]
        assert_close(got, want, f"{op}({dt}) on {name}", ulps=ulps_for(op, dt), atol=atol_for(op, dt),
                     zero_sign=op not in ZERO_SIGN_FREE)


@pytest.mark.parametrize("op,dt", binary_cases())
def test_binary(op, dt):
    rng = rng_for(f"binary-{op}-{dt}")
    a_vals, b_vals = binary_operands(op, dt, rng)
    a, b = to_tensor(a_vals, dt), to_tensor(b_vals, dt)
    cases = [("hard pairs+random", a, b)]
    # Broadcasting [3, 1] against [1, 4] and [4], a transposed and an expanded operand, 0-size, 0-d and size-1.
    m = to_tensor(b_vals[-12:], dt, (3, 4))
    cases += [("broadcast [3,1]x[1,4]", a[-3:].reshape(3, 1), b[-4:].reshape(1, 4)),
              ("broadcast [3,4]x[4]", a[-12:].reshape(3, 4), b[-4:]),
              ("transposed", a[-12:].reshape(4, 3).t(), m),
              ("expanded", a[-3:].reshape(3, 1).expand(3, 4), m),
              ("0-size", a[:0].reshape(0, 1), b[-4:].reshape(1, 4)),
              ("0-d", a[-1].clone(), m),
              ("0-d x 0-d", a[-1].clone(), b[-1].clone())]
    for name, x, y in cases:
        want = eager_or_skip(BINARY[op], x, y)
        got = run_interp(graph_text(op, [(dt, tuple(x.shape)), (dt, tuple(y.shape))]), [x, y])[0]
        assert_close(got, want, f"{op}({dt}, {dt}) on {name}", ulps=ulps_for(op, dt), atol=atol_for(op, dt),
                     zero_sign=op not in ZERO_SIGN_FREE)


@pytest.mark.parametrize("op", sorted(INT_DIVISION))
@pytest.mark.parametrize("dt", INTS)
def test_integer_division_by_zero_raises_like_eager(op, dt):
    a, b = to_tensor([5, -5, 3], dt), to_tensor([1, 0, 2], dt)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        BINARY[op](a, b)
    with pytest.raises(Exception, match=r"%y = " + op + r"\(%x0, %x1\): integer division by zero"):
        run_interp(graph_text(op, [(dt, (3,)), (dt, (3,))]), [a, b])


@pytest.mark.parametrize("dt", ALL)
def test_where(dt):
    rng = rng_for(f"where-{dt}")
    hv = hard_values(dt)
    a = to_tensor(hv + list(random_values(dt, 20, rng)), dt)
    b = to_tensor(list(random_values(dt, a.numel(), rng)), dt)
    c = to_tensor(list(rng.integers(0, 2, a.numel())), "bool")
    cases = [("flat", c, a, b), ("broadcast", c[:4].reshape(1, 4), a[:3].reshape(3, 1), b[:1].reshape(())),
             ("0-size", c[:0], a[:0], b[:0])]
    for name, cc, x, y in cases:
        text = graph_text("where", [("bool", tuple(cc.shape)), (dt, tuple(x.shape)), (dt, tuple(y.shape))])
        assert_close(run_interp(text, [cc, x, y])[0], torch.where(cc, x, y), f"where({dt}) on {name}")


@pytest.mark.parametrize("dt", FLOATS)
def test_fma(dt):
    """fma(a, b, c) against eager's fused multiply-add, ``torch.addcmul(c, a, b)`` (value 1: eager's CPU kernel is
    fma(value * t1, t2, self), measured on every element; docs/precision.md): bit for bit on every triple of hard
    values (fma(max, max, -inf) is -inf where the unfused sum is NaN), random triples and broadcast, transposed,
    0-size and 0-d operands."""
    rng = rng_for(f"fma-{dt}")
    hv = hard_values(dt)
    a = [x for x in hv for _ in hv for _ in hv] + list(random_values(dt, 300, rng, small=True))
    b = [y for _ in hv for y in hv for _ in hv] + list(random_values(dt, 300, rng, small=True))
    c = [z for _ in hv for _ in hv for z in hv] + list(random_values(dt, 300, rng, small=True))
    x, y, z = to_tensor(a, dt), to_tensor(b, dt), to_tensor(c, dt)
    cases = [("hard triples+random", x, y, z),
             ("broadcast [3,1]x[4]x[]", x[-3:].reshape(3, 1), y[-4:], z[-1].clone()),
             ("transposed", x[-12:].reshape(4, 3).t(), y[-12:].reshape(3, 4), z[-4:]),
             ("0-size", x[:0].reshape(0, 1), y[-4:], z[-4:]),
             ("0-d", x[-1].clone(), y[-1].clone(), z[-1].clone())]
    for name, p, q, r in cases:
        text = graph_text("fma", [(dt, tuple(t.shape)) for t in (p, q, r)])
        assert_close(run_interp(text, [p, q, r])[0], torch.addcmul(r, p, q), f"fma({dt}) on {name}")


def _scalar_text(v):
    if isinstance(v, float):
        return "nan" if v != v else ("inf" if v == float("inf") else "-inf" if v == float("-inf") else repr(float(v)))
    return str(v)


@pytest.mark.parametrize("dt", NUMERIC)
def test_clamp(dt):
    rng = rng_for(f"clamp-{dt}")
    x = to_tensor(hard_values(dt) + list(random_values(dt, 40, rng, small=True)), dt)
    bounds = [(-2, 5), (None, 3), (-1, None), (4, 1)] if dt in INTS else \
             [(-2.5, 5.0), (None, 0.0), (-0.0, None), (4.0, 1.0), (float("nan"), 1.0), (-float("inf"), float("inf"))]
    for lo, hi in bounds:
        attrs = ", ".join(f"{k}={_scalar_text(v)}" for k, v in (("min", lo), ("max", hi)) if v is not None)
        got = run_interp(graph_text("clamp", [(dt, tuple(x.shape))], attrs), [x])[0]
        want = eager_or_skip(lambda t: torch.clamp(t, min=lo, max=hi), x)
        assert_close(got, want, f"clamp({dt}, min={lo}, max={hi})", zero_sign=False)


@pytest.mark.parametrize("src", ALL)
@pytest.mark.parametrize("dst", ALL)
def test_cast(src, dst):
    rng = rng_for(f"cast-{src}-{dst}")
    vals = hard_values(src) + list(random_values(src, 64, rng))
    if src in FLOATS and dst in INTS:
        # Float -> integer is undefined in C++ (and so in eager) for NaN, inf and values out of the target's range;
        # the interpreter's choice is tested in C++ (InterpCast). Here: values that truncate into range.
        lo, hi = int_range(dst)
        vals = [v for v in vals if v == v and lo - 1 < v < hi + 1]
    x = to_tensor(vals, src)
    for name, t in [("flat", x), ("transposed", x[:12].reshape(3, 4).t()), ("0-d", x[0].clone())]:
        got = run_interp(graph_text("cast", [(src, tuple(t.shape))], f"dtype={dst}"), [t])[0]
        assert_close(got, t.to(TORCH_DTYPE[dst]), f"cast {src} -> {dst} on {name}")


def test_cast_float_to_int_out_of_range_matches_x86_eager():
    """NaN/inf/out-of-range float -> int: undefined in C++; eager on x86-64 gives INT_MIN of the 32- or 64-bit
    conversion, wrapped to narrower types. The interpreter reproduces that (documented in interp_scalar.h)."""
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 3e9, -3e9, 1e20, 300.0, -1.0])
    for dst in INTS:
        got = run_interp(graph_text("cast", [("f32", (8,))], f"dtype={dst}"), [x])[0]
        assert_close(got, x.to(TORCH_DTYPE[dst]), f"cast f32 -> {dst} of out-of-range values")


# ---- Layout ops (static shapes: their attributes name concrete sizes) ----

def _layout_input(dt, shape, name):
    rng = rng_for(name)
    n = 1
    for s in shape:
        n *= s
    return to_tensor(list(random_values(dt, n, rng)), dt, shape)


def _check_layout(op, inputs, attrs, want, ctx):
    text = graph_text(op, [(ir_dtype_of(x), tuple(x.shape)) for x in inputs], attrs, static=True)
    assert_close(run_interp(text, inputs)[0], want, ctx)


@pytest.mark.parametrize("dt", ALL)
def test_layout_ops(dt):
    x = _layout_input(dt, (2, 3, 4), f"layout-{dt}")
    for view_name, v in [("contiguous", x), ("permuted view", x.permute(2, 0, 1).contiguous().permute(1, 2, 0))]:
        for dims in ([2, 0, 1], [1, 0, 2], [-1, 0, 1], [0, 1, 2]):
            _check_layout("permute", [v], f"dims={dims}", v.permute(*dims), f"permute{dims} {dt} {view_name}")
        for shape in ([6, 4], [24], [4, 3, 2], [1, 24, 1]):
            _check_layout("reshape", [v], f"shape={shape}", v.reshape(shape), f"reshape{shape} {dt} {view_name}")
        for axis, start, stop, step in [(0, 0, 2, 1), (1, 1, 3, 1), (2, 0, 4, 3), (-1, 1, 4, 2), (1, 2, 2, 1)]:
            idx = [slice(None)] * 3
            idx[axis] = slice(start, stop, step)
            _check_layout("slice", [v], f"axis={axis}, start={start}, stop={stop}, step={step}", v[tuple(idx)],
                          f"slice axis={axis} [{start}:{stop}:{step}] {dt} {view_name}")
    col = _layout_input(dt, (3, 1), f"bcast-{dt}")
    for shape in ([3, 4], [2, 3, 4], [3, 1], [2, 3, 0]):
        _check_layout("broadcast_to", [col], f"shape={shape}", col.expand(shape), f"broadcast_to{shape} {dt}")
    scalar = col[0, 0].clone()
    _check_layout("broadcast_to", [scalar], "shape=[2, 2]", scalar.expand(2, 2), f"broadcast_to 0-d {dt}")
    a, b, e = x, _layout_input(dt, (2, 1, 4), f"cat-{dt}"), x[:, :0]
    _check_layout("concat", [a, b, e], "axis=1", torch.cat([a, b, e], 1), f"concat axis 1 {dt}")
    _check_layout("concat", [a, a.flip(0)], "axis=0", torch.cat([a, a.flip(0)], 0), f"concat axis 0 {dt}")
    _check_layout("concat", [a, a.transpose(0, 1).contiguous().transpose(0, 1)], "axis=-1",
                  torch.cat([a, a], -1), f"concat axis -1 {dt}")


# ---- Sources ----

@pytest.mark.parametrize("dt", ALL)
def test_sources(dt):
    values = {"bool": [0, 1], "f16": [1.5, -0.0, float("nan"), float("inf"), 1e-6, 0.1, 70000.0, 3]}.get(
        dt, [7, -3, 0, 100, 2.7, -2.7] if dt in INTS else [1.5, -0.0, float("nan"), -float("inf"), 1e-40, 0.1, 3, 1e300])
    for v in values:
        try:
            want = torch.full((), v, dtype=TORCH_DTYPE[dt])
        except RuntimeError:
            continue  # eager refuses a value that overflows the dtype (70000 in f16); the interpreter gives inf
        text = f"graph t() {{\n  %y = constant() {{value={_scalar_text(v)}, dtype={dt}}}\n  return %y\n}}\n"
        assert_close(run_interp(text, [])[0], want, f"constant {v} {dt}")
        try:
            want = torch.full((2, 3), v, dtype=TORCH_DTYPE[dt])
        except RuntimeError:
            continue
        text = f"graph t() {{\n  %y = full() {{value={_scalar_text(v)}, dtype={dt}, shape=[2, 3]}}\n  return %y\n}}\n"
        assert_close(run_interp(text, [])[0], want, f"full {v} {dt}")
    for length, start, step in [(5, 0, 1), (4, 5, -2), (0, 3, 1), (6, -3, 4)]:
        if dt == "bool":
            continue  # torch.arange has no bool dtype
        want = eager_or_skip(lambda: torch.arange(start, start + length * step, step, dtype=TORCH_DTYPE[dt]))
        text = (f"graph t() {{\n  %y = iota() {{length={length}, start={start}, step={step}, dtype={dt}}}\n"
                f"  return %y\n}}\n")
        assert_close(run_interp(text, [])[0], want, f"iota({length}, {start}, {step}) {dt}")


# ---- Reductions ----

REDUCE_DTYPES = {"sum": ALL, "prod": ALL, "amax": ALL, "amin": ALL, "argmax": NUMERIC, "argmin": NUMERIC,
                 "mean": FLOATS, "var": FLOATS, "any": ALL, "all": ALL}
AXES = [[], [0], [1], [-1], [0, 2], [1, 2], [0, 1, 2]]


def eager_reduce(op, x, axes, keepdim, correction=1):
    """The eager op for the IR reduction over `axes` ([] = all) with keepdim, spelled the way torch accepts it."""
    dims = sorted({a % x.dim() for a in axes}) if axes else list(range(x.dim()))
    keep_shape = [1 if d in dims else s for d, s in enumerate(x.shape)]
    out_shape = keep_shape if keepdim else [s for d, s in enumerate(x.shape) if d not in dims]
    if len(dims) == x.dim():  # all axes (and 0-d inputs)
        whole = torch.var(x, correction=correction) if op == "var" else getattr(torch, op)(x)
        return whole.reshape(out_shape)
    if op in ("argmax", "argmin", "prod"):
        if len(dims) == 1:
            return getattr(torch, op)(x, dim=dims[0], keepdim=keepdim)
        r = x  # torch.prod takes one dim: reduce them one at a time
        for d in reversed(dims):
            r = torch.prod(r, dim=d, keepdim=True)
        return r.reshape(out_shape)
    if op == "var":
        return torch.var(x, dim=dims, correction=correction, keepdim=keepdim)
    return getattr(torch, op)(x, dim=dims, keepdim=keepdim)


def reduce_input(op, dt, shape, rng):
    n = 1
    for s in shape:
        n *= s
    if op == "prod" and dt in FLOATS:
        vals = list(rng.uniform(0.5, 2.0, n) * rng.choice([-1, 1], n))
    elif dt in FLOATS:
        vals = list(random_values(dt, n, rng))
        hv = [float("nan"), float("inf"), -float("inf"), -0.0, 0.0]
        for k, pos in enumerate(rng.choice(n, min(n, len(hv)), replace=False)):
            vals[pos] = hv[k]
        if n > 10:
            vals[7] = vals[3]  # a tie
    else:
        vals = list(random_values(dt, n, rng, small=op in ("argmax", "argmin") or op == "prod"))
    return to_tensor(vals, dt, shape)


def reduce_tolerance(op, dt, x, axes, keepdim, want):
    """Error bound for float reductions: eager accumulates in f32 (f16/bf16/f32) or f64, in another order."""
    if dt not in FLOATS or op not in ("sum", "mean", "var", "prod"):
        return 0, None
    eps = 2.0 ** -53 if dt == "f64" else 2.0 ** -24
    n = max(1, x.numel() // max(1, want.numel()))
    xd = x.double()
    if op == "sum":
        atol = 2 * n * eps * eager_reduce("sum", xd.abs(), axes, keepdim)
    elif op == "mean":
        atol = 2 * eps * eager_reduce("sum", xd.abs(), axes, keepdim)
    elif op == "var":
        atol = 8 * n * eps * eager_reduce("sum", xd * xd, axes, keepdim) / max(1, n - 1)
    else:
        # Eager multiplies f16/bf16 in the storage type, rounding after each step.
        eps = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8}.get(dt, eps)
        atol = 2 * n * eps * want.double().abs()
    return 1, atol


@pytest.mark.filterwarnings("ignore:var.*degrees of freedom")
@pytest.mark.parametrize("op", list(REDUCE_DTYPES))
@pytest.mark.parametrize("dt", ALL)
def test_reduce(op, dt):
    if dt not in REDUCE_DTYPES[op]:
        pytest.skip(f"{op} does not take {dt}" + (" in eager" if op.startswith("arg") else " in the IR"))
    rng = rng_for(f"reduce-{op}-{dt}")
    x = reduce_input(op, dt, (3, 4, 5), rng)
    cases = [(name, v, axes) for name, v in [("contiguous", x), ("permuted view", x.transpose(0, 2).contiguous()
                                                                  .transpose(0, 2))] for axes in AXES]
    cases += [("size-1 dims", x[:1, :, :1], [0, 2]), ("0-d", x[0, 0, 0].clone(), []),
              ("0-size kept", x[:, :0], [0]), ("0-size reduced", x[:0], [0])]
    for name, v, axes in cases:
        if op in ("argmax", "argmin") and len(axes) > 1:
            continue  # the IR's argmax/argmin reduce one axis or all
        for keepdim in (False, True):
            attrs = f"axes={axes}, keepdim={'true' if keepdim else 'false'}" + (", correction=1" if op == "var" else "")
            text = graph_text(op, [(dt, tuple(v.shape))], attrs)
            ctx = f"{op}({dt}) axes={axes} keepdim={keepdim} on {name} {tuple(v.shape)}"
            try:
                want = eager_reduce(op, v, axes, keepdim)
            except (RuntimeError, IndexError) as e:
                # Eager refuses (amax/argmax over zero elements): the interpreter must refuse too.
                with pytest.raises(Exception, match="zero elements"):
                    run_interp(text, [v])
                continue
            ulps, atol = reduce_tolerance(op, dt, v, axes, keepdim, want)
            assert_close(run_interp(text, [v])[0], want, ctx, ulps=ulps, atol=atol, zero_sign=False)


@pytest.mark.filterwarnings("ignore:var.*degrees of freedom")
@pytest.mark.parametrize("correction", [0, 1, 2, 7])
def test_var_corrections(correction):
    x = reduce_input("var", "f64", (2, 6), rng_for(f"var-{correction}"))
    x = torch.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-3.0)
    text = graph_text("var", [("f64", (2, 6))], f"axes=[1], keepdim=false, correction={correction}")
    want = torch.var(x, dim=1, correction=correction)
    assert_close(run_interp(text, [x])[0], want, f"var correction={correction}", ulps=4)


# ---- Whole graphs, the op table in sync with this suite, and what the interpreter refuses ----

@pytest.mark.parametrize("dt", ["f16", "bf16", "f32", "f64"])
def test_softmax_graph(dt):
    text = f"""graph softmax(%x: {dt}[s0, s1]) {{
  %m = amax(%x) {{axes=[1], keepdim=true}}
  %d = sub(%x, %m)
  %e = exp(%d)
  %s = sum(%e) {{axes=[1], keepdim=true}}
  %y = div(%e, %s)
  return %y
}}
"""
    x = to_tensor(list(random_values(dt, 35, rng_for(f"softmax-{dt}"), small=True)), dt, (5, 7))
    d = x - torch.amax(x, 1, keepdim=True)
    e = torch.exp(d)
    want = e / torch.sum(e, 1, keepdim=True)
    tol = 2.0 ** -20 if dt in ("f32", "f64") else 0
    assert_close(run_interp(text, [x])[0], want, f"softmax {dt}", ulps=4, atol=tol)


@pytest.mark.parametrize("dt", FLOATS + ["i32", "u8"])
def test_chain_rounds_after_each_node(dt, monkeypatch):
    """(x + y) - y and x * y / y: every node's result is rounded to the dtype before the next node reads it, as in
    eager, so small x against large y loses bits (f16/bf16 especially) and integers wrap between nodes. For f16/bf16
    that is the AUTOFUSE_EMULATE_PRECISION_CASTS=1 policy (by default f16/bf16 stay in float32 inside a graph:
    docs/precision.md)."""
    monkeypatch.setenv("AUTOFUSE_EMULATE_PRECISION_CASTS", "1")
    text = f"""graph chain(%x: {dt}[n], %y: {dt}[n]) {{
  %a = add(%x, %y)
  %b = sub(%a, %y)
  %c = mul(%b, %y)
  %d = maximum(%c, %x)
  return %b, %c, %d
}}
"""
    rng = rng_for(f"chain-{dt}")
    x = to_tensor(list(random_values(dt, 50, rng)), dt)
    y = to_tensor(list(random_values(dt, 50, rng)), dt)
    b = (x + y) - y
    want = [b, b * y, torch.maximum(b * y, x)]
    for k, (got, w) in enumerate(zip(run_interp(text, [x, y]), want)):
        assert_close(got, w, f"chain output {k} ({dt})", zero_sign=k != 2)


def test_extern_is_refused():
    text = 'graph t(%x0: f32[3]) {\n  %y = extern(%x0) {name="aten.mm", dtype=f32, shape=[3]}\n  return %y\n}\n'
    with pytest.raises(Exception, match="cannot be run by the reference interpreter"):
        run_interp(text, [torch.zeros(3)])


COVERED = (set(UNARY) | set(BINARY) | set(REDUCE_DTYPES) | {"fma", "where", "clamp", "cast"}
           | {"broadcast_to", "reshape", "permute", "slice", "concat"} | {"constant", "full", "iota"}
           | {"input", "extern"})


def test_every_op_in_the_table_is_covered():
    table = set(_core.op_names())
    assert table - COVERED == set(), f"ops without an eager comparison: {sorted(table - COVERED)}"
    assert COVERED - table == set(), f"ops tested here but absent from the table: {sorted(COVERED - table)}"
