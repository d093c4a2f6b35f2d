"""Batched kernel compiles (Kernel.compile_many -> runtime compile_modules) across processes: several processes
compiling the same graphs at once all succeed with correct results, each kernel source gets one verified entry, and
a later process loads every member from disk without compiling."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from autofuse import _core

# Three kernels of distinct structure, plus one that repeats the first under other names (compiled once).
GRAPHS = [
    "graph a(%x: f32[n, 16], %y: f32[n, 16]) {\n  %s = add(%x, %y)\n  %t = exp(%s)\n  return %t\n}\n",
    "graph b(%x: f32[n, 16]) {\n  %m = amax(%x) {axes=[1], keepdim=true}\n  %d = sub(%x, %m)\n  return %d\n}\n",
    "graph c(%x: f32[n, 16]) {\n  %t = tanh(%x)\n  %u = mul(%t, %x)\n  return %u\n}\n",
    "graph a2(%p: f32[n, 16], %q: f32[n, 16]) {\n  %u = add(%p, %q)\n  %w = exp(%u)\n  return %w\n}\n",
]

CHILD = textwrap.dedent(
    r"""
    import importlib.util, json, os, sys, time
    import numpy as np
    go, core_path, graphs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    spec = importlib.util.spec_from_file_location("_core", core_path)
    _core = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(_core)
    gs = [_core.parse(t, "<test>") for t in graphs]
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.001)
    ks = _core.Kernel.compile_many(gs, 2)
    x = np.linspace(-2, 2, 3 * 16, dtype=np.float32).reshape(3, 16)
    y = np.full((3, 16), 0.25, dtype=np.float32)
    outs = []
    for k, g in zip(ks, graphs):
        if isinstance(k, _core.KernelFailure):
            k.raise_()
        args = [x, y] if g.count("f32[n, 16]") == 2 else [x]
        o = np.empty((3, 16), dtype=np.float32)
        k.run(args, [o])
        outs.append(o.tolist())
    s = _core.cache_stats()
    print(json.dumps({"outs": outs, "compiles": s.compiles, "runs": s.compiler_runs, "disk": s.disk_hits}))
    """
)


def run_children(count: int, go_file, cache) -> list:
    env = dict(os.environ, AUTOFUSE_CACHE_DIR=str(cache))
    env.pop("AUTOFUSE_FORCE_DISABLE_CACHES", None)
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(go_file), _core.__file__, json.dumps(GRAPHS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(count)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    go_file.write_text("go")
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def expected():
    x = np.linspace(-2, 2, 3 * 16, dtype=np.float32).reshape(3, 16)
    y = np.full((3, 16), 0.25, dtype=np.float32)
    return [np.exp(x + y), x - x.max(axis=1, keepdims=True), np.tanh(x) * x, np.exp(x + y)]


@pytest.mark.skipif(not hasattr(_core.Kernel, "compile_many"), reason="extension built without Kernel.compile_many")
def test_processes_batch_compiling_the_same_graphs_at_once(tmp_path):
    cache = tmp_path / "cache"
    results = run_children(3, tmp_path / "go", cache)
    for r in results:
        for got, want in zip(r["outs"], expected()):
            np.testing.assert_allclose(np.array(got, dtype=np.float32), want, rtol=2e-6, atol=1e-6)
    # Every process built or loaded the 3 distinct sources (a2 is a under other names), plus whatever variant a
    # first run picks (the reduction's vector-rows one); at least one process compiled, in batches (fewer compiler
    # runs than sources).
    assert all(r["compiles"] + r["disk"] >= 3 for r in results), results
    builders = [r for r in results if r["compiles"] >= 3]
    assert all(r["runs"] < r["compiles"] for r in builders), results
    entries = [e for shard in (cache / "v1" / "kernels").iterdir() for e in shard.iterdir()]
    assert len(entries) >= 3
    assert all("batch " in (e / "meta").read_text() for e in entries)
    assert sum("batch 1" not in (e / "meta").read_text() for e in entries) >= 2, "batched entries share a binary"
    assert list((cache / "v1" / "tmp").iterdir()) == []
    # A later process loads everything from disk and compiles nothing.
    later = run_children(1, tmp_path / "go2", cache)[0]
    assert later["compiles"] == 0 and later["disk"] >= 3, later
