"""Timing harness: eager, Inductor and Autofuse interleaved in one process, medians of repeated runs.

For every (pattern, dtype, size class) case:
  1. inputs are built once (seeded); eager runs once and is the reference output;
  2. after ``torch._dynamo.reset()``, each compiler gets a fresh ``torch.compile(fn, backend=..., dynamic=False)``;
     its first call (trace + compile + run) is timed as ``first_call_s`` and its output compared with eager's
     (max abs error, and whether it is within tolerance);
  3. after one warm-up call and one calibration call, ``reps`` rounds run each backend once per round, the
     backend order rotating every round (round-robin), so that drift in machine load hits every backend alike. A "run" is ``inner`` back-to-back calls
     (inner chosen per backend so that one run lasts at least ``min_run_s``) divided by ``inner``.
Times are medians over the rounds. A backend that fails to compile or run records the error and the case goes on.

Bytes moved = unique input bytes + output bytes (elements x element size, a tensor passed twice counted once): the
compulsory traffic, ignoring caches and write-allocate. GB/s = bytes / median time (1e9 bytes per GB). Outputs are
allocated by each call (as torch does), so at DRAM sizes fresh-page faults count against every backend.
"""
from __future__ import annotations

import gc
import math
import os
import platform
import statistics
import sys
import time
import traceback
from datetime import datetime, timezone

import torch

from .. import profile as _profile
from .patterns import Pattern

SCHEMA = "autofuse-bench/1"

# Target bytes moved per case for each size class; the row count of a pattern is chosen to reach it (see rows_for).
SIZE_TARGETS = {
    "small": 256 << 10,  # cache-resident: fixed overheads dominate
    "medium": 16 << 20,  # beyond L2, within the last-level cache
    "large": 256 << 20,  # DRAM-sized: at least 256 MB of traffic
}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
BACKENDS = ("eager", "inductor", "autofuse")
TOLERANCE = {torch.float32: (1e-4, 1e-4), torch.bfloat16: (2e-2, 2e-2)}  # (atol, rtol x max|ref|)


def flatten(out) -> list[torch.Tensor]:
    """The tensors of a function result (a tensor, or nested tuples/lists of them), in order."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flatten(o)]
    return []


def bytes_moved(inputs, outputs) -> int:
    """Unique input bytes + output bytes (see module doc)."""
    return _profile.unique_bytes(flatten(inputs)) + sum(_profile.tensor_bytes(t) for t in flatten(outputs))


def rows_for(pattern: Pattern, dtype: torch.dtype, target_bytes: int, gen_seed: int = 0) -> int:
    """The smallest power-of-two row count (>= 1) whose case moves at least ``target_bytes``.

    Bytes are affine in the rows (fixed operands + per-row traffic); they are measured by running the pattern
    eagerly on 1024 and 2048 rows and extrapolated.
    """
    def measure(rows):
        gen = torch.Generator().manual_seed(gen_seed)
        ins = pattern.make_inputs(rows, dtype, gen)
        return bytes_moved(ins, pattern.fn(*ins))

    b1, b2 = measure(1024), measure(2048)
    per_row = max((b2 - b1) / 1024.0, 1e-9)
    fixed = b1 - 1024 * per_row
    rows = max(1, math.ceil((target_bytes - fixed) / per_row))
    return 1 << (rows - 1).bit_length()


def compare(out, ref, dtype: torch.dtype) -> dict:
    """Max abs error of ``out`` against the eager ``ref`` (computed in float64), max |ref|, and ``ok``: every
    output within atol + rtol * max|ref| (TOLERANCE of the dtype). Shape or count mismatches are not ok."""
    outs, refs = flatten(out), flatten(ref)
    if len(outs) != len(refs):
        return {"max_abs_err": float("inf"), "max_abs_ref": float("nan"), "ok": False,
                "note": f"{len(outs)} outputs, eager has {len(refs)}"}
    err, scale, ok = 0.0, 0.0, True
    atol, rtol = TOLERANCE.get(dtype, (1e-4, 1e-4))
    for o, r in zip(outs, refs):
        if tuple(o.shape) != tuple(r.shape):
            return {"max_abs_err": float("inf"), "max_abs_ref": float("nan"), "ok": False,
                    "note": f"shape {tuple(o.shape)} vs eager {tuple(r.shape)}"}
        o64, r64 = o.detach().to(torch.float64), r.detach().to(torch.float64)
        finite = torch.isfinite(r64)
        if not torch.equal(finite, torch.isfinite(o64)) or not torch.equal(o64[~finite], r64[~finite]):
            ok = False
        e = (o64[finite] - r64[finite]).abs().max().item() if finite.any() else 0.0
        s = r64[finite].abs().max().item() if finite.any() else 0.0
        ok = ok and e <= atol + rtol * s
        err, scale = max(err, e), max(scale, s)
    return {"max_abs_err": err, "max_abs_ref": scale, "ok": ok}


def _one_line(e: BaseException) -> str:
    """An exception as one line of at most 300 characters: its type and message, and its root cause's when it
    wraps one (Dynamo wraps backend errors in BackendCompilerFailed)."""
    def text(x):
        lines = [ln.strip() for ln in str(x).strip().splitlines() if ln.strip()]
        return f"{type(x).__name__}: {lines[0] if lines else ''}"

    root, seen = e, {id(e)}
    while True:
        inner = getattr(root, "inner_exception", None) or root.__cause__
        if not isinstance(inner, BaseException) or id(inner) in seen:
            break
        root = inner
        seen.add(id(root))
    line = text(e) if root is e else f"{text(e)} <- {text(root)}"
    return line[:300]


def _import_autofuse() -> str | None:
    """Imports autofuse so that its torch.compile backend registers; returns the error text, or None."""
    try:
        import autofuse  # noqa: F401
        return None
    except Exception as e:  # the backend is optional for the harness: report, don't crash
        return _one_line(e)


def _autofuse_records() -> list:
    """The autofuse backend's per-graph records so far (empty when the backend is absent or changed shape)."""
    try:
        from autofuse import backend as af_backend

        return list(getattr(af_backend, "RECORDS", []))
    except Exception:
        return []


def _autofuse_launches() -> int | None:
    try:
        from autofuse.program import kernel_launches

        return kernel_launches()
    except Exception:
        return None


def _describe_graphs(records) -> list[dict]:
    """What autofuse did with each graph of a case: mode ("kernels", "reference" = eager stand-ins for kernels,
    "eager" = whole-graph fallback), kernel / extern / host step counts, and the fallback reason if any."""
    out = []
    for r in records:
        steps = list(getattr(r, "steps", []))
        kinds = [getattr(st, "kind", "?") for st in steps]
        out.append({"mode": getattr(r, "mode", "?"), "kernels": kinds.count("kernel"),
                    "externs": kinds.count("extern"), "hosts": kinds.count("host"),
                    "reason": str(getattr(r, "reason", ""))[:200]})
    return out


def make_callable(backend: str, fn):
    """``fn`` itself for "eager"; else a fresh torch.compile of it with that backend ("inductor" is the default
    backend) and static shapes."""
    if backend == "eager":
        return fn
    return torch.compile(fn, backend=backend, dynamic=False)


def _run_time(f, inputs, inner: int) -> float:
    t0 = time.perf_counter()
    for _ in range(inner):
        f(*inputs)
    return (time.perf_counter() - t0) / inner


def time_case(callables: dict, inputs, reps: int, min_run_s: float, errors: dict) -> dict[str, list[float]]:
    """Round-robin timing (see module doc). ``callables``: backend -> callable (already compiled and checked).
    A backend that raises is dropped and its error put in ``errors``. Returns backend -> per-round seconds."""
    live = dict(callables)
    inner = {}
    for name, f in list(live.items()):
        try:
            f(*inputs)  # warm-up (the first call, already made, compiled and checked)
            once = _run_time(f, inputs, 1)
            inner[name] = max(1, min(10000, math.ceil(min_run_s / max(once, 1e-7))))
        except Exception as e:
            errors[name] = _one_line(e)
            del live[name]
    samples = {name: [] for name in live}
    names = list(live)
    for r in range(reps):
        k = r % len(names) if names else 0
        for name in names[k:] + names[:k]:
            if name not in live:
                continue
            try:
                samples[name].append(_run_time(live[name], inputs, inner[name]))
            except Exception as e:
                errors[name] = _one_line(e)
                del live[name]
                samples.pop(name)
    return samples


def run_case(pattern: Pattern, dtype_name: str, size: str, backends, reps: int, min_run_s: float,
             seed: int = 0, log=None) -> dict:
    """Benchmarks one (pattern, dtype, size) case on ``backends``; returns its JSON record (see report.py)."""
    dtype = DTYPES[dtype_name]
    rows = rows_for(pattern, dtype, SIZE_TARGETS[size], seed)
    gen = torch.Generator().manual_seed(seed)
    inputs = pattern.make_inputs(rows, dtype, gen)
    t0 = time.perf_counter()
    ref = pattern.fn(*inputs)
    eager_first = time.perf_counter() - t0
    nbytes = bytes_moved(inputs, ref)
    rec = {"pattern": pattern.name, "dtype": dtype_name, "size": size, "rows": rows,
           "input_shapes": [list(t.shape) for t in flatten(inputs)], "bytes": nbytes, "backends": {}}
    callables, errors = {}, {}
    torch._dynamo.reset()  # once per case: compiled code of both compilers lives side by side until the end
    for b in backends:
        entry = rec["backends"][b] = {}
        if b == "eager":
            entry["first_call_s"] = eager_first
            callables[b] = pattern.fn
            continue
        try:
            f = make_callable(b, pattern.fn)
            n_records = len(_autofuse_records()) if b == "autofuse" else 0
            t0 = time.perf_counter()
            out = f(*inputs)
            entry["first_call_s"] = time.perf_counter() - t0
            if b == "autofuse":
                entry["graphs"] = _describe_graphs(_autofuse_records()[n_records:])
                before = _autofuse_launches()
                f(*inputs)
                after = _autofuse_launches()
                if before is not None and after is not None:
                    entry["kernel_launches_per_call"] = after - before
            entry.update(compare(out, ref, dtype))
            callables[b] = f
        except Exception as e:
            errors[b] = _one_line(e)
            if log and os.environ.get("AUTOFUSE_BENCH_TRACEBACK"):
                log(traceback.format_exc())
    samples = time_case(callables, inputs, reps, min_run_s, errors)
    for b in backends:
        entry = rec["backends"][b]
        if b in errors:
            entry["error"] = errors[b]
        s = samples.get(b)
        if s:
            med = statistics.median(s)
            entry.update({"median_s": med, "min_s": min(s), "runs": len(s), "gbs": nbytes / med / 1e9})
    del callables, inputs, ref
    torch._dynamo.reset()
    gc.collect()
    return rec


def machine_info() -> dict:
    """CPU model, logical CPUs, torch threads, cache sizes (from sysfs), ISA flags of interest, versions."""
    info = {"cpu": platform.processor() or "unknown", "logical_cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
            "python": platform.python_version(), "platform": platform.platform()}
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        for line in text.splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), [])
        info["isa"] = [f for f in ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16") if f in flags]
    except OSError:
        pass
    caches = {}
    base = "/sys/devices/system/cpu/cpu0/cache"
    if os.path.isdir(base):
        for idx in sorted(os.listdir(base)):
            try:
                level = open(f"{base}/{idx}/level").read().strip()
                kind = open(f"{base}/{idx}/type").read().strip()
                size = open(f"{base}/{idx}/size").read().strip()
                caches[f"L{level}{'d' if kind == 'Data' else 'i' if kind == 'Instruction' else ''}"] = size
            except OSError:
                continue
    info["caches"] = caches
    return info


def run_suite(patterns, dtypes, sizes, backends=BACKENDS, reps: int = 10, min_run_s: float = 2e-3,
              seed: int = 0, log=print, command: str | None = None, checkpoint=None) -> dict:
    """Runs every case and returns the whole JSON document (schema SCHEMA; report.summarize fills "summary").

    ``checkpoint(doc)``, when given, is called after every case with the document so far ("partial": true), so
    that a crash (e.g. a faulting kernel) leaves the finished cases on disk."""
    from . import report

    started = time.time()
    af_import_error = _import_autofuse() if "autofuse" in backends else None
    load_start = os.getloadavg()
    bw = _profile.copy_bandwidth_gbs()
    fresh_bw = _profile.fresh_copy_bandwidth_gbs()
    log(f"copy bandwidth: {bw:.2f} GB/s (torch copy_ of 256 MB into a preallocated tensor, read + write, median "
        f"of 7); {fresh_bw:.2f} GB/s into a fresh tensor (clone: the output's pages are faulted in on each call)")
    if af_import_error:
        log(f"autofuse import failed: {af_import_error}")
    doc = {"schema": SCHEMA, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "command": command or " ".join([os.path.basename(sys.executable), "-m", "autofuse.bench"] + sys.argv[1:]),
           "machine": machine_info(),
           "config": {"patterns": [p.name for p in patterns], "dtypes": list(dtypes), "sizes": list(sizes),
                      "size_targets_bytes": {s: SIZE_TARGETS[s] for s in sizes}, "backends": list(backends),
                      "reps": reps, "min_run_s": min_run_s, "seed": seed},
           "bytes_definition": "unique input bytes + output bytes (elements x element size); GB = 1e9 bytes",
           "timing": "median over reps rounds; backends interleaved round-robin (order rotates each round); "
                     "outputs allocated per call",
           "copy_bandwidth_gbs": bw, "fresh_copy_bandwidth_gbs": fresh_bw,
           "autofuse_import_error": af_import_error, "results": []}
    total = len(patterns) * len(dtypes) * len(sizes)
    i = 0
    for size in sizes:
        for dtype_name in dtypes:
            for p in patterns:
                i += 1
                t0 = time.perf_counter()
                rec = run_case(p, dtype_name, size, backends, reps, min_run_s, seed, log)
                for b, e in rec["backends"].items():
                    if "median_s" in e:
                        e["pct_bw"] = 100.0 * e["gbs"] / bw
                        e["pct_fresh_bw"] = 100.0 * e["gbs"] / fresh_bw
                doc["results"].append(rec)
                log(report.case_line(rec, i, total, time.perf_counter() - t0))
                if checkpoint is not None:
                    doc["partial"] = True
                    doc["load_average"] = {"start": list(load_start), "end": list(os.getloadavg())}
                    doc["wall_s"] = time.time() - started
                    doc["summary"] = report.summarize(doc)
                    checkpoint(doc)
    doc.pop("partial", None)
    doc["load_average"] = {"start": list(load_start), "end": list(os.getloadavg())}
    doc["wall_s"] = time.time() - started
    doc["summary"] = report.summarize(doc)
    return doc
