"""Same-process A/B of torch.compile's bf16 softmax kernel graph (session 11, perf13; docs/codegen.md):
``python bench/ab_round_at_store.py [SAMPLES]``. Compiles the graph AOTAutograd produces (cast to f32, f32 softmax,
cast to bf16) with AUTOFUSE_ROUND_AT_STORE=0 (before: af_rnd_bf16, then a store with the subnormal test) and by default
(after: one rounding at the store, flagged by af_div_rcp_unit), checks they give the same bits, and prints ns per
element at [64, 4096] and [4096, 4096] with 1 and 2 threads: medians of SAMPLES samples, the two variants run
alternately. A printed benchmark, never a timed test; run it under /work/notes/quiet on a shared machine."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import torch  # noqa: E402
from autofuse import _core  # noqa: E402

G = ("graph s(%x: bf16[s0, s1]) {\n  %xf = cast(%x) {dtype=f32}\n  %m = amax(%xf) {axes=[1], keepdim=true}\n"
     "  %d = sub(%xf, %m)\n  %e = exp(%d)\n  %s = sum(%e) {axes=[1], keepdim=true}\n  %q = div(%e, %s)\n"
     "  %y = cast(%q) {dtype=bf16}\n  return %y\n}")
ks = {}
for name, env in (("before", "0"), ("after", "1")):
    os.environ["AUTOFUSE_ROUND_AT_STORE"] = env
    ks[name] = _core.Kernel.compile(_core.parse(G))
os.environ.pop("AUTOFUSE_ROUND_AT_STORE")
assert "_nrm);" in ks["after"].source and "_nrm);" not in ks["before"].source
samples = int(sys.argv[1]) if len(sys.argv) > 1 else 11
print("load", os.getloadavg(), time.strftime("%H:%M:%S", time.gmtime()))
for rows, cols in ((64, 4096), (4096, 4096)):
    x = torch.randn(rows, cols).bfloat16()
    ys = {n: torch.empty(rows, cols, dtype=torch.bfloat16) for n in ks}
    for n in ks: ks[n].run([x], [ys[n]])
    assert torch.equal(ys["before"].view(torch.int16), ys["after"].view(torch.int16))
    inner = max(1, int(2e6 // (rows * cols)))
    for th in (1, 2):
        _core.set_num_threads(th)
        t = {n: [] for n in ks}
        for i in range(samples):
            for n in (("before", "after") if i % 2 == 0 else ("after", "before")):
                for _ in range(2 if inner == 1 else 1): ks[n].run([x], [ys[n]])  # warm
                t0 = time.perf_counter()
                for _ in range(inner): ks[n].run([x], [ys[n]])
                t[n].append((time.perf_counter() - t0) / inner / (rows * cols) * 1e9)
        b, a = statistics.median(t["before"]), statistics.median(t["after"])
        print(f"[{rows}, {cols}] threads {th}: before {b:.4f} ns/elem, after {a:.4f} ns/elem, after/before {a/b:.3f}"
              f"  (min {min(t['before']):.4f} / {min(t['after']):.4f})")
print("load", os.getloadavg(), time.strftime("%H:%M:%S", time.gmtime()))
