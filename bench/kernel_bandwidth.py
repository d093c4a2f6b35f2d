"""Kernel-level bandwidth and compile-time bench (issue 3): ``python bench/kernel_bandwidth.py [--reps 10]``.

Runs generated kernels directly through ``autofuse._core`` (``Kernel.compile`` + ``Kernel.run`` on torch tensors),
with no torch.compile, fusion or Python program in between. Outputs are preallocated once and reused, so first-touch
page faults are not measured. Per kernel and dtype (fp32, bf16):

- median (and min) wall time of ``--reps`` runs after one warm-up run, at DRAM size (>= ``--traffic-mb`` MB moved);
- GB/s = bytes moved / median time, bytes moved = input bytes read + output bytes written (each element once;
  GB = 1e9 bytes);
- the fraction of the copy bandwidth measured alongside it: a ``torch`` ``copy_`` of the kernel's largest operand
  into a preallocated tensor of the same size (read + write counted), run alternately with the kernel (copy, kernel,
  copy, kernel, ...; ``--reps`` pairs), the fraction being the median over the pairs of kernel GB/s / copy GB/s;
- the ceiling: the kernel's in-cache rate on one thread (the slope between 16 and 32 rows, which cancels the call's
  fixed overhead; ``--cache-reps`` runs of each) times the kernel threads, i.e. the GB/s it would reach if memory
  cost nothing, and that as a fraction of the copy bandwidth above. A row whose ceiling is below the 80 % target
  cannot reach the target on this machine whatever the memory side does: its arithmetic is the bound (issue 3;
  docs/codegen.md, session 29);
- cold compile time (a child process with AUTOFUSE_FORCE_DISABLE_CACHES=1, median of ``--compile-reps``) and warm
  load time (a new child process whose fresh AUTOFUSE_CACHE_DIR was populated by an earlier child; the in-memory
  cache is cleared between repetitions), each timing ``Kernel.compile`` plus a first run on tiny inputs (which
  compiles or loads the contiguous variant).

It prints a table and writes ``bench/results/kernel_bandwidth-<UTC time>.json``. It is a printed benchmark, never a
timed test. ``--cxxflags=-O2`` appends flags to the kernel compiler command (AUTOFUSE_EXTRA_CXXFLAGS; the last -O
wins), for comparing optimisation levels. The machine's load average is printed and saved, because a shared machine
makes medians noisy.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

# name -> (IR text with T for the dtype, kind). Shapes: 1-D kernels take [n]; 2-D kernels take [rows, cols].
KERNELS = {
    "add": ("graph add(%a: T[s0], %b: T[s0]) {\n  %c = add(%a, %b)\n  return %c\n}", "1d"),
    "mul2_add1": (
        "graph mul2_add1(%x: T[s0]) {\n  %two = constant() {value=2.0, dtype=T}\n  %one = constant() {value=1.0, dtype=T}\n"
        "  %y = mul(%x, %two)\n  %z = add(%y, %one)\n  %w = mul(%z, %two)\n  %v = add(%w, %one)\n  return %v\n}",
        "1d",
    ),
    "add_row": ("graph add_row(%x: T[s0, s1], %r: T[s1]) {\n  %y = add(%x, %r)\n  return %y\n}", "row"),
    "mul_col": ("graph mul_col(%x: T[s0, s1], %c: T[s0, 1]) {\n  %y = mul(%x, %c)\n  return %y\n}", "col"),
    "sum_last": ("graph sum_last(%x: T[s0, s1]) {\n  %s = sum(%x) {axes=[1], keepdim=false}\n  return %s\n}", "2d"),
    "softmax": (
        "graph softmax(%x: T[s0, s1]) {\n  %m = amax(%x) {axes=[1], keepdim=true}\n  %d = sub(%x, %m)\n"
        "  %e = exp(%d)\n  %s = sum(%e) {axes=[1], keepdim=true}\n  %y = div(%e, %s)\n  return %y\n}",
        "2d",
    ),
    "layer_norm": (
        "graph layer_norm(%x: T[s0, s1], %w: T[s1], %b: T[s1]) {\n  %m = mean(%x) {axes=[1], keepdim=true}\n"
        "  %d = sub(%x, %m)\n  %q = mul(%d, %d)\n  %v = mean(%q) {axes=[1], keepdim=true}\n"
        "  %e = constant() {value=1e-5, dtype=T}\n  %ve = add(%v, %e)\n  %r = rsqrt(%ve)\n  %n = mul(%d, %r)\n"
        "  %s = mul(%n, %w)\n  %y = add(%s, %b)\n  return %y\n}",
        "ln",
    ),
}
DTYPES = {"fp32": "f32", "bf16": "bf16"}
COLS = 4096


def graph_text(name, dt):
    return KERNELS[name][0].replace("dtype=T", "dtype=" + DTYPES[dt]).replace("T[", DTYPES[dt] + "[")


def make_inputs(name, dt, n, torch):
    """Inputs of kernel `name` with about n elements in its main operand (n a multiple of COLS)."""
    tdt = {"fp32": torch.float32, "bf16": torch.bfloat16}[dt]
    kind = KERNELS[name][1]
    g = torch.Generator().manual_seed(0)

    def rnd(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float32).to(tdt)

    if kind == "1d":
        return [rnd(n) for _ in range(2 if name == "add" else 1)]
    rows = max(1, n // COLS)
    if kind == "row":
        return [rnd(rows, COLS), rnd(COLS)]
    if kind == "col":
        return [rnd(rows, COLS), rnd(rows, 1)]
    if kind == "ln":
        return [rnd(rows, COLS), rnd(COLS), rnd(COLS)]
    return [rnd(rows, COLS)]


def interleaved_times(copy_fn, kernel_fn, reps):
    """Wall times (seconds) of `reps` alternating runs of copy_fn and kernel_fn, after one warm-up run of each.

    Alternating the two puts each kernel run next to a copy run in the same state of the shared machine (its memory
    speed drifts by tens of percent over minutes); returns (copy times, kernel times), index i of both from rep i.
    """
    copy_fn()
    kernel_fn()
    cts, kts = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        copy_fn()
        t1 = time.perf_counter()
        kernel_fn()
        t2 = time.perf_counter()
        cts.append(t1 - t0)
        kts.append(t2 - t1)
    return cts, kts


def cache_ceiling_gbps(k, name, dt, per_elem, threads, reps, torch):
    """The GB/s kernel k could reach on `threads` cores if memory cost nothing: its in-cache rate, scaled.

    On one kernel thread, k runs on 16 and on 32 rows of COLS (16 * COLS and 32 * COLS elements for 1-D kernels;
    0.25-1 MB moved, within a core's L2 after the first run), alternately, `reps` times each. The slope (median time
    at 32 rows - median time at 16) / (16 * COLS) is the cost of an element with the call's fixed overhead (the Python
    call, the launch) cancelled out. Returns per_elem (bytes moved per element of the main operand) / slope * threads
    / 1e9: perfect scaling across cores is assumed, so this is an upper bound (inf if the slope is not positive, which
    only noise can cause). The kernel thread count is restored before returning, also on an error.
    """
    sizes = (16 * COLS, 32 * COLS)
    runs = []
    for n in sizes:
        ins = make_inputs(name, dt, n, torch)
        runs.append((ins, [torch.empty(s, dtype=ins[0].dtype) for s in k.output_sizes(ins)]))
    from autofuse import _core

    saved = _core.get_num_threads()
    _core.set_num_threads(1)
    try:
        ts = ([], [])
        for ins, outs in runs * 3:
            k.run(ins, outs)
        for _ in range(reps):
            for j, (ins, outs) in enumerate(runs):
                t0 = time.perf_counter()
                k.run(ins, outs)
                ts[j].append(time.perf_counter() - t0)
    finally:
        _core.set_num_threads(saved)
    slope = (statistics.median(ts[1]) - statistics.median(ts[0])) / (sizes[1] - sizes[0])  # seconds per element
    return per_elem / slope * threads / 1e9 if slope > 0 else float("inf")


def load_average():
    return list(os.getloadavg())


def compile_child(mode, names, dtypes, reps):
    """Child-process body: time Kernel.compile + a first tiny run per kernel; prints JSON {key: [seconds...]}."""
    import torch
    from autofuse import _core

    out = {}
    for dt in dtypes:
        for name in names:
            g = _core.parse(graph_text(name, dt))
            ins = make_inputs(name, dt, COLS * 2, torch)
            ts = []
            for _ in range(reps):
                if mode == "warm":
                    _core.clear_memory_cache()
                t0 = time.perf_counter()
                k = _core.Kernel.compile(g)
                outs = [torch.empty(s, dtype=ins[0].dtype) for s in k.output_sizes(ins)]
                k.run(ins, outs)
                ts.append(time.perf_counter() - t0)
            out[f"{name}/{dt}"] = ts
    print("JSON" + json.dumps(out))


def run_child(mode, names, dtypes, reps, env):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", mode, "--compile-reps", str(reps),
           "--kernels", *names, "--dtypes", *dtypes]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"compile child ({mode}) failed:\n{p.stderr[-4000:]}")
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("JSON")][-1]
    return json.loads(line[4:])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=10, help="timed runs per kernel and per copy (median)")
    ap.add_argument("--compile-reps", type=int, default=3, help="cold/warm compile repetitions (median)")
    ap.add_argument("--traffic-mb", type=float, default=256.0, help="minimum MB moved per kernel run")
    ap.add_argument("--cache-reps", type=int, default=201, help="timed runs per size for the in-cache ceiling")
    ap.add_argument("--kernels", nargs="+", default=list(KERNELS), choices=list(KERNELS))
    ap.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=list(DTYPES))
    ap.add_argument("--cxxflags", default="", help="extra kernel compiler flags (AUTOFUSE_EXTRA_CXXFLAGS)")
    ap.add_argument("--no-compile-times", action="store_true", help="skip the cold/warm compile measurements")
    ap.add_argument("--out", default=os.path.join(HERE, "results"), help="directory for the JSON result")
    ap.add_argument("--child", choices=["cold", "warm"], help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.cxxflags:
        os.environ["AUTOFUSE_EXTRA_CXXFLAGS"] = a.cxxflags
    if a.child:
        compile_child(a.child, a.kernels, a.dtypes, a.compile_reps)
        return 0

    import torch
    from autofuse import _core

    load_start = load_average()
    rows = []
    for dt in a.dtypes:
        for name in a.kernels:
            g = _core.parse(graph_text(name, dt))
            k = _core.Kernel.compile(g)
            es = 4 if dt == "fp32" else 2
            # Size the main operand so that the run moves at least traffic-mb: probe the bytes per main element.
            probe = make_inputs(name, dt, COLS * 1024, torch)
            probe_out = [torch.empty(s, dtype=probe[0].dtype) for s in k.output_sizes(probe)]
            per_elem = sum(t.numel() * t.element_size() for t in probe + probe_out) / probe[0].numel()
            n = int(a.traffic_mb * 1e6 / per_elem)
            n = (n + COLS - 1) // COLS * COLS
            ins = make_inputs(name, dt, n, torch)
            outs = [torch.empty(s, dtype=ins[0].dtype) for s in k.output_sizes(ins)]
            moved = sum(t.numel() * t.element_size() for t in ins + outs)
            big = max(ins + outs, key=lambda t: t.numel())
            src, dst = torch.randn(big.shape).to(big.dtype), torch.empty(big.shape, dtype=big.dtype)
            copy_bytes = 2 * src.numel() * src.element_size()
            copy_ts, ts = interleaved_times(lambda: dst.copy_(src), lambda: k.run(ins, outs), a.reps)
            del src, dst
            copy_t, t, tmin = statistics.median(copy_ts), statistics.median(ts), min(ts)
            copy_gbs = copy_bytes / copy_t / 1e9
            # The fraction of copy: the median over the reps of (kernel GB/s / copy GB/s) of the same rep, so that a
            # change of the shared machine's memory speed during the run moves both sides of each ratio together.
            frac = statistics.median((moved / kt) / (copy_bytes / ct) for ct, kt in zip(copy_ts, ts))
            ref = None
            if name == "add":  # one spot check that the timed kernel computes the right thing
                ref = float((outs[0].float() - (ins[0] + ins[1]).float()).abs().max())
            gbs = moved / t / 1e9
            del ins, outs
            cache_gbs = cache_ceiling_gbps(k, name, dt, per_elem, _core.get_num_threads(), a.cache_reps, torch)
            rows.append({"kernel": name, "dtype": dt, "elements": n, "element_bytes": es,
                         "bytes_moved": moved, "median_s": t, "min_s": tmin, "gbps": gbs, "copy_gbps": copy_gbs,
                         "frac_of_copy": frac, "copy_all_s": copy_ts, "kernel_all_s": ts, "max_abs_err_vs_torch": ref,
                         "ceiling_gbps": cache_gbs, "ceiling_frac_of_copy": cache_gbs / copy_gbs})
            print(f"  {name:<11} {dt}  {moved / 1e6:7.0f} MB  {t * 1e3:8.2f} ms  {gbs:6.2f} GB/s  "
                  f"copy {copy_gbs:6.2f} GB/s  {100 * frac:5.1f}%  ceiling {cache_gbs:6.2f} GB/s "
                  f"(ceiling {100 * cache_gbs / copy_gbs:5.1f}%)", flush=True)

    compile_times = {}
    if not a.no_compile_times:
        env = dict(os.environ)
        env["AUTOFUSE_FORCE_DISABLE_CACHES"] = "1"
        cold = run_child("cold", a.kernels, a.dtypes, a.compile_reps, env)
        with tempfile.TemporaryDirectory(prefix="af-kbw-") as d:
            env = dict(os.environ)
            env["AUTOFUSE_CACHE_DIR"] = os.path.join(d, "cache")
            run_child("cold", a.kernels, a.dtypes, 1, env)  # populate
            warm = run_child("warm", a.kernels, a.dtypes, a.compile_reps, env)
        for key in cold:
            compile_times[key] = {"cold_s": statistics.median(cold[key]), "warm_s": statistics.median(warm[key]),
                                  "cold_all_s": cold[key], "warm_all_s": warm[key]}
        for r in rows:
            ct = compile_times.get(f"{r['kernel']}/{r['dtype']}", {})
            r["cold_compile_s"], r["warm_load_s"] = ct.get("cold_s"), ct.get("warm_s")

    load_end = load_average()
    print(f"\nKernel bandwidth ({_core.host_isa()}, {_core.get_num_threads()} kernel threads, torch "
          f"{torch.get_num_threads()} threads, kernel flags: {_core.kernel_compile_flags()})")
    print(f"load average at start {load_start[0]:.2f}, at end {load_end[0]:.2f} on {os.cpu_count()} CPUs")
    hdr = f"{'kernel':<11} {'dtype':<5} {'MB':>6} {'median ms':>10} {'GB/s':>7} {'copy GB/s':>10} {'% copy':>7}"
    hdr += f" {'ceil GB/s':>10} {'ceil %':>7} {'cold s':>7} {'warm ms':>8}"
    print(hdr)
    for r in rows:
        cold_s = f"{r['cold_compile_s']:7.2f}" if r.get("cold_compile_s") is not None else f"{'-':>7}"
        warm_ms = f"{1e3 * r['warm_load_s']:8.1f}" if r.get("warm_load_s") is not None else f"{'-':>8}"
        print(f"{r['kernel']:<11} {r['dtype']:<5} {r['bytes_moved'] / 1e6:6.0f} {1e3 * r['median_s']:10.2f} "
              f"{r['gbps']:7.2f} {r['copy_gbps']:10.2f} {100 * r['frac_of_copy']:6.1f}% {r['ceiling_gbps']:10.2f} "
              f"{100 * r['ceiling_frac_of_copy']:6.1f}% {cold_s} {warm_ms}")
    print("(ceil GB/s: the kernel's in-cache rate on one thread times the kernel threads, i.e. its speed if memory "
          "cost nothing; ceil %: that as % of copy. A row whose ceiling is below 80 % is compute-bound here.)")
    os.makedirs(a.out, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = os.path.join(a.out, f"kernel_bandwidth-{stamp}.json")
    with open(path, "w") as f:
        json.dump({"date_utc": stamp, "isa": _core.host_isa(), "kernel_flags": _core.kernel_compile_flags(),
                   "kernel_threads": _core.get_num_threads(), "torch_threads": torch.get_num_threads(),
                   "reps": a.reps, "compile_reps": a.compile_reps, "load_average_start": load_start,
                   "load_average_end": load_end, "cache_reps": a.cache_reps, "cpus": os.cpu_count(), "rows": rows}, f, indent=1)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
