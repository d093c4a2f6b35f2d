"""Compile-time bench (``python -m autofuse.bench --compile``): cold and warm, per pattern, both compilers.

Each measurement runs in a fresh subprocess (``python -m autofuse.bench.compile_bench --child ...``) that compiles
every pattern once, on medium-size inputs, with one compiler:
  cold:  caches disabled (AUTOFUSE_FORCE_DISABLE_CACHES=1, TORCHINDUCTOR_FORCE_DISABLE_CACHES=1);
  first: caches on but empty (private AUTOFUSE_CACHE_DIR and TORCHINDUCTOR_CACHE_DIR under a temporary folder);
  warm:  a new process on the caches the "first" process populated.
Compile time of a pattern = time of its first compiled call (Dynamo trace + compile + one run) minus the time of one
eager call on the same inputs. A trivial function is compiled first and reported separately as ``init_s``
(one-time imports and set-up of the compiler), so that it is not charged to the first pattern.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

MODES = ("cold", "first", "warm")


def _child(compiler: str, pattern_names: list[str], dtype_name: str, seed: int) -> dict:
    """Runs in the subprocess: compile-time per pattern for one compiler; returns the JSON-able record."""
    t_start = time.perf_counter()
    import torch

    from . import harness
    from .patterns import find

    out = {"compiler": compiler, "dtype": dtype_name, "patterns": {}}
    if compiler == "autofuse":
        err = harness._import_autofuse()
        if err:
            out["import_error"] = err
    out["import_s"] = time.perf_counter() - t_start
    backend = "inductor" if compiler == "inductor" else compiler
    try:
        t0 = time.perf_counter()
        torch.compile(lambda x: x * 2.0 + 1.0, backend=backend, dynamic=False)(torch.ones(8))
        out["init_s"] = time.perf_counter() - t0
    except Exception as e:
        out["init_error"] = harness._one_line(e)
    dtype = harness.DTYPES[dtype_name]
    for p in find(pattern_names):
        rec = out["patterns"][p.name] = {}
        rows = harness.rows_for(p, dtype, harness.SIZE_TARGETS["medium"], seed)
        inputs = p.make_inputs(rows, dtype, torch.Generator().manual_seed(seed))
        p.fn(*inputs)
        t0 = time.perf_counter()
        p.fn(*inputs)
        eager = time.perf_counter() - t0
        torch._dynamo.reset()
        try:
            f = torch.compile(p.fn, backend=backend, dynamic=False)
            t0 = time.perf_counter()
            f(*inputs)
            rec["compile_s"] = max(0.0, time.perf_counter() - t0 - eager)
        except Exception as e:
            rec["error"] = harness._one_line(e)
    out["process_s"] = time.perf_counter() - t_start
    return out


def _spawn(compiler, mode, names, dtype_name, seed, cache_root, log) -> dict:
    env = dict(os.environ)
    env.pop("AUTOFUSE_FORCE_DISABLE_CACHES", None)
    env.pop("TORCHINDUCTOR_FORCE_DISABLE_CACHES", None)
    if mode == "cold":
        env["AUTOFUSE_FORCE_DISABLE_CACHES"] = "1"
        env["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"
    env["AUTOFUSE_CACHE_DIR"] = os.path.join(cache_root, "autofuse")
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache_root, "inductor")
    with tempfile.NamedTemporaryFile("r", suffix=".json", delete=False) as tmp:
        path = tmp.name
    cmd = [sys.executable, "-m", "autofuse.bench.compile_bench", "--child", compiler, "--dtype", dtype_name,
           "--seed", str(seed), "--json", path, *names]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    try:
        with open(path) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        rec = {"compiler": compiler, "patterns": {}, "process_error": f"exit {proc.returncode}: " + " | ".join(tail)}
    finally:
        if os.path.exists(path):
            os.unlink(path)
    rec["mode"], rec["wall_s"] = mode, wall
    log(f"  {compiler:<9} {mode:<5} {wall:6.1f}s wall" + (f"  {rec['process_error']}" if "process_error" in rec
                                                           else ""))
    return rec


def run(patterns, dtype_name: str, compilers, seed: int = 0, log=print) -> dict:
    """All modes for all ``compilers`` (fresh subprocesses, private temporary caches); returns the JSON document:
    {"schema", "date", "machine", "dtype", "runs": [child records], "table": {pattern: {compiler: {mode: s}}}}."""
    from datetime import datetime, timezone

    from .harness import machine_info

    names = [p.name for p in patterns]
    runs = []
    with tempfile.TemporaryDirectory(prefix="autofuse-compile-bench-") as root:
        for c in compilers:
            cache_root = os.path.join(root, c)
            for mode in MODES:  # order matters: "first" populates the caches that "warm" reads
                runs.append(_spawn(c, mode, names, dtype_name, seed, cache_root, log))
    table = {n: {c: {} for c in compilers} for n in names}
    for r in runs:
        for n, rec in r.get("patterns", {}).items():
            table[n][r["compiler"]][r["mode"]] = rec.get("compile_s", rec.get("error", "error"))
    return {"schema": "autofuse-compile-bench/1", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "machine": machine_info(), "dtype": dtype_name, "size": "medium", "runs": runs, "table": table}


def text_table(doc: dict) -> str:
    """Per pattern: compile seconds for each compiler and mode; last lines: process init and wall times."""
    compilers = sorted({r["compiler"] for r in doc["runs"]}, key=["inductor", "autofuse"].index)
    cols = [f"{c} {m}" for c in compilers for m in MODES]
    fmt = lambda v: f"{v:.3f}" if isinstance(v, (int, float)) else "fail"  # noqa: E731
    rows = [["pattern"] + cols]
    for n, per in doc["table"].items():
        rows.append([n] + [fmt(per[c].get(m, "-")) if m in per[c] else "-" for c in compilers for m in MODES])
    init = {(r["compiler"], r["mode"]): r for r in doc["runs"]}
    rows.append(["(init: first trivial compile)"] + [fmt(init.get((c, m), {}).get("init_s", "-"))
                                                       for c in compilers for m in MODES])
    rows.append(["(process wall)"] + [fmt(init.get((c, m), {}).get("wall_s", "-")) for c in compilers for m in MODES])
    w = [max(len(r[i]) for r in rows) for i in range(len(cols) + 1)]
    lines = ["  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r)) for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    totals = []
    for c in compilers:
        for m in MODES:
            vals = [per[c][m] for per in doc["table"].values() if isinstance(per[c].get(m), (int, float))]
            totals.append(f"{c} {m}: sum {sum(vals):.2f}s over {len(vals)} patterns")
    return "\n".join(lines + ["", "; ".join(totals)])


def main(patterns, dtypes, backends, out_path: str, seed: int = 0) -> int:
    """The ``--compile`` mode of ``python -m autofuse.bench``: runs, prints the table, writes ``out_path``."""
    compilers = [b for b in backends if b != "eager"]
    dtype_name = dtypes[0] if dtypes else "float32"
    print(f"compile-time bench: {len(patterns)} patterns, {dtype_name}, medium size; compilers {compilers}; "
          f"modes {MODES} (each a fresh process)", flush=True)
    doc = run(patterns, dtype_name, compilers, seed, log=lambda s: print(s, flush=True))
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)
    print(text_table(doc))
    print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="child process of the compile-time bench (internal)")
    ap.add_argument("--child", required=True, choices=["inductor", "autofuse"])
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", required=True)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    result = _child(a.child, a.names, a.dtype, a.seed)
    with open(a.json, "w") as f:
        json.dump(result, f)
