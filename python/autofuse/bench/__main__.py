"""``python -m autofuse.bench``: runs the benchmark suite (or, with --compile, the compile-time bench).

Writes bench/results/bench-<UTC date-time>.json and a .png next to it (override with --out), prints the table and
the headline figures. --quick runs the medium size only (about 2 minutes); the default runs small, medium and large
(under 15 minutes on a 2-core machine).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from ..cli_args import positive_int

QUICK_SIZES = ["medium"]
FULL_SIZES = ["small", "medium", "large"]


def _default_out(prefix: str) -> str:
    root = os.environ.get("AUTOFUSE_BENCH_DIR", os.path.join("bench", "results"))
    return os.path.join(root, f"{prefix}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}.json")


def parse_args(argv):
    """Command-line options; see --help."""
    ap = argparse.ArgumentParser(prog="python -m autofuse.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="medium size only, fewer rounds (about 2 minutes)")
    ap.add_argument("--compile", action="store_true", help="compile-time bench instead (cold and warm)")
    ap.add_argument("--patterns", nargs="*", help="pattern names (default: all)")
    ap.add_argument("--dtypes", nargs="*", default=["float32", "bfloat16"], choices=["float32", "bfloat16"])
    ap.add_argument("--sizes", nargs="*", choices=FULL_SIZES, help="size classes (default: all, or medium "
                    "with --quick)")
    ap.add_argument("--backends", nargs="*", default=["eager", "inductor", "autofuse"],
                    choices=["eager", "inductor", "autofuse"])
    ap.add_argument("--reps", type=positive_int, help="timed rounds per case (default 10)")
    ap.add_argument("--min-run-ms", type=float, default=2.0, help="shortest timed run; tiny cases loop calls")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="JSON path (default bench/results/bench-<date>.json)")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--markdown", help="also write the README results block here (e.g. bench/RESULTS.md)")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    """Entry point; returns the process exit status (0 unless the arguments are wrong)."""
    a = parse_args(sys.argv[1:] if argv is None else argv)
    from . import patterns as P

    pats = P.find(a.patterns)
    if a.compile:
        from . import compile_bench

        return compile_bench.main(pats, a.dtypes, a.backends, a.out or _default_out("compile"), a.seed)
    from . import harness, report

    sizes = a.sizes or (QUICK_SIZES if a.quick else FULL_SIZES)
    reps = a.reps or 10
    if "eager" not in a.backends:
        a.backends.insert(0, "eager")  # eager is the reference output and the baseline of every ratio
    out = a.out or _default_out("bench")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)

    def save(doc):  # also after every case, so that a crash keeps what was measured
        with open(out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(out + ".tmp", out)

    doc = harness.run_suite(pats, a.dtypes, sizes, a.backends, reps, a.min_run_ms / 1e3, a.seed,
                            log=lambda s: print(s, flush=True), checkpoint=save)
    save(doc)
    print()
    print(report.text_table(doc))
    print()
    print("\n".join(report.summary_lines(doc)))
    png = None
    if not a.no_plot:
        from . import plot

        png = plot.plot(doc, os.path.splitext(out)[0] + ".png")
    print(f"wrote {out}" + (f" and {png}" if png else ""))
    if a.markdown:
        report.write_markdown(doc, out, png, a.markdown)
        print(f"wrote {a.markdown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
