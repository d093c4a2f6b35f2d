"""Where a small call's time goes: ``python -m autofuse.bench.overhead`` prints one table per case.

Cases: ``x*2+1`` on 1 and 4096 float32 elements and a softmax over [8, 128]. For each, the medians (us per call) of

- eager, Inductor and Autofuse through ``torch.compile`` (timed interleaved, round-robin, in one process);
- Autofuse's layers, each timed on its own (medians of ``--reps`` calls): the generated program (``record.program``,
  python/autofuse/program.py), the binding's ``Kernel.run`` call on ready tensors, and inside the binding
  ``Kernel.time_stages``: tensor conversion (torch tensor -> HostTensor views), symbol binding and operand checks,
  tiling (axis merging + decision), variant lookup, launch (thread-pool hand-off + kernel body);
- derived: Dynamo guards + AOT wrapper = compiled call - program; program's own Python = program - kernel calls -
  output allocation (``torch.empty``); binding's Python/nanobind glue = Kernel.run call - conversion - C++ run.

Timings are noisy on a shared machine: the load average is printed with the table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Callable, Dict, List

import torch

from ..cli_args import positive_int


def _median_us(fn: Callable[[], object], reps: int) -> float:
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        ts.append(time.perf_counter_ns() - t0)
    return statistics.median(ts) / 1e3


def _interleaved(fns: Dict[str, Callable[[], object]], reps: int, inner: int = 20) -> Dict[str, float]:
    """Median us per call of each fn, the fns timed round-robin (order rotating) in blocks of ``inner`` calls."""
    names = list(fns)
    samples: Dict[str, List[float]] = {n: [] for n in names}
    for f in fns.values():
        for _ in range(50):
            f()
    for r in range(reps):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            f = fns[n]
            t0 = time.perf_counter_ns()
            for _ in range(inner):
                f()
            samples[n].append((time.perf_counter_ns() - t0) / inner / 1e3)
    return {n: statistics.median(v) for n, v in samples.items()}


def cases():
    """(name, fn, inputs) of the measured cases."""
    return [
        ("x*2+1 [1]", lambda x: x * 2 + 1, (torch.randn(1),)),
        ("x*2+1 [4096]", lambda x: x * 2 + 1, (torch.randn(4096),)),
        ("softmax [8,128]", lambda x: torch.softmax(x, -1), (torch.randn(8, 128),)),
    ]


def measure(name: str, fn, args, reps: int) -> Dict[str, float]:
    """The breakdown of one case (us per call); see the module doc."""
    from autofuse import backend

    torch._dynamo.reset()
    start = len(backend.RECORDS)
    af = torch.compile(fn, backend="autofuse", dynamic=False)
    ind = torch.compile(fn, backend="inductor", dynamic=False)
    af(*args), ind(*args)
    rec = [r for r in backend.RECORDS[start:] if r.program is not None][-1]
    top = _interleaved({"eager": lambda: fn(*args), "inductor": lambda: ind(*args), "autofuse": lambda: af(*args)},
                       reps=max(20, reps // 20))
    prog = rec.program
    arglist = list(args)
    out: Dict[str, float] = dict(top)
    out["program"] = _median_us(lambda: prog(list(arglist)), reps)
    kernels = [s for s in rec.steps if s.kind == "kernel" and s.kernel is not None]
    k_call = empty = 0.0
    stages: Dict[str, float] = {}
    for st in kernels:
        k = st.kernel
        ins = [arglist[0]] if len(st.inputs) == 1 else None
        if ins is None:
            continue
        outs = [torch.empty(rec.lowered.nodes[o].shape, dtype=rec.lowered.nodes[o].dtype) for o in st.outputs]
        k_call += _median_us(lambda: k.run(ins, outs), reps)
        shape = rec.lowered.nodes[st.outputs[0]].shape
        dt = rec.lowered.nodes[st.outputs[0]].dtype
        empty += _median_us(lambda: torch.empty(shape, dtype=dt), reps)
        for key, v in k.time_stages(ins, outs, reps).items():
            stages[key] = stages.get(key, 0.0) + v / 1e3
    out["kernel.run call"] = k_call
    out["torch.empty"] = empty
    out.update({f"  {k}": v for k, v in stages.items()})
    out["guards+AOT (derived)"] = out["autofuse"] - out["program"]
    out["program python (derived)"] = out["program"] - k_call - empty
    out["binding glue (derived)"] = k_call - stages.get("convert", 0.0) - stages.get("run", 0.0)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=positive_int, default=2000)
    a = ap.parse_args(argv)
    print(f"load average: {os.getloadavg()}  threads: {torch.get_num_threads()}")
    rows = {name: measure(name, fn, args, a.reps) for name, fn, args in cases()}
    keys = list(next(iter(rows.values())))
    print(f"{'us per call (median)':32s}" + "".join(f"{n:>18s}" for n in rows))
    for k in keys:
        print(f"{k:32s}" + "".join(f"{rows[n].get(k, float('nan')):18.2f}" for n in rows))
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
