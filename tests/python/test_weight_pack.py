"""Pre-packed oneDNN linear weights in inference graphs (python/autofuse/weight_pack.py, program_linear.py's ``PW``):
which graphs pack, that the packed calls give the plain calls' values, and that a weight changed between calls is
packed again (in place, through ``.data``, through numpy, replaced, ``load_state_dict``), training graphs, a weight
written at every call, the cache released with its weight, dynamic shapes, and the sampled stamp itself."""

from __future__ import annotations

import gc

import pytest
import torch

from autofuse import _core, backend, extern_matmul, weight_pack
from program_util import compile_recording
from test_extern_matmul import Net

needs_native = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")
needs_pack = pytest.mark.skipif(weight_pack.REORDER is None, reason="this torch build has no oneDNN reorder op")


@pytest.fixture
def onednn(monkeypatch):
    """oneDNN linears (AUTOFUSE_MATMUL=onednn; the suite's default is aten) with packing on, a fresh pack cache."""
    monkeypatch.setenv("AUTOFUSE_MATMUL", "onednn")
    monkeypatch.setenv("AUTOFUSE_PREPACK", "1")
    extern_matmul.reset()
    weight_pack.clear()
    yield monkeypatch
    extern_matmul.reset()
    weight_pack.clear()


def _compile(net, dynamic=False):
    c, recs = compile_recording(net, dynamic=dynamic)
    return c, lambda: "\n".join(r.program_source for r in recs())


def _rel(got: torch.Tensor, want: torch.Tensor) -> float:
    if want.numel() == 0:
        return 0.0
    return ((got.double() - want.double()).abs().max() / want.double().abs().max().clamp_min(1e-30)).item()


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    """fp32: a few GEMM roundings (oneDNN's summation order, and its M = 1 kernel when packed); bf16: eager's bits
    up to one bf16 rounding of a differently ordered fp32 sum."""
    assert got.shape == want.shape
    tol = 1e-5 if got.dtype == torch.float32 else 1e-2
    assert _rel(got, want) <= tol, _rel(got, want)


@needs_native
@needs_pack
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(2, 9, 64), (1, 1, 64), (0, 5, 64), (3, 64)])
def test_inference_graph_packs_every_weight_and_keeps_the_plain_values(onednn, dtype, shape):
    if dtype == torch.bfloat16 and not extern_matmul.use_onednn(torch.bfloat16):
        pytest.skip("bf16 matmul is not oneDNN on this CPU (no AVX512-BF16 path)")
    torch.manual_seed(3)
    net = Net().eval().to(dtype)
    x = torch.randn(*shape, dtype=dtype)
    c, source = _compile(net)
    with torch.no_grad():
        got, again = c(x), c(x)
        want = net(x)
    src = source()
    assert src.count("PW(") == 3, src  # up, proj (GPT-2's (K, N) Conv1D weight) and head
    _close(got, want)
    assert torch.equal(got, again)
    assert weight_pack.STATS["packs"] == 3 and weight_pack.STATS["hits"] == 3, weight_pack.STATS
    onednn.setenv("AUTOFUSE_PREPACK", "0")  # the same graph unpacked: bf16 gives the same bits (fp32 at M > 1)
    c0, source0 = _compile(net)
    with torch.no_grad():
        plain = c0(x)
    assert "PW(" not in source0() and source0().count("ODL(") == 3
    if dtype == torch.bfloat16 or x.numel() // 64 > 1:
        assert torch.equal(got, plain)


@needs_native
@needs_pack
def test_training_graphs_do_not_pack(onednn):
    torch.manual_seed(4)
    net = Net()
    c, source = _compile(net)
    x = torch.randn(2, 5, 64)
    c(x).sum().backward()
    assert "ODL(" in source() and "PW(" not in source()
    assert weight_pack.STATS["packs"] == 0


def _edits():
    """(name, fn(net)) writing the first layer's weight in ways the version counter sees or does not see."""

    def via_data(net):
        net.up.weight.data.copy_(torch.randn_like(net.up.weight))

    def via_numpy(net):
        net.up.weight.detach().numpy()[:] = torch.randn_like(net.up.weight).numpy()

    def in_place(net):
        with torch.no_grad():
            net.up.weight.mul_(-2.0)

    def replaced(net):
        net.up.weight.data = torch.randn_like(net.up.weight)

    def load_state(net):
        sd = {k: torch.randn_like(v) for k, v in net.state_dict().items()}
        net.load_state_dict(sd)

    def conv1d_rows(net):  # GPT-2's (K, N) weight: every row rewritten through .data
        net.proj.weight.data.mul_(0.5)

    return [via_data, via_numpy, in_place, replaced, load_state, conv1d_rows]


@needs_native
@needs_pack
@pytest.mark.parametrize("edit", _edits(), ids=lambda f: f.__name__)
def test_a_weight_written_between_calls_is_packed_again(onednn, edit):
    torch.manual_seed(5)
    net = Net().eval()
    x = torch.randn(3, 4, 64)
    c, _ = _compile(net)
    with torch.no_grad():
        _close(c(x), net(x))
        packs = weight_pack.STATS["packs"]
        edit(net)
        want = net(x)
        got = c(x)
    _close(got, want)
    assert weight_pack.STATS["packs"] > packs


@needs_native
@needs_pack
def test_an_unsampled_write_needs_clear_and_clear_repacks(onednn):
    """The documented limit: a one-element write through ``.data`` misses the sampled words (the stamp reads 64
    words spread over 48 KiB here), so the packed copy stays until ``weight_pack.clear()``."""
    torch.manual_seed(6)
    net = Net().eval()
    x = torch.randn(3, 4, 64)
    c, _ = _compile(net)
    with torch.no_grad():
        c(x)
        stamp = _core.weight_stamp(net.up.weight)
        net.up.weight.data[100, 5] += 1000.0  # byte offset 25620: between sampled words 32 and 33
        assert _core.weight_stamp(net.up.weight) == stamp
        weight_pack.clear()
        _close(c(x), net(x))
    assert weight_pack.STATS["packs"] == 3


def _packed_net(seed: int):
    """(a Net, its compiled form) after one compiled inference call, which packed its three weights."""
    torch.manual_seed(seed)
    net = Net().eval()
    c, _ = _compile(net)
    with torch.no_grad():
        c(torch.randn(2, 64))
    return net, c


def _reload_head(calls_between: int) -> None:
    """MAX_REPACKS + 4 times: rewrite Net's head weight in place, then compare ``calls_between`` compiled calls with
    eager."""
    torch.manual_seed(7)
    net = Net().eval()
    x = torch.randn(2, 3, 64)
    c, _ = _compile(net)
    with torch.no_grad():
        for _ in range(weight_pack.MAX_REPACKS + 4):
            net.head.weight.add_(0.01)
            for _ in range(calls_between):
                _close(c(x), net(x))


@needs_native
@needs_pack
def test_a_weight_written_at_every_call_stops_being_packed(onednn):
    _reload_head(calls_between=1)  # each call finds a rewritten weight
    assert weight_pack.STATS["plain"] >= 3  # the head's weight, passed plain once repacked MAX_REPACKS times
    assert weight_pack.STATS["packs"] == 3 + weight_pack.MAX_REPACKS


class TiedBothWays(torch.nn.Module):
    """One weight W read as ``linear(x, W)`` (x W^T) and as ``h @ W`` (the (K, N) form): a tied autoencoder."""

    def __init__(self, d: int, e: int) -> None:
        super().__init__()
        self.enc = torch.nn.Linear(d, e, bias=False)

    def forward(self, x):
        return torch.relu(self.enc(x)) @ self.enc.weight


@needs_native
@needs_pack
@pytest.mark.parametrize("dims", [(64, 64), (64, 96)], ids=["square", "rectangular"])
def test_one_weight_read_both_ways_keeps_two_packed_copies(onednn, dims):
    """breaker12: the cache was keyed by the weight alone, so ``h @ W`` got the copy packed for ``linear(x, W)``:
    x W W^T... computed as x W^T W^T (a square W: relative error 1.4), or oneDNN refused the shapes (rectangular)."""
    torch.manual_seed(12)
    net = TiedBothWays(*dims).eval()
    x = torch.randn(5, dims[0])
    c, source = _compile(net)
    with torch.no_grad():
        for _ in range(2):
            _close(c(x), net(x))
    assert source().count("PW(") == 2, source()
    assert weight_pack.STATS["packs"] == 2 and len(weight_pack._CACHE) == 2


@needs_native
@needs_pack
def test_one_weight_read_both_ways_by_two_compiled_functions(onednn):
    torch.manual_seed(13)
    w = torch.nn.Parameter(torch.randn(48, 48))
    f1, _ = _compile(lambda x: torch.nn.functional.linear(x, w))
    f2, _ = _compile(lambda x: x @ w)
    x = torch.randn(6, 48)
    with torch.no_grad():
        for _ in range(2):
            _close(f1(x), torch.nn.functional.linear(x, w))
            _close(f2(x), x @ w)


@needs_native
@needs_pack
def test_a_data_reshape_is_packed_again(onednn):
    """breaker12b: ``W.data = W.data.view(...)`` keeps pointer, version and stamp; the (64, 128) copy was handed to
    a (128, 64) weight and oneDNN raised."""
    torch.manual_seed(16)
    w = torch.nn.Parameter(torch.randn(64, 128))
    c, _ = _compile(lambda x, w: torch.nn.functional.linear(x, w), dynamic=False)
    with torch.no_grad():
        x = torch.randn(4, 128)
        _close(c(x, w), torch.nn.functional.linear(x, w))  # packs the (64, 128) weight
        w.data = w.data.view(128, 64)
        x = torch.randn(4, 64)
        _close(c(x, w), torch.nn.functional.linear(x, w))


@needs_native
@needs_pack
def test_swap_tensors_works_after_clear(onednn):
    """The documented limit (module doc): the cache's weak reference blocks torch.utils.swap_tensors until clear()."""
    net, c = _packed_net(17)
    other = torch.nn.Parameter(torch.randn_like(net.up.weight))
    with pytest.raises(RuntimeError, match="weakref"):
        torch.utils.swap_tensors(net.up.weight, other)
    weight_pack.clear()
    torch.utils.swap_tensors(net.up.weight, other)
    x = torch.randn(2, 64)
    with torch.no_grad():
        _close(c(x), net(x))


@needs_native
@needs_pack
def test_a_plain_tensor_argument_is_not_packed(onednn):
    """breaker12: ``a @ b`` with ``b`` an argument refilled through numpy between calls came back stale."""
    torch.manual_seed(14)
    buf = torch.randn(32, 40).numpy()
    b = torch.from_numpy(buf)
    c, source = _compile(lambda a, b: a @ b)
    a = torch.randn(8, 32)
    with torch.no_grad():
        for i in range(4):
            buf[i, 3] = 1.0 + i  # an untracked one-element write
            _close(c(a, b), a @ b)
    assert weight_pack.STATS["packs"] == 0


@needs_native
@needs_pack
def test_inference_tensor_weights_run_plain(onednn):
    torch.manual_seed(11)
    with torch.inference_mode():
        net = Net().eval()  # its parameters are inference tensors: no version counter to check
        x = torch.randn(2, 3, 64)
        c, _ = _compile(net)
        _close(c(x), net(x))
        net.up.weight.mul_(3.0)  # allowed in inference mode, untracked
        _close(c(x), net(x))
    assert weight_pack.STATS["packs"] == 0 and weight_pack.STATS["plain"] >= 6


@needs_native
@needs_pack
def test_a_weight_reloaded_between_used_calls_is_always_packed_again(onednn):
    _reload_head(calls_between=2)  # a reload, then two calls, the second reusing the copy
    assert weight_pack.STATS["plain"] == 0
    assert weight_pack.STATS["packs"] == 3 + weight_pack.MAX_REPACKS + 3


@needs_native
@needs_pack
def test_the_packed_copy_dies_with_its_weight(onednn):
    net, c = _packed_net(8)
    assert len(weight_pack._CACHE) == 3
    del net, c
    torch._dynamo.reset()
    gc.collect()
    assert len(weight_pack._CACHE) == 0


@needs_native
@needs_pack
def test_dynamic_rows_share_one_packed_copy(onednn):
    torch.manual_seed(9)
    net = Net().eval()
    c, source = _compile(net, dynamic=True)
    with torch.no_grad():
        for m in (3, 17, 1, 40):
            x = torch.randn(m, 64)
            _close(c(x), net(x))
    assert ", None), " in source()  # the symbolic-size program packs without a row hint
    # the programs for other sizes (Dynamo specializes 1) reuse the packed copies: one pack per weight
    assert weight_pack.STATS["packs"] <= 3 and weight_pack.STATS["hits"] >= 6, weight_pack.STATS


@needs_native
@needs_pack
def test_prepack_is_in_the_compiled_graph_cache_key(onednn):
    assert extern_matmul.cache_key().endswith("prepack=1")
    onednn.setenv("AUTOFUSE_PREPACK", "0")
    assert extern_matmul.cache_key().endswith("prepack=0")


@needs_native
def test_weight_stamp_reads_sampled_words():
    torch.manual_seed(10)
    small = torch.randn(100)  # 400 bytes: every byte counts
    s = _core.weight_stamp(small)
    small[57] = small[57] + 1
    assert _core.weight_stamp(small) != s
    big = torch.randn(1000, 100)  # 400,000 bytes: 64 words, the first and the last among them
    s = _core.weight_stamp(big)
    assert _core.weight_stamp(big.clone()) == s
    for flat in (0, 100_000 - 1, (400_000 - 8) * 5 // 63 // 4):
        b = big.clone()
        b.view(-1)[flat] += 1
        assert _core.weight_stamp(b) != s, flat
    assert _core.weight_stamp(big.bfloat16()) != _core.weight_stamp(big.bfloat16()[:500])
    with pytest.raises(ValueError, match="not contiguous"):
        _core.weight_stamp(big.t())
