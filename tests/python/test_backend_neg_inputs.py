"""Lazily negated input views (torch._neg_view) through torch.compile(backend="autofuse"): the kernels read the
negated values (neg_inputs.resolving), and a graph that writes into such a view runs eagerly with the reason
recorded, so the caller's tensor is updated as in eager."""

import pytest
import torch

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs native kernels (autofuse._core built and a C++ compiler)")


def _chain(a, b):
    return (a * 2 + b).relu() - a.exp()


def test_negated_view_input_is_read_negated_by_the_kernels():
    torch.manual_seed(0)
    x, y = torch.randn(37, 5), torch.randn(37, 5)
    a = torch._neg_view(x)
    assert a.is_neg()
    want = _chain(a, y)
    torch._dynamo.reset()
    n0 = len(backend.RECORDS)
    f = torch.compile(_chain, backend="autofuse")
    got = f(a, y)
    assert [r.mode for r in backend.RECORDS[n0:]] == ["kernels"]
    # exp: ours and eager's are each within 1 ulp; a sign error would be off by far more
    torch.testing.assert_close(got, want, rtol=2e-6, atol=1e-6)
    torch.testing.assert_close(f(x, y), _chain(x, y), rtol=2e-6, atol=1e-6)  # a plain input: its own graph
    torch.testing.assert_close(f(a, y), want, rtol=2e-6, atol=1e-6)


def test_write_into_a_negated_view_runs_eagerly_and_updates_the_caller():
    def f(a, b):
        a.add_(b)
        return a * 3

    torch.manual_seed(1)
    x, y = torch.randn(8, 3), torch.randn(8, 3)
    x_eager = x.clone()
    want = f(torch._neg_view(x_eager), y)
    torch._dynamo.reset()
    n0 = len(backend.RECORDS)
    got = torch.compile(f, backend="autofuse")(torch._neg_view(x), y)
    recs = backend.RECORDS[n0:]
    assert recs and recs[0].mode == "eager" and "negated input view" in recs[0].reason, [(r.mode, r.reason) for r in recs]
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    torch.testing.assert_close(x, x_eager, rtol=0, atol=0)  # the write reached the caller's memory
