"""A batch of 0 rows (a static 0-size dim, as Dynamo specializes it) fuses exactly like a non-empty batch: one kernel
for softmax + scale + layer norm (before, every op became its own kernel because the merges saved 0 bytes), and the
result equals eager's (an empty tensor of the same shape, dtype and strides)."""

import pytest
import torch
import torch.nn.functional as F

import autofuse
from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs native kernels (autofuse._core built and a C++ compiler)")


def _softmax_scale_layer_norm(x, w, b):
    return F.layer_norm(torch.softmax(x, -1) * 2 + 1, (x.shape[-1],), w, b)


@pytest.mark.parametrize("shape", [(0, 64), (3, 0, 64), (5, 64)])
def test_empty_batch_is_one_kernel_like_a_full_one(shape):
    torch.manual_seed(len(shape))
    x = torch.randn(shape)
    w, b = torch.randn(64), torch.randn(64)
    report = autofuse.explain(_softmax_scale_layer_norm, x, w, b)
    assert report.kernel_count == 1, str(report)
    assert not report.fallbacks, str(report)
    torch._dynamo.reset()
    got = torch.compile(_softmax_scale_layer_norm, backend="autofuse")(x, w, b)
    want = _softmax_scale_layer_norm(x, w, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_empty_batch_elementwise_chain_with_reduction_tail():
    x = torch.randn(0, 7, dtype=torch.float64)

    def f(t):
        return (t.exp() - 1).relu().sum(-1)

    report = autofuse.explain(f, x)
    assert report.kernel_count == 1, str(report)
    torch._dynamo.reset()
    got = torch.compile(f, backend="autofuse")(x)
    assert got.shape == (0,) and got.dtype == torch.float64
