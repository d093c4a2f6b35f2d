"""``autofuse.explain(fn, *args, **kwargs)``: what the backend does with a function, as a report object.

Compiles a fresh copy of ``fn`` (its own code object and backend object, so it is compiled afresh, without the
AOTAutograd cache: aot_cache.py, and without touching what else was compiled in the process) with the autofuse
backend, calls it once with the given arguments, and reports every graph Dynamo/AOTAutograd
produced: kernels (their IR ops and generated source), ATen fallbacks with reasons, and the graph count.
``str(report)`` is a readable summary.
"""

from __future__ import annotations

import functools
import types
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


def explain(fn: Callable, *args, **kwargs) -> ExplainReport:
    """Compile ``fn`` with the autofuse backend, run it once on ``args``/``kwargs``, and report what happened.

    Nothing compiled before is thrown away (no ``torch._dynamo.reset()``): ``fn`` is compiled as a fresh function
    object with its own code object (``_fresh_callable``) through a backend object of its own, so Dynamo neither
    reuses code compiled earlier for ``fn`` (the report always describes a full compile) nor replaces it (a function
    the caller compiled keeps its compiled code: tests/python/test_explain.py). Calling explain() again compiles
    again."""
    from . import aot_cache, backend

    start = len(backend.RECORDS)
    # a new backend object: Dynamo's backend-match guard then never hands this compile another caller's code (nested
    # frames after a graph break keep their code objects) and never hands our code to another caller
    compiled = _compile_isolated(_fresh_callable(fn), functools.partial(backend.autofuse_backend))
    with aot_cache.bypass():  # a cache hit would not lower anything, and the report lists what was lowered
        out = compiled(*args, **kwargs)
    rep = report_from_records(backend.RECORDS[start:])
    rep.output = out
    return rep
