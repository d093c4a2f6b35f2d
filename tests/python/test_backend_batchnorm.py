"""BatchNorm and convolution models through the backend (found by a new-user test: BatchNorm in eval mode raised
BackendCompilerFailed, and a kernel after a convolution could not bind its size symbol s - 2)."""
import pytest
import torch
import torch.nn as nn

import autofuse  # noqa: F401  (registers the backend)


def _fresh():
    torch._dynamo.reset()


@pytest.mark.parametrize("grad", [True, False])
def test_batchnorm_eval_runs_and_matches(grad):
    _fresh()
    torch.manual_seed(0)
    bn = nn.BatchNorm1d(16).eval()
    bn.running_mean.uniform_(-1, 1)
    bn.running_var.uniform_(0.5, 2)
    x = torch.randn(4, 16)
    with torch.set_grad_enabled(grad):
        got = torch.compile(bn, backend="autofuse")(x)
        want = bn(x)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_conv_batchnorm_relu_dynamic_sizes_reuse_kernels():
    _fresh()
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU()).eval()
    f = torch.compile(m, backend="autofuse", dynamic=True)
    before = None
    with torch.no_grad():
        for s in (8, 9, 12, 15):
            x = torch.randn(2, 3, s, s)
            torch.testing.assert_close(f(x), m(x), rtol=1e-5, atol=1e-5)
            if before is None:
                before = autofuse.cache_stats().compiles
    assert autofuse.cache_stats().compiles == before, "a new spatial size compiled C++ again"


def test_batchnorm_training_updates_running_stats():
    _fresh()
    torch.manual_seed(0)
    a, b = nn.BatchNorm1d(8), nn.BatchNorm1d(8)
    b.load_state_dict(a.state_dict())
    x = torch.randn(6, 8)
    torch.compile(a, backend="autofuse")(x)
    b(x)
    torch.testing.assert_close(a.running_mean, b.running_mean)
    torch.testing.assert_close(a.running_var, b.running_var)
