"""Folded host view chains (python/autofuse/program_views.py): the static stride rule must agree with torch's own
views (random chains, seeded and printed), a folded chain must give the same sizes, strides, storage offset and
aliasing as the chain of views, and compiled programs must keep eager's values while emitting one ``RT(...)`` line
per value read instead of one line per view. Views of graph arguments (static strides, which Dynamo's guards hold)
fold too: the rotary halves reach the kernel as specs, with no ``narrow`` per call."""

from __future__ import annotations

import os
import random

import pytest
import torch

from autofuse import backend
from autofuse.program_views import apply_view, reinterpret, view_strides

SEED = int(os.environ.get("AUTOFUSE_TEST_SEED", "20261129"))


def _factorizations(n: int, rng: random.Random, rank: int):
    """A random tuple of `rank` positive ints whose product is n (size-1 dims included)."""
    dims = [1] * rank
    rest = n
    for i in range(rank - 1):
        divs = [d for d in range(1, rest + 1) if rest % d == 0]
        dims[i] = rng.choice(divs)
        rest //= dims[i]
    dims[-1] = rest
    rng.shuffle(dims)
    return tuple(dims)


def _random_view(rng: random.Random) -> torch.Tensor:
    """A random strided view of a fresh buffer: a permutation, maybe a slice and maybe an expanded size-1 dim."""
    shape = tuple(rng.choice([1, 2, 3, 4, 6]) for _ in range(rng.randint(1, 4)))
    t = torch.arange(1000, dtype=torch.float32)[: torch.Size(shape).numel()].reshape(shape)
    t = t.permute(rng.sample(range(len(shape)), len(shape)))
    if rng.random() < 0.4 and t.shape[0] > 1:
        t = t[1:]
    return t


def test_view_strides_agree_with_torch_view():
    rng = random.Random(SEED)
    print("seed", SEED)
    tried = viewable = 0
    for _ in range(600):
        t = _random_view(rng)
        new = _factorizations(t.numel(), rng, rng.randint(1, 4))
        got = view_strides(tuple(t.shape), tuple(t.stride()), new)
        try:
            want = t.view(new).stride()
        except RuntimeError:
            want = None
        tried += 1
        if want is None:
            assert got is None, (tuple(t.shape), t.stride(), new, got)
        else:
            viewable += 1
            assert got is not None, (tuple(t.shape), t.stride(), new)
            # size-1 dims may take any stride; every other stride must equal torch's
            assert all(g == w for g, w, s in zip(got, want, new) if s != 1), (t.shape, t.stride(), new, got, want)
    assert 0 < viewable < tried  # both outcomes were exercised


def _chain(rng: random.Random, t: torch.Tensor, layout):
    """Applies one random view op to the torch tensor and to the static layout alike; returns both (layout None
    when apply_view refuses; the torch result is then None too when torch cannot view either)."""
    op = rng.choice(["reshape", "permute", "broadcast_to", "slice"])
    if op == "permute":
        dims = rng.sample(range(t.dim()), t.dim())
        return t.permute(dims), apply_view("permute", {"dims": dims}, tuple(t.permute(dims).shape), layout)
    if op == "reshape":
        new = _factorizations(t.numel(), rng, rng.randint(1, 4))
        try:
            tv = t.view(new)
        except RuntimeError:
            return None, apply_view("reshape", {}, new, layout)
        return tv, apply_view("reshape", {}, new, layout)
    if op == "broadcast_to":
        shape = (2,) + tuple(3 if s == 1 and rng.random() < 0.5 else s for s in t.shape)
        return t.expand(shape), apply_view("broadcast_to", {}, shape, layout)
    ax = rng.randrange(t.dim())
    n = t.shape[ax]
    start = rng.randint(0, n)
    stop = rng.randint(start, n)
    step = rng.choice([1, 1, 2, 3])
    tv = t[(slice(None),) * ax + (slice(start, stop, step),)]
    return tv, apply_view("slice", {"axis": ax, "start": start, "stop": stop, "step": step}, tuple(tv.shape), layout)


def test_folded_chains_equal_the_views():
    rng = random.Random(SEED + 1)
    print("seed", SEED + 1)
    checked = 0
    for _ in range(300):
        base = torch.randn(rng.choice([2, 4]), rng.choice([3, 6]), rng.choice([1, 4]))
        t, layout = base, (0, tuple(base.shape), tuple(base.stride()), 0)
        for _ in range(rng.randint(1, 5)):
            if t.numel() == 0:
                break
            t2, layout2 = _chain(rng, t, layout)
            if t2 is None:
                assert layout2 is None  # a reshape torch cannot view is never folded
                break
            if layout2 is None:
                break
            t, layout = t2, layout2
            _, sizes, strides, offset = layout
            r = reinterpret(base, sizes, strides, offset)
            assert r.shape == t.shape and r.data_ptr() == t.data_ptr()
            assert all(a == b for a, b, s in zip(r.stride(), t.stride(), t.shape) if s != 1)
            assert torch.equal(r, t)
            checked += 1
    assert checked > 300


def test_reinterpret_offsets_are_relative_to_the_base():
    base = torch.arange(24.0)[4:]
    r = reinterpret(base, (2, 3), (3, 1), 2)
    assert r.storage_offset() == 6 and torch.equal(r, base[2:8].view(2, 3))


needs_native = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")


def _compile(fn, *args):
    torch._dynamo.reset()
    start = len(backend.RECORDS)
    out = torch.compile(fn, backend="autofuse", dynamic=False)(*args)
    return out, [r for r in backend.RECORDS[start:] if r.steps]


def chain_into_matmul(x, w):
    """A kernel output reshaped twice and transposed before an ATen matmul, and a mm result split into heads."""
    y = (x * 2.0 + 1.0).reshape(4, 8, 16).reshape(32, 16)
    z = y @ w
    return z.view(4, 8, 2, 8).permute(0, 2, 1, 3) * 3.0


def returns_views(x):
    """Graph outputs that are folded views of a kernel result (aliasing one buffer)."""
    y = torch.sin(x)
    a = y.reshape(2, 3, 4).permute(2, 0, 1)
    b = y.reshape(6, 4)[1:5:2]
    return a, b


def copying_reshape(x):
    """A reshape after a transpose must copy: it stays a reshape (not folded) and keeps eager's values."""
    y = torch.exp(x).t()
    return y.reshape(-1) * 2.0


@needs_native
def test_chain_into_matmul_is_folded_and_matches_eager(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    x, w = torch.randn(4, 8, 16), torch.randn(16, 16)
    out, recs = _compile(chain_into_matmul, x, w)
    torch.testing.assert_close(out, chain_into_matmul(x, w), rtol=1e-5, atol=1e-5)
    src = recs[0].program_source
    # the reshape chain and the head split are folded: the matmul's input is allocated in its shape
    # (program_outputs.py) and the head split reaches the next kernel as a view spec
    assert ".reshape(" not in src and "RT(" not in src, src
    assert ", S" in src, src


@needs_native
def test_folded_graph_outputs_keep_eager_strides_and_aliasing(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    x = torch.randn(24)
    (a, b), recs = _compile(returns_views, x)
    ea, eb = returns_views(x)
    torch.testing.assert_close(a, ea)
    torch.testing.assert_close(b, eb)
    assert a.stride() == ea.stride() and b.stride() == eb.stride()
    assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()  # both views of one kernel output
    assert "RT(" in recs[0].program_source


@needs_native
def test_copying_reshape_is_not_folded(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    x = torch.randn(6, 5)
    out, recs = _compile(copying_reshape, x)
    torch.testing.assert_close(out, copying_reshape(x))


@needs_native
@pytest.mark.parametrize("kind", ["tensor", "parameter"])
def test_weights_take_the_attribute_fast_path(kind):
    from autofuse import _core

    t = torch.ones(3, 2)
    if kind == "parameter":
        t = torch.nn.Parameter(t)
    v = _core.tensor_view(t, False)
    assert v["fast"] is True
    assert v["sizes"] == [3, 2] and v["strides"] == [2, 1] and v["data_ptr"] == t.data_ptr()


@needs_native
def test_subclasses_still_take_dlpack():
    from autofuse import _core

    class Sub(torch.Tensor):
        pass

    assert _core.tensor_view(torch.ones(3).as_subclass(Sub), False)["fast"] is False


def kv_cat(x, past):
    """A decoder's first KV-cache cat: an empty past (legacy 1-d, or empty along the axis) before the new keys."""
    return torch.cat([past, torch.sin(x)], dim=-2), torch.cat([past, x], dim=-2)


@needs_native
@pytest.mark.parametrize("past", ["legacy 1-d", "same rank"])
def test_cat_onto_an_empty_cache_is_lowered_and_fresh(monkeypatch, past):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    x = torch.randn(1, 2, 5, 4)
    p = torch.tensor([]) if past == "legacy 1-d" else torch.empty(1, 2, 0, 4)
    (a, b), recs = _compile(kv_cat, x, p)
    ea, eb = kv_cat(x, p)
    torch.testing.assert_close(a, ea)
    torch.testing.assert_close(b, eb)
    assert not any(op == "aten.cat" for r in recs for op, _ in r.lowered.fallbacks)
    assert b.data_ptr() != x.data_ptr()  # a copy, as eager's cat, never the argument itself
    b.add_(1)
    assert torch.equal(x, eb)


def heads_of_matmul(x, w):
    """A matmul result split into heads and halves (LLaMA's rotary inputs): folded views read only by a kernel."""
    z = (x @ w).view(2, 4, 2, 8).permute(0, 2, 1, 3)
    return torch.cat([-z[..., 4:], z[..., :4]], dim=-1) * 0.5 + z


@needs_native
def test_kernel_reads_folded_views_as_specs_built_per_call(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    torch._dynamo.reset()
    start = len(backend.RECORDS)
    c = torch.compile(heads_of_matmul, backend="autofuse", dynamic=False)
    for seed in range(3):  # new data each call: a view spec kept from an earlier call would read stale memory
        g = torch.Generator().manual_seed(seed)
        x, w = torch.randn(8, 16, generator=g), torch.randn(16, 16, generator=g)
        out = c(x, w)
        want = heads_of_matmul(x, w)
        assert out.stride() == want.stride()
        torch.testing.assert_close(out, want)
    src = [r for r in backend.RECORDS[start:] if r.steps][0].program_source
    assert ", S" in src and "RT(" not in src, src  # the views reach the kernel as specs: no torch view is built


def rotate_half_mul(x, s):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1) * s


def test_views_of_graph_arguments_reach_kernels_as_specs(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    torch._dynamo.reset()
    start = len(backend.RECORDS)
    c = torch.compile(rotate_half_mul, backend="autofuse", dynamic=False)
    s = torch.randn(16)
    # contiguous; the same sizes in a transposed storage (other strides: Dynamo recompiles, the new program folds
    # with them); a view at a storage offset with the first case's strides (the specs are relative to the argument)
    for x in (torch.randn(4, 3, 16), torch.randn(3, 4, 16).transpose(0, 1), torch.randn(5, 3, 16)[1:]):
        out = c(x, s)
        torch.testing.assert_close(out, rotate_half_mul(x, s), rtol=0, atol=0)
    srcs = [r.program_source for r in backend.RECORDS[start:] if r.steps]
    assert len(srcs) == 2, srcs
    for src in srcs:
        assert ", S" in src and "narrow(" not in src and "RT(" not in src, src
