"""A graph output that expands a graph input is a view of that input, as in eager (review finding, session 6).

It used to be a copy (a kernel writing every broadcast copy); under ``dynamic=True`` AOTAutograd then replayed the
alias with the copy's contiguous strides on the input's storage and failed ("setStorage: ... out of bounds").
program_layout.expand_outputs now also covers a broadcast whose source is a graph input."""

import pytest
import torch

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs native kernels (autofuse._core built and a C++ compiler)")


def _expand(x):
    return x.expand(4, *x.shape)


def _unsqueeze_expand(x):
    return x.unsqueeze(0).expand(4, -1, -1)


def _expand_and_add(x):
    return x.expand(2, *x.shape), x * 2 + 1


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("fn", [_expand, _unsqueeze_expand, _expand_and_add])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_expanded_input_output_is_a_view(fn, dynamic, dtype):
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="autofuse", dynamic=dynamic)
    for rows in (3, 6, 7):  # new sizes: under dynamic=True the same compiled code
        x = torch.randn(rows, 5, dtype=dtype)
        got, want = compiled(x), fn(x)
        got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=0, atol=0)
            assert g.stride() == w.stride(), (g.stride(), w.stride())
            assert _same_storage(g, x) == _same_storage(w, x)
        assert _same_storage(got[0], x) and got[0].stride()[0] == 0
        x.add_(1)  # a view sees the input's later writes, as eager's does
        torch.testing.assert_close(got[0][1], x, rtol=0, atol=0)


def test_expanded_transposed_input_keeps_its_strides():
    torch._dynamo.reset()
    base = torch.randn(5, 3)
    x = base.t()  # strides (1, 3)
    got = torch.compile(_expand, backend="autofuse")(x)
    want = _expand(x)
    assert got.stride() == want.stride() == (0, 1, 3) and _same_storage(got, base)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_expanded_input_output_trains():
    torch._dynamo.reset()
    x = torch.randn(3, 5, requires_grad=True)
    compiled = torch.compile(_expand_and_add, backend="autofuse")
    a, b = compiled(x)
    (a.sum() + b.sum()).backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 2.0 + 2.0))
