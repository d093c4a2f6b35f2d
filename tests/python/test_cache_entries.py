"""Damaged kernel cache entries seen through the torch backend (review 18, finding 7): an entry holding another key's
self-consistent kernel.so + meta is rebuilt (it was loaded, its symbol missing, and the group ran in ATen in every
process with a 'failed to compile' warning); a file where a shard directory should be costs that one kernel its
cache entry only (the warning claimed no kernel could be loaded, and the group ran in ATen)."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

from autofuse import backend

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Two graphs of one kernel each; prints the cache counters and how many kernels run natively as JSON.
CHILD = textwrap.dedent(
    r"""
    import json, torch, warnings, autofuse
    from autofuse import backend
    warnings.simplefilter("always")
    def f(x): return (x.exp() * 2).sum(-1)
    def g(x): return (x * 3 - 1).amax(-1)
    x = torch.randn(4, 33)
    ok = all(torch.allclose(torch.compile(fn, backend="autofuse")(x), fn(x)) for fn in (f, g))
    native = sum(1 for r in backend.RECORDS for s in r.kernels if s.kernel is not None)
    print(json.dumps({"ok": ok, "native": native, **autofuse.cache_stats().as_dict()}))
    """
)


def run_child(cache) -> tuple:
    env = dict(os.environ, AUTOFUSE_CACHE_DIR=str(cache), AUTOFUSE_AOT_CACHE="0",
               PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("AUTOFUSE_FORCE_DISABLE_CACHES", None)
    env.pop("AUTOFUSE_STRICT", None)
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def entries(cache) -> list:
    return sorted(p for p in (cache / "v1" / "kernels").glob("*/*") if p.is_dir())


@pytest.mark.skipif(not backend.has_native_kernels(), reason="no native kernels in this build")
def test_entry_with_another_keys_files_is_rebuilt(tmp_path):
    cache = tmp_path / "cache"
    first, _ = run_child(cache)
    assert first["ok"] and first["native"] == 2 and first["compiles"] == 2, first
    a, b = entries(cache)
    for name in ("kernel.so", "meta"):  # a's entry now holds b's kernel (size and checksum consistent)
        shutil.copyfile(b / name, a / name)
    stats, err = run_child(cache)
    assert stats["ok"] and stats["native"] == 2, (stats, err[-3000:])
    assert stats["rebuilt_corrupt"] == 1 and stats["compiles"] == 1 and stats["disk_hits"] == 1, stats
    assert "failed to compile" not in err and "runs in ATen" not in err and "run in ATen" not in err, err[-3000:]
    # An entry written before meta recorded its key (only the symbol tells): rebuilt as well.
    meta = (b / "meta").read_text()
    shutil.copyfile(b / "kernel.so", a / "kernel.so")
    (a / "meta").write_text(meta[: meta.index("key ")])
    stats, err = run_child(cache)
    assert stats["ok"] and stats["native"] == 2 and stats["rebuilt_corrupt"] == 1, (stats, err[-3000:])
    again, err = run_child(cache)  # repaired for good: both from disk
    assert again["native"] == 2 and again["disk_hits"] == 2 and again["compiles"] == 0, (again, err[-3000:])


@pytest.mark.skipif(not backend.has_native_kernels(), reason="no native kernels in this build")
def test_file_in_place_of_a_shard_costs_only_that_kernels_entry(tmp_path):
    cache = tmp_path / "cache"
    run_child(cache)
    shards = sorted((cache / "v1" / "kernels").iterdir())
    assert len(shards) == 2, shards  # (two keys in one shard: 1 in 256; the test would then need other graphs)
    shutil.rmtree(shards[1])
    shards[1].write_text("x\n")
    stats, err = run_child(cache)
    assert stats["ok"] and stats["native"] == 2, (stats, err[-3000:])  # both kernels still run natively
    assert stats["disk_hits"] == 1 and stats["compiles"] == 1 and stats["not_stored"] == 1, stats
    assert f"{shards[1]} is not a directory" in err and "runs natively" in err, err[-3000:]
    assert err.count("cannot be stored in the kernel cache") == 1, err[-3000:]
    assert "cannot be used" not in err and "ATen" not in err, err[-3000:]


@pytest.mark.skipif(not backend.has_native_kernels(), reason="no native kernels in this build")
def test_file_in_place_of_the_kernels_directory_warns_once_naming_it(tmp_path):
    """Review 18b, finding 4: with a file at v1/kernels every kernel printed its own warning naming its shard
    (v1/kernels/<xx>) as if only that shard were unusable. One warning now names v1/kernels and says every kernel
    is affected; the kernels still run natively."""
    cache = tmp_path / "cache"
    (cache / "v1").mkdir(parents=True)
    kernels = cache / "v1" / "kernels"
    kernels.write_text("x\n")
    stats, err = run_child(cache)
    assert stats["ok"] and stats["native"] == 2, (stats, err[-3000:])
    assert stats["compiles"] == 2 and stats["not_stored"] == 2 and stats["disk_hits"] == 0, stats
    assert err.count("cannot be stored in the kernel cache") == 1, err[-3000:]
    assert f"{kernels} is not a directory, and every entry belongs under it, so no kernel can be stored: every kernel runs natively" in err, err[-3000:]
    assert f"{kernels}/" not in err, err[-3000:]  # no shard named
    assert "ATen" not in err, err[-3000:]
    assert kernels.is_file()


@pytest.mark.skipif(not backend.has_native_kernels(), reason="no native kernels in this build")
def test_a_module_that_does_not_load_is_not_called_a_compile_failure(monkeypatch):
    """The warning said 'kernel k0 failed to compile' when a compiled (or cached) module did not load or lacked its
    symbol: nothing had failed to compile. A ModuleLoadError now reads 'could not be loaded'."""
    import torch

    from autofuse import _core, native

    def loading_fails(core):
        def compile_(graph):
            raise _core.ModuleLoadError("kernel module /c/kernel.so has no symbol 'af_k'")

        return compile_

    monkeypatch.setattr(native, "kernel_compiler", loading_fails)
    monkeypatch.setattr(native, "_KERNELS", {})
    monkeypatch.setenv("AUTOFUSE_AOT_CACHE", "0")
    monkeypatch.delenv("AUTOFUSE_STRICT", raising=False)
    torch._dynamo.reset()
    x = torch.randn(3, 40)
    with pytest.warns(UserWarning) as caught:
        got = torch.compile(lambda x: torch.softmax(x, -1) * 7, backend="autofuse")(x)
    torch.testing.assert_close(got, torch.softmax(x, -1) * 7)
    texts = [str(w.message) for w in caught]
    assert any("could not be loaded; its ops run in ATen: kernel module /c/kernel.so has no symbol" in t
               for t in texts), texts
    assert not any("failed to compile" in t for t in texts), texts
    torch._dynamo.reset()
