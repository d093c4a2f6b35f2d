"""View and layout ops through the whole backend: lowered to IR layout ops, run as inline host steps of the generated
program, kernels reading their outputs through strides. Values must equal eager's on non-contiguous, transposed and
sliced inputs, and the fallback report must not list the lowered views."""

from __future__ import annotations

import pytest
import torch

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")

LOWERED_VIEWS = {"aten.view", "aten._unsafe_view", "aten.reshape", "aten.permute", "aten.transpose", "aten.t",
                 "aten.unsqueeze", "aten.squeeze", "aten.slice", "aten.select", "aten.split", "aten.split_with_sizes",
                 "aten.unbind", "aten.cat", "aten.narrow"}


def _compile(fn, *args, dynamic=False):
    """Compile fn with autofuse (strict: no stand-ins, kernel failures raise); returns outputs and the new records."""
    torch._dynamo.reset()
    start = len(backend.RECORDS)
    out = torch.compile(fn, backend="autofuse", dynamic=dynamic)(*args)
    return out, backend.RECORDS[start:]


def _fallback_ops(records):
    return {op for r in records if r.lowered for op, _ in r.lowered.fallbacks}


def attention_like(x, w):
    """Multi-head attention's layout dance without matmul weights: split, heads, transpose, softmax, merge."""
    b, s, _ = x.shape
    q, k, v = (x * w).split(16, dim=2)
    q = q.view(b, s, 2, 8).permute(0, 2, 1, 3)
    k = k.view(b, s, 2, 8).transpose(1, 2)
    v = v.view(b, s, 2, 8).transpose(1, 2)
    att = (q.unsqueeze(3) * k.unsqueeze(2)).sum(-1) * 0.35
    att = torch.softmax(att, dim=-1)
    y = (att.unsqueeze(-1) * v.unsqueeze(2)).sum(3)
    return y.transpose(1, 2).reshape(b, s, 16)


def rotary_like(x):
    """LLaMA's rotate_half: two slices, a negation and a cat."""
    h = x.shape[-1] // 2
    return x * 0.5 + torch.cat([-x[..., h:], x[..., :h]], dim=-1) * 2.0


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "expanded"])
def test_views_match_eager_on_strided_inputs(monkeypatch, layout):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    base = torch.randn(2, 12, 96)
    x = {"contiguous": base[:, :, :48].contiguous(), "transposed": base.transpose(0, 1)[:, :, :48].transpose(0, 1),
         "sliced": base[:, :, 1:97:2], "expanded": base[:1, :, :48].expand(2, 12, 48)}[layout]
    w = torch.randn(48)
    out, recs = _compile(attention_like, x, w)
    torch.testing.assert_close(out, attention_like(x, w), rtol=1e-5, atol=1e-6)
    assert not (_fallback_ops(recs) & LOWERED_VIEWS), _fallback_ops(recs)
    assert any(st.kind == "host" for r in recs for st in r.steps)
    out2, recs2 = _compile(rotary_like, x)
    torch.testing.assert_close(out2, rotary_like(x), rtol=1e-6, atol=1e-6)
    assert not (_fallback_ops(recs2) & LOWERED_VIEWS), _fallback_ops(recs2)


def test_host_steps_run_inline_without_bindings(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    x = torch.randn(4, 6, 8)
    out, recs = _compile(lambda x: (x.permute(2, 0, 1) * 2).reshape(8, 24)[:, 3:].exp(), x)
    torch.testing.assert_close(out, (x.permute(2, 0, 1) * 2).reshape(8, 24)[:, 3:].exp())
    src = recs[0].program_source
    # the argument's permute is folded (static strides, session 17): the kernel reads it as a spec of the argument
    assert "([(v0, S" in src and ".permute([2, 0, 1])" not in src, src
    assert "_bind" not in src, src  # inline host steps need no bindings dict per call


def test_views_with_dynamic_sizes(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    # Kernel inputs keep plain symbolic sizes here: a kernel cannot yet bind a symbol from an input dimension that is
    # an expression (a cat's s0 + 1), with views lowered or not.
    def fn(x):
        return (x.transpose(0, 1) * 2).unsqueeze(0).exp() + torch.cat([x.t()[:1], x.t()[1:]]).unsqueeze(0)

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="autofuse", dynamic=True)
    for n in (5, 9, 17):
        x = torch.randn(n, 3)
        torch.testing.assert_close(compiled(x), fn(x))


def test_training_through_views(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    x = torch.randn(2, 12, 48)
    w1 = torch.randn(48, requires_grad=True)
    w2 = w1.detach().clone().requires_grad_(True)
    torch._dynamo.reset()
    torch.compile(attention_like, backend="autofuse")(x, w1).square().sum().backward()
    attention_like(x, w2).square().sum().backward()
    torch.testing.assert_close(w1.grad, w2.grad, rtol=1e-4, atol=1e-5)
