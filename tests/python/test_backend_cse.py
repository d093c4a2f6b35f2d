"""Input-free nodes built once (lowering.Lowerer.add): a decoder's repeated ``arange`` (position ids, cache
positions, the causal mask) lowers to one ``iota`` chain, values stay eager's, and two graph outputs merged that way
are still two tensors."""

from __future__ import annotations

import pytest
import torch

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")


def _compile(fn, *args):
    torch._dynamo.reset()
    start = len(backend.RECORDS)
    out = torch.compile(fn, backend="autofuse", dynamic=False)(*args)
    return out, [r for r in backend.RECORDS[start:] if r.lowered is not None]


def three_aranges(x):
    n = x.shape[-1]
    pos = torch.arange(n)
    cache = torch.arange(n)
    mask = torch.arange(n)[:, None] <= torch.arange(n)[None, :]
    return (x * pos + cache).masked_fill(~mask, 0.0)


def two_equal_outputs(x):
    return x + 1, torch.arange(6) * 2, torch.arange(6) * 2


def test_repeated_aranges_lower_to_one_iota(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    x = torch.randn(6, 6)
    out, recs = _compile(three_aranges, x)
    torch.testing.assert_close(out, three_aranges(x))
    ops = [n.op for r in recs for n in r.lowered.nodes]
    assert ops.count("iota") == 1, ops


def test_merged_outputs_stay_distinct_tensors(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    x = torch.randn(3)
    (a, b, c), recs = _compile(two_equal_outputs, x)
    ea, eb, ec = two_equal_outputs(x)
    torch.testing.assert_close(a, ea)
    assert torch.equal(b, eb) and torch.equal(c, ec)
    assert b.data_ptr() != c.data_ptr()
    b.add_(1)
    assert torch.equal(c, ec)


def views_of_merged(x):
    a, b = torch.arange(4), torch.arange(4)
    m, n = torch.zeros(3, 3), torch.zeros(3, 3)
    return a, b.view(2, 2), m, n.t(), x + 1


def test_views_of_merged_outputs_stay_distinct_tensors(monkeypatch):
    # the new-user review of session 5: b.view(2, 2) shared a's storage (a.add_ changed it); n.t() shared m's
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    x = torch.randn(3)
    (a, b, m, n, y), _ = _compile(views_of_merged, x)
    ea, eb, em, en, ey = views_of_merged(x)
    assert torch.equal(a, ea) and torch.equal(b, eb) and torch.equal(m, em) and torch.equal(n, en)
    torch.testing.assert_close(y, ey)
    a.add_(100)
    m.fill_(5)
    assert torch.equal(b, eb) and torch.equal(n, en)
