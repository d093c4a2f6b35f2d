"""``autofuse.explain(fn, *args, **kwargs)``: what the backend does with a function, as a report object.

Compiles a fresh copy of ``fn`` (its own code object and backend object, so it is compiled afresh, without the
AOTAutograd cache: aot_cache.py, and without touching what else was compiled in the process) with the autofuse
backend, calls it once with the given arguments, and reports every graph Dynamo/AOTAutograd
produced: kernels (their IR ops and generated source), ATen fallbacks with reasons, the graph count, and Dynamo's
graph breaks (why Dynamo split the function into several graphs, with the user source lines, as
``torch._dynamo.explain`` reports them). ``str(report)`` is a readable summary.
"""

from __future__ import annotations

import types
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Tuple

import torch

from .lowering import BY_DESIGN_REASON


@dataclass
class KernelInfo:
    """One compiled kernel: its name, the IR ops it runs (in order), its source (None in reference mode), its IR."""

    name: str
    graph: str
    ops: List[str]
    source: str | None
    ir: str


@dataclass
class GraphBreak:
    """One Dynamo graph break: Dynamo's reason (e.g. "Data-dependent branching" or a call it cannot trace, such as
    ``print``) and the user stack where it happened, innermost frame last, each ``"FILE:LINE in FUNCTION"``."""

    reason: str
    user_stack: List[str] = field(default_factory=list)

    def __str__(self) -> str:
        where = self.user_stack[-1] if self.user_stack else "unknown location"
        return f"{where}: {self.reason}"


@dataclass
class ExplainReport:
    """The result of explain(): counts, kernels, fallbacks ``(op, reason)``, and per-graph mode/reason."""

    graph_count: int
    kernels: List[KernelInfo] = field(default_factory=list)
    fallbacks: List[Tuple[str, str]] = field(default_factory=list)
    graphs: List[Tuple[str, str, str]] = field(default_factory=list)  # (name, mode, reason)
    lowered_ops: Counter = field(default_factory=Counter)
    output: Any = None
    graph_breaks: List[GraphBreak] = field(default_factory=list)

    @property
    def kernel_count(self) -> int:
        return len(self.kernels)

    @property
    def by_design(self) -> List[Tuple[str, str]]:
        """The ATen calls that are externs by design (matmul, convolution: compute-bound ops left to ATen), a subset
        of ``fallbacks``."""
        return [f for f in self.fallbacks if f[1] == BY_DESIGN_REASON]

    @property
    def fallback_count(self) -> int:
        """Fallbacks proper: ops (or whole graphs) that run in ATen because Autofuse does not support them, i.e.
        ``fallbacks`` without the externs by design."""
        return len(self.fallbacks) - len(self.by_design)

    @property
    def graph_break_count(self) -> int:
        """Dynamo's graph breaks that ended a graph (each has its reason in ``graph_breaks``)."""
        return len(self.graph_breaks)

    def __str__(self) -> str:
        design = len(self.by_design)
        lines = [f"Autofuse explain: {self.graph_count} graph(s), {self.kernel_count} kernel(s), "
                 f"{self.fallback_count} fallback(s)" + (f" (+ {design} ATen op(s) by design)" if design else "") +
                 f", {self.graph_break_count} graph break(s)"]
        if self.graph_breaks:
            lines.append("  graph breaks (Dynamo split the function here; each part is compiled on its own):")
            for i, b in enumerate(self.graph_breaks, 1):
                first, *rest = b.reason.strip().splitlines() or [""]
                lines.append(f"    break {i}: {first}")
                lines.extend(f"      | {r}" for r in rest if r.strip())
                for frame in b.user_stack:
                    lines.append(f"      at {frame}")
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


def _graph_summary(r) -> str:
    """A graph's mode with its step counts: "kernels: 3 kernels, 2 ATen calls, 1 host step" (steps by kind)."""
    steps = getattr(r, "steps", None) or []
    if r.mode != "kernels" or not steps:
        return r.mode
    counts: Dict[str, int] = {}
    for st in steps:
        counts[st.kind] = counts.get(st.kind, 0) + 1
    names = {"kernel": "kernel", "extern": "ATen call", "host": "host step"}
    source = getattr(r, "program_source", None) or ""
    onednn = source.count("= ODL(")  # linear layers (extern_matmul.py)
    packed = source.count(", PW(")  # of which with pre-packed weights (weight_pack.py)
    linear = f" ({onednn} as oneDNN's linear" + (f", {packed} with packed weights)" if packed else ")")
    parts = [f"{n} {names.get(k, k)}{'s' if n != 1 else ''}" + (linear if k == "extern" and onednn else "")
             for k, n in sorted(counts.items())]
    return "kernels: " + ", ".join(parts)


def report_from_records(records) -> ExplainReport:
    """Build a report from backend GraphRecords."""
    rep = ExplainReport(graph_count=len(records))
    seen = set()
    for r in records:
        rep.graphs.append((r.name, _graph_summary(r), r.reason))
        if r.lowered is None:
            if r.mode != "kernels":  # the whole graph runs in ATen: a fallback with the graph's reason
                rep.fallbacks.append((f"of the whole graph {r.name} (every op runs in ATen)", r.reason or r.mode))
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


def _fresh_callable(fn: Callable) -> Callable:
    """A function that calls ``fn`` and has a code object of its own (Dynamo keeps compiled code per code object, so
    compiling it neither reuses nor disturbs what was compiled for ``fn`` before). A plain function is copied with a
    new code object (same globals, defaults, closure); anything else (a module, a bound method) is called through a
    new wrapper function."""
    if isinstance(fn, types.FunctionType):
        out = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        out.__kwdefaults__ = fn.__kwdefaults__
        out.__dict__.update(fn.__dict__)
        return out

    def call(*args, **kwargs):
        return fn(*args, **kwargs)

    return types.FunctionType(call.__code__.replace(), call.__globals__, "explained", None, call.__closure__)


def _compile_isolated(fn: Callable, backend_fn: Callable) -> Callable:
    """``torch.compile`` of ``fn`` whose new compiled code is kept apart from every other compile of the code it
    runs (``isolate_recompiles``, where this torch has it: nested frames compiled after a graph break do not count
    against the user's recompile limit)."""
    try:
        return torch.compile(fn, backend=backend_fn, isolate_recompiles=True)
    except TypeError:  # torch without isolate_recompiles
        return torch.compile(fn, backend=backend_fn)


def _frame_text(frame) -> str:
    """A traceback.FrameSummary as ``"FILE:LINE in FUNCTION"`` plus the source line where Python has it."""
    text = f"{frame.filename}:{frame.lineno} in {frame.name}"
    line = (getattr(frame, "line", None) or "").strip()
    return f"{text}: {line}" if line else text


def _break_of(gm) -> GraphBreak | None:
    """The graph break that ended the Dynamo graph ``gm`` (its ``compile_subgraph_reason``, as torch._dynamo.explain
    reads it), or None when the graph ended at the function's return."""
    reason = getattr(gm, "compile_subgraph_reason", None)
    if reason is None or not getattr(reason, "graph_break", False):
        return None
    text = str(reason.reason)
    if text.startswith("generic_jump"):  # Dynamo's name for a branch it cannot trace
        text += " (a Python branch on a tensor's value: data-dependent control flow)"
    return GraphBreak(text, [_frame_text(f) for f in (reason.user_stack or [])])


def explain(fn: Callable, *args, **kwargs) -> ExplainReport:
    """Compile ``fn`` with the autofuse backend, run it once on ``args``/``kwargs``, and report what happened.

    Nothing compiled before is thrown away (no ``torch._dynamo.reset()``): ``fn`` is compiled as a fresh function
    object with its own code object (``_fresh_callable``) through a backend object of its own, so Dynamo neither
    reuses code compiled earlier for ``fn`` (the report always describes a full compile) nor replaces it (a function
    the caller compiled keeps its compiled code: tests/python/test_explain.py). Calling explain() again compiles
    again. Graph breaks are read from each graph Dynamo hands the backend (its ``compile_subgraph_reason``, as
    ``torch._dynamo.explain`` reads them, but without that function's ``reset()``)."""
    from . import aot_cache, backend

    start = len(backend.RECORDS)
    # a new backend object: Dynamo's backend-match guard then never hands this compile another caller's code (nested
    # frames after a graph break keep their code objects) and never hands our code to another caller
    breaks: List[GraphBreak] = []

    def explaining_backend(gm, example_inputs, **kw):
        b = _break_of(gm)
        if b is not None:
            breaks.append(b)
        return backend.autofuse_backend(gm, example_inputs, **kw)

    compiled = _compile_isolated(_fresh_callable(fn), explaining_backend)
    with aot_cache.bypass():  # a cache hit would not lower anything, and the report lists what was lowered
        out = compiled(*args, **kwargs)
    rep = report_from_records(backend.RECORDS[start:])
    rep.graph_breaks = breaks
    rep.output = out
    return rep
