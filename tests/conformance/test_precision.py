"""The mixed-precision policy (docs/precision.md), tested: with ``AUTOFUSE_EMULATE_PRECISION_CASTS=1`` kernels round
every f16/bf16 node to its dtype right away, exactly as eager rounds after every op, so float16/bfloat16 elementwise
chains through the backend match eager bit for bit. By default (``=0``) kernels keep float32 between ops and round at
their outputs: those results are judged by tests/conformance/compare.py (eager's tolerance, or no further from a
float64 reference than eager plus one ulp). Reductions accumulate in float32 under both.
"""

from __future__ import annotations

import importlib.util
import pathlib
import random

import pytest
import torch

from autofuse import backend

_spec = importlib.util.spec_from_file_location("af_conformance_compare_prec", pathlib.Path(__file__).parent / "compare.py")
_compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_compare)

SEED = random.randrange(1 << 30)
print(f"test_precision seed {SEED}")

native = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel path (_core.Kernel)")

#: Correctly rounded float32 ops: the float32 result rounded to f16/bf16 is what eager computes, bit for bit.
EXACT_CHAINS = {
    "add_mul_sub": lambda x, y: (x + y) * y - x,
    "div_max_min": lambda x, y: torch.minimum(torch.maximum(x / y, y), x * 3),
    "neg_abs_relu": lambda x, y: torch.relu(-torch.abs(x - y)) + torch.relu(x),
    "where_cmp": lambda x, y: torch.where(x > y, x * y, y - x),
    "sqrt_chain": lambda x, y: torch.sqrt(torch.abs(x)) * y + x,
    "clamp_round": lambda x, y: torch.clamp(x * y, -1.5, 2.25).floor() + torch.round(y),
}
#: Chains with a Python scalar: eager's mul/div keep the scalar in float32 (ATen's opmath), add/sub round it to the
#: tensor's dtype; the lowering follows both rules (lowering_pointwise._opmath).
SCALAR_CHAINS = {
    "mul_scalar": lambda x, y: x * 0.1 + y,
    "add_scalar": lambda x, y: (x + 0.3) * y,
    "div_scalar": lambda x, y: x / 0.3 - y,
    "sub_scalar": lambda x, y: (x - 0.7) * y - (1.1 - y),
}


def _ref64(name, x, y):
    """The chain on float64 inputs, with each Python scalar as eager's f16/bf16 op sees it (add/sub: rounded to the
    tensor's dtype; mul/div: float32), so the reference computes the same program exactly."""
    if name not in SCALAR_CHAINS:
        return {**EXACT_CHAINS, **TRANSCENDENTAL_CHAINS}[name](x.double(), y.double())
    lowp = lambda v: float(torch.tensor(v).to(x.dtype))  # noqa: E731
    f32 = lambda v: float(torch.tensor(v, dtype=torch.float32))  # noqa: E731
    xd, yd = x.double(), y.double()
    return {
        "mul_scalar": lambda: xd * f32(0.1) + yd,
        "add_scalar": lambda: (xd + lowp(0.3)) * yd,
        "div_scalar": lambda: xd / f32(0.3) - yd,
        "sub_scalar": lambda: (xd - lowp(0.7)) * yd - (lowp(1.1) - yd),
    }[name]()


#: Transcendental functions: float32 results from different libm implementations may differ by an ulp of float32,
#: which can flip the f16/bf16 rounding; allowed one ulp of the low-precision dtype.
TRANSCENDENTAL_CHAINS = {
    "exp_tanh": lambda x, y: torch.tanh(torch.exp(x) * y),
    "sigmoid_log": lambda x, y: torch.sigmoid(x) + torch.log(torch.abs(y) + 1),
}


def _inputs(dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(37, 53, generator=g) * 3).to(dtype)
    y = (torch.randn(37, 53, generator=g) + 0.5).to(dtype)
    return x, y


def _compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="autofuse", dynamic=False)


@native
@pytest.mark.parametrize("emulate", ["0", "1"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("name", sorted(EXACT_CHAINS) + sorted(SCALAR_CHAINS))
def test_lowp_chain_bitwise(name, dtype, emulate, monkeypatch):
    monkeypatch.setenv("AUTOFUSE_EMULATE_PRECISION_CASTS", emulate)
    fn = {**EXACT_CHAINS, **SCALAR_CHAINS}[name]
    x, y = _inputs(dtype, SEED)
    n0 = len(backend.RECORDS)
    got = _compiled(fn)(x, y)
    want = fn(x, y)
    assert all(r.mode == "kernels" and r.kernels for r in backend.RECORDS[n0:])
    if emulate == "0":  # float32 inside the kernel: judged against eager and a float64 reference (perf, 2026-11-29)
        _compare.assert_same(got, want, _ref64(name, x, y), what=f"{name} {dtype} seed {SEED}")
        return
    bad = (got.view(torch.int16) != want.view(torch.int16)) & ~(got.isnan() & want.isnan())
    assert not bool(bad.any()), (f"{name} {dtype} seed {SEED}: {int(bad.sum())} of {bad.numel()} elements differ "
                                 f"from eager bitwise, e.g. ours {got[bad][:4].tolist()} eager {want[bad][:4].tolist()}")


@native
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("name", sorted(TRANSCENDENTAL_CHAINS))
def test_lowp_transcendental_within_one_ulp(name, dtype, monkeypatch):
    """Per-op rounding (AUTOFUSE_EMULATE_PRECISION_CASTS=1): within one ulp of the dtype of eager."""
    monkeypatch.setenv("AUTOFUSE_EMULATE_PRECISION_CASTS", "1")
    fn = TRANSCENDENTAL_CHAINS[name]
    x, y = _inputs(dtype, SEED)
    got, want = _compiled(fn)(x, y), fn(x, y)
    assert torch.equal(got.isnan(), want.isnan())
    ok = ~want.isnan()
    ulp = torch.finfo(dtype).eps * want[ok].float().abs().clamp_min(torch.finfo(dtype).tiny)
    err = (got[ok].float() - want[ok].float()).abs()
    assert bool((err <= ulp * 1.0001).all()), f"{name} {dtype} seed {SEED}: max error {float((err / ulp).max())} ulp"


@native
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("name", sorted(TRANSCENDENTAL_CHAINS))
def test_lowp_transcendental_float32_inside(name, dtype, monkeypatch):
    """The default policy (float32 between ops): judged against eager and the float64 reference (compare.py)."""
    monkeypatch.setenv("AUTOFUSE_EMULATE_PRECISION_CASTS", "0")
    fn = TRANSCENDENTAL_CHAINS[name]
    x, y = _inputs(dtype, SEED)
    got, want = _compiled(fn)(x, y), fn(x, y)
    _compare.assert_same(got, want, _ref64(name, x, y), what=f"{name} {dtype} seed {SEED}")


@native
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
def test_lowp_reduction_accumulates_in_float32(dtype):
    """A sum of 4096 ones in f16/bf16: eager accumulates in float32 and so must we (naive f16 accumulation stalls
    at 2048 for f16 and 256 for bf16)."""
    x = torch.ones(4096, dtype=dtype)
    got = _compiled(lambda t: t.sum())(x)
    assert got.dtype == dtype and float(got) == 4096.0 == float(x.sum())
