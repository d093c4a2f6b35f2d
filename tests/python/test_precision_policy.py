"""The mixed-precision policy through the torch backend (docs/precision.md, issue 7).

- With ``AUTOFUSE_EMULATE_PRECISION_CASTS=1`` kernels round every f16/bf16 op's result, as eager does after each ATen
  op, so elementwise chains of correctly rounded ops match eager bit for bit: ``torch.equal`` on the finite values and
  the same NaN positions, on inputs that include NaN, +-inf, -0.0, overflow and subnormals.
- By default kernels keep float32 between ops and round at the kernel's outputs: the result is then judged against a
  float64 reference (the same function on the inputs upcast to float64): it must be within half an ulp of the
  low-precision dtype plus a few float32 ulps of it wherever the value is in range, which eager's per-op rounding
  does not always achieve.
"""

from __future__ import annotations

import os

import pytest
import torch

from autofuse import backend

# A fixed default keeps make test reproducible; AUTOFUSE_TEST_SEED explores other draws.
SEED = int(os.environ.get("AUTOFUSE_TEST_SEED", "20261129"))
print(f"test_precision_policy seed {SEED} (AUTOFUSE_TEST_SEED)")

needs_native = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel path (_core.Kernel)")

#: Chains of correctly rounded ops (each f32 result rounded to f16/bf16 is eager's result).
CHAINS = {
    "add_mul_sub": lambda x, y: (x + y) * y - x,
    "div_max_min": lambda x, y: torch.minimum(torch.maximum(x / y, y), x * 3),
    "abs_neg_relu": lambda x, y: torch.relu(-torch.abs(x - y)) + torch.relu(x) * y,
    "where_cmp": lambda x, y: torch.where(x > y, x * y, y - x),
    "sqrt_chain": lambda x, y: torch.sqrt(torch.abs(x)) * y + x / (y * y + 1),
}


def _inputs(dtype: torch.dtype, seed: int, specials: bool):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(41, 67, generator=g) * 4
    y = torch.randn(41, 67, generator=g) + 0.25
    if specials:
        big = torch.finfo(dtype).max
        tiny = torch.finfo(dtype).tiny
        vals = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0, big, -big, tiny / 4, 3 * tiny])
        for t in (x, y):
            idx = torch.randint(0, t.numel(), (40,), generator=g)
            t.view(-1)[idx] = vals[torch.randint(0, len(vals), (40,), generator=g)]
    return x.to(dtype), y.to(dtype)


def _compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="autofuse", dynamic=False)


def _ran_kernels(n0: int) -> bool:
    return all(r.mode == "kernels" and r.kernels for r in backend.RECORDS[n0:]) and len(backend.RECORDS) > n0


def _assert_same_bits(got: torch.Tensor, want: torch.Tensor, what: str, *inputs: torch.Tensor) -> None:
    """16-bit float results equal to eager bit for bit (the sign of zeros included), NaN where eager has NaN; the
    message shows the first differing elements of ``inputs`` (same shape as the results)."""
    assert torch.equal(got.isnan(), want.isnan()), f"{what}: NaN positions differ"
    ok = ~want.isnan()
    bad = got[ok].view(torch.int16) != want[ok].view(torch.int16)
    assert not bool(bad.any()), (f"{what}: {int(bad.sum())} of {want.numel()} differ from eager, e.g. inputs "
                                 f"{[t[ok][bad][:3].tolist() for t in inputs]}: ours {got[ok][bad][:3].tolist()} "
                                 f"eager {want[ok][bad][:3].tolist()}")


@needs_native
@pytest.mark.parametrize("specials", [False, True], ids=["normal", "specials"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_emulated_casts_match_eager_bitwise(name, dtype, specials, monkeypatch):
    monkeypatch.setenv("AUTOFUSE_EMULATE_PRECISION_CASTS", "1")
    fn = CHAINS[name]
    x, y = _inputs(dtype, SEED, specials)
    n0 = len(backend.RECORDS)
    got = _compiled(fn)(x, y)
    want = fn(x, y)
    assert _ran_kernels(n0), "the chain must run as autofuse kernels (no silent fallback to eager)"
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got.isnan(), want.isnan()), f"{name} {dtype} seed {SEED}: NaN positions differ"
    ok = ~want.isnan()
    assert torch.equal(got[ok], want[ok]), (
        f"{name} {dtype} seed {SEED}: {int((got[ok] != want[ok]).sum())} values differ from eager")
    # torch.equal treats -0.0 == 0.0; the sign of zero is part of the bits.
    assert torch.equal(got[ok].view(torch.int16), want[ok].view(torch.int16)), f"{name} {dtype}: sign of a zero differs"


@needs_native
@pytest.mark.parametrize("alpha", [3, 0.1, -2.5])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("op", ["add", "sub", "rsub"])
def test_emulated_alpha_matches_eager_bitwise(op, dtype, alpha, monkeypatch):
    """Regression (review, session 14): ``torch.add(a, b, alpha=k)`` is one eager op computed in float32 with k rounded
    to the dtype; lowered as a rounded mul then add, ~27 % of the elements differed from eager under emulated casts.
    4096 elements: eager's vectorized loop covers them all (below its parallel grain size, a multiple of the vector
    length); its scalar tail rounds the product first, so longer odd-sized tensors differ from eager in a few tail
    elements whichever way a compiler computes."""
    monkeypatch.setenv("AUTOFUSE_EMULATE_PRECISION_CASTS", "1")
    g = torch.Generator().manual_seed(SEED)
    x, y = (torch.randn(4096, generator=g) * 3).to(dtype), (torch.randn(4096, generator=g) * 3).to(dtype)
    fn = {"add": lambda a, b: torch.add(a, b, alpha=alpha), "sub": lambda a, b: torch.sub(a, b, alpha=alpha),
          "rsub": lambda a, b: torch.rsub(a, b, alpha=alpha)}[op]
    n0 = len(backend.RECORDS)
    got = _compiled(fn)(x, y)
    assert _ran_kernels(n0)
    want = fn(x, y)
    assert torch.equal(got.view(torch.int16), want.view(torch.int16)), (
        f"{op} alpha={alpha} {dtype}: {int((got != want).sum())} of 4096 differ from eager")


@needs_native
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_default_rounds_once_against_float64(name, dtype, monkeypatch):
    monkeypatch.delenv("AUTOFUSE_EMULATE_PRECISION_CASTS", raising=False)
    fn = CHAINS[name]
    x, y = _inputs(dtype, SEED, specials=False)
    n0 = len(backend.RECORDS)
    got = _compiled(fn)(x, y)
    assert _ran_kernels(n0)
    eager = fn(x, y)
    ref = fn(x.double(), y.double())
    fin = ref.isfinite() & (ref.abs() <= torch.finfo(dtype).max)
    err = (got.double() - ref).abs()[fin]
    # Rounding once at the output: half an ulp of the dtype, plus float32's own errors amplified by at most the
    # chain's cancellation; bounded here by 2^-20 of the largest intermediate magnitude the chains produce (|x*y| <~
    # 100, so ~1e-4 absolute) -- far below one bf16/f16 ulp of typical values.
    ulp = torch.finfo(dtype).eps * ref.abs()[fin].clamp_min(torch.finfo(dtype).tiny)
    bound = 0.5 * ulp + 1e-4
    assert bool((err <= bound).all()), (
        f"{name} {dtype} seed {SEED}: max error {float((err / ulp).max()):.3f} ulp of the dtype vs float64")
    # Never worse than eager's per-op rounding by more than one ulp (the policy of tests/conformance/compare.py).
    err_eager = (eager.double() - ref).abs()[fin]
    assert bool((err <= err_eager + ulp).all()), f"{name} {dtype}: further from float64 than eager"
    # And per-op rounding shows up somewhere, or this test would not distinguish the policies.
    if name in ("add_mul_sub", "sqrt_chain"):
        assert not torch.equal(got, eager), f"{name} {dtype}: expected the f32-inside result to differ from eager's"


@needs_native
def test_policy_is_part_of_the_kernel_key(monkeypatch):
    """Compiling the same chain under both settings in one process gives two kernels with different sources."""
    fn = CHAINS["add_mul_sub"]
    x, y = _inputs(torch.bfloat16, SEED, specials=False)
    srcs = {}
    for env in ("0", "1"):
        monkeypatch.setenv("AUTOFUSE_EMULATE_PRECISION_CASTS", env)
        n0 = len(backend.RECORDS)
        _compiled(fn)(x, y)
        steps = [s for r in backend.RECORDS[n0:] for s in r.kernels]
        assert steps and all(s.kernel is not None for s in steps)
        srcs[env] = [s.kernel.source for s in steps]
    assert all("precision policy: f32-inside" in s for s in srcs["0"])
    assert all("precision policy: emulate-casts" in s for s in srcs["1"])


@needs_native
@pytest.mark.parametrize("p", [2, 3, -1, -2, 0.5, -0.5, 1.7])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
def test_emulated_pow_matches_eager_on_every_value(dtype, p, monkeypatch):
    """Review 16b: ``x ** 3`` and ``x ** -2`` are one eager op; for float16 eager computes them in float32 and rounds
    once, for bfloat16 it rounds x * x first. The lowering's mul(mul(x, x), x) was rounded after each mul under
    emulated casts (579 / 828 of 3000 float16 values differed from eager). All 65536 bit patterns of the dtype."""
    monkeypatch.setenv("AUTOFUSE_EMULATE_PRECISION_CASTS", "1")
    x = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
    fn = lambda t: t ** p  # noqa: E731
    n0 = len(backend.RECORDS)
    got = _compiled(fn)(x)
    assert _ran_kernels(n0)
    want = fn(x)
    _assert_same_bits(got, want, f"x ** {p} {dtype}", x)


@needs_native
@pytest.mark.parametrize("form", ["tensor_tensor", "div_floor", "scalar_tensor"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
def test_emulated_floor_division_matches_eager_bitwise(dtype, form, monkeypatch):
    """Review, session 28: eager's float16 / bfloat16 floor division by a tensor rounds each step of c10's algorithm
    (quotient, fmod, a - mod, the division, the -1 and +1 fix-ups) to the dtype; one float32 floordiv node rounded
    once differed from eager in 2-4 % of random quotients under emulated casts (bf16 1536 // 0.83984375: eager 1832,
    ours 1824). Magnitudes over seven decades, zeros of both signs, +-inf and NaN in both operands."""
    monkeypatch.setenv("AUTOFUSE_EMULATE_PRECISION_CASTS", "1")
    g = torch.Generator().manual_seed(SEED)
    n = 30011  # not a multiple of a vector: eager's scalar tail is compared too
    a = torch.randn(n, generator=g) * torch.tensor(10.0).pow(torch.randint(-3, 5, (n,), generator=g))
    b = torch.randn(n, generator=g) * torch.tensor(10.0).pow(torch.randint(-3, 3, (n,), generator=g))
    a[::89], a[::91], a[::101], a[::107], a[::113] = 0.0, -0.0, float("inf"), float("nan"), -float("inf")
    b[::97], b[::83], b[::103], b[::109] = 0.0, -0.0, -float("inf"), float("inf")
    a, b = a.to(dtype), b.to(dtype)
    fn = {"tensor_tensor": lambda x, y: x // y, "div_floor": lambda x, y: torch.div(x, y, rounding_mode="floor"),
          "scalar_tensor": lambda x, y: 2.5 // y + x * 0}[form]
    n0 = len(backend.RECORDS)
    got = _compiled(fn)(a, b)
    assert _ran_kernels(n0)
    want = fn(a, b)
    _assert_same_bits(got, want, f"{form} {dtype}", a, b)
