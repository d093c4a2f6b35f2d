"""fp32 linear layers on oneDNN's linear (python/autofuse/extern_matmul.py, program_linear.py's ``ODL`` lines): the
choice (forced, probed, cached), the program lines it produces, and that compiled models keep eager's values within
fp32 GEMM rounding, NaN/inf, 0-size and size-1 shapes, weights changed between calls, and training gradients."""

from __future__ import annotations

import json
import os

import pytest
import torch

from autofuse import backend, extern_matmul
from program_util import compile_recording

needs_native = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")
needs_onednn = pytest.mark.skipif(extern_matmul.ONEDNN_LINEAR is None, reason="this torch build has no oneDNN")


@pytest.fixture
def matmul(monkeypatch):
    """Sets AUTOFUSE_MATMUL for one test (the suite's default is aten, tests/conftest.py) and forgets the choice."""

    def set_(value: str) -> None:
        monkeypatch.setenv("AUTOFUSE_MATMUL", value)
        extern_matmul.reset()

    yield set_
    extern_matmul.reset()


def _rel(got: torch.Tensor, want: torch.Tensor) -> float:
    """max |got - want| / max |want| (0 for empty tensors)."""
    if want.numel() == 0:
        return 0.0
    return ((got.double() - want.double()).abs().max() / want.double().abs().max().clamp_min(1e-30)).item()


class Conv1D(torch.nn.Module):
    """GPT-2's projection: a (K, N) weight used as it is, ``addmm(b, x.view(-1, K), w)``."""

    def __init__(self, k: int, n: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(k, n) * k ** -0.5)
        self.bias = torch.nn.Parameter(torch.randn(n))

    def forward(self, x):
        out = torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight)
        return out.view(*x.shape[:-1], out.shape[-1])


class Net(torch.nn.Module):
    """A linear with bias, a GELU, a Conv1D, a bias-free linear (nn.Linear's (N, K) weights and GPT-2's (K, N))."""

    def __init__(self, d: int = 64) -> None:
        super().__init__()
        self.up = torch.nn.Linear(d, 3 * d)
        self.proj = Conv1D(3 * d, d)
        self.head = torch.nn.Linear(d, 40, bias=False)

    def forward(self, x):
        return self.head(self.proj(torch.nn.functional.gelu(self.up(x))) + x)


def test_forced_choices_and_a_bad_value(matmul, capfd):
    matmul("aten")
    assert extern_matmul.choice()["choice"] == "aten" and not extern_matmul.use_onednn(torch.float32)
    assert not extern_matmul.use_onednn(torch.bfloat16)
    matmul("onednn")
    got = extern_matmul.choice()
    assert got["source"] == "env"
    assert got["choice"] == ("onednn" if extern_matmul.ONEDNN_LINEAR is not None else "aten")
    assert extern_matmul.use_onednn(torch.bfloat16) == extern_matmul._bf16_on_onednn()
    assert not extern_matmul.use_onednn(torch.float16) and not extern_matmul.use_onednn(torch.float64)
    matmul("sometimes")  # warned once, then the default (auto: the probe or its cache)
    assert extern_matmul.choice()["choice"] in ("aten", "onednn")
    assert "AUTOFUSE_MATMUL='sometimes'" in capfd.readouterr().err


@needs_onednn
def test_probe_measures_both_and_the_answer_is_cached(matmul, monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOFUSE_MACHINE_DIR", str(tmp_path))
    monkeypatch.setattr(extern_matmul, "PROBE_NOISE", 1e9)  # tests run beside others: never "noisy" here
    matmul("auto")
    threads = torch.get_num_threads()
    first = extern_matmul.choice()
    assert torch.get_num_threads() == threads  # the probe runs on one thread and restores the count
    assert first["source"] == "probe" and first["choice"] in ("aten", "onednn")
    assert [s[:3] for s in first["shapes"]] == [list(s) for s in extern_matmul.PROBE_SHAPES]
    assert all(s[3] > 0 and s[4] > 0 for s in first["shapes"])
    files = [f for f in os.listdir(tmp_path) if f.startswith("matmul-")]
    assert len(files) == 1
    with open(tmp_path / files[0]) as f:
        assert json.load(f)["choice"] == first["choice"]
    extern_matmul.reset()
    second = extern_matmul.choice()
    assert second["source"] == f"cache {tmp_path / files[0]}" and second["choice"] == first["choice"]
    # a corrupt file is measured again and rewritten
    (tmp_path / files[0]).write_text("{not json")
    extern_matmul.reset()
    assert extern_matmul.choice()["source"] == "probe"
    with open(tmp_path / files[0]) as f:
        assert json.load(f)["choice"] in ("aten", "onednn")


def _run(net, x, **kw):
    c, recs = compile_recording(net, **kw)
    with torch.no_grad():
        got = c(x)
    return c, got, [r.program_source for r in recs()]


@needs_native
@needs_onednn
@pytest.mark.parametrize("shape", [(2, 9, 64), (1, 1, 64), (0, 5, 64), (3, 64)])
def test_program_runs_every_fp32_linear_on_onednn_and_keeps_eager_values(matmul, shape):
    matmul("onednn")
    torch.manual_seed(1)
    net = Net().eval()
    x = torch.randn(*shape)
    with torch.no_grad():
        want = net(x)
        ref = net.double()(x.double())
        net.float()
    _, got, srcs = _run(net, x)
    src = "\n".join(srcs)
    assert src.count("ODL(") == 3, src  # up, proj (a (K, N) weight read as a transposed view) and head
    assert "ADDMM(" not in src and " MM(" not in src and "LIN(" not in src, src
    assert got.shape == want.shape and got.stride() == want.stride()
    # fp32 GEMMs in another summation order: within a few ulp of the output's scale, like eager's own error
    assert _rel(got, ref) <= 4 * max(_rel(want, ref), 1e-7), (_rel(got, ref), _rel(want, ref))


@needs_native
@needs_onednn
def test_aten_choice_emits_no_onednn_line(matmul):
    matmul("aten")
    torch.manual_seed(2)
    net = Net().eval()
    x = torch.randn(2, 7, 64)
    _, got, srcs = _run(net, x)
    assert "ODL(" not in "\n".join(srcs)
    with torch.no_grad():
        assert _rel(got, net(x)) < 1e-6  # ATen's own matmuls (the GELU's erf may differ from eager's by an ulp)


@needs_native
@needs_onednn
@pytest.mark.parametrize("shape", [(2, 5, 64), (1, 1, 64), (4, 33, 64)])
def test_bf16_linears_on_onednn_give_atens_bits(matmul, shape):
    torch.manual_seed(3)
    net = Net().eval().to(torch.bfloat16)
    x = torch.randn(*shape, dtype=torch.bfloat16)
    matmul("aten")
    _, want, srcs = _run(net, x)
    assert "ODL(" not in "\n".join(srcs)
    matmul("auto")
    _, got, srcs = _run(net, x)
    assert "\n".join(srcs).count("ODL(") == (3 if extern_matmul._bf16_on_onednn() else 0)
    assert torch.equal(got, want)  # ATen's bf16 matmul runs on oneDNN too: the same bits


@needs_native
@needs_onednn
def test_unsafe_biases_stay_on_aten(matmul):
    matmul("onednn")
    torch.manual_seed(3)

    class ExpandedBias(torch.nn.Module):  # a stride-0 bias (oneDNN would read past it) and an empty reduction
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(16, 8))
            self.b = torch.nn.Parameter(torch.randn(1))
            self.w0 = torch.nn.Parameter(torch.randn(4, 0))

        def forward(self, x):
            y = torch.nn.functional.linear(x, self.w, self.b.expand(16))
            return y, torch.nn.functional.linear(x[:, :0], self.w0, self.b.expand(4))

    m = ExpandedBias()
    x = torch.randn(6, 8)
    _, (y, y0), srcs = _run(m, x)
    with torch.no_grad():
        wy, wy0 = m(x)
    assert "ODL(" not in "\n".join(srcs)
    assert _rel(y, wy) < 1e-6 and torch.equal(y0, wy0)


@needs_native
@needs_onednn
def test_nan_inf_and_a_weight_changed_between_calls(matmul):
    matmul("onednn")
    torch.manual_seed(4)
    net = Net().eval()
    x = torch.randn(3, 4, 64)
    x[0, 1, 5] = float("nan")
    x[1, 2, 7] = float("inf")
    c, got, srcs = _run(net, x)
    assert "ODL(" in "\n".join(srcs)
    with torch.no_grad():
        want = net(x)
        assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.isinf(), want.isinf())
        fin = want.isfinite()
        assert _rel(got[fin], want[fin]) < 1e-5
        net.proj.weight.mul_(-2.0)  # in place: the next call reads the new weight
        net.head.weight.data = torch.randn(40, 64)  # replaced: the same
        x2 = torch.randn(3, 4, 64)
        assert _rel(c(x2), net(x2)) < 1e-5


@needs_native
@needs_onednn
def test_training_step_gradients_match_eager(matmul):
    matmul("onednn")
    torch.manual_seed(5)
    net = Net()
    ref = Net()
    ref.load_state_dict(net.state_dict())
    x = torch.randn(2, 6, 64)
    c = torch.compile(net, backend="autofuse")
    c(x).square().mean().backward()
    ref(x).square().mean().backward()
    for (name, p), q in zip(net.named_parameters(), ref.parameters()):
        assert _rel(p.grad, q.grad) < 1e-5, name


@needs_native
@needs_onednn
def test_first_probe_inside_a_compile_times_real_gemms(matmul, monkeypatch, tmp_path):
    """choice() is first called while the backend compiles, inside AOTAutograd's fake mode: the probe must still
    run (and check) real GEMMs, and store that answer (review finding: it stored fake tensors' ~0.1 ms)."""
    monkeypatch.setenv("AUTOFUSE_MACHINE_DIR", str(tmp_path))
    matmul("auto")
    seen = []
    real = extern_matmul._time_shapes

    def spy(out):
        real(out)
        seen.append(out)

    monkeypatch.setattr(extern_matmul, "_time_shapes", spy)
    torch.manual_seed(6)
    net = Net().eval()
    x = torch.randn(2, 3, 64)
    _, got, _ = _run(net, x)  # no choice() before this compile
    assert len(seen) == 1 and "error" not in seen[0], seen
    # a real 512x768x768 GEMM is several times a 32-row one; fake tensors took the same ~0.1 ms for both
    (_, _, _, a32, o32), (_, _, _, a512, o512) = seen[0]["shapes"]
    assert a512 > 3 * a32 and o512 > 3 * o32, seen[0]["shapes"]
    with torch.no_grad():
        assert _rel(got, net(x)) < 1e-5


@pytest.mark.parametrize("text", ['{"choice": "onednn", "shapes": 5}', '{"choice": "onednn", "shapes": [[1, 2]]}',
                                  '{"choice": "aten", "shapes": [["a", 1, 2, 3, 4]]}', '[1, 2]'])
def test_a_damaged_probe_file_is_measured_again(matmul, monkeypatch, tmp_path, text):
    monkeypatch.setenv("AUTOFUSE_MACHINE_DIR", str(tmp_path))
    matmul("auto")
    path = extern_matmul._cache_path()
    with open(path, "w") as f:
        f.write(text)
    got = extern_matmul.choice()  # must not raise (it did while formatting its log line)
    assert got["source"] == "probe" and got["choice"] in ("aten", "onednn")


@pytest.mark.filterwarnings("ignore:TF32 acceleration on top of oneDNN")  # torch.backends.mkldnn.flags() itself
def test_cache_key_follows_the_variable_and_torchs_mkldnn_switch(matmul):
    matmul("aten")
    assert extern_matmul.cache_key().startswith("matmul fp32=aten bf16=aten ")
    matmul("onednn")
    if extern_matmul.ONEDNN_LINEAR is not None:
        assert "fp32=onednn" in extern_matmul.cache_key()
        with torch.backends.mkldnn.flags(enabled=False):  # the user switched oneDNN off: ATen everywhere
            assert extern_matmul.cache_key().startswith("matmul fp32=aten bf16=aten ")
            assert not extern_matmul.use_onednn(torch.bfloat16)


@needs_native
@needs_onednn
def test_mixed_dtypes_raise_eagers_error(matmul):
    matmul("onednn")
    x, w, b = torch.randn(8, 16), torch.randn(32, 16).bfloat16(), torch.randn(32)
    with pytest.raises(RuntimeError) as eager:
        torch.nn.functional.linear(x, w, b)
    c = torch.compile(lambda x, w, b: torch.nn.functional.linear(x, w, b), backend="autofuse")
    with pytest.raises(RuntimeError) as compiled:
        c(x, w, b)
    assert "same dtype" in str(eager.value) and "same dtype" in str(compiled.value), str(compiled.value)[:300]


@needs_onednn
def test_a_noisy_probe_is_not_stored(matmul, monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOFUSE_MACHINE_DIR", str(tmp_path))
    monkeypatch.setattr(extern_matmul, "PROBE_NOISE", 0.5)  # every median is above half the minimum: "noisy"
    matmul("auto")
    got = extern_matmul.choice()
    assert got["source"] == "probe" and got["noisy"] is True
    assert not [f for f in os.listdir(tmp_path) if f.startswith("matmul-")]


@needs_native
@needs_onednn
def test_explain_says_which_linears_run_on_onednn(matmul, monkeypatch):
    import autofuse

    matmul("onednn")
    with torch.no_grad():
        r = autofuse.explain(Net().eval(), torch.randn(2, 3, 64))
    packed = "3 ATen calls (3 as oneDNN's linear, 3 with packed weights)"  # inference: weight_pack.py
    assert packed in str(r) or autofuse.weight_pack.REORDER is None, str(r)
    monkeypatch.setenv("AUTOFUSE_PREPACK", "0")
    with torch.no_grad():
        r = autofuse.explain(Net().eval(), torch.randn(2, 3, 64))
    assert "3 ATen calls (3 as oneDNN's linear)" in str(r), str(r)
    matmul("aten")
    with torch.no_grad():
        r = autofuse.explain(Net().eval(), torch.randn(2, 3, 64))
    assert "oneDNN" not in str(r), str(r)
