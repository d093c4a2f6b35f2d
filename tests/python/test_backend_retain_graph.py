"""Backward passes that keep the graph (``retain_graph=True``, ``create_graph=True``) through compiled graphs.

Review 18 finding 3: AOTAutograd marked saved tensors as donated to the backward (``fw_metadata.bw_donated_idxs``) and
then refused every backward that keeps the graph ("This backward function was compiled with non-empty donated
buffers ..."); eager, aot_eager and Inductor accept a first ``backward(retain_graph=True)``. Autofuse's programs never
write into saved tensors, so the backend donates none (backend.donate_no_buffers). Each case compares the gradients
of two backward passes with eager's: the second accumulates the same gradient again. The failing configurations
before the fix: the AOTAutograd cache on (the backward is compiled with the forward), dynamic shapes (AOTAutograd
compiles the backward eagerly when it saves sizes), and a ``retain_graph=True`` backward after an earlier backward
had compiled the lazy backward. Double backward stays unsupported, with AOTAutograd's own clear message.
"""

from __future__ import annotations

import pytest
import torch

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")


def loss_fn(x, w):
    return ((x @ w).sigmoid() * x.sum(-1, keepdim=True)).sum()


def _inputs(n: int = 4):
    torch.manual_seed(0)
    return torch.randn(n, 6), torch.randn(6, 6)


def _eager_grads(x0, w0, passes: int = 2):
    x = x0.clone().requires_grad_(True)
    w = w0.clone().requires_grad_(True)
    loss = loss_fn(x, w)
    for i in range(passes):
        loss.backward(retain_graph=i + 1 < passes)
    return x.grad, w.grad


def _eager_input_grad(x0, w0):
    """Eager's gradient of the loss with respect to x (one pass)."""
    xe = x0.clone().requires_grad_(True)
    return torch.autograd.grad(loss_fn(xe, w0), [xe])[0]


def _compiled_twice(compiled, x0, w0):
    """Two backward passes over one compiled forward, the first keeping the graph; returns the gradients."""
    x = x0.clone().requires_grad_(True)
    w = w0.clone().requires_grad_(True)
    loss = compiled(x, w)
    loss.backward(retain_graph=True)
    loss.backward()
    return x.grad, w.grad


def _assert_eager_grads(got, x0, w0):
    """``got`` = (x.grad, w.grad) of two backward passes equals eager's two passes."""
    for g, e in zip(got, _eager_grads(x0, w0)):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("aot_cache", ["0", "1"])
def test_retain_graph_then_second_backward(monkeypatch, tmp_path, aot_cache):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    monkeypatch.setenv("AUTOFUSE_AOT_CACHE", aot_cache)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    x0, w0 = _inputs()
    for attempt in range(2):  # with the cache on, the second compile loads the entry the first one stored
        torch._dynamo.reset()
        _assert_eager_grads(_compiled_twice(torch.compile(loss_fn, backend="autofuse"), x0, w0), x0, w0)
    if aot_cache == "1":
        from torch._dynamo.utils import counters

        assert counters["aot_autograd"]["autograd_cache_hit"] >= 1, dict(counters["aot_autograd"])


def test_retain_graph_after_a_plain_backward(monkeypatch):
    """The lazy backward (cache off) is compiled by a plain backward first; a later retain_graph=True must work."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    monkeypatch.setenv("AUTOFUSE_AOT_CACHE", "0")
    x0, w0 = _inputs()
    torch._dynamo.reset()
    compiled = torch.compile(loss_fn, backend="autofuse")
    compiled(x0.clone().requires_grad_(True), w0.clone().requires_grad_(True)).backward()  # same guards: no recompile
    _assert_eager_grads(_compiled_twice(compiled, x0, w0), x0, w0)


def test_retain_graph_with_dynamic_shapes(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    monkeypatch.setenv("AUTOFUSE_AOT_CACHE", "0")
    torch._dynamo.reset()
    compiled = torch.compile(loss_fn, backend="autofuse", dynamic=True)
    for n in (4, 7):
        x0, w0 = _inputs(n)
        _assert_eager_grads(_compiled_twice(compiled, x0, w0), x0, w0)


def test_autograd_grad_retain_graph(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    monkeypatch.setenv("AUTOFUSE_AOT_CACHE", "1")
    x0, w0 = _inputs()
    torch._dynamo.reset()
    x = x0.clone().requires_grad_(True)
    loss = torch.compile(loss_fn, backend="autofuse")(x, w0)
    (g1,) = torch.autograd.grad(loss, [x], retain_graph=True)
    (g2,) = torch.autograd.grad(loss, [x])
    ge = _eager_input_grad(x0, w0)
    torch.testing.assert_close(g1, ge, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(g2, ge, rtol=1e-5, atol=1e-6)


def test_double_backward_raises_a_clear_error(monkeypatch):
    """create_graph=True gives first-order gradients (as with Inductor); differentiating them raises AOTAutograd's
    message, not the donated-buffer one."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    monkeypatch.setenv("AUTOFUSE_AOT_CACHE", "1")
    x0, w0 = _inputs()
    torch._dynamo.reset()
    x = x0.clone().requires_grad_(True)
    loss = torch.compile(loss_fn, backend="autofuse")(x, w0)
    (g,) = torch.autograd.grad(loss, [x], create_graph=True)
    torch.testing.assert_close(g.detach(), _eager_input_grad(x0, w0), rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="does not currently support double backward"):
        g.sum().backward()
