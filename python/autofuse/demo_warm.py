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

The table shows the median of each over the rounds, and the load average before and after, then per round the
ratios the acceptance of issue 6 reads ("warm start at most 1/3 of Inductor's"), for three configurations:
(a) both with Dynamo's defaults (``autofuse`` / ``inductor``), (b) both with torch's caching precompile
(``autofuse:precompile`` / ``inductor:precompile``: TORCH_CACHING_PRECOMPILE=1, packages saved by
``torch.compiler.save_cache_artifacts()`` at the end of the cold probe), (c) Autofuse with its warm start
(``autofuse:warm``: AUTOFUSE_WARM_START=1, warm_start.py) against Inductor's default warm start.

On a shared machine run the cold probes and the warm ones apart, with the same ``--cache-root``: ``--phase cold``
under /work/notes/heavy, then ``--phase warm`` under /work/notes/quiet (the cold figures are kept in the cache
root's ``cold.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from typing import Dict, List, Tuple

from . import demo
from .cli_args import positive_int

#: --compilers entries: name -> (backend, extra environment of the probe processes).
COMPILERS: Dict[str, Tuple[str, Dict[str, str]]] = {
    "autofuse": ("autofuse", {}),
    "autofuse:nocache": ("autofuse", {"AUTOFUSE_AOT_CACHE": "0"}),  # only the kernel cache is warm
    "autofuse:warm": ("autofuse", {"AUTOFUSE_WARM_START": "1"}),
    "autofuse:precompile": ("autofuse", {"TORCH_CACHING_PRECOMPILE": "1"}),
    "inductor": ("inductor", {}),
    "inductor:precompile": ("inductor", {"TORCH_CACHING_PRECOMPILE": "1"}),
}

#: (configuration, Autofuse's entry, Inductor's entry) of the ratios printed per round.
RATIOS = (("(a) both Dynamo defaults", "autofuse", "inductor"),
          ("(b) both caching precompile", "autofuse:precompile", "inductor:precompile"),
          ("(c) autofuse warm start vs inductor default", "autofuse:warm", "inductor"))


def _compiler(name: str) -> Tuple[str, Dict[str, str]]:
    """A --compilers entry as (backend, extra environment): see COMPILERS."""
    if name not in COMPILERS:
        raise SystemExit(f"unknown compiler {name!r}; choose from {', '.join(COMPILERS)}")
    return COMPILERS[name]


def main(argv: List[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m autofuse.demo_warm", description=__doc__.split("\n")[0])
    p.add_argument("--models", default="gpt2,bert,llama")
    p.add_argument("--compilers", default="autofuse,autofuse:warm,autofuse:precompile,inductor,inductor:precompile",
                   help=", ".join(COMPILERS))
    p.add_argument("--layers", type=positive_int, default=2)
    p.add_argument("--batch", type=positive_int, default=1)
    p.add_argument("--seq", type=positive_int, default=32)
    p.add_argument("--rounds", type=positive_int, default=3)
    p.add_argument("--phase", choices=("cold", "warm", "both"), default="both")
    p.add_argument("--cache-root", default="", help="reuse these caches (default: a new temporary directory)")
    args = p.parse_args(argv)
    root = args.cache_root or tempfile.mkdtemp(prefix="autofuse-warm-")
    os.makedirs(root, exist_ok=True)
    models, compilers = args.models.split(","), args.compilers.split(",")
    load0 = demo._load()
    print(f"warm-start split: models {models}, compilers {compilers}, {args.rounds} rounds, phase {args.phase}; "
          f"caches under {root}; load {load0}", flush=True)
    cold_path = os.path.join(root, "cold.json")
    cold: Dict[str, Dict[str, float]] = {}
    if os.path.exists(cold_path):
        with open(cold_path) as f:
            cold = json.load(f)
    if args.phase in ("cold", "both"):
        for m in models:
            for c in compilers:
                be, env = _compiler(c)
                cold[f"{m} {c}"] = demo._probe(be, m, args, os.path.join(root, f"{m}-{c.replace(':', '-')}"), env)
                print(f"  cold {m} {c}: first {cold[f'{m} {c}']['first']:.2f} s (load {demo._load()})", flush=True)
        with open(cold_path, "w") as f:
            json.dump(cold, f)
    if args.phase == "cold":
        return 0
    warm: Dict[tuple, List[Dict[str, float]]] = {(m, c): [] for m in models for c in compilers}
    for r in range(args.rounds):
        for m in models:
            for c in compilers:
                be, env = _compiler(c)
                res = demo._probe(be, m, args, os.path.join(root, f"{m}-{c.replace(':', '-')}"), env)
                warm[m, c].append(res)
                print(f"  round {r} {m} {c}: " + " ".join(f"{k}={v:.3f}" for k, v in res.items()), flush=True)
    print(f"\nmedians of {args.rounds} warm starts (s); load {load0} at the start, {demo._load()} at the end")
    cols = ("first", "first_cpu", "trace", "backend_call", "aot", "aot_load", "import", "backend", "guards",
            "compiles", "pkg_hit", "err")
    print(f"{'model':<7} {'compiler':<20} {'cold':>7} " + " ".join(f"{c:>9}" for c in cols))
    for (m, c), probes in warm.items():
        med = {k: statistics.median([pr.get(k, float("nan")) for pr in probes]) for k in cols}
        first_cold = cold.get(f"{m} {c}", {}).get("first", float("nan"))
        print(f"{m:<7} {c:<20} {first_cold:>7.2f} " + " ".join(f"{med[k]:>9.3f}" for k in cols))
    print("(first = torch.compile() + the whole first call; backend_call = the whole backend call; backend = "
          "Autofuse's own seconds, 0 for inductor; pkg_hit = Dynamo packages loaded instead of traced; err = max "
          "relative error of the logits against eager)")
    print("\nwarm start, Autofuse / Inductor (first call; per round, then the median of the per-round ratios):")
    for m in models:
        for label, a, i in RATIOS:
            if (m, a) not in warm or (m, i) not in warm:
                continue
            ratios = [pa["first"] / pi["first"] for pa, pi in zip(warm[m, a], warm[m, i])]
            verdict = "PASS" if statistics.median(ratios) <= 1 / 3 else "FAIL"
            print(f"  {m:<6} {label:<44} " + " ".join(f"{x:.2f}" for x in ratios) +
                  f"  median {statistics.median(ratios):.2f}  [{verdict} <= 0.33]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
