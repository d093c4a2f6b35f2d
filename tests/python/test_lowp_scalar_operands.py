"""float16/bfloat16 binary ops with a scalar operand, bitwise against eager (review 16b).

Eager's CPU mul, true division and floor / trunc division (``div_floor`` / ``div_trunc``, so ``//`` too) read a
second operand that is a CPU scalar -- a Python number, or a 0-d tensor of any dtype -- at float32
(``original_scalar_value<opmath_t>``), compute in float32 and round once. Every other binary kernel (add, sub with or
without alpha, rsub, remainder, fmod, atan2, pow, hypot, ...) and every scalar in the *first* position are converted
to the tensor's dtype first (measured, torch 2.13; docs/precision.md "Python scalars"). Each case is a single eager
op, so it is correctly rounded once and our result must be eager's bits under both precision policies.
"""

from __future__ import annotations

import pytest
import torch

from autofuse import backend

needs_native = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel path (_core.Kernel)")

LOWP = [torch.float16, torch.bfloat16]
LOWP_IDS = ["f16", "bf16"]


def _assert_bits(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    """Same dtype, same NaN positions, and the same bits everywhere else (signed zeros included)."""
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype)
    nan = want.isnan()
    assert torch.equal(got.isnan(), nan), f"{what}: NaN positions differ: ours {got[:8]} eager {want[:8]}"
    bits = torch.int16 if got.element_size() == 2 else torch.int32
    bad = got[~nan].view(bits) != want[~nan].view(bits)
    assert not bool(bad.any()), (f"{what}: {int(bad.sum())} of {bad.numel()} differ, e.g. ours "
                                 f"{got[~nan][bad][:4].tolist()} eager {want[~nan][bad][:4].tolist()}")


def _values(dtype: torch.dtype, n: int = 4096, seed: int = 16) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, generator=g) * 20).to(dtype)


def _run(fn, *args):
    torch._dynamo.reset()
    n0 = len(backend.RECORDS)
    got = torch.compile(fn, backend="autofuse", dynamic=False)(*args)
    assert any(s.kind == "kernel" for r in backend.RECORDS[n0:] for s in r.steps), "expected a kernel"
    return got


FLOOR_TRUNC = {
    "floordiv": lambda x, c: x // c,
    "div_floor": lambda x, c: torch.div(x, c, rounding_mode="floor"),
    "div_trunc": lambda x, c: torch.div(x, c, rounding_mode="trunc"),
}


@needs_native
@pytest.mark.parametrize("emulate", ["0", "1"])
@pytest.mark.parametrize("dtype", LOWP, ids=LOWP_IDS)
@pytest.mark.parametrize("name", sorted(FLOOR_TRUNC))
def test_floor_trunc_division_by_python_float(name, dtype, emulate, monkeypatch):
    """Review 16b: the divisor was rounded to f16/bf16 first (f16 7 // 0.7 gave 9, eager 10; 0.5-16 % of the
    quotients of random values were off by one)."""
    monkeypatch.setenv("AUTOFUSE_EMULATE_PRECISION_CASTS", emulate)
    x = torch.cat([torch.tensor([-7.0, 7.0, 1.4, 68.0, 1.3984375]).to(dtype), _values(dtype)])
    for c in (0.7, 0.1, 1.3, -0.3, 1 / 3):
        fn = lambda t, c=c: FLOOR_TRUNC[name](t, c)  # noqa: E731
        _assert_bits(_run(fn, x), fn(x), f"{name} {dtype} by {c}")


@needs_native
@pytest.mark.parametrize("dtype", LOWP, ids=LOWP_IDS)
@pytest.mark.parametrize("name", sorted(FLOOR_TRUNC))
def test_floor_trunc_division_by_a_float32_subnormal(name, dtype):
    """Review 16b: 1e-45 rounded to f16/bf16 is 0, so 0 // 1e-45 was NaN (0/0); eager divides by float32's
    smallest subnormal: 0, +-inf, NaN only for the NaN input."""
    x = torch.tensor([0.0, -0.0, 1.0, -2.5, float("inf"), float("nan"), 1e-3], dtype=dtype)
    fn = lambda t: FLOOR_TRUNC[name](t, 1e-45)  # noqa: E731
    _assert_bits(_run(fn, x), fn(x), f"{name} {dtype} by 1e-45")
