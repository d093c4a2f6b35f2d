"""Warm starts through torch's AOTAutograd cache (python/autofuse/aot_cache.py), checked across processes.

Each case runs the same small model (Linear -> GELU -> LayerNorm -> softmax: an ATen matmul between fused kernels)
in new processes sharing one TORCHINDUCTOR_CACHE_DIR (where torch keeps AOTAutograd's entries) and one
AUTOFUSE_CACHE_DIR: a cold process fills them, a warm process must hit and give bitwise the same outputs (and, for
a training step, the same gradients) without tracing through AOTAutograd or compiling C++; a changed input shape or
Autofuse configuration must miss; a corrupted entry must be recompiled and saved again; and
AUTOFUSE_FORCE_DISABLE_CACHES=1 must bypass the cache. (Grad mode: the training test's entry holds forward and
backward; torch's key includes grad mode.)
"""

from __future__ import annotations

import json
import os
import pathlib
import pickle
import shutil
import subprocess
import sys

import pytest
import torch

from autofuse import backend
from child_snippets import RUN_STEP

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs the native kernel compiler (autofuse._core.Kernel)")

CHILD = r'''
import json, sys, torch
import autofuse
from autofuse import backend
from torch._dynamo.utils import counters

mode, shape, dtype, out_path = sys.argv[1], tuple(json.loads(sys.argv[2])), getattr(torch, sys.argv[3]), sys.argv[4]
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(shape[-1], 48), torch.nn.GELU(), torch.nn.LayerNorm(48),
                            torch.nn.Softmax(-1)).to(dtype)
x = torch.randn(*shape, dtype=dtype)
compiled = torch.compile(model, backend="autofuse")
train = mode == "train"
''' + RUN_STEP + r'''torch.save(result, out_path)
stats = autofuse._core.cache_stats()
print("RESULT " + json.dumps({
    "aot": {k: v for k, v in counters["aot_autograd"].items() if k.startswith("autograd_cache")},
    "cached": [r.cached for r in backend.RECORDS],
    "kernels": sum(len(r.kernels) for r in backend.RECORDS),
    "compiles": stats.compiles,
    "max_err": float((y.detach().double() - y_ref.detach().double()).abs().max()),
}))
'''


def _run(tmp: pathlib.Path, name: str, mode: str = "infer", shape=(4, 16), dtype: str = "float32", **env) -> dict:
    """Run CHILD in a new process with the caches under ``tmp``; returns its RESULT record plus its saved tensors."""
    out = tmp / f"{name}.pt"
    e = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp / "inductor"), AUTOFUSE_CACHE_DIR=str(tmp / "autofuse"),
             AUTOFUSE_AOT_CACHE="1")
    e.pop("AUTOFUSE_FORCE_DISABLE_CACHES", None)
    e.pop("TORCHINDUCTOR_FORCE_DISABLE_CACHES", None)
    e.update(env)
    r = subprocess.run([sys.executable, "-c", CHILD, mode, json.dumps(list(shape)), dtype, str(out)],
                       capture_output=True, text=True, env=e, timeout=600)
    assert r.returncode == 0, f"{name}: exit {r.returncode}\n{r.stderr[-3000:]}"
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    res = json.loads(line[len("RESULT "):])
    res["tensors"] = torch.load(out)
    res["stderr"] = r.stderr
    return res


def _entries(tmp: pathlib.Path) -> list[pathlib.Path]:
    root = tmp / "inductor" / "aotautograd"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def _same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), f"{k} differs between the cold and the warm process"


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    """One cold process on empty caches (the inference model); its caches are what the other tests start from."""
    tmp = tmp_path_factory.mktemp("aot-cache")
    res = _run(tmp, "cold")
    res["dir"] = tmp
    res["entries"] = _entries(tmp)
    return res


def _copy(cold, tmp_path: pathlib.Path) -> pathlib.Path:
    """A private copy of the cold process's caches (so that tests do not see each other's entries)."""
    shutil.copytree(cold["dir"], tmp_path / "c")
    return tmp_path / "c"


def test_cold_process_saves_one_entry(cold):
    assert cold["aot"].get("autograd_cache_miss") == 1 and cold["aot"].get("autograd_cache_saved") == 1, cold["aot"]
    assert cold["cached"] == [False] and cold["kernels"] >= 1
    assert len(cold["entries"]) == 1
    assert cold["max_err"] < 1e-5


def test_warm_process_hits_with_equal_outputs(cold, tmp_path):
    """The warm process loads the entry (no AOTAutograd tracing, no lowering, no C++ compile) and gives the cold
    process's outputs bitwise."""
    warm = _run(_copy(cold, tmp_path), "warm")
    assert warm["aot"] == {"autograd_cache_hit": 1}, warm["aot"]
    assert warm["cached"] == [True] and warm["kernels"] == cold["kernels"]
    assert warm["compiles"] == 0  # kernels loaded from the disk cache
    _same(cold["tensors"], warm["tensors"])


@pytest.mark.parametrize("name,kw", [("shape", {"shape": (4, 24)}),
                                     ("policy", {"AUTOFUSE_EMULATE_PRECISION_CASTS": "1"})])
def test_changed_input_or_configuration_misses(cold, tmp_path, name, kw):
    """A new input shape (the inputs' metadata) or a setting that changes generated code (version_tag) misses, and
    the recompiled graph is correct."""
    other = _run(_copy(cold, tmp_path), name, **kw)
    assert "autograd_cache_hit" not in other["aot"], other["aot"]
    assert other["aot"].get("autograd_cache_miss") == 1, other["aot"]
    assert other["cached"] == [False]
    assert other["max_err"] < 1e-5


def test_force_disable_caches_bypasses(cold, tmp_path):
    """AUTOFUSE_FORCE_DISABLE_CACHES=1 neither looks an entry up nor saves one."""
    _copy(cold, tmp_path)
    before = _entries(tmp_path / "c")
    r = _run(tmp_path / "c", "off", AUTOFUSE_FORCE_DISABLE_CACHES="1")
    assert r["aot"] == {}, r["aot"]
    assert r["cached"] == [False]
    assert r["max_err"] < 1e-5
    assert _entries(tmp_path / "c") == before


def test_corrupted_entry_is_rebuilt(cold, tmp_path):
    """A truncated entry is not used: the next process recompiles (same outputs) and saves a good entry, which the
    process after it hits."""
    (entry,) = _entries(_copy(cold, tmp_path))
    entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])
    again = _run(tmp_path / "c", "again")
    assert "autograd_cache_hit" not in again["aot"], again["aot"]
    assert again["aot"].get("autograd_cache_saved") == 1, again["aot"]
    _same(cold["tensors"], again["tensors"])
    warm = _run(tmp_path / "c", "warm")
    assert warm["aot"].get("autograd_cache_hit") == 1, warm["aot"]
    _same(cold["tensors"], warm["tensors"])


def test_changed_payload_bytes_are_refused():
    """Bytes changed inside our payload (a pickle that still loads) fail its SHA-256 check: torch then skips the
    entry like an unreadable one."""
    from autofuse import aot_cache

    payload = {"tag": aot_cache.version_tag(), "source": "def af_graph0(args):\n    return []\n"}
    data = pickle.dumps(aot_cache.AutofuseOutputCode(None, payload))
    assert pickle.loads(data).payload == payload
    i = data.find(b"def af_graph0")
    bad = data[:i] + b"dxf" + data[i + 3:]
    with pytest.raises(ValueError, match="digest mismatch"):
        pickle.loads(bad)


def test_training_step_hit_equals_cold(tmp_path):
    """Forward and backward come from one entry: a warm process gives the cold one's outputs and gradients
    bitwise."""
    cold = _run(tmp_path, "cold", "train")
    assert cold["aot"].get("autograd_cache_saved") == 1, cold["aot"]
    assert cold["cached"] == [False, False]  # forward and backward graphs
    warm = _run(tmp_path, "warm", "train")
    assert warm["aot"] == {"autograd_cache_hit": 1}, warm["aot"]
    assert warm["cached"] == [True, True]
    _same(cold["tensors"], warm["tensors"])


def test_payload_refuses_stand_in_records():
    """A graph run by a stand-in (no compiled kernel) or as-is in ATen is not serializable: its entry is skipped."""
    from autofuse import aot_cache

    rec = backend.GraphRecord(name="g", kind="inference", gm=None, mode="reference")
    with pytest.raises(aot_cache.Unserializable, match="mode 'reference'"):
        aot_cache.make_payload(rec, lambda args: args, {})
    oc = aot_cache.AutofuseOutputCode(lambda args: args, None, "why not")
    from torch._functorch._aot_autograd.autograd_cache import BypassAOTAutogradCache

    with pytest.raises(BypassAOTAutogradCache, match="why not"):
        oc.prepare_for_serialization()


def test_ops_pickle_by_name():
    """ATen operators in a program's globals are stored by name and come back as the same objects."""
    from autofuse import aot_cache

    objs = [torch.ops.aten.mm.default, torch.ops.aten.add.Tensor, torch.ops.aten.mm, torch.float16,
            torch.arange(3)]
    back = aot_cache.loads(aot_cache.dumps(objs))
    assert back[0] is objs[0] and back[1] is objs[1] and back[2] is objs[2] and back[3] is torch.float16
    assert torch.equal(back[4], objs[4])


def test_unspecialized_float_constants_are_not_served_stale(tmp_path, monkeypatch):
    """Regression (review, session 14): with ``specialize_float = False`` a float argument that clamp needs as a
    constant is burned into the AOT graph under a guard torch 2.13's cache entry drops (pytorch/pytorch#194976), so a
    cache hit computed with the first call's bound. Graphs with a symbolic float now bypass the AOTAutograd cache."""
    from autofuse import aot_cache

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setenv("AUTOFUSE_CACHE_DIR", str(tmp_path / "autofuse"))
    monkeypatch.setenv("AUTOFUSE_AOT_CACHE", "1")  # tests/conftest.py turns it off for the suite
    monkeypatch.setattr(torch._dynamo.config, "specialize_float", False)  # torch 2.13's default
    assert aot_cache.enabled()
    torch._dynamo.reset()
    x = torch.tensor([-2.0, -1.0, 0.0, 1.0, 2.0])
    f = lambda x, s: torch.clamp(x, min=s) + s * x  # noqa: E731
    cf = torch.compile(f, backend="autofuse", dynamic=True)
    for s in [0.5, -0.3, 2.0, 0.5]:
        torch.testing.assert_close(cf(x, s), f(x, s), msg=lambda m: f"s={s}: {m}")
    torch._dynamo.reset()
