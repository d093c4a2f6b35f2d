"""``autofuse.explain(fn, *args, **kwargs)``: what the backend does with a function, as a report object.

Resets Dynamo (so the function is compiled afresh, without the AOTAutograd cache: aot_cache.py), compiles ``fn``
with the autofuse backend, calls it once with the given arguments, and reports every graph Dynamo/AOTAutograd
produced: kernels (their IR ops and generated source), ATen fallbacks with reasons, and the graph count.
``str(report)`` is a readable summary.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, List, Tuple

import torch


@dataclass
class KernelInfo:
    """One compiled kernel: its name, the IR ops it runs (in order), its source (None in reference mode), its IR."""

    name: str
    graph: str
    ops: List[str]
    source: str | None
    ir: str


@dataclass
class ExplainReport:
    """The result of explain(): counts, kernels, fallbacks ``(op, reason)``, and per-graph mode/reason."""

    graph_count: int
    kernels: List[KernelInfo] = field(default_factory=list)
    fallbacks: List[Tuple[str, str]] = field(default_factory=list)
    graphs: List[Tuple[str, str, str]] = field(default_factory=list)  # (name, mode, reason)
    lowered_ops: Counter = field(default_factory=Counter)
    output: Any = None

    @property
    def kernel_count(self) -> int:
        return len(self.kernels)

    def __str__(self) -> str:
        lines = [f"Autofuse explain: {self.graph_count} graph(s), {self.kernel_count} kernel(s), "
                 f"{len(self.fallbacks)} fallback(s)"]
        for name, mode, reason in self.graphs:
            lines.append(f"  graph {name}: {mode}" + (f" ({reason})" if reason else ""))
        for k in self.kernels:
            lines.append(f"  kernel {k.name} [{k.graph}]: {len(k.ops)} ops: {' '.join(k.ops)}")
        if self.fallbacks:
            lines.append("  fallbacks:")
            for op, reason in self.fallbacks:
                lines.append(f"    Fallback {op}: {reason}")
        if self.lowered_ops:
            lowered = ", ".join(f"{op} x{n}" for op, n in sorted(self.lowered_ops.items()))
            lines.append(f"  lowered ATen ops: {lowered}")
        return "\n".join(lines)


def report_from_records(records) -> ExplainReport:
    """Build a report from backend GraphRecords."""
    rep = ExplainReport(graph_count=len(records))
    seen = set()
    for r in records:
        rep.graphs.append((r.name, r.mode, r.reason))
        if r.lowered is None:
            continue
        rep.lowered_ops.update(r.lowered.lowered_ops)
        for f in r.lowered.fallbacks:
            if f not in seen:
                seen.add(f)
                rep.fallbacks.append(f)
        for s in r.kernels:
            ops = [r.lowered.nodes[i].op for i in s.nodes]
            source = getattr(s.kernel, "source", None) if s.kernel is not None else None
            source = source() if callable(source) else source
            rep.kernels.append(KernelInfo(s.name, r.name, ops, source, s.info.get("ir", "")))
    return rep


def explain(fn: Callable, *args, **kwargs) -> ExplainReport:
    """Compile ``fn`` with the autofuse backend, run it once on ``args``/``kwargs``, and report what happened."""
    from . import aot_cache, backend

    torch._dynamo.reset()
    start = len(backend.RECORDS)
    compiled = torch.compile(fn, backend=backend.autofuse_backend)
    with aot_cache.bypass():  # a cache hit would not lower anything, and the report lists what was lowered
        out = compiled(*args, **kwargs)
    rep = report_from_records(backend.RECORDS[start:])
    rep.output = out
    return rep
