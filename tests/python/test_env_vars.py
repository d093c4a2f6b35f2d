"""Every AUTOFUSE_* variable of README's environment table, given a bad value: one clear warning naming the variable,
the bad value and what is used instead (support/env.h, python/autofuse/env.py), and the program still runs.

Review finding (session 6): AUTOFUSE_NUM_THREADS=-1 was ignored silently and AUTOFUSE_THREADS=bogus warned only when
a parallel_for reached the OpenMP path. Each case runs a new process (the warning is once per process): the torch
backend compiling and running softmax, and for the variables C++ reads, the CLI's `autofuse run` as well. The
directory variables (AUTOFUSE_CACHE_DIR/MACHINE_DIR/DEBUG_DIR) and AUTOFUSE_EXTRA_CXXFLAGS are checked where they are
used; their messages must name the variable (or the flag)."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from autofuse import backend

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("AUTOFUSE_CLI", ROOT / "build" / "release" / "autofuse"))
SOFTMAX = ROOT / "tests" / "ir" / "softmax.af"

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs native kernels (autofuse._core built and a C++ compiler)")

CHILD = """
import torch, autofuse
f = lambda x: torch.softmax(x, -1) * 2
x = torch.randn(16, 32)
torch.testing.assert_close(torch.compile(f, backend="autofuse")(x), f(x))
print("CHILD-OK")
"""

#: (variable, bad value, what the warning says is used instead). README's table, fixed-form variables.
BAD = [
    ("AUTOFUSE_DEBUG", "maybe", "0 (the default)"),
    ("AUTOFUSE_STRICT", "bogus", "0 (the default)"),
    ("AUTOFUSE_FORCE_DISABLE_CACHES", "2", "0 (the default)"),
    ("AUTOFUSE_PROFILE", "yes please", "0 (the default)"),
    ("AUTOFUSE_REPROBE", "-1", "0 (the default)"),
    ("AUTOFUSE_EMULATE_PRECISION_CASTS", "emulate", "0 (the default)"),
    ("AUTOFUSE_FUSE_CONCAT", "nope", "1 (the default)"),
    ("AUTOFUSE_ROUND_AT_STORE", "sometimes", "1 (the default)"),
    ("AUTOFUSE_WARM_START", "x", "0 (the default)"),
    ("AUTOFUSE_AOT_CACHE", "off please", "1 (the default)"),
    ("AUTOFUSE_HUGE_PAGES", "huge", "1 (the default)"),
    ("AUTOFUSE_NUM_THREADS", "-1", "the CPU count ("),
    ("AUTOFUSE_NUM_THREADS", "two", "the CPU count ("),
    ("AUTOFUSE_COMPILE_THREADS", "0", "the CPU count ("),
    ("AUTOFUSE_THREADS", "bogus", "auto"),
    ("AUTOFUSE_ISA", "sse9", "the CPU's own ISA ("),
]
#: Read by the C++ side (the CLI reads them too).
CPP_READ = {"AUTOFUSE_DEBUG", "AUTOFUSE_STRICT", "AUTOFUSE_FORCE_DISABLE_CACHES", "AUTOFUSE_REPROBE",
            "AUTOFUSE_EMULATE_PRECISION_CASTS", "AUTOFUSE_FUSE_CONCAT", "AUTOFUSE_ROUND_AT_STORE",
            "AUTOFUSE_HUGE_PAGES", "AUTOFUSE_NUM_THREADS", "AUTOFUSE_THREADS",
            "AUTOFUSE_ISA"}


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOFUSE_") or k == "AUTOFUSE_CACHE_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def _python(**extra):
    return subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300,
                          env=_env(**extra))


def _warnings(stderr: str, var: str):
    return [line for line in stderr.splitlines() if line.startswith(f"autofuse: warning: {var}=")]


def _assert_one_warning(stderr: str, var: str, value: str, instead: str):
    lines = _warnings(stderr, var)
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"autofuse: warning: {var}='{value}' is not "), lines[0]
    assert f"; using {instead}" in lines[0], lines[0]


@pytest.mark.parametrize("var,value,instead", BAD, ids=[f"{v}={x}" for v, x, _ in BAD])
def test_bad_value_warns_once_in_the_torch_backend(var, value, instead):
    r = _python(**{var: value})
    assert r.returncode == 0 and "CHILD-OK" in r.stdout, r.stderr[-3000:]
    _assert_one_warning(r.stderr, var, value, instead)
    assert len(re.findall(r"^autofuse: warning:", r.stderr, re.M)) == 1, r.stderr


@pytest.mark.skipif(not CLI.exists(), reason=f"the CLI is not built ({CLI})")
@pytest.mark.parametrize("var,value,instead", [c for c in BAD if c[0] in CPP_READ],
                         ids=[f"{v}={x}" for v, x, _ in BAD if v in CPP_READ])
def test_bad_value_warns_once_in_the_cli(var, value, instead):
    r = subprocess.run([str(CLI), "run", str(SOFTMAX)], capture_output=True, text=True, timeout=120,
                       env=_env(**{var: value}))
    assert r.returncode == 0 and " ok" in r.stdout, r.stdout + r.stderr
    _assert_one_warning(r.stderr, var, value, instead)


def test_good_values_do_not_warn():
    r = _python(AUTOFUSE_STRICT="0", AUTOFUSE_NUM_THREADS="2", AUTOFUSE_THREADS="pool", AUTOFUSE_FUSE_CONCAT="true",
                AUTOFUSE_AOT_CACHE="0", AUTOFUSE_PROFILE="off", AUTOFUSE_COMPILE_THREADS=" 1 ",
                AUTOFUSE_EMULATE_PRECISION_CASTS="0", AUTOFUSE_DEBUG="", AUTOFUSE_DFX_FLAGS="")
    assert r.returncode == 0 and "CHILD-OK" in r.stdout, r.stderr[-3000:]
    assert "autofuse: warning" not in r.stderr, r.stderr


def test_bad_dfx_flags_warn_once():
    r = _python(AUTOFUSE_DFX_FLAGS="--codegen_compile_debug=perhaps;--dir=/tmp/x")
    assert r.returncode == 0 and "CHILD-OK" in r.stdout, r.stderr[-3000:]
    lines = _warnings(r.stderr, "AUTOFUSE_DFX_FLAGS")
    assert len(lines) == 1, r.stderr
    assert "--codegen_compile_debug=perhaps, --dir=/tmp/x" in lines[0] and "; using no debug dump" in lines[0]


def test_dfx_debug_dir_alone_warns_that_nothing_is_dumped(tmp_path):
    """Review 19: debug_dir only says where the dump goes (codegen_compile_debug=true switches it on), so a debug_dir
    alone dumps nothing and says so once; an explicit false says nothing."""
    d = tmp_path / "dump"
    r = _python(AUTOFUSE_DFX_FLAGS=f"--debug_dir={d}")
    assert r.returncode == 0 and "CHILD-OK" in r.stdout, r.stderr[-3000:]
    lines = _warnings(r.stderr, "AUTOFUSE_DFX_FLAGS")
    assert len(lines) == 1, r.stderr
    assert "without --codegen_compile_debug=true" in lines[0] and "; using no debug dump" in lines[0], lines[0]
    r = _python(AUTOFUSE_DFX_FLAGS=f"--codegen_compile_debug=false;--debug_dir={d}")
    assert r.returncode == 0 and "CHILD-OK" in r.stdout, r.stderr[-3000:]
    assert _warnings(r.stderr, "AUTOFUSE_DFX_FLAGS") == [], r.stderr
    assert not d.exists()


def test_unusable_machine_dir_warns_once(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    r = subprocess.run([sys.executable, "-c", "import autofuse; autofuse.machine_info(); print('CHILD-OK')"],
                       capture_output=True, text=True, timeout=300,
                       env=_env(AUTOFUSE_MACHINE_DIR=str(not_a_dir), AUTOFUSE_PROBE_MB="8"))
    assert r.returncode == 0 and "CHILD-OK" in r.stdout, r.stderr[-3000:]
    lines = _warnings(r.stderr, "AUTOFUSE_MACHINE_DIR")
    assert len(lines) == 1 and f"='{not_a_dir}' is not usable" in lines[0] and "is not a directory" in lines[0]


def test_unusable_cache_dir_is_named(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    r = _python(AUTOFUSE_CACHE_DIR=str(not_a_dir))  # kernels cannot be stored: they run in ATen, with the reason
    assert r.returncode == 0 and "CHILD-OK" in r.stdout, r.stderr[-3000:]
    assert f"AUTOFUSE_CACHE_DIR='{not_a_dir}'" in r.stderr and "is not a directory" in r.stderr, r.stderr[-3000:]
    if CLI.exists():
        c = subprocess.run([str(CLI), "run", str(SOFTMAX)], capture_output=True, text=True, timeout=120,
                           env=_env(AUTOFUSE_CACHE_DIR=str(not_a_dir)))
        assert c.returncode != 0 and f"AUTOFUSE_CACHE_DIR='{not_a_dir}'" in c.stderr, c.stderr


def test_unusable_debug_dir_is_named(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    r = _python(AUTOFUSE_DEBUG_DIR=str(not_a_dir))
    assert r.returncode == 0 and "CHILD-OK" in r.stdout, r.stderr[-3000:]
    assert "could not write the debug dump" in r.stderr and "from AUTOFUSE_DEBUG_DIR" in r.stderr, r.stderr[-3000:]


@pytest.mark.skipif(not CLI.exists(), reason=f"the CLI is not built ({CLI})")
def test_bad_extra_cxxflags_error_names_the_flag(tmp_path):
    r = subprocess.run([str(CLI), "run", str(SOFTMAX)], capture_output=True, text=True, timeout=120,
                       env=_env(AUTOFUSE_EXTRA_CXXFLAGS="-fno-such-flag-for-autofuse",
                                AUTOFUSE_CACHE_DIR=str(tmp_path / "cache")))
    assert r.returncode != 0 and "failed to compile" in r.stderr, r.stderr
    assert "-fno-such-flag-for-autofuse" in r.stderr.split("compiler output:")[-1], r.stderr


def test_unknown_variable_names_warn_once_with_the_closest_name():
    """Review finding (session 8): a misspelled AUTOFUSE_STRCT=1 was ignored silently."""
    r = _python(AUTOFUSE_STRCT="1", AUTOFUSE_NOT_A_THING="x")
    assert r.returncode == 0 and "CHILD-OK" in r.stdout, r.stderr[-3000:]
    lines = [ln for ln in r.stderr.splitlines() if "is set but is not a variable Autofuse reads" in ln]
    assert lines == [
        "autofuse: warning: AUTOFUSE_NOT_A_THING is set but is not a variable Autofuse reads; it is ignored",
        "autofuse: warning: AUTOFUSE_STRCT is set but is not a variable Autofuse reads (did you mean "
        "AUTOFUSE_STRICT?); it is ignored",
    ], r.stderr[-3000:]
    ok = _python(AUTOFUSE_STRICT="0")
    assert "is not a variable Autofuse reads" not in ok.stderr, ok.stderr[-3000:]


def test_cache_dir_that_is_a_file_is_reported_as_the_cache(tmp_path):
    """Review finding (session 8): AUTOFUSE_CACHE_DIR naming a regular file was reported per kernel as 'kernel k0
    failed to compile' (nothing was compiled); it is one warning about the cache, and the ops run in ATen."""
    afile = tmp_path / "afile"
    afile.write_text("")
    r = _python(AUTOFUSE_CACHE_DIR=str(afile))
    assert r.returncode == 0 and "CHILD-OK" in r.stdout, r.stderr[-3000:]
    assert r.stderr.count("UserWarning: autofuse: the kernel cache cannot be used") == 1, r.stderr[-3000:]
    assert "failed to compile" not in r.stderr, r.stderr[-3000:]
