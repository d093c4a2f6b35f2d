"""Summaries and tables of a bench JSON document (produced by harness.run_suite).

JSON record of one case (doc["results"][i]):
  pattern, dtype, size, rows, input_shapes, bytes,
  backends: {eager|inductor|autofuse: {first_call_s, median_s, min_s, runs, gbs, pct_bw,
                                       max_abs_err, max_abs_ref, ok (compilers only), error (on failure),
                                       graphs, kernel_launches_per_call (autofuse only: what its backend did)}}
Speedups are ratios of median times (> 1 means faster than the baseline). Geomeans are over the cases where both
backends have a median time.
"""
from __future__ import annotations

import math
import os
import statistics


def speedup(rec, b, base, stat: str = "median_s") -> float | None:
    """Median (or ``stat``: "min_s") time of ``base`` over that of ``b`` for one case; None if either is missing."""
    tb, t0 = rec["backends"].get(b, {}).get(stat), rec["backends"].get(base, {}).get(stat)
    return t0 / tb if tb and t0 else None


def geomean(xs) -> float | None:
    """Geometric mean of the positive numbers in ``xs``; None when there are none."""
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize(doc: dict) -> dict:
    """Headline figures: geomean speedups of each compiler vs eager and of autofuse vs inductor (overall and per
    size class), the autofuse cases below 0.9x of inductor, failures, wrong results, and the median % of copy
    bandwidth per backend over the DRAM-sized ("large") cases."""
    res = doc["results"]
    backends = doc["config"]["backends"]
    out = {"cases": len(res)}
    pairs = [(b, "eager") for b in backends if b != "eager"]
    if "autofuse" in backends and "inductor" in backends:
        pairs.append(("autofuse", "inductor"))
    for b, base in pairs:
        if b not in backends or base not in backends:
            continue
        key = f"geomean_{b}_vs_{base}"
        out[key] = geomean(speedup(r, b, base) for r in res)
        out[key + "_by_size"] = {s: geomean(speedup(r, b, base) for r in res if r["size"] == s)
                                 for s in doc["config"]["sizes"]}
        out[key + "_from_min"] = geomean(speedup(r, b, base, "min_s") for r in res)
    if ("autofuse", "inductor") in pairs:
        out["autofuse_below_0.9x_inductor"] = [
            f"{r['pattern']}/{r['dtype']}/{r['size']} ({speedup(r, 'autofuse', 'inductor'):.2f}x)"
            for r in res if (speedup(r, "autofuse", "inductor") or 1.0) < 0.9]
    out["failures"] = {b: [f"{r['pattern']}/{r['dtype']}/{r['size']}: {r['backends'][b]['error']}"
                           for r in res if "error" in r["backends"].get(b, {})] for b in backends}
    out["wrong_results"] = {b: [f"{r['pattern']}/{r['dtype']}/{r['size']} (max abs err "
                                f"{r['backends'][b]['max_abs_err']:.3g})"
                                for r in res if r["backends"].get(b, {}).get("ok") is False] for b in backends}
    out["autofuse_not_compiled"] = [
        f"{r['pattern']}/{r['dtype']}/{r['size']} ({af_steps(r['backends']['autofuse'])})" for r in res
        if any(g["mode"] != "kernels" for g in r["backends"].get("autofuse", {}).get("graphs", []))]
    out["median_pct_bw_large"] = {
        b: (statistics.median(v) if (v := [r["backends"][b]["pct_bw"] for r in res
                                          if r["size"] == "large" and "pct_bw" in r["backends"].get(b, {})])
            else None) for b in backends}
    out["median_pct_fresh_bw_large"] = {
        b: (statistics.median(v) if (v := [r["backends"][b]["pct_fresh_bw"] for r in res
                                          if r["size"] == "large" and "pct_fresh_bw" in r["backends"].get(b, {})])
            else None) for b in backends}
    return out


def _fmt_time(s):
    if s is None:
        return "-"
    return f"{s * 1e6:.1f}" if s < 1e-2 else f"{s * 1e3:.1f}ms"


def _fmt_x(x):
    return "-" if x is None else f"{x:.2f}"


def case_line(rec: dict, i: int, total: int, seconds: float) -> str:
    """One progress line for a finished case: times per backend (us, or ms when marked), ratios, errors."""
    parts = [f"[{i}/{total}] {rec['pattern']}/{rec['dtype']}/{rec['size']} ({rec['bytes'] / 1e6:.2f} MB)"]
    for b, e in rec["backends"].items():
        parts.append(f"{b}={_fmt_time(e.get('median_s'))}" + ("!" if "error" in e else ""))
    if "autofuse" in rec["backends"]:
        parts.append(f"af/eager={_fmt_x(speedup(rec, 'autofuse', 'eager'))}")
        parts.append(f"af/ind={_fmt_x(speedup(rec, 'autofuse', 'inductor'))}")
    af = rec["backends"].get("autofuse", {})
    if "graphs" in af:
        modes = ",".join(sorted({g["mode"] for g in af["graphs"]})) or "none"
        parts.append(f"af[{modes}; {sum(g['kernels'] for g in af['graphs'])}k"
                     f"/{sum(g['externs'] for g in af['graphs'])}x]")
    errs = [f"{b}: {e['error'][:120]}" for b, e in rec["backends"].items() if "error" in e]
    line = " ".join(parts) + f"  [{seconds:.1f}s]"
    return line + ("\n    " + "\n    ".join(errs) if errs else "")


COLUMNS = ["pattern", "dtype", "size", "MB", "eager us", "inductor us", "autofuse us", "ind/eager", "af/eager",
           "af/ind", "af GB/s", "af %bw", "ind %bw", "af err", "af steps"]


def af_steps(e: dict) -> str:
    """Autofuse's work for a case: "<kernels>k/<externs>x", prefixed by the mode when not compiled kernels."""
    graphs = e.get("graphs")
    if not graphs:
        return "-"
    modes = sorted({g["mode"] for g in graphs} - {"kernels"})
    k, x = sum(g["kernels"] for g in graphs), sum(g["externs"] for g in graphs)
    return (",".join(modes) + ":" if modes else "") + f"{k}k/{x}x"


def table_rows(doc: dict) -> list[list[str]]:
    """The results as rows of strings under COLUMNS (times in microseconds, ratios as speedups)."""
    rows = []
    for r in doc["results"]:
        b = r["backends"]
        af, ind = b.get("autofuse", {}), b.get("inductor", {})
        us = lambda e: "-" if e.get("median_s") is None else f"{e['median_s'] * 1e6:.1f}"  # noqa: E731
        err = "fail" if "error" in af and "median_s" not in af else (
            "-" if "max_abs_err" not in af else f"{af['max_abs_err']:.1e}" + ("" if af.get("ok") else " BAD"))
        rows.append([r["pattern"], r["dtype"], r["size"], f"{r['bytes'] / 1e6:.2f}", us(b.get("eager", {})),
                     us(ind), us(af), _fmt_x(speedup(r, "inductor", "eager")), _fmt_x(speedup(r, "autofuse", "eager")),
                     _fmt_x(speedup(r, "autofuse", "inductor")),
                     "-" if "gbs" not in af else f"{af['gbs']:.2f}",
                     "-" if "pct_bw" not in af else f"{af['pct_bw']:.0f}",
                     "-" if "pct_bw" not in ind else f"{ind['pct_bw']:.0f}", err, af_steps(af)])
    return rows


def text_table(doc: dict) -> str:
    """A fixed-width text table of table_rows."""
    rows = [COLUMNS] + table_rows(doc)
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.rjust(w) if i >= 3 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def markdown_table(doc: dict) -> str:
    """The same table in GitHub markdown."""
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join(["---"] * 3 + ["---:"] * (len(COLUMNS) - 3)) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in table_rows(doc)]
    return "\n".join(out)


def busy_warning(doc: dict) -> str | None:
    """A warning when the 1-minute load average at start or end exceeded half the logical CPUs (other work was
    running: the timings are noisy and preliminary), else None."""
    cpus = doc["machine"].get("logical_cpus") or 1
    load = max(doc["load_average"]["start"][0], doc["load_average"]["end"][0])
    if load > 0.5 * cpus:
        return (f"The machine was busy during this run (load average up to {load:.1f} on {cpus} logical CPUs): "
                f"the timings are noisy and preliminary.")
    return None


def summary_lines(doc: dict) -> list[str]:
    """Headline sentences from doc["summary"], targets of issue 8 quoted next to the figures."""
    s = doc["summary"]
    def g(k):
        med = "n/a" if s.get(k) is None else f"{s[k]:.2f}x"
        low = s.get(k + "_from_min")
        return med + ("" if low is None else f" (from min times: {low:.2f}x)")

    lines = [f"copy bandwidth (same run): {doc['copy_bandwidth_gbs']:.2f} GB/s; "
             f"load average start {doc['load_average']['start'][0]:.2f}, end {doc['load_average']['end'][0]:.2f}"]
    if busy_warning(doc):
        lines.append(busy_warning(doc))
    if "geomean_inductor_vs_eager" in s:
        lines.append(f"geomean inductor vs eager: {g('geomean_inductor_vs_eager')}")
    if "geomean_autofuse_vs_eager" in s:
        lines.append(f"geomean autofuse vs eager: {g('geomean_autofuse_vs_eager')} (target >= 2x)")
    if "geomean_autofuse_vs_inductor" in s:
        lines.append(f"geomean autofuse vs inductor: {g('geomean_autofuse_vs_inductor')} (target >= 1.2x)")
        by = s["geomean_autofuse_vs_inductor_by_size"]
        lines.append("  by size: " + ", ".join(f"{k} {_fmt_x(v)}" for k, v in by.items()))
    if "autofuse_below_0.9x_inductor" in s:
        below = s["autofuse_below_0.9x_inductor"]
        lines.append(f"autofuse below 0.9x of inductor ({len(below)}): " + (", ".join(below) if below else "none"))
    pct = s["median_pct_bw_large"]
    lines.append("median % of copy bandwidth over DRAM-sized cases: " + ", ".join(
        f"{b} {'n/a' if v is None else f'{v:.0f}%'}" for b, v in pct.items()) + " (autofuse target >= 80%)")
    fresh = s.get("median_pct_fresh_bw_large") or {}
    if doc.get("fresh_copy_bandwidth_gbs") and any(v is not None for v in fresh.values()):
        lines.append(f"median % of the fresh-output copy bandwidth ({doc['fresh_copy_bandwidth_gbs']:.2f} GB/s, "
                     "clone) over DRAM-sized cases: " + ", ".join(
                         f"{b} {'n/a' if v is None else f'{v:.0f}%'}" for b, v in fresh.items()))
    if s.get("autofuse_not_compiled"):
        nc = s["autofuse_not_compiled"]
        lines.append(f"autofuse ran eager stand-ins or fell back on {len(nc)} case(s): " + ", ".join(nc[:8]) +
                     (" ..." if len(nc) > 8 else ""))
    for b, f in s["failures"].items():
        if f:
            lines.append(f"{b} failed on {len(f)} case(s); first: {f[0]}")
    for b, w in s["wrong_results"].items():
        if w:
            lines.append(f"{b} out of tolerance on {len(w)} case(s): " + ", ".join(w[:5]))
    return lines


def markdown_block(doc: dict, json_path: str, plot_path: str | None) -> str:
    """The README results section: machine, date, command, headline figures, table and plot link."""
    m = doc["machine"]
    lines = ["## Results", "",
             f"Generated from one bench run ({os.path.basename(json_path)}) by `autofuse.bench.report`.", "",
             f"- Machine: {m.get('cpu')}, {m.get('logical_cpus')} logical CPUs, torch threads "
             f"{m.get('torch_threads')}, caches {m.get('caches')}, ISA {', '.join(m.get('isa', []))}",
             f"- Software: torch {m.get('torch')}, Python {m.get('python')}",
             f"- Date: {doc['date']}; wall time {doc.get('wall_s', 0) / 60:.1f} min",
             f"- Command: `{doc['command']}`",
             f"- Bytes moved: {doc['bytes_definition']}; timing: {doc['timing']}",
             f"- Repetitions: {doc['config']['reps']} rounds per case", ""]
    lines += [f"- {ln.strip()}" for ln in summary_lines(doc)]
    lines += ["", markdown_table(doc), ""]
    if plot_path:
        lines += [f"![speedups and bandwidth]({plot_path})", ""]
    return "\n".join(lines)


def compile_markdown(cdoc: dict, json_path: str) -> str:
    """A markdown section for a compile-time bench document (autofuse.bench.compile_bench)."""
    from .compile_bench import text_table as compile_table

    return "\n".join(["### Compile time", "",
                      f"From {os.path.basename(json_path)} ({cdoc['date']}, {cdoc['dtype']}, {cdoc['size']} inputs): "
                      "seconds per pattern of the first compiled call minus one eager call; cold = caches disabled, "
                      "first = empty caches, warm = a new process on populated caches. Each column is one fresh "
                      "process; init is its first (trivial) compile.", "",
                      "```", compile_table(cdoc), "```", ""])


def write_markdown(doc: dict, json_path: str, png_path: str | None, md_path: str,
                   compile_doc: tuple[dict, str] | None = None) -> str:
    """Writes markdown_block to ``md_path``; the plot (if any) is copied next to it as <md stem>.png, so that the
    block and its picture can be committed together (bench/results/ is not). Returns ``md_path``."""
    import shutil

    rel = None
    if png_path and os.path.exists(png_path):
        dst = os.path.splitext(md_path)[0] + ".png"
        if os.path.abspath(dst) != os.path.abspath(png_path):
            shutil.copyfile(png_path, dst)
        rel = os.path.basename(dst)
    with open(md_path, "w") as f:
        f.write(markdown_block(doc, json_path, rel))
        if compile_doc:
            f.write("\n" + compile_markdown(*compile_doc))
    return md_path


def main(argv=None) -> int:
    """``python -m autofuse.bench.report BENCH.json [--markdown OUT.md] [--plot PNG]``: prints the table and
    summary of a saved run, and optionally writes the markdown results block."""
    import argparse
    import json

    ap = argparse.ArgumentParser(prog="python -m autofuse.bench.report", description=main.__doc__)
    ap.add_argument("json_path")
    ap.add_argument("--markdown", help="write the README results block here (e.g. bench/RESULTS.md)")
    ap.add_argument("--compile-json", help="a compile-time bench JSON to add as a section of the markdown")
    ap.add_argument("--plot", help="plot to copy next to the markdown (default: the JSON's .png sibling)")
    a = ap.parse_args(argv)
    with open(a.json_path) as f:
        doc = json.load(f)
    doc["summary"] = summarize(doc)  # recomputed: the saved summary may predate this version of the report
    print(text_table(doc))
    print("\n".join(summary_lines(doc)))
    if a.markdown:
        cdoc = None
        if a.compile_json:
            with open(a.compile_json) as f:
                cdoc = (json.load(f), a.compile_json)
        write_markdown(doc, a.json_path, a.plot or os.path.splitext(a.json_path)[0] + ".png", a.markdown, cdoc)
        print(f"wrote {a.markdown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
