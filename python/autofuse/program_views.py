"""Folding chains of host view steps into one strided view per value the program actually reads.

The lowering turns every ATen view into its own IR layout node, so a LLaMA-style block's program used to hold chains
like ``v32 = v29.reshape((1, 32)); v33 = v32.reshape((1, 1, 32)); v34 = v33.reshape((1, 1, 32, 1))`` where only
``v34`` is read (about 100 view lines per call, 1.4-4 us each). When the first value of such a chain has strides
known when the program is built (a kernel output the program allocates contiguous, or a contiguous result of an
allow-listed ATen extern, ``EXTERN_CONTIGUOUS``), each later view's sizes, strides and storage offset relative to that
base follow statically (``torch.reshape``'s stride rule, ``permute``, ``expand``, ``narrow`` / stepped slices). A
folded value is then materialized only when something other than another folded view reads it, with one
``RT(base, sizes, strides, offset)`` call (torch's C++ ``_reinterpret_tensor``, what Inductor's wrappers use; about
0.6 us, no dispatcher). The result has exactly the sizes, strides and aliasing the chain of views had: every folded
step is a view (a reshape that would copy is not folded), so it shares the base's storage as before.

Only static sizes are folded; a symbolic size, an unknown base (another extern, a graph argument whose fake tensor has
symbolic strides) or a copying reshape leaves the step as it was (program.host_expr). A graph argument with static
sizes and strides that only native kernels read (directly or through views; an extern reading it keeps its views as
they were, e.g. a weight transpose for program_linear.py) is a base with those strides: Dynamo's guards hold every
call to them (a call with other strides recompiles), as Inductor's wrapper relies on with its assert_size_stride
(session 17: the rotary halves ``x[..., h:]`` / ``x[..., :h]`` reach the kernel as specs instead of two ``narrow``
calls, 2.3-2.5 us per call).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

import torch

#: ATen externs whose result the program trusts to be laid out as its FX fake tensor says, when that is contiguous
#: (each allocates a fresh contiguous output in eager for contiguous-format results).
EXTERN_CONTIGUOUS = {"aten.mm.default", "aten.bmm.default", "aten.addmm.default", "aten.baddbmm.default",
                     "aten.embedding.default", "aten.cat.default"}

#: torch's C++ ``_reinterpret_tensor(t, sizes, strides, offset_increment)`` (a view of t's storage at t's offset +
#: offset_increment); None when this torch build lacks it (``as_strided`` is used).
_RT = getattr(getattr(getattr(torch._C, "_dynamo", None), "guards", None), "_reinterpret_tensor", None)


def reinterpret(t: torch.Tensor, sizes, strides, offset: int) -> torch.Tensor:
    """A view of ``t``'s storage with the given sizes, strides (elements) and storage offset relative to ``t``'s."""
    if _RT is not None:
        return _RT(t, sizes, strides, offset)
    return t.as_strided(sizes, strides, t.storage_offset() + offset)


#: What generated programs call as ``RT``: torch's function itself when present (no Python frame per view), else
#: reinterpret.
RT_FN = _RT if _RT is not None else reinterpret

Layout = Tuple[int, Tuple[int, ...], Tuple[int, ...], int]  # (base variable, sizes, strides, offset in elements)


def view_strides(old: Sequence[int], old_strides: Sequence[int], new: Sequence[int]) -> Optional[Tuple[int, ...]]:
    """Strides of ``reshape(new)`` as a view of a tensor of sizes ``old`` / strides ``old_strides``, or None when the
    reshape would have to copy. The rule of ATen's ``computeStride`` (aten/src/ATen/TensorUtils.cpp): walk the old
    dims from the innermost, grouping dims that are contiguous with each other into chunks; each chunk must be covered
    exactly by a run of new dims. Zero-element and rank-0 tensors give None (not folded)."""
    numel = 1
    for s in old:
        numel *= s
    if numel == 0 or not old or not new:
        return None
    out = [0] * len(new)
    view_d = len(new) - 1
    chunk_base = old_strides[-1]
    tensor_numel, view_numel = 1, 1
    for d in range(len(old) - 1, -1, -1):
        tensor_numel *= old[d]
        if d == 0 or (old[d - 1] != 1 and old_strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                out[view_d] = view_numel * chunk_base
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = old_strides[d - 1]
                tensor_numel, view_numel = 1, 1
    return tuple(out) if view_d == -1 else None


def apply_view(op: str, attrs, out_shape: Sequence, layout: Layout) -> Optional[Layout]:
    """The layout of host node ``op`` (IR reshape / permute / broadcast_to / slice) applied to a value laid out as
    ``layout``; None when the result is not a view with static sizes (then the node is not folded)."""
    base, sizes, strides, offset = layout
    if not all(isinstance(d, int) for d in out_shape):
        return None
    shape = tuple(int(d) for d in out_shape)
    if op == "reshape":
        st = view_strides(sizes, strides, shape)
        return None if st is None else (base, shape, st, offset)
    if op == "permute":
        dims = list(attrs["dims"])
        return base, tuple(sizes[d] for d in dims), tuple(strides[d] for d in dims), offset
    if op == "broadcast_to":
        lead = len(shape) - len(sizes)
        if lead < 0:
            return None
        st = [0] * lead
        for i, (s, t) in enumerate(zip(sizes, strides)):
            if s == shape[lead + i]:
                st.append(t)
            elif s == 1:
                st.append(0)
            else:
                return None
        return base, shape, tuple(st), offset
    if op == "slice":
        ax, start, stop, step = attrs["axis"], attrs["start"], attrs["stop"], attrs["step"]
        if not all(isinstance(x, int) for x in (start, stop, step)) or not 0 <= start <= stop <= sizes[ax] or step < 1:
            return None
        n = (stop - start + step - 1) // step
        if n != shape[ax]:
            return None
        st = list(strides)
        st[ax] = strides[ax] * step
        return base, shape, tuple(st), offset + start * strides[ax]
    return None


@dataclass
class ViewPlan:
    """Which host nodes are folded (``layout``: value -> its layout relative to a base variable), which of those
    the program materializes (``emit``: values read by something other than a folded view), and which of those are
    the same view as one materialized earlier (``alias``: value -> that earlier value; the program binds the same
    tensor instead of making a second identical view: ``x.reshape(32, 256)`` read by the q, k and v matmuls)."""

    layout: Dict[int, Layout] = field(default_factory=dict)
    emit: Set[int] = field(default_factory=set)
    alias: Dict[int, int] = field(default_factory=dict)
    #: base variable -> its strides (elements) as the program makes it (``known`` of plan_views)
    bases: Dict[int, Tuple[int, ...]] = field(default_factory=dict)

    def line(self, v: int) -> str:
        """The program line materializing folded value ``v``."""
        if v in self.alias:
            return f"    v{v} = v{self.alias[v]}"
        base, sizes, strides, offset = self.layout[v]
        return f"    v{v} = RT(v{base}, {sizes!r}, {strides!r}, {offset})"

    def reads(self, nodes: List[int], lg) -> List[int]:
        """Program variables the host nodes ``nodes`` read under this plan."""
        out: List[int] = []
        for v in nodes:
            if v in self.layout:
                if v in self.emit:
                    out.append(self.alias[v] if v in self.alias else self.layout[v][0])
            else:
                out.extend(u for u in lg.nodes[v].inputs if lg.nodes[u].op != "constant")
        return out


def plan_views(lg, host_nodes: List[int], known: Dict[int, Tuple[int, ...]], readers: Set[int],
               distinct: Set[int] = frozenset(),
               actual: Optional[Dict[int, Tuple[Tuple[int, ...], Tuple[int, ...]]]] = None) -> ViewPlan:
    """Fold the inline host nodes ``host_nodes`` (program order). ``known``: base variable -> its contiguous-or-known
    strides (static sizes are the node's shape); ``readers``: values read by anything other than a host node
    (kernel and extern steps, graph outputs, mutations, index checks); ``distinct``: values that must be tensor
    objects of their own (graph outputs: the caller may change one's metadata in place), never aliased; ``actual``:
    base variable -> (sizes, strides) of the tensor the program binds to it when they differ from the IR node's
    sizes and ``known``'s strides (program_linear.py's 3-D matmul results). A view equal to its base's own sizes and
    strides (offset 0) is the base itself. Returns the plan; a host node left out of ``layout`` is emitted as before
    and makes its input a reader."""
    plan = ViewPlan(bases={v: tuple(st) for v, st in known.items()})
    lay: Dict[int, Layout] = {}
    for v, st in known.items():
        shape = lg.nodes[v].shape
        if all(isinstance(d, int) for d in shape):
            lay[v] = (v, tuple(int(d) for d in shape), tuple(st), 0)
    needed = set(readers)
    for v in host_nodes:
        n = lg.nodes[v]
        ins = [u for u in n.inputs if lg.nodes[u].op != "constant"]
        src = lay.get(ins[0]) if len(ins) == 1 else None
        new = apply_view(n.op, n.attrs, n.shape, src) if src is not None else None
        if new is None:
            needed.update(n.inputs)
            continue
        lay[v] = plan.layout[v] = new
    plan.emit = {v for v in plan.layout if v in needed}
    first: Dict[Layout, int] = {}
    for b, st in known.items():  # a base is the first "view" of its own layout
        sizes, strides = (actual or {}).get(b) or (tuple(lg.nodes[b].shape), tuple(st))
        first[(b, tuple(sizes), tuple(strides), 0)] = b
    for v in host_nodes:  # program order: the first materialized copy of a layout is the one later ones alias
        if v in plan.emit and v not in distinct:
            plan.alias.setdefault(v, first.setdefault(plan.layout[v], v))
            if plan.alias[v] == v:
                del plan.alias[v]
    return plan

