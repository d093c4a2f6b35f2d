"""``mean(..., dtype=float16 / bfloat16)`` of a tensor of another dtype through torch.compile(backend="autofuse").

Eager's CPU mean_out sums such an input in float32 (the input cast to float32), divides and rounds once to ``dtype``;
the lowering cast the input to ``dtype`` first, as ``sum(dtype=)`` does, and so rounded every element (review 19:
f32 ``randn(7, 300) * 100`` ``.mean(1, dtype=bfloat16)`` gave -0.1738 where eager and float64 give -0.1914). These
compare bitwise with eager, which the float32 reduction gives on every case here (40 of the 53 failed before the
fix; a bool input, and bfloat16 -> float16, convert exactly either way). Also ``sum(dtype=)``, whose eager kernel
converts the elements first except over reduced dims its TensorIterator keeps apart (lowering_reduction's
``_eager_sums_in_float32``).
"""

import pytest
import torch

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs native kernels (autofuse._core built and a C++ compiler)")

HALF = [torch.bfloat16, torch.float16]


def _input(shape, dtype, seed=0, special=False):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not dtype.is_floating_point:
        return torch.randint(-100000, 100000, shape, generator=g).to(dtype)
    x = torch.randn(shape, generator=g, dtype=torch.float64) * 100
    if special:
        flat = x.view(-1)
        flat[1], flat[3] = float("nan"), float("inf")
    return x.to(dtype)


def _assert_bitwise(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got.isnan(), want.isnan())
    ok = ~want.isnan()
    assert torch.equal(got[ok].view(torch.int16), want[ok].view(torch.int16)), (got, want)


def _compiled(f, x):
    torch._dynamo.reset()
    return torch.compile(f, backend="autofuse")(x)


def test_reported_case_matches_eager():
    torch.manual_seed(0)
    x = torch.randn(7, 300) * 100
    want = x.mean(1, dtype=torch.bfloat16)
    got = _compiled(lambda t: t.mean(1, dtype=torch.bfloat16), x)
    _assert_bitwise(got, want)
    # the float64 mean rounded to bfloat16 is eager's value here; the input rounded first was 9 % off
    assert torch.equal(want, x.double().mean(1).to(torch.bfloat16))


@pytest.mark.parametrize("out", HALF)
@pytest.mark.parametrize("src", [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool])
@pytest.mark.parametrize("dims,keep", [(1, False), (0, True), ((0, 1), False), (None, False)])
def test_mean_to_half_of_another_dtype_is_eagers_bits(src, out, dims, keep):
    x = _input((7, 300), src)
    if dims is None:
        f = lambda t: t.mean(dtype=out)  # noqa: E731
    else:
        f = lambda t: t.mean(dims, keepdim=keep, dtype=out)  # noqa: E731
    _assert_bitwise(_compiled(f, x), f(x))


@pytest.mark.parametrize("src,out", [(torch.float16, torch.bfloat16), (torch.bfloat16, torch.float16)])
def test_mean_between_half_dtypes_does_not_round_to_the_other_first(src, out):
    # eager casts float16 -> float32 (exact), not float16 -> bfloat16
    x = _input((3, 5, 33), src, seed=2)
    for dims in (2, 1, 0, (0, 2)):
        f = lambda t, d=dims: t.mean(d, dtype=out)  # noqa: E731
        _assert_bitwise(_compiled(f, x), f(x))


def _biased(shape, seed):
    """float32 values in [1, 2) that are 0.45 bfloat16 ulp (2^-7) above a bfloat16 value: rounding them to bfloat16
    or float16 first moves every element down, so the mean of the rounded values is off by 0.45 bfloat16 ulp
    (3.6 float16 ulp) and rounds to another value on many rows."""
    g = torch.Generator().manual_seed(seed)
    grid = (1 + torch.rand(shape, generator=g)).to(torch.bfloat16).float()
    return grid + 0.45 * 2.0 ** -7


@pytest.mark.parametrize("out", HALF)
@pytest.mark.parametrize("shape,dims", [((2, 40000), 1), ((6000, 3), 0), ((2, 40000), None), ((64, 4099), 1)])
def test_long_rows_and_outer_axes(shape, dims, out):
    x = _biased(shape, seed=5)  # a seed where every case below changes (checked)
    f = (lambda t: t.mean(dtype=out)) if dims is None else (lambda t: t.mean(dims, dtype=out))
    want = f(x)
    assert not torch.equal(f(x.to(out)), want)  # rounding the input first changes eager's result on this data
    _assert_bitwise(_compiled(f, x), want)


@pytest.mark.parametrize("out", HALF)
def test_nan_inf_empty_and_one_element(out):
    x = _input((7, 300), torch.float32, seed=4, special=True)
    for f in (lambda t: t.mean(1, dtype=out), lambda t: t.mean(0, dtype=out), lambda t: t.mean(dtype=out)):
        _assert_bitwise(_compiled(f, x), f(x))
    for shape, dims in (((4, 0), 1), ((4, 0), 0), ((1, 1), 0), ((), None)):
        x = _input(shape, torch.float64, seed=5)
        f = (lambda t: t.mean(dtype=out)) if dims is None else (lambda t, d=dims: t.mean(d, dtype=out))
        _assert_bitwise(_compiled(f, x), f(x))


@pytest.mark.parametrize("out", HALF)
@pytest.mark.parametrize("src", [torch.int64, torch.float32, torch.float16])
def test_sum_to_half_follows_eagers_layout_rule(src, out):
    """sum(dtype=float16 / bfloat16) converts the elements first, except where ATen's TensorIterator keeps two reduced
    dims apart (dims (0, 2) of a contiguous tensor): eager then sums in float32 and rounds once. An int64 sum over
    (0, 2) to float16 was NaN here (elements beyond 65504 became +-inf), where eager gives finite values."""
    x = _input((3, 5, 33), src, seed=6)
    if src == torch.float16:
        x = (x.double() / 4).to(src)  # stays finite
    for view in (lambda t: t, lambda t: t.permute(2, 0, 1), lambda t: t[:, :, ::2], lambda t: t.transpose(0, 1)):
        v = view(x)
        for dims in ((0, 2), (0, 1), (1, 2), 2, 0, None):
            f = (lambda t: t.sum(dtype=out)) if dims is None else (lambda t, d=dims: t.sum(d, dtype=out))
            _assert_bitwise(_compiled(f, v), f(v))
    apart = x.sum((0, 2), dtype=out)
    if src != out:
        assert not torch.equal(apart.nan_to_num(), x.to(out).sum((0, 2)).nan_to_num())  # eager does not convert first
