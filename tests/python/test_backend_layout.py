"""Graph outputs keep eager's layout: an elementwise result of a channels_last or transposed input has eager's
strides (program.eager_layout), not contiguous ones; values equal eager's; dynamic shapes keep eager's
strides too (the layout is read from the symbolic strides' example values), for every size, without a recompile."""

import pytest
import torch
import torch.nn.functional as F

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs native kernels (autofuse._core built and a C++ compiler)")


def _relu_plus_one(a):
    return a.relu() + 1


def _scale_shift(a, b):
    return a * 2 - b


CASES = {
    "channels_last": lambda: (torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last),),
    "transposed": lambda: (torch.randn(16, 5).t(),),
    "permuted3d": lambda: (torch.randn(4, 6, 8).permute(2, 0, 1),),
    "contiguous": lambda: (torch.randn(3, 7),),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_output_strides_follow_eager(case):
    torch.manual_seed(3)
    args = CASES[case]()
    want = _relu_plus_one(*args)
    torch._dynamo.reset()
    n0 = len(backend.RECORDS)
    got = torch.compile(_relu_plus_one, backend="autofuse", dynamic=False)(*args)
    assert all(r.mode == "kernels" for r in backend.RECORDS[n0:])
    assert got.shape == want.shape and got.stride() == want.stride(), (got.stride(), want.stride())
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_channels_last_binary_and_norm_chain():
    x = torch.randn(2, 8, 5, 5).to(memory_format=torch.channels_last)
    y = torch.randn(2, 8, 5, 5).to(memory_format=torch.channels_last)
    want = _scale_shift(x, y)
    torch._dynamo.reset()
    got = torch.compile(_scale_shift, backend="autofuse", dynamic=False)(x, y)
    assert got.stride() == want.stride() and got.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(got, want)
    f = lambda t: F.softmax(t * 3, dim=1)  # noqa: E731 - a reduction over channels, eager keeps channels_last
    torch._dynamo.reset()
    got = torch.compile(f, backend="autofuse", dynamic=False)(x)
    assert got.stride() == f(x).stride()
    torch.testing.assert_close(got, f(x))


DYNAMIC = {  # case -> make(size) for three sizes
    "channels_last": lambda n: torch.randn(2, 3, n, n + 1).to(memory_format=torch.channels_last),
    "transposed": lambda n: torch.randn(n + 9, 5).t(),
    "permuted3d": lambda n: torch.randn(4, n, 8).permute(2, 0, 1),
}


@pytest.mark.parametrize("case", sorted(DYNAMIC))
def test_output_strides_follow_eager_under_dynamic_shapes(case):
    import autofuse
    torch.manual_seed(4)
    torch._dynamo.reset()
    f = torch.compile(_relu_plus_one, backend="autofuse", dynamic=True)
    compiles = None
    for n in (5, 7, 13):  # no size equal to another dim at the first call (duck sizing would specialize it)
        x = DYNAMIC[case](n)
        want, got = _relu_plus_one(x), f(x)
        assert got.shape == want.shape and got.stride() == want.stride(), (n, got.stride(), want.stride())
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        if compiles is None:
            compiles = autofuse.cache_stats().compiles
    assert autofuse.cache_stats().compiles == compiles  # one kernel serves the later sizes
