"""The `autofuse` CLI given bad arguments: each must stop with exit status 2 and a message naming the problem (the
option, the value, the range), never run with a silently replaced value (session-7 review of README's commands:
`run --repeat 0` ran once, `tiling-sweep --threads 0` ran on one thread, `codegen FILE extra` printed only the usage).
Uses build/release/autofuse (or $AUTOFUSE_CLI)."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("AUTOFUSE_CLI", ROOT / "build" / "release" / "autofuse"))
if not CLI.exists():
    pytest.skip(f"the CLI is not built ({CLI} is missing; run `make build`)", allow_module_level=True)

SOFTMAX = str(ROOT / "tests" / "ir" / "softmax.af")

USAGE_ERRORS = [
    (["run", SOFTMAX, "--repeat", "0"], "autofuse run: --repeat: expected an integer from 1 to 1000000000, got '0'"),
    (["run", SOFTMAX, "--repeat", "-3"], "--repeat: expected an integer from 1 to 1000000000, got '-3'"),
    (["run", SOFTMAX, "--repeat", "x"], "--repeat: expected an integer from 1 to 1000000000, got 'x'"),
    (["tiling-sweep", "--threads", "0"], "autofuse tiling-sweep: --threads: expected an integer from 1 to 4096, got '0'"),
    (["tiling-sweep", "--total", "-5"], "--total: expected an integer from 1 to"),
    (["tiling-sweep", "--rows", "4,0"], "--rows: expected an integer from 1 to"),
    (["codegen", SOFTMAX, "extra"], "autofuse codegen: unexpected argument 'extra' (one FILE is expected)"),
    (["print", SOFTMAX, "b"], "autofuse print: unexpected argument 'b' (one FILE is expected)"),
    (["check", SOFTMAX, "b"], "autofuse check: unexpected argument 'b'"),
    (["interp", SOFTMAX, "b"], "autofuse interp: unexpected argument 'b'"),
    (["fuse", SOFTMAX, "b"], "autofuse fuse: unexpected argument 'b'"),
    (["run", SOFTMAX, "b"], "autofuse run: unexpected argument 'b'"),
    (["run", SOFTMAX, "--seed", "-1"], "--seed: expected an integer >= 0, got '-1'"),
    (["interp", SOFTMAX, "--shape", "s0"], "--shape: expected SYM=N, got 's0'"),
    (["fuse", SOFTMAX, "--max-nodes", "0"], "--max-nodes: expected a count from 1 to 2^30, got 0"),
]


@pytest.mark.parametrize("args,message", USAGE_ERRORS, ids=[" ".join(a[:1] + a[2:]) for a, _ in USAGE_ERRORS])
def test_bad_arguments_are_usage_errors(args, message):
    r = subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert message in r.stderr, r.stderr
    assert f"usage: autofuse {args[0]}" in r.stderr
    assert r.stdout == "", r.stdout  # nothing ran


def test_impossible_reshape_is_reported_with_its_line(tmp_path):
    f = tmp_path / "reshape.af"
    f.write_text("graph g(%x: f32[s0, 8]) {\n  %y = reshape(%x) {shape=[s0, 3]}\n  return %y\n}\n")
    for sub in ("check", "interp", "run"):
        r = subprocess.run([str(CLI), sub, str(f)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 1, (sub, r.stderr)
        assert f"{f}:2:3: error: %y = reshape(%x): cannot reshape [s0, 8] (8*s0 elements) to [s0, 3]" in r.stderr


def test_negative_run_time_size_names_the_value(tmp_path):
    # session-14 review: `run` exited 2 (usage) with "HostTensor::empty: negative size -7"; interp named the value
    f = tmp_path / "neg.af"
    f.write_text("graph f(%x: f32[s0]) {\n  %y = full() {value=1, dtype=f32, shape=[s0 - 10]}\n"
                 "  %z = add(%y, %y)\n  return %z\n}\n")
    g = tmp_path / "neg_input.af"
    g.write_text("graph f(%x: f32[s0 - 10]) {\n  %z = exp(%x)\n  return %z\n}\n")
    for path, name in ((f, "y"), (g, "x")):
        for sub in ("interp", "run"):
            r = subprocess.run([str(CLI), sub, str(path), "--shape", "s0=3"], capture_output=True, text=True, timeout=60)
            assert r.returncode == 1, (sub, r.returncode, r.stderr)
            assert f"autofuse {sub}: %{name}: size s0 - 10 evaluates to -7 < 0" in r.stderr, r.stderr
            assert "usage:" not in r.stderr, r.stderr


PY_COUNTS = [("autofuse.bench", "--reps", "0"), ("autofuse.bench.infer", "--rounds", "0"),
             ("autofuse.demo", "--seq", "-1"), ("autofuse.demo_warm", "--rounds", "x")]


@pytest.mark.parametrize("module,option,value", PY_COUNTS, ids=[f"{m} {o} {v}" for m, o, v in PY_COUNTS])
def test_python_entry_points_reject_bad_counts(module, option, value):
    # README's `python -m ...` commands: a count below 1 is a usage error naming it (cli_args.positive_int)
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", module, option, value], capture_output=True, text=True, timeout=120,
                       env=env)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert f"argument {option}: expected an integer >= 1, got '{value}'" in r.stderr, r.stderr[-2000:]
