"""The kernel cache seen from Python: counters, and safety when several processes compile the same source at once."""

import ctypes
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

import autofuse
from autofuse import _core

# A child process: waits for the parent's go signal (a file), compiles SOURCE, calls it, prints one JSON line.
CHILD = textwrap.dedent(
    r"""
    import ctypes, importlib.util, json, os, sys, time
    source, go, core_path = sys.argv[1], sys.argv[2], sys.argv[3]
    # The extension alone, without the package (whose import pulls in torch and takes seconds).
    spec = importlib.util.spec_from_file_location("_core", core_path)
    _core = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(_core)
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.001)
    m = _core.compile_module(source, "proc")
    fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(m.symbol_address("af_test_value"))
    s = _core.cache_stats()
    print(json.dumps({"value": fn(1), "hit": m.cache_hit, "compiles": s.compiles, "disk_hits": s.disk_hits}))
    """
)


def adder(value: int) -> str:
    return 'extern "C" int af_test_value(int x) { return x + %d; }\n' % value


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    """A private cache directory for this test, in this process and in the children it starts."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("AUTOFUSE_CACHE_DIR", str(cache))
    monkeypatch.delenv("AUTOFUSE_FORCE_DISABLE_CACHES", raising=False)
    _core.clear_memory_cache()
    return cache


def run_children(source: str, count: int, go_file) -> list:
    """Starts `count` children, releases them together once all are ready, returns their JSON results."""
    procs = [
        subprocess.Popen([sys.executable, "-c", CHILD, source, str(go_file), _core.__file__], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(count)
    ]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    go_file.write_text("go")
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def kernel_entries(cache) -> list:
    root = cache / "v1" / "kernels"
    return [e for shard in root.iterdir() for e in shard.iterdir()]


def test_processes_compiling_the_same_source_at_once_all_succeed(cache_env, tmp_path):
    results = run_children(adder(1000 + os.getpid() % 1000), 3, tmp_path / "go")
    assert [r["value"] for r in results] == [1001 + os.getpid() % 1000] * 3
    assert sum(r["compiles"] for r in results) >= 1
    # One installed entry; no temporary build directories left behind.
    assert len(kernel_entries(cache_env)) == 1
    assert list((cache_env / "v1" / "tmp").iterdir()) == []


def test_second_process_loads_from_disk(cache_env, tmp_path):
    first = run_children(adder(7), 1, tmp_path / "go1")[0]
    assert first == {"value": 8, "hit": False, "compiles": 1, "disk_hits": 0}
    second = run_children(adder(7), 1, tmp_path / "go2")[0]
    assert second == {"value": 8, "hit": True, "compiles": 0, "disk_hits": 1}


def test_cache_stats_from_python(cache_env):
    autofuse.reset_cache_stats()
    value = (int(time.time() * 1000) + os.getpid()) % 100000  # a source no earlier run has cached in this process
    source = adder(value)
    a = _core.compile_module(source, "stats")
    b = _core.compile_module(source, "stats")
    stats = autofuse.cache_stats()
    assert (stats.compiles, stats.memory_hits) == (1, 1)
    assert stats.as_dict()["compiles"] == 1
    assert not a.cache_hit and b.cache_hit
    fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(a.symbol_address("af_test_value"))
    assert fn(5) == value + 5
    with pytest.raises(RuntimeError):
        a.symbol_address("missing_symbol")


def test_compile_error_is_a_python_exception(cache_env):
    with pytest.raises(autofuse.CompileError) as info:
        _core.compile_module("this is not C++", "broken")
    assert "error" in str(info.value)
    assert "source kept at" in str(info.value)


def test_unsafe_cache_dir_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / "open"
    bad.mkdir()
    bad.chmod(0o777)
    monkeypatch.setenv("AUTOFUSE_CACHE_DIR", str(bad))
    with pytest.raises(_core.CacheDirError, match="writable by group or others"):
        _core.cache_dir()


def test_threads_and_machine_info(monkeypatch):
    saved = autofuse.get_num_threads()
    try:
        autofuse.set_num_threads(3)
        assert autofuse.get_num_threads() == 3
    finally:
        autofuse.set_num_threads(saved)
    monkeypatch.setenv("AUTOFUSE_NO_BANDWIDTH_PROBE", "1")  # a bandwidth probe would take a second
    info = autofuse.machine_info()
    assert info["logical_cpus"] >= info["physical_cores"] >= 1
    assert info["isa"] in ("avx512", "avx2", "scalar")
