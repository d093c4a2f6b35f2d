"""Folding a weight transpose into the ATen matmul that reads it: ``mm(x, w.permute([1, 0]))`` -> ``linear(x, w)``.

AOTAutograd decomposes ``nn.Linear`` into ``permute(w, [1, 0])`` and ``mm(x, wT)`` (``addmm(b, x, wT)`` with a bias),
so a generated program used to run one ``w.permute([1, 0])`` view per linear layer and call (about 1.5 us back to
back, several times that right after a matmul: 15 per call of the LLaMA-style demo). ``torch._C._nn.linear`` takes
the weight as it is and makes the same transposed view in C++: for a 2-D input ATen's ``linear``
(aten/src/ATen/native/Linear.cpp) calls ``addmm(b, x, w.t())`` with a bias and ``matmul(x, w.t())`` -> ``mm(x, w.t())``
without one: the same ATen kernel on the same operands, so the result is bit-identical to the decomposed calls
(tests/python/test_program_linear.py checks it for fp32 and bf16). ATen's forms read the weight at every call: a
parameter whose ``.data`` is replaced between calls is seen as it is then. oneDNN's form (``ODL``) in an inference
graph reads a packed copy of it instead (``PW``, weight_pack.py), checked against the weight at every call.

A fold needs: the matmul is ``aten.mm`` or ``aten.addmm`` without ``beta``/``alpha`` (and a 1-D bias); its second
operand is a host ``permute`` with ``dims=[1, 0]`` run inline and not folded into a strided view (program_views.py);
nothing else reads the transpose (no other IR node, graph output, mutation or index check).

The input, too, is often a folded view made only for the matmul: ``RT(v50, (32, 256), (256, 1), 0)`` of a kernel
output ``v50`` of sizes (1, 32, 256), and the result is read only through folded views (``RT(v53, (1, 32, 688),
...)``). ATen's linear flattens the leading dims of a contiguous input itself (``matmul``'s fold /
``_flatten_nd_linear``: ``reshape(-1, K)``, the same mm, a view back), so ``LIN(v50, w)`` computes the same bits
into a contiguous (1, 32, N) tensor, whose memory is the (32, N) result's. This input fold is made when the view
is the whole base read row-major as (M, K) (offset 0, the base contiguous with last size K, as the program
allocates it) and every reader of the matmul result is a folded view (program_views.reinterpret ignores its
base's sizes: only the storage counts), never a kernel, extern, graph output, mutation or index check that would
see the other rank.

**Direct form** (session 8): when the weight's example tensor is contiguous ``(N, K)`` and all sizes are static, the
line is ``MM(x2, RT(w, (K, N), (1, K), 0))`` (``ADDMM(b, x2, RT(...))`` with a bias), ``x2`` the 2-D input or
``RT(x_base, (M, K), (K, 1), 0)``: the same ATen mm/addmm on the same operands as ``linear`` calls (bit-identical,
tested), without linear's own dispatch of ``t``/``transpose``/``as_strided`` and ``matmul``'s ``view`` /
``_unsafe_view`` (7 dispatcher calls fewer per matmul, what Inductor's wrapper does with ``reinterpret_tensor``).
``RT`` reads the weight's storage at the call (a replaced ``.data`` is seen) with its offset added; a weight of other
strides fails Dynamo's guards on the parameter and is recompiled, and then gets ``LIN``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Set, Tuple

import torch

from .extern_matmul import ONEDNN_LINEAR, use_onednn

#: What generated programs call as ``ODL``: oneDNN's fp32 linear, where extern_matmul.py measured it faster.
ONEDNN_FN = ONEDNN_LINEAR
#: What generated programs call as ``LIN``: ATen's linear (C++, through the dispatcher; no Python frame).
LINEAR_FN = torch._C._nn.linear
#: What generated programs call as ``MM`` / ``ADDMM`` in the direct form (module doc): the C++ operators themselves.
MM_FN = torch.ops.aten.mm.default._op
ADDMM_FN = torch.ops.aten.addmm.default._op

#: matmul target -> (index of the input operand, of the transposed weight, of the bias or None) in its FX args.
_OPERANDS = {"aten.mm.default": (0, 1, None), "aten.addmm.default": (1, 2, 0)}


@dataclass
class LinearFold:
    """One matmul emitted as ``LIN(x, w[, bias])``: ``x`` and ``bias`` are FX arguments (emitted as before),
    ``weight`` the program variable of the untransposed weight, ``transpose`` the skipped permute node;
    ``x_base``: the base variable passed instead of the input view (the input fold of the module doc), or None."""

    x: Any
    weight: int
    bias: Any
    transpose: int
    x_base: Optional[int] = None
    #: (M, K, N) when the direct form is emitted: ``MM(x2, RT(w, (K, N), (1, K), 0))`` (module doc), else None
    direct: Optional[Tuple[int, int, int]] = None
    #: the line calls oneDNN's linear ``ODL`` instead of ATen's (extern_matmul.py; module doc, "oneDNN form")
    onednn: bool = False
    #: the weight is a (K, N) tensor read as it is (``addmm(b, x, w)``, GPT-2's Conv1D): only with ``onednn``,
    #: which takes it as the (N, K) view ``RT(w, (N, K), (1, N), 0)``; ``transpose`` is then None
    weight_kn: bool = False
    #: with ``onednn``: the weight goes through ``PW(w, kn, rows)`` (weight_pack.py), its packed copy
    pack: bool = False
    #: oneDNN's layout hint for ``pack``: the matmul's static row count M, or None
    rows: Optional[int] = None

    def line(self, v: int, arg) -> str:
        """The program line computing matmul node ``v`` (``arg``: the emitter's FX-argument formatter)."""
        if self.onednn:
            return f"    v{v} = {self._onednn_call(arg)}"
        if self.direct is not None:
            m, k, n = self.direct
            x = f"RT(v{self.x_base}, ({m}, {k}), ({k}, 1), 0)" if self.x_base is not None else arg(self.x)
            wt = f"RT(v{self.weight}, ({k}, {n}), (1, {k}), 0)"
            if self.bias is not None:
                return f"    v{v} = ADDMM({arg(self.bias)}, {x}, {wt})"
            return f"    v{v} = MM({x}, {wt})"
        bias = f", {arg(self.bias)}" if self.bias is not None else ""
        x = f"v{self.x_base}" if self.x_base is not None else arg(self.x)
        return f"    v{v} = LIN({x}, v{self.weight}{bias})"

    def _onednn_call(self, arg) -> str:
        """``ODL(x, w, bias, "none", [], "")``: x as the direct form or LIN passes it, w (N, K) (a view of a (K, N)
        weight for ``weight_kn``; ``PW(w, kn, rows)``, its packed copy, for ``pack``), bias or None."""
        if self.direct is not None:
            m, k, n = self.direct
            x = f"RT(v{self.x_base}, ({m}, {k}), ({k}, 1), 0)" if self.x_base is not None else arg(self.x)
            w = f"RT(v{self.weight}, ({n}, {k}), (1, {n}), 0)" if self.weight_kn else f"v{self.weight}"
        else:
            x = f"v{self.x_base}" if self.x_base is not None else arg(self.x)
            w = f"v{self.weight}"
        if self.pack:
            w = f"PW(v{self.weight}, {self.weight_kn}, {self.rows})"
        bias = arg(self.bias) if self.bias is not None else "None"
        return f'ODL({x}, {w}, {bias}, "none", [], "")'

    def result_layout(self, lg, v: int) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
        """(sizes, strides) of the tensor the matmul line returns for node ``v`` under the input fold: the base's
        leading sizes and the matmul's columns (``LIN``), or the matmul's own (M, N) (the direct form), contiguous."""
        if self.direct is not None:
            sizes = (self.direct[0], self.direct[2])
        else:
            sizes = tuple(lg.nodes[self.x_base].shape[:-1]) + (lg.nodes[v].shape[-1],)
        strides, acc = [], 1
        for d in reversed(sizes):
            strides.append(acc)
            acc *= max(int(d), 1)
        return sizes, tuple(reversed(strides))

    def reads(self, lg) -> List[int]:
        """Program variables the LIN call reads."""
        out = [self.x_base if self.x_base is not None else lg.fx_value[self.x], self.weight]
        if self.bias is not None:
            out.append(lg.fx_value[self.bias])
        return out


def _readers(lg) -> Dict[int, int]:
    """value -> how many IR nodes read it, plus one per graph output, mutation, index check or expanded output."""
    count: Dict[int, int] = {}
    for n in lg.nodes:
        for u in set(n.inputs):
            count[u] = count.get(u, 0) + 1
    extra: List[int] = [v for kind, v in lg.outputs if kind == "node"]
    extra += [v for pair in lg.mutations for v in pair] + [c[0] for c in lg.index_checks]
    extra += list(lg.expand_outputs.values())
    for v in extra:
        count[v] = count.get(v, 0) + 1
    return count


def _fx_readers(lg, v: int) -> int:
    """How many FX nodes use the FX node(s) lowered to value ``v`` (0 when none maps to it)."""
    return sum(len(node.users) for node, fv in lg.fx_value.items() if fv == v and isinstance(node, torch.fx.Node))


def plan_linear(lg, steps, inline_hosts: Set[int], views, prepack: bool = False) -> Dict[int, LinearFold]:
    """matmul node -> its LinearFold, for every extern matmul that can take its weight untransposed (module doc).
    ``inline_hosts``: indices of the host steps run inline; ``views``: program_views.py's ViewPlan of them;
    ``prepack``: oneDNN linears whose weight is a graph input with a contiguous example get their weight packed
    (weight_pack.py; for inference graphs)."""
    inline = {v for k in inline_hosts for v in steps[k].nodes}
    readers = _readers(lg)
    view_readers: Dict[int, int] = {}  # value -> how many folded views read it
    for v in views.layout:
        for u in set(lg.nodes[v].inputs):
            view_readers[u] = view_readers.get(u, 0) + 1
    graph_inputs = set(lg.arg_nodes.values())
    out: Dict[int, LinearFold] = {}
    for st in steps:
        if st.kind != "extern":
            continue
        for v in st.nodes:
            n = lg.nodes[v]
            if _matmul_operands(n) is None:
                continue  # not a matmul: use_onednn's one-time probe (and its log line) only for graphs with one
            fold = _fold(lg, n, inline, views.layout, readers)
            if fold is None and use_onednn(n.dtype):
                fold = _fold_kn(lg, n, graph_inputs)
            if fold is None:
                continue
            if readers.get(v, 0) == view_readers.get(v, 0) > 0:  # read through folded views only
                fold.x_base = _whole_base(lg, lg.fx_value.get(fold.x), views)
            fold.direct = _direct_sizes(lg, n, fold)
            fold.onednn = _onednn_ok(lg, n, fold, graph_inputs)
            if fold.weight_kn and not (fold.onednn and fold.direct is not None):
                continue  # a (K, N) weight is only read by oneDNN's direct form (static, contiguous: _direct_sizes)
            if prepack and fold.onednn:
                fold.pack, fold.rows = _packable(lg, fold, graph_inputs)
            out[v] = fold
    return out


def _onednn_ok(lg, n, fold: LinearFold, graph_inputs: Set[int]) -> bool:
    """Whether matmul node ``n`` can run on oneDNN's linear (extern_matmul.py): fp32 or bf16 as use_onednn says, the
    input and weight of that dtype, a static reduction length K > 0, and a bias that is None or one of the
    ``graph_inputs`` of the same dtype whose example is contiguous (a stride-0 bias would be read past its storage;
    Dynamo guards an input's strides)."""
    if not use_onednn(n.dtype):
        return False
    xv = lg.fx_value.get(fold.x) if isinstance(fold.x, torch.fx.Node) else None
    if not isinstance(xv, int) or lg.nodes[xv].dtype != n.dtype or lg.nodes[fold.weight].dtype != n.dtype:
        return False  # mixed dtypes: ATen's call raises eager's error ("self and mat2 must have the same dtype")
    shape = lg.nodes[fold.weight].shape
    if len(shape) != 2:
        return False
    k = shape[0] if fold.weight_kn else shape[1]
    if not isinstance(k, int) or k <= 0:
        return False
    if fold.bias is None:
        return True
    bv = lg.fx_value.get(fold.bias) if isinstance(fold.bias, torch.fx.Node) else None
    val = fold.bias.meta.get("val") if isinstance(fold.bias, torch.fx.Node) else None
    return (bv in graph_inputs and isinstance(val, torch.Tensor) and val.dim() == 1
            and val.dtype == n.dtype and (val.numel() <= 1 or val.stride() == (1,)))


def _packable(lg, fold: LinearFold, graph_inputs: Set[int]) -> Tuple[bool, Optional[int]]:
    """(whether oneDNN linear ``fold`` can take its weight packed, its static row count or None): the weight is one
    of the ``graph_inputs`` (a parameter; a computed weight would be packed anew at every call) whose example is a
    contiguous 2-D tensor (Dynamo guards its strides; weight_pack.packed_weight passes any other tensor plain)."""
    fx = lg.nodes[fold.weight].fx
    val = fx.meta.get("val") if fx is not None else None
    if fold.weight not in graph_inputs or not isinstance(val, torch.Tensor) or val.dim() != 2:
        return False, None
    if not val.is_contiguous():
        return False, None
    rows = fold.direct[0] if fold.direct is not None else None
    return True, rows


def _matmul_operands(n) -> Optional[Tuple[int, int, Optional[int]]]:
    """(index of the input, of the second operand, of the bias or None) in the FX args of extern node ``n`` when it
    is an ``aten.mm`` or an ``aten.addmm`` without ``beta``/``alpha``, else None."""
    fx = n.fx
    ops = _OPERANDS.get(str(getattr(fx, "target", ""))) if n.item is None and fx is not None else None
    if ops is None or fx.kwargs or len(fx.args) != (3 if ops[2] is not None else 2):
        return None
    return ops


def _bias_1d(lg, bias) -> bool:
    """Whether a matmul's bias argument is absent or a 1-D value of the program."""
    if bias is None:
        return True
    bv = lg.fx_value.get(bias) if isinstance(bias, torch.fx.Node) else None
    return isinstance(bv, int) and len(lg.nodes[bv].shape) == 1


def _fold_kn(lg, n, graph_inputs: Set[int]) -> Optional[LinearFold]:
    """A LinearFold with ``weight_kn`` for ``mm(x, w)`` / ``addmm(b, x, w)`` whose second operand is one of the
    ``graph_inputs`` (a parameter), or None. plan_linear keeps it only in the direct form (_direct_sizes: static
    sizes, a contiguous (K, N) example) on oneDNN."""
    ops = _matmul_operands(n)
    if ops is None:
        return None
    fx, (xi, wi, bi) = n.fx, ops
    w = fx.args[wi]
    wv = lg.fx_value.get(w) if isinstance(w, torch.fx.Node) else None
    if not isinstance(wv, int) or wv not in graph_inputs:
        return None
    bias = fx.args[bi] if bi is not None else None
    if not _bias_1d(lg, bias):
        return None
    return LinearFold(x=fx.args[xi], weight=wv, bias=bias, transpose=None, weight_kn=True)


def _direct_sizes(lg, n, fold: LinearFold) -> Optional[Tuple[int, int, int]]:
    """(M, K, N) of matmul node ``n`` when the direct form applies: static sizes, and a weight whose example tensor
    is contiguous (N, K) (Dynamo guards a parameter's sizes and strides, so a weight of other strides recompiles;
    ``RT``'s offset adds to the weight's own storage offset); else None."""
    shape = lg.nodes[fold.weight].shape
    if len(shape) != 2 or len(n.shape) != 2 or not all(isinstance(d, int) for d in tuple(shape) + tuple(n.shape)):
        return None
    nn, k = (int(shape[1]), int(shape[0])) if fold.weight_kn else (int(shape[0]), int(shape[1]))
    fx = lg.nodes[fold.weight].fx
    val = fx.meta.get("val") if fx is not None else None
    want = (tuple(shape), (nn, 1)) if fold.weight_kn else ((nn, k), (k, 1))
    if not isinstance(val, torch.Tensor) or (tuple(val.shape), tuple(val.stride())) != want:
        return None
    m = int(n.shape[0])
    if int(n.shape[1]) != nn:
        return None
    if fold.x_base is not None:
        base = lg.nodes[fold.x_base].shape
        if not all(isinstance(d, int) for d in base) or base[-1] != k:
            return None
    return m, k, nn


def _whole_base(lg, xv: Any, views) -> Optional[int]:
    """The base variable of the folded view ``xv`` when the view reads all of it row-major as a matrix whose rows are
    the base's last dim (module doc), else None."""
    lay = views.layout.get(xv) if isinstance(xv, int) else None
    if lay is None:
        return None
    base, sizes, strides, offset = lay
    shape = lg.nodes[base].shape
    if offset != 0 or len(sizes) != 2 or strides != (sizes[1], 1) or not shape or shape[-1] != sizes[1]:
        return None
    numel = 1
    for d in shape:
        numel *= d
    contiguous, acc = [], 1
    for d in reversed(shape):
        contiguous.append(acc)
        acc *= d
    if numel != sizes[0] * sizes[1] or views.bases.get(base) != tuple(reversed(contiguous)):
        return None
    return base


def _fold(lg, n, inline: Set[int], folded_views, readers: Dict[int, int]) -> Optional[LinearFold]:
    """The LinearFold of extern node ``n``, or None when it is not a foldable matmul."""
    ops = _matmul_operands(n)
    if ops is None:
        return None
    fx, (xi, wi, bi) = n.fx, ops
    wt = fx.args[wi]
    pv = lg.fx_value.get(wt) if isinstance(wt, torch.fx.Node) else None
    if not isinstance(pv, int) or pv not in inline or pv in folded_views:
        return None
    p = lg.nodes[pv]
    ins = [u for u in p.inputs if lg.nodes[u].op != "constant"]
    if p.op != "permute" or list(p.attrs.get("dims", ())) != [1, 0] or len(ins) != 1:
        return None
    if len(lg.nodes[ins[0]].shape) != 2:
        return None
    if readers.get(pv, 0) != 1 or _fx_readers(lg, pv) != 1:  # the matmul's own read only
        return None
    bias = fx.args[bi] if bi is not None else None
    if not _bias_1d(lg, bias):
        return None
    return LinearFold(x=fx.args[xi], weight=ins[0], bias=bias, transpose=pv)
