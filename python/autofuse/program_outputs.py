"""Allocating a kernel output directly in the shape its one reader wants.

A kernel output is often read only through one folded view (program_views.py) that an ATen extern needs as a
tensor: ``v53 = ESC((1, 32, 768), ...)``, ``K8([...], [v53])``, ``v54 = RT(v53, (32, 768), (768, 1), 0)``,
``addmm(b, v54, w)``. When that view covers exactly the output's elements (offset 0, dense strides: a contiguous
reshape or a dense permutation such as ``(12, 64, 32)`` with strides ``(2048, 1, 64)``), the program allocates the
view itself (``v54 = ESC((32, 768), (768, 1), D)``) and hands the kernel its output as a view spec of it
(``K8([...], [(v54, ((1, 32, 768), (24576, 768, 1), 0))])``, src/bindings/tensor_convert.h): one torch tensor per
call instead of two, the same memory, the same bits. The output's own variable is bound to the same tensor
(``v53 = v54``) for the other folded views and specs, which read only its storage.

Only for native kernel launches (program.takes_view_specs), a row-major output of static sizes (graph outputs keep
their own layouts), and an output no step reads directly as a tensor of its own sizes (a kernel input, an extern
argument, LIN's 3-d input, a graph output, a mutation, an index check): only folded views and view specs read it.
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple


def contiguous_strides(shape: Sequence[int]) -> Tuple[int, ...]:
    """Row-major strides (elements) of the static ``shape`` (size-0 dims count as 1)."""
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= max(int(d), 1)
    return tuple(reversed(out))


def is_dense(sizes: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether a view of these sizes/strides is a dense, non-overlapping tensor starting at its first element: some
    order of its dims is row-major (size-1 dims take any stride). No zero sizes."""
    dims = sorted((i for i in range(len(sizes)) if sizes[i] != 1), key=lambda i: strides[i])
    expected = 1
    for i in dims:
        if sizes[i] < 1 or strides[i] != expected:
            return False
        expected *= sizes[i]
    return all(s >= 1 for s in sizes)


def plan_output_views(lg, steps, views, direct: set, distinct: set, takes_specs) -> Dict[int, int]:
    """kernel output -> the folded view the program allocates in its place (module doc).

    ``views``: the final ViewPlan; ``direct``: values read as tensors of their own (not through a folded view or a
    view spec); ``distinct``: graph outputs (kept as tensors of their own); ``takes_specs(step)``: whether a step
    is a native kernel launch."""
    by_base: Dict[int, List[int]] = {}
    for v in sorted(views.emit):
        if v not in views.alias:
            by_base.setdefault(views.layout[v][0], []).append(v)
    out: Dict[int, int] = {}
    for st in steps:
        if not takes_specs(st):
            continue
        for o in st.outputs:
            shape = lg.nodes[o].shape
            if o in direct or o in distinct or o not in views.bases or not all(isinstance(d, int) for d in shape):
                continue
            if views.bases[o] != contiguous_strides(shape) or 0 in shape:
                continue
            for w in by_base.get(o, []):
                _, sizes, strides, offset = views.layout[w]
                whole = numel(sizes) == numel(shape) and offset == 0
                if w not in distinct and w not in out.values() and whole and is_dense(sizes, strides):
                    out[o] = w
                    break
    return out


def numel(shape) -> int:
    """Element count of the static ``shape``."""
    n = 1
    for d in shape:
        n *= int(d)
    return n
