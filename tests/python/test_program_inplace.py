"""Kernel outputs written over a dead input's buffer (python/autofuse/program_inplace.py): the generated program
binds an elementwise kernel's output to the storage of a matmul result it reads for the last time. Every test
compares several calls with eager, so a buffer reused while something still reads it (a returned tensor, a later
reader, a view bound earlier) shows as a stale or overwritten value."""

from __future__ import annotations

import pytest
import torch

from autofuse import backend

needs_native = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")


def _compile(fn):
    torch._dynamo.reset()
    start = len(backend.RECORDS)
    c = torch.compile(fn, backend="autofuse", dynamic=False)
    return c, lambda: "".join(r.program_source or "" for r in backend.RECORDS[start:])


def _check_calls(c, fn, make_args, calls: int = 3):
    """Calls the compiled and the eager function on fresh inputs ``calls`` times; every output must match."""
    for i in range(calls):
        args = make_args(i)
        with torch.no_grad():
            got, want = c(*args), fn(*args)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def _args(i, shapes):
    g = torch.Generator().manual_seed(100 + i)
    return [torch.randn(*s, generator=g) for s in shapes]


def silu_mlp(x, wg, wu, wd):
    """LLaMA's gated MLP: the SiLU-mul kernel is the last reader of both matmul results."""
    return (torch.nn.functional.silu(x @ wg) * (x @ wu)) @ wd


def gelu_returned(x, w):
    """The GELU's input (a matmul result) is also returned: it must keep its values."""
    h = x @ w
    return torch.nn.functional.gelu(h, approximate="tanh") * 2.0, h


def read_later(x, w):
    """The matmul result is read again after the elementwise kernel (by a second matmul)."""
    h = x @ w
    y = torch.sigmoid(h) * 3.0
    return y @ w.t() + (h @ w.t()) * 0.5


def view_returned(x, w):
    """A view of the matmul result is returned; the elementwise kernel reads the result last among the kernels."""
    h = x @ w
    return h.view(-1), torch.tanh(h) * 2.0


def row_kernel(x, w):
    """A softmax over the matmul result: a row kernel (several passes), never written in place."""
    return torch.softmax(x @ w, dim=-1) * 2.0


@needs_native
def test_gated_mlp_output_reuses_a_dead_matmul_result(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    c, src = _compile(silu_mlp)
    _check_calls(c, silu_mlp, lambda i: _args(i, [(2, 8, 16), (16, 24), (16, 24), (24, 16)]))
    assert src().count("# in place") == 1, src()


@needs_native
@pytest.mark.parametrize("fn", [gelu_returned, read_later, view_returned, row_kernel])
def test_live_matmul_results_are_never_overwritten(monkeypatch, fn):
    """A returned, later-read or viewed matmul result is never written over; a row kernel's output is allocated."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    c, src = _compile(fn)
    _check_calls(c, fn, lambda i: _args(i, [(3, 8, 16), (16, 16)]))
    assert "# in place" not in src(), src()


@needs_native
def test_in_place_result_is_not_shared_between_calls(monkeypatch):
    """Each call's result is its own tensor: a result kept from call 1 keeps its values through call 2."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    c, src = _compile(silu_mlp)
    a1 = _args(1, [(2, 8, 16), (16, 24), (16, 24), (24, 16)])
    a2 = _args(2, [(2, 8, 16), (16, 24), (16, 24), (24, 16)])
    with torch.no_grad():
        r1 = c(*a1)
        keep = r1.clone()
        r2 = c(*a2)
    assert "# in place" in src()
    assert torch.equal(r1, keep)
    assert r1.data_ptr() != r2.data_ptr()
    torch.testing.assert_close(r2, silu_mlp(*a2), rtol=1e-5, atol=1e-5)


def host_view_read_later(x, w):
    """A transposed view of the matmul result (a host permute step) is read after the elementwise kernel."""
    h = x @ w
    t = h.t()
    y = torch.sigmoid(h) * 3.0
    return y, t @ x


@needs_native
def test_host_view_of_the_input_read_later_keeps_it(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    c, src = _compile(host_view_read_later)
    _check_calls(c, host_view_read_later, lambda i: _args(i, [(16, 16), (16, 16)]))
    assert "# in place" not in src(), src()
