"""Integer-dtype cases where eager raises and a kernel would return numbers (review, session 14): out-of-range Python
int scalars that eager converts with a range check (clamp bounds, fill values, where/masked_fill scalars), a scalar
divisor that is 0 in the dtype, and an integer tensor to a negative power. The lowering leaves these ops to ATen,
which raises eager's error; in-range cases still compile to kernels. Also float16's ``x ** +-0.5``, which eager
computes with std::pow (not sqrt / rsqrt as for the other dtypes)."""

import pytest
import torch

import autofuse  # noqa: F401  (registers the backend)
from autofuse import backend as afb

A = torch.tensor([-3, 0, 5, 9], dtype=torch.int32)

RAISING = {
    "clamp_max": lambda a: (a + 1).clamp(max=2**40),
    "clamp_int8": lambda a: (a.to(torch.int8) + 1).clamp(min=-300, max=300),
    "masked_fill": lambda a: (a + 1).masked_fill(a > 0, 2**40),
    "where": lambda a: torch.where(a > 0, a + 1, 2**40),
    "full_like": lambda a: torch.full_like(a, 2**40) + a,
    "floordiv_2e40": lambda a: (a + 1) // 2**40,
    "remainder_2e32": lambda a: (a + 1) % 2**32,
    "pow_negative": lambda a: torch.pow(a + 0, -2),
}


@pytest.mark.parametrize("name", sorted(RAISING))
def test_raises_where_eager_raises(name):
    fn = RAISING[name]
    with pytest.raises(RuntimeError) as eager:
        fn(A)
    torch._dynamo.reset()
    with pytest.raises(Exception) as compiled:
        torch.compile(fn, backend="autofuse")(A)
    # eager's own message (the op ran in ATen), e.g. "value cannot be converted to type int without overflow"
    assert str(eager.value).splitlines()[0] in str(compiled.value), (str(eager.value), str(compiled.value))


IN_RANGE = {
    "clamp_max": lambda a: (a + 1).clamp(max=2**31 - 1),
    "clamp_int8": lambda a: (a.to(torch.int8) + 1).clamp(min=-128, max=127),
    "masked_fill": lambda a: (a + 1).masked_fill(a > 0, -2**31),
    "where": lambda a: torch.where(a > 0, a + 1, 7),
    "floordiv_wraps_to_3": lambda a: (a + 1) // (2**32 + 3),
    "pow_3": lambda a: torch.pow(a + 0, 3),
}


@pytest.mark.parametrize("name", sorted(IN_RANGE))
def test_in_range_scalars_still_compile(name):
    fn = IN_RANGE[name]
    torch._dynamo.reset()
    n0 = len(afb.RECORDS)
    assert torch.equal(torch.compile(fn, backend="autofuse")(A), fn(A))
    assert any(s.kind == "kernel" for r in afb.RECORDS[n0:] for s in r.steps), "expected a kernel"


@pytest.mark.parametrize("p", [0.5, -0.5, -1, -2])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=["f16", "bf16", "f32"])
def test_pow_special_exponents_follow_eager_per_dtype(p, dtype):
    x = torch.tensor([-float("inf"), -0.0, 4.0, -4.0, float("inf"), 0.0, float("nan"), 0.25], dtype=dtype)
    fn = lambda t: (t * 1) ** p  # noqa: E731
    torch._dynamo.reset()
    got, want = torch.compile(fn, backend="autofuse")(x), fn(x)
    assert torch.equal(got.isnan(), want.isnan()), (got, want)
    ok = ~want.isnan()
    assert torch.equal(got[ok], want[ok]) and torch.equal(got[ok].signbit(), want[ok].signbit()), (got, want)
