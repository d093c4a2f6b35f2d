"""The rotary embedding (LLaMA's apply_rotary_pos_emb: q*cos + rotate_half(q)*sin, and k) through the backend: the
rotate_half `cat(-x2, x1)` fuses with the neg and the mul / add into one kernel (fusion keeps the concat in a kernel
group; codegen splits it along the concat axis, schedule/concat_split.h). Values must equal eager's for fp32 and bf16,
even and odd head dims, sizes 1 and 0, and q / k read through the transposed views the attention makes."""

from __future__ import annotations

import pytest
import torch

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def apply_rotary(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def _inputs(b, h, s, d, dtype, transposed, gen):
    if transposed:  # [b, s, h, d] storage, read as [b, h, s, d] (the projection's view)
        q = torch.randn(b, s, h, d, generator=gen).to(dtype).transpose(1, 2)
        k = torch.randn(b, s, h, d, generator=gen).to(dtype).transpose(1, 2)
    else:
        q = torch.randn(b, h, s, d, generator=gen).to(dtype)
        k = torch.randn(b, h, s, d, generator=gen).to(dtype)
    freqs = torch.randn(b, s, (d + 1) // 2, generator=gen)
    emb = torch.cat((freqs, freqs), dim=-1)[..., :d]
    return q, k, emb.cos().to(dtype), emb.sin().to(dtype)


def _ops_of_steps(recs):
    """Per step kind, the IR ops of its nodes."""
    out = {}
    for r in recs:
        for st in r.steps:
            out.setdefault(st.kind, []).append([r.lowered.nodes[i].op for i in st.nodes])
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 4, 32, 64), (2, 3, 5, 10), (1, 2, 7, 9), (1, 1, 1, 8), (2, 2, 0, 16)])
@pytest.mark.parametrize("transposed", [False, True])
def test_rotary_matches_eager_in_one_kernel(monkeypatch, dtype, shape, transposed):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    gen = torch.Generator().manual_seed(sum(shape) + transposed)
    args = _inputs(*shape, dtype, transposed, gen)
    torch._dynamo.reset()
    start = len(backend.RECORDS)
    got = torch.compile(apply_rotary, backend="autofuse", dynamic=False)(*args)
    recs = backend.RECORDS[start:]
    want = apply_rotary(*args)
    tol = dict(rtol=1.6e-2, atol=1e-2) if dtype == torch.bfloat16 else dict(rtol=1e-5, atol=1e-6)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, **tol)
    if shape[2] == 0:
        return  # nothing to run: the program may skip the kernel
    steps = _ops_of_steps(recs)
    hosts = [op for ops in steps.get("host", []) for op in ops]
    assert "concat" not in hosts, steps
    kernels = steps.get("kernel", [])
    assert len(kernels) == 1, kernels
    assert {"neg", "concat", "mul", "add"} <= set(kernels[0]), kernels


def test_rotary_concat_stays_host_when_disabled(monkeypatch):
    """AUTOFUSE_FUSE_CONCAT=0 (the A/B switch) keeps every concat a host step; values are the same."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    monkeypatch.setenv("AUTOFUSE_FUSE_CONCAT", "0")
    args = _inputs(1, 2, 4, 8, torch.float32, False, torch.Generator().manual_seed(3))
    torch._dynamo.reset()
    start = len(backend.RECORDS)
    got = torch.compile(apply_rotary, backend="autofuse", dynamic=False)(*args)
    recs = backend.RECORDS[start:]
    for g, w in zip(got, apply_rotary(*args)):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)
    hosts = [op for ops in _ops_of_steps(recs).get("host", []) for op in ops]
    assert hosts.count("concat") == 2, hosts


def test_rotary_dynamic_sequence_length(monkeypatch):
    """Symbolic sequence length: one compiled graph serves several lengths (segment widths are constants here,
    the sliced operands' sizes symbolic)."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    torch._dynamo.reset()
    fn = torch.compile(apply_rotary, backend="autofuse", dynamic=True)
    for s in (3, 8, 17):
        args = _inputs(1, 2, s, 12, torch.float32, True, torch.Generator().manual_seed(s))
        for g, w in zip(fn(*args), apply_rotary(*args)):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)
