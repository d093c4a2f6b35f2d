"""Helpers for test_interp_vs_eager.py: dtype tables, value generators (random plus hard values), IR text for one op,
and the comparison of an interpreter result with eager PyTorch's (exact, or within a stated number of ulps).

The seed of every random draw comes from AUTOFUSE_TEST_SEED (default 20261129) and the test's own name, so a failure
replays with the seed its message prints: AUTOFUSE_TEST_SEED=<seed> pytest -k <test>.
"""

import os
import zlib

import numpy as np
import torch

SEED = int(os.environ.get("AUTOFUSE_TEST_SEED", "20261129"))

TORCH_DTYPE = {
    "bool": torch.bool, "u8": torch.uint8, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32,
    "i64": torch.int64, "f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
}
FLOATS = ["f16", "bf16", "f32", "f64"]
INTS = ["u8", "i8", "i16", "i32", "i64"]
ALL = ["bool"] + INTS + FLOATS
NUMERIC = INTS + FLOATS
INTEGRAL = ["bool"] + INTS

# Significand bits after the point and the smallest normal exponent, per floating dtype (IEEE 754 / bfloat16).
_MANT = {"f16": 10, "bf16": 7, "f32": 23, "f64": 52}
_EMIN = {"f16": -14, "bf16": -126, "f32": -126, "f64": -1022}


def rng_for(name):
    """A numpy Generator seeded by SEED and a test-specific name."""
    return np.random.default_rng([SEED, zlib.crc32(name.encode())])


def int_range(dt):
    info = torch.iinfo(TORCH_DTYPE[dt])
    return info.min, info.max


def hard_values(dt):
    """The values every test includes for a dtype: NaN, ±inf, -0.0, denormals, ties for rounding, extremes."""
    if dt == "bool":
        return [0, 1]
    if dt in INTS:
        lo, hi = int_range(dt)
        vals = [0, 1, -1, 2, -2, 3, -7, 7, lo, hi, lo + 1, hi - 1]
        return [v for v in vals if lo <= v <= hi]
    fi = torch.finfo(TORCH_DTYPE[dt])
    denorm = float(fi.smallest_normal) / 4
    return [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, denorm, -denorm, float(fi.smallest_normal), 1.0,
            -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, -7.0, float(fi.max), -float(fi.max), 1e-3, 100.0]


def random_values(dt, n, rng, small=False):
    """n random values of dtype dt as a float64 or int64 numpy array (floats spread over many magnitudes; integers
    half small, half over the whole range unless small)."""
    if dt == "bool":
        return rng.integers(0, 2, n)
    if dt in INTS:
        lo, hi = int_range(dt)
        vals = rng.integers(max(lo, -20), min(hi, 20) + 1, n, dtype=np.int64)
        if not small:
            wide = rng.integers(lo, hi, n, dtype=np.int64, endpoint=True)
            vals = np.where(rng.random(n) < 0.5, vals, wide)
        return vals
    mags = 10.0 ** rng.uniform(-3, 1 if small else 3, n)
    return rng.standard_normal(n) * mags


def to_tensor(vals, dt, shape=None):
    """A torch tensor of dtype dt from a numpy array (floats rounded like eager's .to(); integers wrapped)."""
    arr = np.asarray(vals)
    if dt in FLOATS:
        t = torch.tensor(arr.astype(np.float64), dtype=torch.float64).to(TORCH_DTYPE[dt])
    else:
        t = torch.tensor(arr.astype(np.int64), dtype=torch.int64)
        t = (t != 0) if dt == "bool" else t.to(TORCH_DTYPE[dt])
    return t.reshape(shape) if shape is not None else t


def pairs(a_vals, b_vals):
    """Every (a, b) combination: the two operands as flat lists of len(a) * len(b)."""
    a = [x for x in a_vals for _ in b_vals]
    b = [y for _ in a_vals for y in b_vals]
    return a, b


def _dim(size, static):
    return str(size) if size == 1 or static else f"n{size}"


def ir_type(dt, shape, static=False):
    """IR type text. Symbolic sizes unless static: size 1 stays the constant 1 (so broadcasting is provable), any
    other size k becomes the symbol n<k> (equal sizes share a symbol)."""
    return f"{dt}[{', '.join(_dim(s, static) for s in shape)}]"


def graph_text(op, in_specs, attrs="", static=False):
    """IR text of a graph with one node `%y = op(%x0, ...) {attrs}` returning %y; in_specs: (dtype, shape) each."""
    params = ", ".join(f"%x{i}: {ir_type(dt, shape, static)}" for i, (dt, shape) in enumerate(in_specs))
    args = ", ".join(f"%x{i}" for i in range(len(in_specs)))
    attr = f" {{{attrs}}}" if attrs else ""
    return f"graph t({params}) {{\n  %y = {op}({args}){attr}\n  return %y\n}}\n"


def ir_dtype_of(t):
    return next(k for k, v in TORCH_DTYPE.items() if v == t.dtype)


def ulp(w, dt):
    """The spacing of dtype dt's values at |w| (w a float64 tensor); the subnormal spacing below the normal range."""
    m, e = torch.frexp(w.abs())
    e = torch.where(w == 0, torch.full_like(e, _EMIN[dt] + 1), e)
    return torch.ldexp(torch.ones_like(w), (torch.clamp(e - 1, min=_EMIN[dt]) - _MANT[dt]).to(torch.int32))


def assert_close(got, want, ctx, ulps=0, atol=None, zero_sign=True):
    """Check an interpreter result against eager's. Integers and bool: exactly equal. Floats: same NaN positions, same
    infinities, finite values within `ulps` ulps of want's dtype plus `atol` (a float64 tensor or number); ulps=0 and
    no atol demands equality, including the sign of zero unless zero_sign is False."""
    assert got.dtype == want.dtype, f"{ctx}: dtype {got.dtype}, eager {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{ctx}: shape {tuple(got.shape)}, eager {tuple(want.shape)}"
    if not want.is_floating_point():
        bad = (got != want).nonzero()
        assert bad.numel() == 0, f"{ctx}: {bad.shape[0]} mismatches, first at {bad[0].tolist()}: got " \
                                 f"{got[tuple(bad[0])].item()}, eager {want[tuple(bad[0])].item()}"
        return
    dt = ir_dtype_of(want)
    g, w = got.double(), want.double()
    gn, wn = torch.isnan(g), torch.isnan(w)
    _first_bad(ctx, gn != wn, g, w, "NaN position")
    fin = torch.isfinite(w) & torch.isfinite(g)
    _first_bad(ctx, ~wn & ~fin & (g != w), g, w, "infinity")
    tol = torch.zeros_like(w)
    if ulps:
        tol = tol + ulps * ulp(w, dt)
    if atol is not None:
        tol = tol + atol
    _first_bad(ctx, fin & ((g - w).abs() > tol), g, w, f"value beyond {ulps} ulp" + (" + atol" if atol is not None else ""))
    if zero_sign and not ulps and atol is None:
        _first_bad(ctx, fin & (g == 0) & (torch.signbit(g) != torch.signbit(w)), g, w, "sign of zero")


def _first_bad(ctx, mask, g, w, what):
    if mask.any():
        idx = tuple(mask.nonzero()[0].tolist())
        raise AssertionError(f"{ctx}: {int(mask.sum())} elements differ ({what}); first at {list(idx)}: got "
                             f"{g[idx].item()!r}, eager {w[idx].item()!r} (seed {SEED})")
