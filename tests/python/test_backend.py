"""torch.compile(backend="autofuse") end to end: results against eager, kernels launched, fallbacks, dynamic shapes,
training. Each test resets Dynamo. Tests that need the native kernel path (C++ fusion + codegen through the bindings)
skip with that reason when it is not built; everything else also runs on the eager reference path.
"""

import logging
import os
import random

import pytest
import torch
import torch.nn.functional as F

import autofuse
from autofuse import backend
from autofuse.program import kernel_launches

SEED = random.randrange(1 << 30)
print(f"test_backend seed {SEED}")

native = pytest.mark.skipif(not backend.has_native_kernels(),
                            reason="needs autofuse._core.fuse and Kernel (C++ fusion/codegen bindings) built")


#: Record modes: native kernels, fusion groups on a stand-in, or stand-in groups without fusion (backend.plan).
FUSED = ("kernels", "fused-reference", "fused-interpreter")
MODES = FUSED + ("reference", "interpreter")


def run_compiled(fn, *args, dynamic=None, atol=1e-5, rtol=1e-5, calls=1):
    """Compile fn, check it against eager on args; returns (records of the graphs compiled, launches made)."""
    torch._dynamo.reset()
    start, launches = len(backend.RECORDS), kernel_launches()
    compiled = torch.compile(fn, backend="autofuse", dynamic=dynamic)
    for _ in range(calls):
        got = compiled(*args)
    want = fn(*args)
    torch.testing.assert_close(got, want, atol=atol, rtol=rtol, equal_nan=True)
    return backend.RECORDS[start:], kernel_launches() - launches


def kernels(records):
    return [s for r in records for s in r.kernels]


def test_backend_is_registered():
    assert "autofuse" in torch._dynamo.list_backends()


def test_pointwise_chain_is_one_kernel():
    torch.manual_seed(SEED)
    x, y = torch.randn(33, 65), torch.randn(65)
    recs, launched = run_compiled(lambda x, y: torch.sigmoid(x * y + 1.5).tanh() - y.exp(), x, y)
    assert recs and all(r.mode in MODES for r in recs)
    assert launched >= 1
    assert recs[0].lowered.fallbacks == []
    if recs[0].mode in FUSED:
        assert len(kernels(recs)) == 1


@pytest.mark.parametrize("fn", [
    lambda x: torch.softmax(x, -1),
    lambda x: torch.log_softmax(x, 1),
    lambda x: F.layer_norm(x, (x.shape[-1],)),
    lambda x: F.gelu(x),
    lambda x: F.gelu(x, approximate="tanh"),
    lambda x: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6),
    lambda x: F.silu(x) * x,
], ids=["softmax", "log_softmax", "layer_norm", "gelu", "gelu_tanh", "rms_norm", "silu_mul"])
def test_fusable_patterns_have_no_fallback(fn):
    torch.manual_seed(SEED)
    x = torch.randn(7, 129)
    recs, launched = run_compiled(fn, x)
    assert launched >= 1
    assert [f for r in recs for f in r.lowered.fallbacks] == []
    if recs[0].mode in FUSED:
        assert len(kernels(recs)) == 1, [s.name for s in kernels(recs)]


def test_mixed_dtypes_and_scalars():
    torch.manual_seed(SEED)
    a = torch.randn(16, 8, dtype=torch.float16)
    b = torch.randn(16, 8)
    i = torch.randint(-9, 9, (16, 8), dtype=torch.int32)
    recs, _ = run_compiled(lambda a, b, i: (a * 2 + b) / 3 + i * 0.5 + (i // 4) + (a > 0), a, b, i, atol=1e-3)
    assert any(n.op == "cast" for n in recs[0].lowered.nodes)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_softmax(dtype):
    torch.manual_seed(SEED)
    x = (torch.randn(9, 100) * 3).to(dtype)
    run_compiled(lambda x: torch.softmax(x, -1) * 2 + x, x, atol=2e-2, rtol=2e-2)


def test_non_contiguous_inputs():
    torch.manual_seed(SEED)
    base = torch.randn(40, 30)
    x = base.t()  # transposed
    y = torch.randn(30, 1).expand(30, 40)  # expanded (stride 0)
    z = base[::2, ::3]  # strided slice
    run_compiled(lambda x, y, z: (x * y).exp().sum(-1) + z.sum(), x, y, z)


def test_fallback_messages_logged_once(caplog):
    torch.manual_seed(SEED)
    caplog.set_level(logging.INFO, logger="autofuse")
    from autofuse import lowering

    lowering._reported.clear()
    x = torch.randn(8, 8)
    run_compiled(lambda x: torch.cumsum(x, 0) * 2 + (x @ x), x)
    run_compiled(lambda x: torch.cumsum(x, 1) + 1, x)
    msgs = [r.getMessage() for r in caplog.records if r.name == "autofuse"]
    cumsum = [m for m in msgs if m.startswith("Fallback aten.cumsum:")]
    assert len(cumsum) == 1, msgs
    assert any(m.startswith("Fallback aten.mm:") for m in msgs)


def test_strict_mode_raises_for_unlowerable_graph(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    x = torch.randn(4, dtype=torch.complex64)
    torch._dynamo.reset()
    with pytest.raises(Exception):
        torch.compile(lambda x: x * 2, backend="autofuse")(x)


def test_unlowerable_graph_runs_eagerly():
    x = torch.randn(4, dtype=torch.complex64)
    recs, _ = run_compiled(lambda x: x * 2 + 1, x)
    assert recs[0].mode == "eager" and recs[0].reason


def test_float8_input_falls_back_per_op_and_the_rest_fuses():
    """Review, session 28: a float8 tensor input has no IR value, and the program read it for its ATen fallback by IR
    value (KeyError 'FX argument arg0_1 has no value in the program'): the whole graph ran eagerly. Now the fallback
    reads args[i] and the float32 arithmetic after it is a kernel."""
    x = (torch.randn(37) * 3).to(torch.float8_e4m3fn)
    recs, launches = run_compiled(lambda a: a.float() * 2 + 1, x)
    assert recs[0].mode == "kernels", recs[0].reason
    assert [op for op, _ in recs[0].lowered.fallbacks] == ["aten._to_copy"]
    assert launches >= 1


def test_conversion_to_float8_names_the_dtype():
    """Review, session 28: ``.to(torch.float8_e5m2)`` raised a bare KeyError inside the lowering. The conversion now
    falls back with a reason naming the dtype; an ATen op's float8 result has no IR value, so the graph runs as-is
    and says why."""
    x = torch.randn(16)
    recs, _ = run_compiled(lambda a: ((a * 2).to(torch.float8_e5m2).float(), a + 1), x, atol=0, rtol=0)
    assert recs[0].mode == "eager"
    assert "float8_e5m2" in recs[0].reason and "KeyError" not in recs[0].reason


def test_dynamic_shapes_one_graph_many_sizes():
    torch.manual_seed(SEED)
    torch._dynamo.reset()
    start = len(backend.RECORDS)
    f = torch.compile(lambda x: torch.softmax(x * 2, -1), backend="autofuse", dynamic=True)
    for n, d in [(3, 7), (10, 33), (5, 2), (64, 100)]:  # sizes 0 and 1 are specialized by Dynamo
        x = torch.randn(n, d)
        torch.testing.assert_close(f(x), torch.softmax(x * 2, -1))
    recs = backend.RECORDS[start:]
    assert len(recs) == 1, [r.name for r in recs]
    assert recs[0].lowered.sym_sources


@native
def test_new_static_size_reuses_compiled_kernels():
    from autofuse import _core

    torch._dynamo.reset()
    f = torch.compile(lambda x: torch.softmax(x, -1) + 1, backend="autofuse", dynamic=False)
    f(torch.randn(4, 10))
    before = _core.cache_stats().compiles
    torch._dynamo.reset()
    f = torch.compile(lambda x: torch.softmax(x, -1) + 1, backend="autofuse", dynamic=False)
    for n in (5, 6, 17):
        x = torch.randn(n, 10 + n)
        torch.testing.assert_close(f(x), torch.softmax(x, -1) + 1)
    assert _core.cache_stats().compiles == before


def test_training_small_mlp_gradients_match():
    torch.manual_seed(SEED)
    model = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.GELU(), torch.nn.LayerNorm(32),
                                torch.nn.Linear(32, 5))
    ref = torch.nn.Sequential(*[m for m in model])  # same parameters
    x = torch.randn(6, 12)
    torch._dynamo.reset()
    launches = kernel_launches()
    compiled = torch.compile(model, backend="autofuse")
    loss = torch.log_softmax(compiled(x), -1).sum()
    loss.backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    torch.log_softmax(ref(x), -1).sum().backward()
    for g, p in zip(got, model.parameters()):
        torch.testing.assert_close(g, p.grad, atol=1e-5, rtol=1e-5)
    assert kernel_launches() - launches >= 2  # forward and backward kernels ran


def test_explain_report():
    x = torch.randn(4, 16)
    rep = autofuse.explain(lambda x: torch.softmax(x @ x.t(), -1), x)
    assert rep.graph_count == 1
    assert rep.kernel_count >= 1
    assert any(op == "aten.mm" for op, _ in rep.fallbacks)
    text = str(rep)
    assert "kernel" in text and "Fallback aten.mm" in text
    assert all(k.ops for k in rep.kernels)


def test_debug_dump(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOFUSE_DEBUG_DIR", str(tmp_path))
    x = torch.randn(4, 16)
    run_compiled(lambda x: torch.softmax(x, -1) + x.sum(), x)
    graphs = list(tmp_path.iterdir())
    assert graphs
    kdirs = [p for g in graphs for p in g.iterdir() if p.name.startswith("autofused_")]
    assert kdirs
    names = {f.name for f in kdirs[0].iterdir()}
    assert {"kernel.af", "repro.af", "graph.dot", "tiling.txt"} <= names
    summary = (graphs[0] / "summary.txt").read_text()
    assert "lowered ATen ops" in summary
    # The reproducer runs as written (it names the CLI of this checkout when autofuse is not on PATH).
    import subprocess

    from autofuse.debug import _cli_path

    if os.access(_cli_path(), os.X_OK):
        r = subprocess.run(["sh", str(kdirs[0] / "repro.sh")], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        assert " ok" in r.stdout


def test_debug_dump_repros_of_a_dynamic_graph(tmp_path, monkeypatch):
    """Review 19 (finding 3): each kernel of a dynamic graph uses some of the graph's symbols; its repro.sh passed
    every one (`--shape s0=6 ... --shape s5=3`) and `autofuse run` rejected the ones its IR lacks (exit 2). Now each
    passes its own; the concat kernel's size s5 (no input of its own has it) is read back as a given symbol."""
    import subprocess

    from autofuse.debug import _cli_path

    if not (backend.has_native_kernels() and os.access(_cli_path(), os.X_OK)):
        pytest.skip("needs native kernels and the autofuse CLI")
    monkeypatch.setenv("AUTOFUSE_DEBUG_DIR", str(tmp_path))

    def f(x, i, y, t, n):
        return (torch.softmax(x * 2, -1), x.gather(1, i), F.layer_norm(y, y.shape[-1:]),
                torch.cat([y, t.expand(n.shape[0], -1)], 0) * 2)

    g = torch.Generator().manual_seed(0)
    args = (torch.randn(6, 10, generator=g), torch.randint(0, 10, (6, 3), generator=g),
            torch.randn(5, 12, generator=g), torch.randn(1, 12, generator=g), torch.randn(3, generator=g))
    recs, _ = run_compiled(f, *args, dynamic=True)
    graph_syms = set(recs[0].lowered.sym_sources)
    scripts = sorted(tmp_path.rglob("repro.sh"))
    assert len(scripts) >= 3
    partial = 0
    for sh in scripts:
        text = sh.read_text()
        passed = {a.split("=")[0] for a in text.split("--shape ")[1:]}
        assert passed and passed <= graph_syms
        partial += passed != graph_syms
        r = subprocess.run(["sh", str(sh)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0 and " ok" in r.stdout, f"{sh.parent.name}\n{text}\n{r.stdout}{r.stderr}"
    assert partial >= 2  # kernels that use only some of the graph's symbols were among them


@pytest.mark.parametrize("flags,dirs", [
    ("--codegen_compile_debug=true;--debug_dir={d}", ["{d}"]),
    ("--codegen_compile_debug=true", ["autofuse_debug"]),  # the default directory
    ("--codegen_compile_debug=false;--debug_dir={d}", []),  # review 19: an explicit false dumped into {d}
    ("--debug_dir={d}", []),  # the original's semantics: debug_dir only says where (warned once, test_env_vars)
    ("--codegen_compile_debug=False", []),
])
def test_dfx_flags_form(tmp_path, monkeypatch, flags, dirs):
    """As in the original Autofuse, --codegen_compile_debug=true switches the dump on and --debug_dir says where; no
    dump leaves torch's AOTAutograd cache on (a dump turns it off, aot_cache.enabled)."""
    from autofuse import aot_cache
    from autofuse.debug import debug_dirs

    for k in ("AUTOFUSE_DEBUG_DIR", "TORCH_COMPILE_DEBUG", "AUTOFUSE_AOT_CACHE", "AUTOFUSE_FORCE_DISABLE_CACHES"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AUTOFUSE_DFX_FLAGS", flags.format(d=tmp_path))
    assert debug_dirs() == [x.format(d=tmp_path) for x in dirs]
    assert aot_cache.enabled() == (not dirs)


def test_program_overhead_is_small():
    """The generated program costs microseconds per step: time it with no-op kernels on a 10-kernel graph."""
    import time

    from autofuse.program import build_program

    x = torch.randn(1)

    def f(x):
        for _ in range(10):
            x = torch.mm(x.reshape(1, 1), x.reshape(1, 1)).reshape(1).exp()  # externs split the kernels
        return x

    recs, _ = run_compiled(f, x)
    rec = recs[0]
    steps = [s for s in rec.steps]
    assert len([s for s in steps if s.kind == "kernel"]) >= 10
    for s in steps:
        if s.kind == "kernel":
            s.run, s.needs_bindings = (lambda ins, outs: None), False
    prog = build_program(rec.lowered, steps)
    for _ in range(100):
        prog([x])
    t = time.perf_counter()
    n = 2000
    for _ in range(n):
        prog([x])
    per_call = (time.perf_counter() - t) / n
    print(f"program overhead: {per_call * 1e6:.1f} us per call for {len(steps)} steps")
    assert per_call < 30e-6 * len(steps), per_call


def test_entry_point_works_without_import():
    """A fresh process that never imports autofuse finds the backend through the torch_dynamo_backends entry point."""
    import os
    import subprocess
    import sys

    code = ("import torch\n"
            "f = torch.compile(lambda x: x * 2 + 1, backend='autofuse')\n"
            "print(f(torch.ones(3)).tolist())\n"
            "import autofuse.backend as b\n"
            "print(len(b.RECORDS))\n")
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.split()
    assert lines[:3] == ["[3.0,", "3.0,", "3.0]"]
    assert int(lines[-1]) >= 1  # our backend compiled the graph


@pytest.mark.skipif(not __import__("autofuse.native").native.has_interpreter(),
                    reason="needs the IR builder and interpreter bindings (autofuse._core.Graph, interpret_with)")
@pytest.mark.parametrize("fn", [
    lambda x, y: torch.softmax(x * y, -1),
    lambda x, y: F.layer_norm(x + y, (x.shape[-1],)) * 2,
    lambda x, y: (x.half() + y).float().sum(0) / 3,
    lambda x, y: torch.where(x > y, x.exp(), -y).amax(-1, keepdim=True) - x,
], ids=["softmax", "layer_norm", "half_cast_sum", "where_amax"])
def test_lowered_ir_runs_on_interpreter(fn, monkeypatch):
    """The C++ IR built from the lowering (through the builder) gives eager's results on the reference interpreter."""
    monkeypatch.setenv("AUTOFUSE_STANDIN", "interp")
    if backend.has_native_kernels():
        pytest.skip("native kernels present: the stand-in path is not used")
    torch.manual_seed(SEED)
    x, y = torch.randn(6, 40), torch.randn(40)
    recs, _ = run_compiled(fn, x, y, atol=2e-3, rtol=2e-3)
    assert recs[0].mode in ("interpreter", "fused-interpreter")


@pytest.mark.skipif(not backend.has_fusion(), reason="needs the IR builder and fusion bindings (_core.Graph, fuse)")
def test_kernel_compile_failure_falls_back_with_warning(monkeypatch):
    """A kernel that fails to compile runs its ops in ATen with a warning; AUTOFUSE_STRICT=1 raises instead."""
    from autofuse import native

    def failing_compiler(core):
        def compile_(graph):
            raise RuntimeError("simulated compiler failure")

        return compile_

    monkeypatch.setattr(native, "kernel_compiler", failing_compiler)
    monkeypatch.setattr(native, "_KERNELS", {})
    monkeypatch.setattr(backend, "has_native_kernels", lambda: True)
    x = torch.randn(3, 50)
    with pytest.warns(UserWarning, match="failed to compile"):
        recs, _ = run_compiled(lambda x: torch.softmax(x, -1) * 3, x)
    assert recs[0].kernels and all("simulated" in s.info.get("error", "") for s in recs[0].kernels)
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    torch._dynamo.reset()
    with pytest.raises(Exception, match="simulated compiler failure"):
        torch.compile(lambda x: torch.softmax(x, -1) * 4, backend="autofuse")(x)


def test_strict_mode_refuses_stand_in_without_kernel_compiler(monkeypatch):
    """Under AUTOFUSE_STRICT=1 a missing kernel compiler is an error, never a silent eager/interpreter stand-in."""
    monkeypatch.setattr(backend, "has_native_kernels", lambda: False)
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    torch._dynamo.reset()
    with pytest.raises(Exception, match="native kernel path is missing"):
        torch.compile(lambda x: torch.relu(x) + 1, backend="autofuse")(torch.randn(5))
    monkeypatch.delenv("AUTOFUSE_STRICT")
    recs, _ = run_compiled(lambda x: torch.relu(x) + 2, torch.randn(5))
    assert recs[0].mode in ("fused-reference", "reference")
