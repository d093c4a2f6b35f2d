"""Written-out attention becomes one SDPA call (python/autofuse/attention_rewrite.py), and only when it may.

Each case compiles a block with the autofuse backend and checks: the outputs against eager (fp32 within 1e-5
relative to the largest value; bf16 no further from a float64 reference than 2x eager's own error, the demo's rule),
whether the flash kernel ran (an extern by design in explain()), gradients in training, and dynamic sizes without a
new C++ compile.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import autofuse
from autofuse import attention_rewrite, backend

FLASH = "aten._scaled_dot_product_flash_attention_for_cpu"
SEED = 20261130


@pytest.fixture(autouse=True)
def _rewrite_on(monkeypatch):
    """The pass is off by default (AUTOFUSE_ATTENTION_REWRITE); these tests test it, so they turn it on."""
    monkeypatch.setenv("AUTOFUSE_ATTENTION_REWRITE", "1")


def _heads(x: torch.Tensor, h: int) -> torch.Tensor:
    """[B, S, H*D] -> [B, H, S, D] (a transposed view, as the models split heads)."""
    b, s, c = x.shape
    return x.view(b, s, h, c // h).transpose(1, 2)


def _attention(q, k, v, mask=None, scale_form="mul", softmax_fp32=False, dropout_p=0.0, training=False,
               return_weights=False):
    """The eager-attention block of Hugging Face's models, in several spellings."""
    d = q.shape[-1]
    s = torch.matmul(q, k.transpose(-1, -2))
    if scale_form == "mul":
        s = s * d ** -0.5
    elif scale_form == "rmul":
        s = d ** -0.5 * s
    elif scale_form == "div":
        s = s / math.sqrt(d)
    elif scale_form == "const":  # a number fixed when the model is built (its head size), as the models write it
        s = s * 0.125
    if mask is not None:
        s = s + mask
    p = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype) if softmax_fp32 else F.softmax(s, dim=-1)
    p = F.dropout(p, p=dropout_p, training=training)
    o = torch.matmul(p, v)
    return (o, p) if return_weights else o


def _causal(s: int, dtype) -> torch.Tensor:
    """[1, 1, S, S] additive causal mask (0 on and below the diagonal, the dtype's minimum above), as transformers."""
    keep = torch.ones(s, s, dtype=torch.bool).tril()
    return torch.where(keep, torch.zeros((), dtype=dtype), torch.finfo(dtype).min).view(1, 1, s, s)


def _qkv(b, h, s, d, dtype, gen, hk=None):
    hk = hk or h
    q = _heads(torch.randn(b, s, h * d, generator=gen), h).to(dtype)
    k = _heads(torch.randn(b, s, hk * d, generator=gen), hk).to(dtype)
    v = _heads(torch.randn(b, s, hk * d, generator=gen), hk).to(dtype)
    return q, k, v


def _ops(rep) -> list:
    """Every ATen op explain() lists as run outside kernels: externs by design and fallbacks."""
    return [op for op, _ in rep.by_design] + [op for op, _ in rep.fallbacks]


def _check(out, eager, ref64, dtype):
    if dtype == torch.float32:
        torch.testing.assert_close(out, eager, rtol=0, atol=1e-5 * float(eager.abs().max()))
    else:
        err_eager = float((eager.double() - ref64).abs().max())
        err = float((out.double() - ref64).abs().max())
        assert err <= 2 * err_eager + 1e-6, (err, err_eager)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("variant", ["plain", "causal", "padding", "div", "rmul", "noscale", "fp32softmax"])
def test_rewritten_block_matches_eager_and_runs_flash(dtype, variant):
    gen = torch.Generator().manual_seed(SEED)
    b, h, s, d = 2, 3, 17, 16
    q, k, v = _qkv(b, h, s, d, dtype, gen)
    mask = None
    if variant == "causal":
        mask = _causal(s, dtype)
    elif variant == "padding":  # [B, 1, 1, S]: the last 5 keys of batch 1 padded out
        mask = torch.zeros(b, 1, 1, s, dtype=dtype)
        mask[1, ..., -5:] = torch.finfo(dtype).min
    kw = {"mask": mask, "scale_form": {"div": "div", "rmul": "rmul", "noscale": "none"}.get(variant, "mul"),
          "softmax_fp32": variant == "fp32softmax"}
    fn = lambda q, k, v: _attention(q, k, v, **kw)  # noqa: E731
    rep = autofuse.explain(fn, q, k, v)
    assert [op for op, _ in rep.by_design] == [FLASH], rep.fallbacks
    assert rep.fallback_count == 0, rep.fallbacks
    ref64 = _attention(q.double(), k.double(), v.double(), **{**kw, "mask": None if mask is None else mask.double()})
    _check(rep.output, fn(q, k, v), ref64, dtype)


def test_grouped_query_keys_repeated_as_llama_does():
    """LLaMA's repeat_kv: keys and values expanded from 2 to 4 heads, then reshaped."""
    gen = torch.Generator().manual_seed(SEED)
    b, s, d = 2, 9, 8
    q, k, v = _qkv(b, 4, s, d, torch.float32, gen, hk=2)

    def rep_kv(x):
        return x[:, :, None].expand(b, 2, 2, s, d).reshape(b, 4, s, d)

    fn = lambda q, k, v: _attention(q, rep_kv(k), rep_kv(v), mask=_causal(s, torch.float32))  # noqa: E731
    rep = autofuse.explain(fn, q, k, v)
    assert [op for op, _ in rep.by_design] == [FLASH], rep.fallbacks
    torch.testing.assert_close(rep.output, fn(q, k, v), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", ["weights_returned", "dropout_drops", "mask_needs_grad", "mask_then_scale"])
def test_left_as_written_when_the_rewrite_would_change_meaning(case):
    gen = torch.Generator().manual_seed(SEED)
    q, k, v = _qkv(2, 2, 8, 4, torch.float32, gen)
    mask = _causal(8, torch.float32)
    if case == "weights_returned":
        fn = lambda q, k, v: _attention(q, k, v, mask=mask, return_weights=True)  # noqa: E731
    elif case == "dropout_drops":
        fn = lambda q, k, v: _attention(q, k, v, dropout_p=0.5, training=True) * 0  # noqa: E731
    elif case == "mask_needs_grad":
        mask = torch.zeros(1, 1, 8, 8, requires_grad=True)
        fn = lambda q, k, v: _attention(q, k, v, mask=mask)  # noqa: E731
    else:
        fn = lambda q, k, v: F.softmax((q @ k.transpose(-1, -2) + mask) * 0.5, -1) @ v  # noqa: E731
    rep = autofuse.explain(fn, q, k, v)
    assert FLASH not in _ops(rep), (rep.by_design, rep.fallbacks)
    got = rep.output if isinstance(rep.output, tuple) else (rep.output,)
    want = fn(q, k, v)
    want = want if isinstance(want, tuple) else (want,)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_switch_off_keeps_the_written_form():
    gen = torch.Generator().manual_seed(SEED)
    q, k, v = _qkv(1, 2, 8, 4, torch.float32, gen)
    attention_rewrite.ENABLED = False
    try:
        rep = autofuse.explain(_attention, q, k, v)
    finally:
        attention_rewrite.ENABLED = None
    assert FLASH not in _ops(rep), (rep.by_design, rep.fallbacks)
    assert rep.kernel_count >= 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_training_gradients_match_eager(dtype):
    """A module in train() mode with dropout 0: the forward runs the flash kernel, the backward its ATen backward;
    gradients of q/k/v projections and of the input match eager."""
    torch.manual_seed(SEED)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(32, 96)

        def forward(self, x):
            q, k, v = (_heads(t, 4) for t in self.qkv(x).split(32, -1))
            o = _attention(q, k, v, mask=_causal(x.shape[1], x.dtype), training=self.training)
            return o.transpose(1, 2).reshape(x.shape)

    m = Block().to(dtype).train()
    mc = Block().to(dtype).train()
    mc.load_state_dict(m.state_dict())
    x = torch.randn(2, 11, 32, dtype=dtype, requires_grad=True)
    xc = x.detach().clone().requires_grad_(True)
    start = len(backend.RECORDS)
    f = torch.compile(mc, backend="autofuse", dynamic=False)
    f(xc).square().sum().backward()
    m(x).square().sum().backward()
    ops = {op for r in backend.RECORDS[start:] for op, _ in r.fallbacks}
    assert FLASH in ops, ops
    tol = 1e-4 if dtype == torch.float32 else 5e-2
    for a, b in [(xc.grad, x.grad)] + [(pc.grad, p.grad) for pc, p in zip(mc.parameters(), m.parameters())]:
        torch.testing.assert_close(a.float(), b.float(), rtol=tol, atol=tol * float(b.abs().max()))


def test_training_with_a_padding_mask_keeps_the_written_form_and_eagers_gradients():
    """A run-time mask that masks whole query rows with the dtype's minimum (left padding): ATen's attention
    backward gives O(1)-different gradients through those rows (eager's own scaled_dot_product_attention too), so a
    graph that needs gradients keeps the written-out softmax (no flash call) and its gradients are eager's; without
    gradients the same graph is rewritten (review 18)."""
    torch.manual_seed(SEED)
    b, h, s, d = 2, 2, 6, 8
    mask = _causal(s, torch.float32).expand(b, 1, s, s).clone()
    mask[1, :, :, :2] = torch.finfo(torch.float32).min  # batch 1 left-padded by 2: its query rows 0 and 1 see no key
    q, k, v = (torch.randn(b, h, s, d, requires_grad=True) for _ in range(3))
    weight = torch.linspace(-1, 1, b * h * s * d).view(b, h, s, d)

    def run(fn):
        out = fn(q, k, v, mask)
        return (out,) + torch.autograd.grad((out * weight).sum(), (q, k, v))

    eager = run(_attention)
    attention_rewrite.ENABLED = True
    try:
        torch._dynamo.reset()
        start = len(backend.RECORDS)
        got = run(torch.compile(_attention, backend="autofuse", dynamic=False))
        train_ops = {op for r in backend.RECORDS[start:] for op, _ in r.fallbacks}
        torch._dynamo.reset()
        start = len(backend.RECORDS)
        with torch.no_grad():
            torch.compile(_attention, backend="autofuse", dynamic=False)(q, k, v, mask)
        infer_ops = {op for r in backend.RECORDS[start:] for op, _ in r.fallbacks}
    finally:
        attention_rewrite.ENABLED = None
    assert FLASH not in train_ops, train_ops
    assert FLASH in infer_ops, infer_ops
    for a, e in zip(got, eager):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-5 * float(e.abs().max()))


def test_dynamic_sequence_lengths_compile_no_new_kernels():
    """dynamic=True over 6 sequence lengths: one graph, the same outputs as eager, and no C++ compile after the
    first length (the flash kernel takes any length). The scale is a number, as in the models (a scale computed
    from a symbolic head size is a traced value: that block stays as written)."""
    from autofuse import _core

    torch._dynamo.reset()
    start = len(backend.RECORDS)
    f = torch.compile(lambda q, k, v, m: _attention(q, k, v, mask=m, scale_form="const"), backend="autofuse",
                      dynamic=True)
    gen = torch.Generator().manual_seed(SEED)
    before = None
    for s in (5, 9, 16, 31, 64, 100):
        q, k, v = _qkv(2, 3, s, 8, torch.float32, gen)
        m = _causal(s, torch.float32)
        want = _attention(q, k, v, mask=m, scale_form="const")
        torch.testing.assert_close(f(q, k, v, m), want, rtol=1e-5, atol=1e-5)
        if before is None:
            before = _core.cache_stats().compiles
    assert _core.cache_stats().compiles == before
    recs = backend.RECORDS[start:]
    assert len(recs) == 1 and FLASH in {op for op, _ in recs[0].fallbacks}, [r.name for r in recs]


def _index_mask(s: int, dtype, offset: int = 0, window: int | None = None) -> torch.Tensor:
    """An additive mask built inside the compiled function from aranges, as transformers builds its causal mask:
    key j is kept for query i when j <= i + offset (and i - j < window when a window is given)."""
    qi = torch.arange(s)[None, None, :, None]
    kj = torch.arange(s)[None, None, None, :]
    keep = kj <= qi + offset
    if window is not None:
        keep = keep & (qi - kj < window)
    return torch.where(keep.expand(2, -1, s, s), torch.zeros((), dtype=dtype), torch.finfo(dtype).min)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("kind", ["causal", "offset", "window"])
def test_constant_mask_becomes_is_causal_only_when_it_is_causal(dtype, kind):
    """A mask computed from constants is evaluated at compile time: the causal one becomes is_causal=True (no mask
    kernel left); a shifted or windowed one stays a mask. Outputs match eager either way."""
    gen = torch.Generator().manual_seed(SEED)
    s = 24
    q, k, v = _qkv(2, 3, s, 16, dtype, gen)
    kw = {"causal": {}, "offset": {"offset": 3}, "window": {"window": 5}}[kind]
    fn = lambda q, k, v: _attention(q, k, v, mask=_index_mask(s, dtype, **kw))  # noqa: E731
    rep = autofuse.explain(fn, q, k, v)
    assert [op for op, _ in rep.by_design] == [FLASH], rep.fallbacks
    kernels_with_where = [kinfo.name for kinfo in rep.kernels if "where" in kinfo.ops]
    assert (kernels_with_where == []) == (kind == "causal"), (kind, kernels_with_where)
    ref64 = _attention(q.double(), k.double(), v.double(), mask=_index_mask(s, torch.float64, **kw))
    _check(rep.output, fn(q, k, v), ref64, dtype)


@pytest.mark.parametrize("switch", ["1", "0"])
def test_rows_with_all_scores_neg_inf(monkeypatch, switch):
    """The one rule the rewrite changes (module doc): a query row whose scores are all -inf (a -inf mask over every
    key, or an infinite input) gives 0 with the rewrite, as eager's SDPA does, and NaN with
    AUTOFUSE_ATTENTION_REWRITE=0, as the written-out softmax does in eager. Other rows match eager either way."""
    monkeypatch.setenv("AUTOFUSE_ATTENTION_REWRITE", switch)
    gen = torch.Generator().manual_seed(SEED)
    q, k, v = _qkv(1, 2, 6, 4, torch.float32, gen)
    mask = torch.zeros(1, 1, 6, 6)
    mask[..., 2, :] = float("-inf")  # query row 2 sees no key
    fn = lambda q, k, v, m: _attention(q, k, v, mask=m)  # noqa: E731
    rep = autofuse.explain(fn, q, k, v, mask)
    assert (FLASH in _ops(rep)) == (switch == "1"), (rep.by_design, rep.fallbacks)
    eager = fn(q, k, v, mask)
    assert torch.isnan(eager[:, :, 2]).all()
    row = rep.output[:, :, 2]
    assert bool((row == 0).all()) if switch == "1" else bool(torch.isnan(row).all()), row
    others = [0, 1, 3, 4, 5]
    torch.testing.assert_close(rep.output[:, :, others], eager[:, :, others], rtol=1e-5, atol=1e-5)


def test_off_by_default(monkeypatch):
    """Without AUTOFUSE_ATTENTION_REWRITE the pass leaves attention as written (eager's NaN rows kept)."""
    monkeypatch.delenv("AUTOFUSE_ATTENTION_REWRITE")
    gen = torch.Generator().manual_seed(SEED)
    q, k, v = _qkv(1, 2, 8, 4, torch.float32, gen)
    rep = autofuse.explain(_attention, q, k, v)
    assert FLASH not in _ops(rep), (rep.by_design, rep.fallbacks)
    torch.testing.assert_close(rep.output, _attention(q, k, v), rtol=1e-5, atol=1e-5)
