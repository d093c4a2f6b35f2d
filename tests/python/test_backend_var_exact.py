"""var / std / var_mean and layer_norm through the backend on constant data (codegen/cpu/emit_reduce.cpp's
corrected two-pass var, with layer_norm's mean taken from the var's sums): exactly 0 and exactly the value, as eager
(Welford) gives, where the plain two-pass gave ~1e-14 and a layer_norm of ~2e-5 before the affine (make
fuzz-kernels seed 1796094210); on random data they stay within eager's tolerance."""

import pytest
import torch

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs native kernels (autofuse._core built and a C++ compiler)")


def _stats(x):
    v, m = torch.var_mean(x, dim=-1)
    return v, x.std(0), m, x.var(0, correction=0)


def _layer_norm(x, w, b):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], w, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("value", [-0.40513, 3.14159, 1e-3])
def test_constant_data_has_var_zero_and_its_mean(dtype, value):
    torch._dynamo.reset()
    f = torch.compile(_stats, backend="autofuse", dynamic=False)
    for rows, cols in [(1000, 7), (5, 1000), (3, 4097)]:
        x = torch.full((rows, cols), value, dtype=dtype)
        got, want = f(x), _stats(x)
        assert torch.equal(got[0], torch.zeros_like(got[0])), (rows, cols, got[0].abs().max())
        assert torch.equal(got[1], torch.zeros_like(got[1])), (rows, cols, got[1].abs().max())
        assert torch.equal(got[2], torch.full_like(got[2], x[0, 0].item())), (rows, cols)
        assert torch.equal(got[3], torch.zeros_like(got[3])), (rows, cols)
        for g, w in zip(got, want):
            assert torch.equal(g, w), (rows, cols)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_layer_norm_of_constant_rows_is_its_bias(dtype):
    torch._dynamo.reset()
    f = torch.compile(_layer_norm, backend="autofuse", dynamic=False)
    gen = torch.Generator().manual_seed(3)
    w = torch.randn(1000, generator=gen).to(dtype)
    b = torch.randn(1000, generator=gen).to(dtype)
    x = torch.full((4, 1000), -0.40513, dtype=dtype)
    got = f(x, w, b)
    assert torch.equal(got, b.expand(4, 1000))  # centred row exactly 0
    # eager's bf16 kernel computes x * (rstd w) + (b - mean rstd w): within an ulp of b, not always b.
    torch.testing.assert_close(got, _layer_norm(x, w, b), rtol=1e-2, atol=1e-5)


def _err(got, ref):
    return (got.double() - ref).abs().max().item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_random_data_is_as_close_to_float64_as_eager(dtype):
    # Data with a mean far from 0 (where the correction term matters most): each result's largest error against the
    # float64 result at most twice eager's or 4 ulps of the result's dtype at its scale (a column var sums its f32
    # squares in f32 blocks: up to ~3 ulps, docs/precision.md; eager's are within 1).
    torch._dynamo.reset()
    f = torch.compile(_stats, backend="autofuse", dynamic=False)
    g = torch.compile(_layer_norm, backend="autofuse", dynamic=False)
    gen = torch.Generator().manual_seed(11)
    eps = torch.finfo(dtype).eps
    for rows, cols in [(64, 1000), (7, 33), (1000, 16)]:
        x = (torch.randn(rows, cols, generator=gen) * 3 + 100).to(dtype)
        w = torch.randn(cols, generator=gen).to(dtype)
        b = torch.randn(cols, generator=gen).to(dtype)
        cases = list(zip(f(x), _stats(x), _stats(x.double())))
        cases.append((g(x, w, b), _layer_norm(x, w, b), _layer_norm(x.double(), w.double(), b.double())))
        for i, (got, want, ref) in enumerate(cases):
            bound = max(2 * _err(want, ref), 4 * eps * ref.abs().max().item())
            assert _err(got, ref) <= bound, (i, rows, cols, _err(got, ref), _err(want, ref))
