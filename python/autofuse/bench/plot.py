"""PNG plot of a bench document: speedup over eager per case (one panel per size class, log scale) and, for the
DRAM-sized cases, each backend's GB/s as % of the copy bandwidth measured in the same run."""
from __future__ import annotations

from . import report

COLORS = {"eager": "#9e9e9e", "inductor": "#1f77b4", "autofuse": "#d62728"}


def plot(doc: dict, path: str) -> str:
    """Writes the figure to ``path`` (PNG) with matplotlib's Agg backend and returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = doc["config"]["sizes"]
    backends = doc["config"]["backends"]
    compilers = [b for b in backends if b != "eager"]
    panels = [("speedup", s) for s in sizes] + ([("pct", "large")] if "large" in sizes else [])
    n_cases = max(1, max(sum(1 for r in doc["results"] if r["size"] == s) for s in sizes))
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(10, 0.32 * n_cases + 3), 4.5 * len(panels)),
                             squeeze=False)
    for ax, (kind, size) in zip(axes[:, 0], panels):
        recs = [r for r in doc["results"] if r["size"] == size]
        labels = [f"{r['pattern']} {'bf16' if r['dtype'] == 'bfloat16' else 'fp32'}" for r in recs]
        shown = compilers if kind == "speedup" else backends
        width = 0.8 / max(1, len(shown))
        drawn = []
        for j, b in enumerate(shown):
            if kind == "speedup":
                vals = [report.speedup(r, b, "eager") or 0.0 for r in recs]
            else:
                vals = [r["backends"].get(b, {}).get("pct_bw", 0.0) for r in recs]
            xs = [i + (j - (len(shown) - 1) / 2) * width for i in range(len(recs))]
            ax.bar(xs, vals, width, label=b, color=COLORS.get(b))
            drawn += vals
        if kind == "speedup":
            if any(v > 0 for v in drawn):
                ax.set_yscale("log")
            ax.axhline(1.0, color="black", lw=0.8)
            ax.set_ylabel("speedup vs eager")
            ax.set_title(f"{size}: median time of eager / median time of compiler (higher is better)")
        else:
            ax.axhline(100.0, color="black", lw=0.8)
            ax.set_ylabel("% of copy bandwidth")
            ax.set_title(f"DRAM-sized cases: GB/s as % of the measured copy bandwidth "
                         f"({doc['copy_bandwidth_gbs']:.1f} GB/s)")
        ax.set_xticks(range(len(recs)))
        ax.set_xticklabels(labels, rotation=75, ha="right", fontsize=7)
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"autofuse bench {doc['date']} — {doc['machine'].get('cpu')}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
