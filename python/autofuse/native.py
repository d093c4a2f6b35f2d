"""The native path of the backend: LoweredGraph -> ``autofuse._core.Graph`` -> fuse -> one compiled Kernel per group.

``to_core`` builds the C++ graph with the bindings' builder (``Graph.add_input / add / set_outputs``; dtypes as IR
names, sizes as ints or expression strings). ``plan_native`` runs the fusion pass (``_core.fuse``) and turns its
groups (topologically ordered) into program Steps; each Kernel group is compiled with ``_core.Kernel.compile``. A
kernel that fails to compile keeps its ops, run eagerly by the reference evaluator, with a warning (AUTOFUSE_STRICT=1
raises). Compiled kernels are memoized by their IR text, so an identical group (same structure, dtypes and sizes) in
another graph reuses the Kernel object; kernels of another size share the C++ module through the runtime's cache.
A graph's kernels are compiled in one ``Kernel.compile_many`` call: several per C++ compiler run, ``compile_threads()``
runs at a time (the binding releases the GIL).
"""

from __future__ import annotations

import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Tuple

from .lowering import DTYPE_TO_IR, LoweredGraph
from .program import Step
from .program_layout import expand_outputs

_KERNELS: Dict[str, Any] = {}


#: The unusable-cache errors already warned about (each would otherwise repeat for every kernel).
_CACHE_WARNED: List[str] = []

def _attrs(lg: LoweredGraph, n) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for k, v in n.attrs.items():
        if k in ("shape", "strides"):
            out[k] = [lg.symbols.ir(s) for s in v]
        elif k in ("length", "start", "stop") and n.op in ("iota", "slice"):
            out[k] = lg.symbols.ir(v)
        else:
            out[k] = v
    if n.op == "extern":
        out["dtype"] = DTYPE_TO_IR[n.dtype]
        out["shape"] = [lg.symbols.ir(s) for s in n.shape]
    return out


def to_core(lg: LoweredGraph, core, name: str = "main") -> Tuple[Any, List[int]]:
    """Build the C++ Graph of ``lg``; returns it and the value id of every LNode (in order)."""
    g = core.Graph(name)
    vid: List[int] = []
    for n in lg.nodes:
        if n.op == "input":
            strides = n.attrs.get("strides")
            v = g.add_input(n.name, DTYPE_TO_IR[n.dtype], [lg.symbols.ir(s) for s in n.shape],
                            [lg.symbols.ir(s) for s in strides] if strides is not None else None)
        else:
            v = g.add(n.op, [vid[i] for i in n.inputs], _attrs(lg, n), n.name)
        vid.append(v)
    outs: List[int] = []
    # outputs eager returns as expanded views: the kernel writes the broadcast's input, the program expands it
    lg.expand_outputs = expand_outputs(lg)
    for kind, v in lg.outputs:
        v = lg.expand_outputs.get(v, v) if kind == "node" else v
        if kind == "node" and vid[v] not in outs:
            outs.append(vid[v])
    for _, v in lg.mutations:  # values written back into mutated inputs are computed like outputs
        if vid[v] not in outs and lg.nodes[v].op != "input":
            outs.append(vid[v])
    for v, *_ in lg.index_checks:  # gather/scatter indices the program range-checks must be materialized
        if vid[v] not in outs and lg.nodes[v].op != "input":
            outs.append(vid[v])
    g.set_outputs(outs)
    return g, vid


def _get(obj, name: str):
    v = getattr(obj, name, None)
    return v() if callable(v) else v


def _kind(group) -> str:
    k = str(_get(group, "kind")).lower()
    for word in ("kernel", "extern", "host"):
        if word in k:
            return word
    raise ValueError(f"unknown fusion group kind {k}")


def kernel_compiler(core):
    """The bindings' kernel compiler: ``Kernel.compile(graph)`` (contract) or a module-level ``compile_kernel``."""
    kernel = getattr(core, "Kernel", None)
    if kernel is not None and hasattr(kernel, "compile"):
        return kernel.compile
    return getattr(core, "compile_kernel", None)


def kernel_batch_compiler(core):
    """``Kernel.compile_many(graphs, threads)`` when the kernel compiler in use is the bindings' ``Kernel.compile``
    (tests replace kernel_compiler to inject failures; the batch path then steps aside), else None."""
    kernel = getattr(core, "Kernel", None)
    many = getattr(kernel, "compile_many", None)
    if many is None or kernel_compiler(core) != getattr(kernel, "compile", None):
        return None
    return many


def compile_kernel(core, subgraph):
    """Compile one kernel sub-graph, memoized by its IR text and the precision policy (kernels read
    AUTOFUSE_EMULATE_PRECISION_CASTS when they are compiled, so the two policies never share a Kernel)."""
    key = os.environ.get("AUTOFUSE_EMULATE_PRECISION_CASTS", "") + "|" + str(subgraph)
    k = _KERNELS.get(key)
    if k is None:
        k = kernel_compiler(core)(subgraph)
        _KERNELS[key] = k
    return k


def compile_threads() -> int:
    """Threads compiling one graph's kernels at once: ``AUTOFUSE_COMPILE_THREADS``, else the machine's core count.

    ``Kernel.compile`` releases the GIL while the C++ compiler runs, so the threads overlap the compiler processes.
    """
    from .env import cpu_count, env_int

    cpus = cpu_count()
    n = env_int("AUTOFUSE_COMPILE_THREADS", 1, 4096, f"the CPU count ({cpus})")  # a bad value warns once
    return n if n is not None else cpus


def compile_kernels(core, subgraphs: List[Any]) -> List[Any]:
    """Compile several kernel sub-graphs; returns per sub-graph the Kernel or the exception its compile raised (in
    order). With ``Kernel.compile_many`` (one call for all) the uncached kernels are compiled in batches, several per
    C++ compiler run and ``compile_threads()`` runs at a time, and kernels of identical structure once; otherwise one
    ``Kernel.compile`` per sub-graph on ``compile_threads()`` threads. Identical sub-graphs (same IR text, also across
    graphs of the process) are compiled once. Keyed by the precision policy too, as in compile_kernel."""
    policy = os.environ.get("AUTOFUSE_EMULATE_PRECISION_CASTS", "") + "|"
    keys = [policy + str(g) for g in subgraphs]
    todo: Dict[str, Any] = {}
    for key, g in zip(keys, subgraphs):
        if key not in _KERNELS and key not in todo:
            todo[key] = g
    results: Dict[str, Any] = {}

    many = kernel_batch_compiler(core)
    if many is not None and todo:
        # one call: the uncached kernels are compiled several per C++ compiler run, compile_threads() runs at a time
        for key, r in zip(todo, many(list(todo.values()), compile_threads())):
            if isinstance(r, core.KernelFailure):
                try:
                    r.raise_()
                except Exception as e:  # noqa: BLE001 - handed back to the caller, which decides (warn or raise)
                    r = e
            results[key] = r
    else:
        def one(key: str):
            try:
                return kernel_compiler(core)(todo[key])
            except Exception as e:  # noqa: BLE001 - handed back to the caller, which decides (warn or raise)
                return e

        threads = min(compile_threads(), len(todo))
        if threads > 1:
            with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="autofuse-compile") as pool:
                for key, r in zip(todo, pool.map(one, list(todo))):
                    results[key] = r
        else:
            for key in todo:
                results[key] = one(key)
    for key, r in results.items():
        if not isinstance(r, Exception):
            _KERNELS[key] = r
    return [_KERNELS.get(key) or results[key] for key in keys]


def plan_native(lg: LoweredGraph, record, strict: bool) -> List[Step]:
    """Fuse and compile ``lg``; returns the program steps in topological order. The kernels are compiled in
    parallel (compile_kernels); a kernel whose compile fails keeps no runner (its ops then run on the eager
    reference evaluator) and warns, or raises under ``strict``."""
    from . import _core as core  # type: ignore

    if not any(kind == "node" for kind, _ in lg.outputs) and not lg.mutations:
        return []  # nothing to compute: every output is an input, a constant or None (e.g. a zero gradient)
    g, vid = to_core(lg, core, record.name)
    lnode = {v: i for i, v in enumerate(vid)}
    # symbols bound by the graph's SymInt arguments (``args[i]``), not by a tensor's shape: the kernels that need
    # them take them from the program's bindings (Kernel.run's `given`)
    given = sorted(name for name, src in lg.sym_sources.items() if ".shape[" not in src)
    fused = core.fuse(g, given_symbols=given) if given else core.fuse(g)
    report = _get(fused, "report")
    record.fusion_report = str(report) if report is not None else ""
    steps: List[Step] = []
    pending: List[Step] = []
    for grp in _get(fused, "groups"):
        kind = _kind(grp)
        nodes = [lnode[v] for v in _get(grp, "nodes")]
        st = Step(kind, nodes, [lnode[v] for v in _get(grp, "inputs")], [lnode[v] for v in _get(grp, "outputs")],
                  name=str(_get(grp, "name") or f"{kind}{len(steps)}"))
        if kind == "extern":
            # one extern node per group; keep graph order
            st.nodes.sort()
        if kind == "kernel":
            sub = _get(grp, "subgraph")
            st.info["ir"] = str(sub)
            st.info["subgraph"] = sub
            pending.append(st)
        steps.append(st)
    if kernel_compiler(core) is None or not pending:
        return steps
    t0 = time.perf_counter()
    compiled = compile_kernels(core, [st.info["subgraph"] for st in pending])
    record.kernel_compile_seconds += time.perf_counter() - t0
    for st, k in zip(pending, compiled):
        if isinstance(k, Exception):
            if strict:
                raise k
            st.info["error"] = str(k)
            if isinstance(k, getattr(core, "CacheDirError", ())):  # usually one cause for every kernel: say it once
                # (the root or its v1/tmp unusable; an entry that merely cannot be stored is loaded from a temporary
                # copy by the runtime, which says so on stderr, and does not come here)
                if str(k) not in _CACHE_WARNED:
                    _CACHE_WARNED.append(str(k))
                    warnings.warn(f"autofuse: the kernel cache cannot be used: {k}; kernel {st.name} runs in ATen, as "
                                  f"does every other kernel that fails for this reason (said once per cause)")
                continue
            if isinstance(k, getattr(core, "IRError", ())):
                what = "cannot be made a kernel"
            elif isinstance(k, getattr(core, "ModuleLoadError", ())):
                what = "could not be loaded"  # its binary exists (compiled or from the cache) but does not load
            else:
                what = "failed to compile"
            warnings.warn(f"autofuse: kernel {st.name} {what}; its ops run in ATen: {k}")
            continue
        st.kernel = k
        st.run = k.run
        # Symbols its input sizes do not determine (a backward kernel's output [s0, s1, 32] from an input
        # [s0*s1, 32]), or symbols of SymInt arguments, which the kernel must take as given rather than solve an
        # input size for (x[n:] reads an input of size -n, and n may be negative): the program passes its
        # bindings, `K(ins, outs, _bind)` (Kernel.run's `given`).
        st.needs_bindings = bool(getattr(k, "given_symbols", ())) or _uses_any(st.info["subgraph"], given)
        st.info["source"] = _get(k, "source")
        tiling = getattr(k, "tiling_report", None)
        if tiling is not None:
            st.info["tiling"] = str(_get(k, "tiling_report"))
    return steps


def _uses_any(graph, symbols) -> bool:
    """Whether the C++ ``graph`` uses any of the size ``symbols`` (``Graph.symbols``)."""
    if not symbols:
        return False
    used = _get(graph, "symbols")
    return used is not None and not set(symbols).isdisjoint(used)


def group_graph(lg: LoweredGraph, step: Step, core, name: str = "kernel"):
    """A standalone C++ Graph of one step's nodes: inputs = step.inputs, outputs = step.outputs."""
    g = core.Graph(name)
    vid: Dict[int, int] = {}
    for i in step.inputs:
        n = lg.nodes[i]
        strides = n.attrs.get("strides") if n.op == "input" else None
        vid[i] = g.add_input(n.name, DTYPE_TO_IR[n.dtype], [lg.symbols.ir(s) for s in n.shape],
                             [lg.symbols.ir(s) for s in strides] if strides is not None else None)
    for i in step.nodes:
        n = lg.nodes[i]
        vid[i] = g.add(n.op, [vid[j] for j in n.inputs], _attrs(lg, n), n.name)
    g.set_outputs([vid[o] for o in step.outputs])
    return g


def group_ir_text(lg: LoweredGraph, step: Step) -> str | None:
    """Canonical IR text of a step's sub-graph through the C++ printer; None when the builder is unavailable."""
    try:
        from . import _core as core  # type: ignore

        if not hasattr(core, "Graph"):
            return None
        return str(group_graph(lg, step, core, step.name or "kernel"))
    except Exception:  # noqa: BLE001 - the debug text then falls back to the Python listing
        return None


class InterpreterGroup:
    """Stand-in kernel: runs a step's sub-graph on the C++ reference interpreter (AUTOFUSE_STANDIN=interp)."""

    def __init__(self, graph) -> None:
        self.graph = graph

    def __call__(self, ins, outs) -> None:
        from .ir import interpret

        for o, r in zip(outs, interpret(self.graph, ins)):
            o.copy_(r)


def has_interpreter() -> bool:
    try:
        from . import _core  # type: ignore

        return hasattr(_core, "Graph") and hasattr(_core, "interpret_with")
    except ImportError:
        return False


def plan_interpreter(lg: LoweredGraph, steps: List[Step]) -> None:
    """Give every kernel step of a stand-in partition the interpreter as its runner."""
    from . import _core as core  # type: ignore

    for st in steps:
        if st.kind == "kernel":
            g = group_graph(lg, st, core, st.name)
            st.info["ir"] = str(g)
            st.run = InterpreterGroup(g)
