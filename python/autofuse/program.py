"""The lean callable the backend returns: generated Python that runs kernels and ATen calls in order.

A ``Step`` is one fusion group of a LoweredGraph: a compiled kernel (called as ``run(inputs, outputs)`` with torch
tensors; outputs allocated here with ``torch.empty``), an extern ATen call (the FX node's target called with its
original arguments), or a host step (a layout op run inline as the torch view or copy it stands for: host_expr).
``build_program`` writes one Python function for the whole graph, like this::

    def af_call(args):
        s0 = args[3].shape[0]
        v0 = args[0]; v1 = args[1]
        v4 = E4(v0, v1)                            # aten.mm
        v9 = empty((s0, 768), dtype=D0)
        K0([v4, v1], [v9])                          # kernel 0
        LAUNCHES[0] += 1
        return [v9]

so that the per-call cost is one Python frame, the symbol reads and one call per step.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.fx

from . import _core, profile
from .lowering import LNode, LoweredGraph
from .lowering_reference import eval_node
from .program_embedding import GATHER_ROWS_FN, embedding_lines
from .program_linear import ADDMM_FN, LINEAR_FN, MM_FN, ONEDNN_FN, plan_linear
from .program_outputs import contiguous_strides, is_dense, plan_output_views
from .program_inplace import aliased_reads, owned_bases, plan_inplace
from .program_layout import Perm, dense_strides, eager_layout, kernel_output_layouts  # noqa: F401 (eager_layout: API)
from .program_views import EXTERN_CONTIGUOUS, RT_FN, ViewPlan, plan_views
from .weight_pack import packed_weight


#: Kernel launches made by generated programs (one list slot: a cheap in-place counter tests read).
LAUNCHES = [0]


def kernel_launches() -> int:
    """How many kernel steps generated programs have run in this process."""
    return LAUNCHES[0]


@dataclass
class Step:
    """One unit of work in the generated program. ``run`` is ``fn(inputs, outputs)`` for kernels; for host steps
    ``fn(inputs, bindings) -> outputs``; unused for externs (the FX node is called)."""

    kind: str  # "kernel" | "extern" | "host"
    nodes: List[int]
    inputs: List[int]
    outputs: List[int]
    name: str = ""
    run: Optional[Callable] = None
    needs_bindings: bool = False
    kernel: Any = None  # the compiled Kernel object (source, graph), if any
    info: Dict[str, Any] = field(default_factory=dict)


class ReferenceGroup:
    """Stand-in for a compiled kernel: evaluates the group's IR nodes with eager torch and copies into outputs."""

    def __init__(self, lg: LoweredGraph, step: Step) -> None:
        self.lg, self.step = lg, step

    def __call__(self, ins, outs, bindings):
        env: Dict[int, Any] = dict(zip(self.step.inputs, ins))
        for i in self.step.nodes:
            env[i] = eval_node(self.lg, i, env, bindings, _no_extern)
        for o, v in zip(outs, self.step.outputs):
            o.copy_(env[v])


class HostGroup:
    """A host (layout) step: eager evaluation, results returned as they are (views where torch makes views)."""

    def __init__(self, lg: LoweredGraph, step: Step) -> None:
        self.lg, self.step = lg, step

    def __call__(self, ins, bindings):
        env: Dict[int, Any] = dict(zip(self.step.inputs, ins))
        for i in self.step.nodes:
            env[i] = eval_node(self.lg, i, env, bindings, _no_extern)
        return [env[v] for v in self.step.outputs]


def check_index(idx: torch.Tensor, size: int, dim: int, op: str = "gather") -> None:
    """Raise eager's error when an index of a lowered gather/scatter (``op``, lowering_gather.py) lies outside
    ``[0, size)``: one min/max pass over the index (one int per row), naming the first bad bound found (the minimum
    when it is negative, else the maximum). RuntimeError ``index I is out of bounds for dimension D with size S``;
    for the gather of nll_loss / cross_entropy's decomposition (op ``nll_loss``) eager's IndexError ``Target I is
    out of bounds.``, naming the first bad target in order as eager does."""
    if idx.numel() == 0:
        return
    lo, hi = torch.aminmax(idx)
    lo_i, hi_i = int(lo), int(hi)
    if lo_i < 0 or hi_i >= size:
        bad = lo_i if lo_i < 0 else hi_i
        if op == "nll_loss":  # eager names the first bad target in order
            flat = idx.reshape(-1)
            bad = int(flat[((flat < 0) | (flat >= size)).nonzero()[0, 0]])
            raise IndexError(f"Target {bad} is out of bounds.")
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {size}")


def _values_made(st: Step) -> set:
    """The program variables a step defines: its outputs, and for host and extern steps every node it runs (a
    kernel's inner nodes stay inside the kernel)."""
    return set(st.outputs) | (set(st.nodes) if st.kind != "kernel" else set())


def _check_lines(lg: LoweredGraph, available) -> List[str]:
    """Program lines range-checking the gather/scatter indices among ``available`` (program variables)."""
    return [f"    IDXCHK(v{v}, {_py_size(lg, size)}, {dim}, {op!r})  # {op} index"
            for v, size, dim, op in lg.index_checks if v in available]


def _no_extern(n: LNode, env):
    raise RuntimeError(f"extern node {n.name} inside a kernel group")


class _Emitter:
    def __init__(self, lg: LoweredGraph) -> None:
        self.lg = lg
        self.lines: List[str] = []
        self.globals: Dict[str, Any] = {"empty": torch.empty, "LAUNCHES": LAUNCHES, "PF": profile.ENABLED,
                                        "PL": profile.launch,
                                        "IDXCHK": check_index, "ESC": _EMPTY_STRIDED, "RT": RT_FN,
                                        "LIN": LINEAR_FN, "MM": MM_FN, "ADDMM": ADDMM_FN, "ODL": ONEDNN_FN,
                                        "PW": packed_weight, "GR": GATHER_ROWS_FN, "HP": _core.advise_huge_pages}
        self._consts: Dict[int, str] = {}
        self._specs: Dict[Any, str] = {}

    def const(self, obj: Any, prefix: str = "C") -> str:
        key = id(obj)
        if key not in self._consts:
            name = f"{prefix}{len(self._consts)}"
            self._consts[key] = name
            self.globals[name] = obj
        return self._consts[key]

    def view_spec(self, layout) -> str:
        """A native kernel's input argument for a folded view (program_views.Layout): ``(vBASE, S3)``, S3 the
        constant (sizes, strides, offset) (one per distinct spec)."""
        base, sizes, strides, offset = layout
        key = (sizes, strides, offset)
        if key not in self._specs:
            self._specs[key] = self.const(key, "S")
        return f"(v{base}, {self._specs[key]})"

    def arg(self, a) -> str:
        """Python source for one FX argument of an extern call."""
        lg = self.lg
        if isinstance(a, torch.fx.Node):
            if a in lg.sym_nodes:
                return f"({lg.sym_nodes[a]})"
            if a in lg.opaque_args:  # a tensor input of a dtype the IR lacks, read by an ATen fallback
                return f"args[{lg.opaque_args[a]}]"
            v = lg.fx_value.get(a)
            if isinstance(v, int):
                return f"v{v}"
            if isinstance(v, tuple):
                return "(" + ", ".join(f"v{i}" for i in v) + ",)"
            raise KeyError(f"FX argument {a.name} has no value in the program")
        if isinstance(a, (list, tuple)):
            inner = ", ".join(self.arg(e) for e in a)
            return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
        if a is None or isinstance(a, (bool, str)) or (isinstance(a, int)):
            return repr(a)
        if isinstance(a, float) and a == a and abs(a) != float("inf"):
            return repr(a)
        return self.const(a)


def takes_view_specs(st: Step) -> bool:
    """Whether a step is a native kernel launch (``Kernel.run``), which takes an input as a view spec
    ``(base, (sizes, strides, offset))`` (src/bindings/tensor_convert.h) instead of a torch view of the base."""
    return (st.kind == "kernel" and st.kernel is not None and not st.needs_bindings
            and getattr(st.run, "__self__", None) is st.kernel)


def _step_reads(lg: LoweredGraph, st: Step, linear: Optional[Dict[int, Any]] = None,
                specs: Optional[Dict[int, Any]] = None) -> List[int]:
    """Program variables a step reads (externs: the LNodes behind every FX argument; a matmul folded into
    ``LIN(x, w)`` reads what its LinearFold reads, program_linear.py; a native kernel reads the base of each input
    that ``specs``, the folded views' layouts, holds: it gets the view as a spec)."""
    if st.kind != "extern":
        if specs and takes_view_specs(st):
            return [specs[i][0] if i in specs else i for i in st.inputs]
        return list(st.inputs)
    reads: List[int] = []
    for v in st.nodes:
        if linear and v in linear:
            reads.extend(linear[v].reads(lg))
            continue
        n = lg.nodes[v]
        reads.extend(n.inputs)
        stack = list(n.fx.args) + list(n.fx.kwargs.values())
        while stack:
            a = stack.pop()
            if isinstance(a, (list, tuple)):
                stack.extend(a)
            elif isinstance(a, torch.fx.Node):
                fv = lg.fx_value.get(a)
                if isinstance(fv, int):
                    reads.append(fv)
                elif isinstance(fv, tuple):
                    reads.extend(fv)
    return reads


def _last_uses(lg: LoweredGraph, steps: List[Step],
               reads: Optional[Callable[[int, Step], List[int]]] = None) -> Dict[int, List[int]]:
    """step index -> program variables whose last reader is that step (graph outputs and inputs excluded).
    ``reads(k, step)`` gives what step k reads (default: _step_reads)."""
    keep = {v for k, v in lg.outputs if k == "node"} | {v for _, v in lg.mutations}
    keep |= set(lg.expand_outputs.values())  # expanded at the end (program_layout.expand_outputs)
    last: Dict[int, int] = {}
    for k, st in enumerate(steps):
        for v in (reads(k, st) if reads is not None else _step_reads(lg, st)):
            last[v] = k
    out: Dict[int, List[int]] = {}
    for v, k in last.items():
        if v not in keep and lg.nodes[v].op != "input":
            out.setdefault(k, []).append(v)
    return {k: sorted(vs) for k, vs in out.items()}


def shape_py(lg: LoweredGraph, shape) -> str:
    parts = [lg.symbols.py(s) for s in shape]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _profile_name(lg: LoweredGraph, st: Step, graph: str) -> str:
    """The name a kernel step is profiled under: graph, group and its IR ops (``af_graph0.k1[mul,exp,sum]``);
    unique per graph, since group names (``k0``...) repeat across graphs."""
    ops: List[str] = []
    for i in st.nodes:
        op = lg.nodes[i].op
        if op != "constant" and op not in ops:
            ops.append(op)
    text = ",".join(ops)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{graph}.{st.name}[{text}]"


def _py_size(lg: LoweredGraph, s) -> str:
    return str(s) if isinstance(s, int) else lg.symbols.py(s)


def host_expr(lg: LoweredGraph, n: LNode, e: "_Emitter") -> Optional[str]:
    """Python source computing a host (layout) node from its input variables as the torch view or copy it stands for
    (``v3.reshape((s0, 768))``, ``v3.permute([0, 2, 1])``, ``v3.narrow(1, 0, 64)``, ``CAT([v1, v2], 0)``); None for
    an op without an inline form (the step then calls HostGroup)."""
    ins = [f"v{i}" for i in n.inputs]
    a = n.attrs
    if n.op == "reshape":
        return f"{ins[0]}.reshape({shape_py(lg, n.shape)})"
    if n.op == "permute":
        return f"{ins[0]}.permute({list(a['dims'])!r})"
    if n.op == "broadcast_to":
        return f"{ins[0]}.expand({shape_py(lg, n.shape)})"
    if n.op == "slice":
        start, stop = _py_size(lg, a["start"]), _py_size(lg, a["stop"])
        if a["step"] == 1:
            return f"{ins[0]}.narrow({a['axis']}, {start}, ({stop}) - ({start}))"
        return f"{ins[0]}[{':, ' * a['axis']}{start}:{stop}:{a['step']}]"
    if n.op == "concat":
        return f"{e.const(torch.cat, 'F')}([{', '.join(ins)}], {a['axis']})"
    return None


#: torch's C++ fast path for an uninitialized CPU tensor of given sizes and strides (what Inductor's generated wrappers
#: allocate with: no argument parsing or dispatcher); None when this torch build lacks it (``torch.empty`` is used).
_EMPTY_STRIDED = getattr(getattr(getattr(torch._C, "_dynamo", None), "guards", None), "_empty_strided_cpu", None)


def _alloc_contiguous(lg: LoweredGraph, e: "_Emitter", v: int) -> List[str]:
    """The program lines allocating value ``v`` uninitialized and row-major (``ESC`` for static sizes, ~1/3 of
    torch.empty's cost; else ``torch.empty``), then advising it as huge pages when it is large (_huge_lines)."""
    n = lg.nodes[v]
    if _EMPTY_STRIDED is not None and all(isinstance(d, int) for d in n.shape):
        line = f"    v{v} = ESC({shape_py(lg, n.shape)}, {contiguous_strides(n.shape)!r}, {e.const(n.dtype, 'D')})"
    else:
        line = f"    v{v} = empty({shape_py(lg, n.shape)}, dtype={e.const(n.dtype, 'D')})"
    return [line] + _huge_lines(lg, f"v{v}", n.shape, n.dtype)


#: The smallest fresh buffer (bytes) the program advises as transparent huge pages: 32 MiB (runtime/huge_pages.h).
_HUGE_MIN = _core.huge_page_min_bytes()


def _huge_lines(lg: LoweredGraph, var: str, shape, dtype: torch.dtype) -> List[str]:
    """Program lines advising the buffer just allocated as ``var`` (a dense tensor of ``shape`` and ``dtype``, not yet
    written) as transparent huge pages when it holds at least _HUGE_MIN bytes: ``HP(ptr, nbytes)``
    (runtime/huge_pages.h: a fresh mapping's first writes then fault in 2 MiB pages, 4.3 -> 18-20 GB/s for a 256 MiB
    output on the Zen 5 VM). No line for a static shape below the threshold; a symbolic one tests its size per call."""
    item = dtype.itemsize
    if all(isinstance(d, int) for d in shape):
        nbytes = item
        for d in shape:
            nbytes *= int(d)
        return [f"    HP({var}.data_ptr(), {nbytes})"] if nbytes >= _HUGE_MIN else []
    size = " * ".join([f"({_py_size(lg, d)})" for d in shape] + [str(item)])
    return [f"    if {size} >= {_HUGE_MIN}: HP({var}.data_ptr(), {size})"]


def _inline_hosts(lg: LoweredGraph, steps: List[Step], e: "_Emitter") -> set:
    """Indices of the host steps the program runs inline (every node has a host_expr)."""
    return {k for k, st in enumerate(steps)
            if st.kind == "host" and all(host_expr(lg, lg.nodes[v], e) is not None for v in st.nodes)}


def _static_arg_strides(lg: LoweredGraph, v: int) -> Optional[Tuple[int, ...]]:
    """The strides of graph argument ``v`` when its FX fake tensor has static sizes equal to the IR node's and static
    strides, else None."""
    n = lg.nodes[v]
    val = n.fx.meta.get("val") if n.fx is not None and isinstance(n.fx, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or not all(isinstance(d, int) for d in n.shape):
        return None
    try:
        shape, strides = tuple(val.shape), tuple(val.stride())
    except (RuntimeError, NotImplementedError):  # sparse or otherwise stride-less tensors
        return None
    if shape != tuple(n.shape) or not all(type(s) is int for s in shape + strides):
        return None
    return strides


def _kernel_read_args(lg: LoweredGraph, steps: List[Step], inline_hosts) -> List[int]:
    """Graph arguments that only native kernel launches read, directly or through inline host views (no extern, e.g. a
    matmul whose weight transpose program_linear.py folds into ``LIN``, no other host step, no mutation)."""
    origin: Dict[int, int] = {v: v for v in lg.arg_nodes.values()}
    bad: set = set()
    for k, st in enumerate(steps):
        if k in inline_hosts:
            for v in st.nodes:
                src = {origin[u] for u in lg.nodes[v].inputs if u in origin}
                if len(src) == 1:
                    origin[v] = src.pop()
                else:
                    bad.update(src)
            continue
        if not takes_view_specs(st):
            bad.update(origin[u] for u in _step_reads(lg, st) if u in origin)
    bad.update(origin[v] for pair in lg.mutations for v in pair if v in origin)
    return [v for v in lg.arg_nodes.values() if v not in bad]


def _plan_views(lg: LoweredGraph, steps: List[Step], inline_hosts, layouts: Dict[int, Perm],
                linear: Optional[Dict[int, Any]] = None, specs: Optional[Dict[int, Any]] = None) -> ViewPlan:
    """The view-folding plan (program_views.py) of the inline host steps: bases are kernel outputs with static sizes
    (allocated row-major, or dense in the order ``layouts`` gives: program_layout.py), contiguous static results
    of the externs in EXTERN_CONTIGUOUS, and graph arguments with static sizes and strides that only native kernels
    read (_kernel_read_args, _static_arg_strides); readers are the other steps' reads (``linear``: matmuls folded into ``LIN``, program_linear.py; ``specs``: the folded
    views native kernels get as view specs), graph outputs, mutations and index checks."""
    known: Dict[int, Tuple[int, ...]] = {}
    readers: set = set()
    host_nodes: List[int] = []
    for k, st in enumerate(steps):
        if k in inline_hosts:
            host_nodes.extend(st.nodes)
            continue
        readers.update(_step_reads(lg, st, linear, specs))
        for v in st.outputs if st.kind == "kernel" else st.nodes if st.kind == "extern" else ():
            n = lg.nodes[v]
            if not all(isinstance(d, int) for d in n.shape):
                continue
            if st.kind == "kernel":
                known[v] = dense_strides(n.shape, layouts[v][0]) if v in layouts else contiguous_strides(n.shape)
                continue
            val = n.fx.meta.get("val") if n.fx is not None and n.item is None else None
            if (str(n.fx.target) in EXTERN_CONTIGUOUS and isinstance(val, torch.Tensor)
                    and tuple(val.shape) == tuple(n.shape) and val.is_contiguous()):
                known[v] = contiguous_strides(n.shape)
    for v in _kernel_read_args(lg, steps, inline_hosts):  # the strides Dynamo's guards hold them to
        st = _static_arg_strides(lg, v)
        if st is not None:
            known[v] = st
    readers.update(v for kind, v in lg.outputs if kind == "node")
    readers.update(lg.expand_outputs.values())
    readers.update(v for pair in lg.mutations for v in pair)
    readers.update(c[0] for c in lg.index_checks)
    actual = {v: f.result_layout(lg, v) for v, f in (linear or {}).items() if f.x_base is not None and v in known}
    return plan_views(lg, host_nodes, known, readers, distinct={v for kind, v in lg.outputs if kind == "node"},
                      actual=actual)


def _direct_reads(lg: LoweredGraph, steps: List[Step], inline_hosts, views: ViewPlan, linear, transposes) -> set:
    """Values the program reads as tensors of their own sizes: not through a folded view or a kernel's view spec
    (what program_outputs.plan_output_views must not re-shape)."""
    out = {v for kind, v in lg.outputs if kind == "node"} | set(lg.expand_outputs.values())
    out |= {v for pair in lg.mutations for v in pair} | {c[0] for c in lg.index_checks}
    for k, st in enumerate(steps):
        if k in inline_hosts:
            for v in st.nodes:
                if v not in views.layout and v not in transposes:
                    out.update(lg.nodes[v].inputs)
        elif st.kind == "extern":
            out.update(_step_reads(lg, st, linear))
        else:
            out.update(i for i in st.inputs if not (takes_view_specs(st) and i in views.layout))
    return out


def build_program(lg: LoweredGraph, steps: List[Step], name: str = "af_call", prepack: bool = False) -> Callable:
    """Generate and compile the Python function running ``steps`` (topologically ordered) for ``lg``; ``prepack``:
    oneDNN linear layers read their weights packed (weight_pack.py; inference graphs)."""
    e = _Emitter(lg)
    L = e.lines
    L.append(f"def {name}(args):")
    for sym, src in lg.sym_sources.items():
        L.append(f"    {sym} = int({src})")
    inline_hosts = _inline_hosts(lg, steps, e)
    if any(s.needs_bindings for k, s in enumerate(steps) if k not in inline_hosts):
        items = ", ".join(f"{sym!r}: {sym}" for sym in lg.sym_sources)
        L.append(f"    _bind = {{{items}}}")
    for i, v in lg.arg_nodes.items():
        L.append(f"    v{v} = args[{i}]")
    for v, t in lg.const_inputs.items():
        L.append(f"    v{v} = {e.const(t, 'T')}")
    graph_outputs = {v for kind, v in lg.outputs if kind == "node"}
    fake = {v: n.meta.get("val") for n, v in list(lg.fx_value.items()) + [(n, v) for v, n in lg.view_outputs.items()]
            if isinstance(v, int) and v in graph_outputs and isinstance(n, torch.fx.Node)}
    expand = lg.expand_outputs  # output -> the value it is an expanded view of (native.to_core)
    host_nodes = {v for st in steps if st.kind == "host" for v in st.nodes} | set(expand)
    layouts = kernel_output_layouts(lg, steps, host_nodes, fake)  # graph outputs get eager's strides
    views = _plan_views(lg, steps, inline_hosts, layouts)
    linear = plan_linear(lg, steps, inline_hosts, views, prepack)  # mm(x, w.permute([1, 0])) -> LIN(x, w)
    specs = views.layout  # folded views that native kernels read are passed as view specs, not torch views
    # what the folded matmuls and the kernels no longer read need not be materialized
    views = _plan_views(lg, steps, inline_hosts, layouts, linear, specs)
    transposes = {f.transpose for f in linear.values() if f.transpose is not None}  # skipped permutes: their matmul reads the weight
    direct = _direct_reads(lg, steps, inline_hosts, views, linear, transposes)
    # kernel output -> the folded view allocated in its place (program_outputs.py)
    out_views = {o: w for o, w in plan_output_views(lg, steps, views, direct, graph_outputs, takes_view_specs).items()
                 if o not in layouts and _EMPTY_STRIDED is not None}
    allocated = set(out_views.values())

    def reads(k: int, st: Step) -> List[int]:
        if k in inline_hosts:
            return views.reads([v for v in st.nodes if v not in transposes and v not in allocated], lg)
        return _step_reads(lg, st, linear, specs)

    last_use = _last_uses(lg, steps, reads)
    # kernel outputs written over an input read for the last time (program_inplace.py)
    keep = graph_outputs | {v for pair in lg.mutations for v in pair} | set(expand) | set(expand.values())
    keep |= set(lg.arg_nodes.values()) | set(lg.const_inputs) | {c[0] for c in lg.index_checks}
    owned = owned_bases(lg, steps, views, out_views, lambda o: o not in layouts)
    owned -= aliased_reads(lg, steps, reads)  # a host view or other extern of it may outlive its last read
    owned -= {views.layout[w][0] for w in views.emit}  # a materialized view of it could be returned or read later
    checked = {v for v in lg.arg_nodes.values()} | set(lg.const_inputs)
    L.extend(_check_lines(lg, checked))
    launches = 0  # kernel steps: counted once per call, before the return
    for k, st in enumerate(steps):
        if k > 0 and last_use.get(k - 1):
            L.append("    del " + ", ".join(f"v{v}" for v in last_use[k - 1]))
        if k > 0:  # indices the previous step produced are checked before anything reads them
            made = _values_made(steps[k - 1])
            L.extend(_check_lines(lg, made - checked))
            checked |= made
        spec = takes_view_specs(st)
        ins = ", ".join(e.view_spec(views.layout[i]) if spec and i in views.layout else f"v{i}" for i in st.inputs)
        if st.kind == "kernel":
            outs = []
            over = None  # a dead input's buffer the single output is written over (program_inplace.py)
            if owned and not any(o in layouts for o in st.outputs) and all(
                    views.layout[out_views[o]][2] == contiguous_strides(views.layout[out_views[o]][1])
                    for o in st.outputs if o in out_views):
                over = plan_inplace(lg, st, k, views, last_use, owned, keep, spec)
            for o in st.outputs:
                n = lg.nodes[o]
                layout = layouts.get(o)
                outs.append(f"v{o}")
                if over is not None and o not in out_views:
                    shape = tuple(int(d) for d in n.shape)
                    L.append(f"    v{o} = RT(v{over}, {shape!r}, {contiguous_strides(shape)!r}, 0)  # in place")
                elif o in out_views:  # allocated as the view its reader wants; the kernel gets a spec of it
                    w = out_views[o]
                    _, sizes, strides, _ = views.layout[w]
                    if over is not None:  # row-major: the same memory as the dead input's
                        L.append(f"    v{w} = RT(v{over}, {sizes!r}, {strides!r}, 0)  # in place")
                    else:
                        L.append(f"    v{w} = ESC({sizes!r}, {strides!r}, {e.const(n.dtype, 'D')})")
                        if is_dense(sizes, strides):
                            L.extend(_huge_lines(lg, f"v{w}", sizes, n.dtype))
                    L.append(f"    v{o} = v{w}")
                    outs[-1] = e.view_spec((w, tuple(n.shape), contiguous_strides(n.shape), 0))
                elif layout is None:
                    L.extend(_alloc_contiguous(lg, e, o))
                else:  # a graph output (or a view of it) gets eager's strides (the kernels write any strides)
                    perm, inverse = layout
                    dims = ", ".join(_py_size(lg, n.shape[d]) for d in perm)
                    L.append(f"    v{o} = empty(({dims},), dtype={e.const(n.dtype, 'D')}).permute({inverse!r})")
                    L.extend(_huge_lines(lg, f"v{o}", n.shape, n.dtype))
            outs = ", ".join(outs)
            fn = e.const(st.run, "K")
            extra = ", _bind" if st.needs_bindings else ""
            # profiling hook (bench/README.md): one list-slot read per launch when profiling is off
            kname = repr(_profile_name(lg, st, name))
            L.append(f"    {fn}([{ins}], [{outs}]{extra}) if not PF[0] else "
                     f"PL({kname}, {fn}, [{ins}], [{outs}]{extra})  # {st.name}")
            launches += 1
        elif st.kind == "host" and k in inline_hosts:
            for v in st.nodes:
                if v in transposes:
                    continue  # read by its matmul's LIN(x, w) (program_linear.py)
                if v not in views.layout:
                    L.append(f"    v{v} = {host_expr(lg, lg.nodes[v], e)}  # {st.name}")
                elif v in views.emit and v not in allocated:  # a folded view chain (program_views.py), read here
                    L.append(f"{views.line(v)}  # {st.name}")
        elif st.kind == "host":
            fn = e.const(st.run, "H")
            outs = "".join(f"v{o}, " for o in st.outputs)
            L.append(f"    {outs}= {fn}([{ins}], _bind)  # {st.name}")
        else:
            for v in st.nodes:
                n = lg.nodes[v]
                fx = n.fx
                if n.item is not None and fx.target is operator.getitem:
                    src = lg.fx_value.get(fx.args[0])
                    L.append(f"    v{v} = v{src}[{n.item}]")
                    continue
                if v in linear:
                    L.append(f"{linear[v].line(v, e.arg)}  # {fx.name} (linear)")
                    continue
                gather = embedding_lines(lg, v, lambda u: _alloc_contiguous(lg, e, u))
                if gather is not None:
                    L.extend(gather)
                    continue
                args = [e.arg(a) for a in fx.args] + [f"{k2}={e.arg(a)}" for k2, a in fx.kwargs.items()]
                fn = e.const(fx.target, "E")
                if isinstance(fx.target, torch._ops.OpOverload) and hasattr(fx.target, "_op"):
                    fn += "._op"  # the C++ operator itself: OpOverload.__call__ only forwards to it (one frame less)
                L.append(f"    v{v} = {fn}({', '.join(args)})  # {fx.name}")
    if steps:
        made = _values_made(steps[-1])
        L.extend(_check_lines(lg, made - checked))
        checked |= made
    missing = [c for c in lg.index_checks if c[0] not in checked]
    if missing:  # the partition did not materialize an index: a bug in to_core / simple_partition, not a user error
        raise RuntimeError(f"autofuse: gather/scatter index values {[c[0] for c in missing]} are not produced by "
                           f"any step, so their range cannot be checked")
    for o, u in expand.items():  # outputs eager returns as expanded views: a view here too (zero strides)
        L.append(f"    v{o} = v{u}.expand({shape_py(lg, lg.nodes[o].shape)})")
    for dst, src in lg.mutations:  # input mutations (functionalization's copy_ into an argument), in graph order
        L.append(f"    v{dst}.copy_(v{src})")
    outs = []
    for kind, v in lg.outputs:
        if kind == "node":
            outs.append(f"v{v}")
        elif kind == "sym":
            outs.append(f"({v})")
        else:
            outs.append(e.arg(v))
    if launches:
        L.append(f"    LAUNCHES[0] += {launches}")
    L.append(f"    return [{', '.join(outs)}]")
    source = "\n".join(L) + "\n"
    namespace = dict(e.globals)
    exec(compile(source, f"<autofuse {name}>", "exec"), namespace)
    fn = namespace[name]
    fn.__autofuse_source__ = source
    return fn
