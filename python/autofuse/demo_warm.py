"""``python -m autofuse.demo_warm``: where a warm start's first call goes, for Autofuse and Inductor alike.

For each demo model (GPT-2, BERT, LLaMA-style, built as demo.py builds them) and each compiler, one cold probe
populates a cache directory of its own (``AUTOFUSE_CACHE_DIR`` and ``TORCHINDUCTOR_CACHE_DIR``, which also holds
torch's AOTAutograd cache), then ``--rounds`` rounds of warm probes run, each a new process on the populated caches,
the compilers interleaved within a round (a change in machine load hits both alike). A probe times the compiled
model's first call and splits it with Dynamo's own phase timers (demo.SPLIT_PHASES):

- ``trace``: Dynamo's bytecode tracing, paid by both compilers;
- ``aot``: AOTAutograd tracing the graph to functional ATen (0 on an AOTAutograd cache hit);
- ``aot_load``: an AOTAutograd cache hit's load (Inductor: mostly ``import``, importing its compiled module);
- ``ours``: Autofuse's own part (lowering, fusion, kernels from the disk cache: GraphRecord.compile_seconds);
- ``guards``: building Dynamo's guards.

The table shows the median of each over the rounds, and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from typing import Dict, List, Tuple

from . import demo

def _compiler(name: str) -> Tuple[str, Dict[str, str]]:
    """A --compilers entry as (backend, extra environment): ``autofuse``, ``inductor``, or ``autofuse:nocache``
    (Autofuse without the AOTAutograd cache, AUTOFUSE_AOT_CACHE=0: only its kernel cache is warm)."""
    if name == "autofuse:nocache":
        return "autofuse", {"AUTOFUSE_AOT_CACHE": "0"}
    return name, {}


def main(argv: List[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m autofuse.demo_warm", description=__doc__.split("\n")[0])
    p.add_argument("--models", default="gpt2,bert,llama")
    p.add_argument("--compilers", default="autofuse,autofuse:nocache,inductor",
                   help="autofuse, autofuse:nocache (no AOTAutograd cache), inductor")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cache-root", default="", help="reuse these caches (default: a new temporary directory)")
    args = p.parse_args(argv)
    root = args.cache_root or tempfile.mkdtemp(prefix="autofuse-warm-")
    models, compilers = args.models.split(","), args.compilers.split(",")
    load0 = demo._load()
    print(f"warm-start split: models {models}, compilers {compilers}, {args.rounds} rounds; caches under {root}; "
          f"load {load0}", flush=True)
    cold: Dict[tuple, Dict[str, float]] = {}
    for m in models:
        for c in compilers:
            be, env = _compiler(c)
            cold[m, c] = demo._probe(be, m, args, os.path.join(root, f"{m}-{c.replace(':', '-')}"), env)
            print(f"  cold {m} {c}: first {cold[m, c]['first']:.2f} s (load {demo._load()})", flush=True)
    warm: Dict[tuple, List[Dict[str, float]]] = {k: [] for k in cold}
    for r in range(args.rounds):
        for m in models:
            for c in compilers:
                be, env = _compiler(c)
                res = demo._probe(be, m, args, os.path.join(root, f"{m}-{c.replace(':', '-')}"), env)
                warm[m, c].append(res)
                print(f"  round {r} {m} {c}: " + " ".join(f"{k}={v:.3f}" for k, v in res.items()), flush=True)
    print(f"\nmedians of {args.rounds} warm starts (s); load {load0} at the start, {demo._load()} at the end")
    cols = ("first", "first_cpu", "trace", "backend_call", "aot", "aot_load", "import", "backend", "guards", "compiles")
    print(f"{'model':<7} {'compiler':<16} {'cold':>7} " + " ".join(f"{c:>9}" for c in cols))
    for (m, c), probes in warm.items():
        med = {k: statistics.median([pr.get(k, float("nan")) for pr in probes]) for k in cols}
        print(f"{m:<7} {c:<16} {cold[m, c]['first']:>7.2f} " + " ".join(f"{med[k]:>9.3f}" for k in cols))
    print("(backend_call = the whole backend call; backend = Autofuse's own seconds, 0 for inductor; first = the whole "
          "first call)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
