"""Writing an elementwise kernel's output over an input the program reads for the last time (in-place reuse).

An elementwise kernel such as LLaMA's ``silu(gate) * up`` (two [512, 688] matmul results in, one [512, 688] out)
used to get a fresh ``ESC`` allocation for its output while the inputs died right after it. Inductor writes such a
result into the dead input's buffer (its in/out pointer kernels). Here the generated program binds the output to
a view of the input's storage, ``v133 = RT(v125, (4, 128, 688), (88064, 688, 1), 0)``, so the call allocates one
buffer less and the kernel writes cache lines it has just read instead of fresh ones.

When it is safe (each condition is checked; any doubt keeps the fresh allocation):

- the kernel is a native launch with **one output** and only elementwise / broadcast ops (no reduction, concat or
  other layout op): output element j is computed from input elements at the same index j of every full-size input,
  and each vector of lanes is loaded before the store that depends on it, so overwriting element j after reading
  it changes nothing the kernel reads later (restrict-qualified pointers included: the stored value depends on
  every load of its own index, and other iterations touch other indices);
- the input is read by the kernel with exactly the output's sizes, row-major strides and offset 0 (no broadcast, no
  transposed or sliced view), in the same dtype; no other input of the kernel reads the same base differently;
- the input's base is a buffer the program owns: a kernel output allocated by the program (not allocated as a
  view for its reader, not a graph output) or the contiguous result of an ATen matmul/embedding/cat extern
  (program_views.EXTERN_CONTIGUOUS), dense row-major with as many elements as the output;
- this kernel step is the base's **last reader** (program.py's last-use analysis, which counts folded views, view
  specs and folded matmul inputs), the base is no graph input, graph output, mutation target or expanded output, no
  materialized view of it exists (a view bound earlier could be returned or read later), and no host step or
  possibly aliasing extern reads it (``aliased_reads``: their results may be views of it).

Measured (docs/demo.md, session 8): LLaMA-style 4x128 1.2-1.6 % per call faster, 1x32 unchanged.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set

from .program_outputs import contiguous_strides, numel

#: IR ops an in-place kernel may contain besides its inputs and constants (lane-wise, same index in and out).
_SOURCES = {"input", "constant"}
_ALLOWED_CATEGORIES = {"elementwise", "broadcast"}

#: ATen targets whose results are fresh buffers the program owns (a subset of program_views.EXTERN_CONTIGUOUS).
FRESH_EXTERNS = {"aten.mm.default", "aten.bmm.default", "aten.addmm.default", "aten.baddbmm.default",
                 "aten.embedding.default", "aten.cat.default"}


def lanewise(kernel) -> bool:
    """Whether a compiled kernel's graph has one output and only elementwise / broadcast ops (module doc)."""
    g = kernel.graph
    if len(g.outputs) != 1:
        return False
    return all(n.op in _SOURCES or n.category in _ALLOWED_CATEGORIES for n in g.nodes)


def owned_bases(lg, steps, views, out_views: Dict[int, int], kernel_ok) -> Set[int]:
    """Program variables bound to buffers the program itself allocated, dense row-major in their IR shape: kernel
    outputs allocated plainly (not as a view, ``out_views``; ``kernel_ok(value)``: allocated with row-major
    strides) and the results of FRESH_EXTERNS that plan_views knows as row-major bases."""
    out: Set[int] = set()
    for st in steps:
        if st.kind == "kernel":
            out.update(o for o in st.outputs if o not in out_views and kernel_ok(o))
        elif st.kind == "extern":
            for v in st.nodes:
                n = lg.nodes[v]
                if n.item is None and n.fx is not None and str(n.fx.target) in FRESH_EXTERNS:
                    out.add(v)
    return {b for b in out if b in views.bases and all(isinstance(d, int) for d in lg.nodes[b].shape)
            and tuple(views.bases[b]) == contiguous_strides(lg.nodes[b].shape)}


def aliased_reads(lg, steps, reads) -> Set[int]:
    """Program variables read by a step whose result may be a view of what it reads: a host step run inline
    (``v.permute(...)``, ``v.reshape(...)``: torch views; folded views that are not materialized read nothing) or an
    extern other than FRESH_EXTERNS. Such a variable is never written over: the view could be read after the
    variable's own last reader. ``reads(k, step)``: what step k reads (program.py)."""
    out: Set[int] = set()
    for k, st in enumerate(steps):
        if st.kind == "kernel":
            continue
        if st.kind == "extern" and all(lg.nodes[v].item is None and lg.nodes[v].fx is not None
                                       and str(lg.nodes[v].fx.target) in FRESH_EXTERNS for v in st.nodes):
            continue
        out.update(reads(k, st))
    return out


def plan_inplace(lg, st, k: int, views, last_use: Dict[int, List[int]], owned: Set[int], keep: Set[int],
                 spec) -> Optional[int]:
    """The base variable kernel step ``st`` (index ``k``) may write its single output over, or None (module doc).
    ``owned``: owned_bases without aliased_reads and without bases of materialized views (program.py).
    ``spec``: whether the step takes view specs (its folded-view inputs arrive as views of their bases); ``keep``:
    graph inputs / outputs, mutation targets and expanded outputs (never overwritten)."""
    if not spec or st.kernel is None or len(st.outputs) != 1 or not lanewise(st.kernel):
        return None
    o = st.outputs[0]
    out = lg.nodes[o]
    if o in keep or not all(isinstance(d, int) for d in out.shape):
        return None
    shape = tuple(int(d) for d in out.shape)
    want = (shape, contiguous_strides(shape), 0)
    seen: Dict[int, Any] = {}  # base -> the layout this kernel reads it in (None: more than one)
    for i in st.inputs:
        if i in views.layout:
            base, sizes, strides, offset = views.layout[i]
            lay = (tuple(sizes), tuple(strides), offset)
        else:
            base = i
            n = lg.nodes[i]
            static = all(isinstance(d, int) for d in n.shape)
            lay = (tuple(int(d) for d in n.shape), tuple(views.bases.get(i, ())), 0) if static else None
        seen[base] = lay if seen.get(base, lay) == lay else None
    dying = set(last_use.get(k, ()))
    for base, lay in seen.items():
        b = lg.nodes[base]
        if (lay == want and base in owned and base in dying and base not in keep
                and b.op != "input" and b.dtype == out.dtype and numel(b.shape) == numel(shape)):
            return base
    return None

