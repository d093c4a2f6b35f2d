"""Unit-dim reshapes folded into the values they reshape, so they do not split kernels.

A ``reshape`` is a layout op: the fusion pass runs it as a host step and forms kernels around it (NF-LAYOUT), and a
host step between two kernel groups can also make merging them a cycle (NF-CYCLE). Many reshapes only insert or
remove size-1 dims (``unsqueeze``, ``squeeze``, ``view`` to ``[N, 1]``): cross-entropy's ``target.unsqueeze(1)``
before its gather and ``gather(...).squeeze(1)`` after it. ``fold_unit_reshape`` rewrites such a reshape of

- a reduction with ``keepdim=True`` whose reshape drops exactly the kept unit dims: the same reduction with
  ``keepdim=False`` (same values, same order of accumulation);
- an elementwise op whose operands are 0-d or of the op's own shape: the op on the reshaped operands (recursively,
  at most ``MAX_DEPTH`` ops deep); a reshaped graph input stays a reshape (a view at the kernel's boundary, which does
  not split kernels).

Anything else is left as a reshape (returns None). Only the shape changes, never a value: every element of the result
is computed by the same op on the same operand elements as before.

A folded value is a buffer of its own, which eager's view is not: an output that must share storage with another
output (``return y, y.unsqueeze(0)``: an in-place update of one shows in the other; review 18 finding 4) is rebuilt
as real views at the graph's output (``aliasing_outputs``; the folded value stays for readers inside the graph), and
a unit reshape below a view that may stay an ATen call on such an output is not folded at all (``keep_views``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from .lowering import Lowerer
from .lowering_reference import _BINARY, _UNARY

#: Ops rebuilt with a new shape: elementwise (their operands broadcast NumPy-style).
ELEMENTWISE = set(_UNARY) | set(_BINARY) | {"fma", "where", "cast", "clamp"}
#: Reductions whose keepdim=True form can become keepdim=False.
REDUCTIONS = {"sum", "mean", "prod", "amax", "amin", "any", "all", "argmax", "argmin", "var"}
#: How many elementwise ops deep a reshape is pushed towards the inputs.
MAX_DEPTH = 6


def _non_unit(shape: Sequence[Any]) -> Tuple[Any, ...]:
    return tuple(s for s in shape if not (isinstance(s, int) and s == 1))


def is_unit_reshape(src: Sequence[Any], dst: Sequence[Any]) -> bool:
    """Whether reshaping ``src`` to ``dst`` only inserts or removes size-1 dims (symbolic sizes count as non-1)."""
    return _non_unit(src) == _non_unit(dst)


def fold_unit_reshape(L: Lowerer, x: int, shape: Sequence[Any], depth: int = 0) -> Optional[int]:
    """A node computing ``reshape(x, shape)`` without a layout op, or None (the caller then emits the reshape).

    A failed attempt may leave nodes behind (operands folded before a later operand failed): they are dead, never
    graph outputs, and the fusion pass drops them."""
    n = L.node(x)
    shape = tuple(shape)
    if tuple(n.shape) == shape:
        return x
    if not is_unit_reshape(n.shape, shape) or depth > MAX_DEPTH:
        return None
    if n.op in REDUCTIONS and n.attrs.get("keepdim") and n.attrs.get("axes"):
        kept = tuple(s for i, s in enumerate(n.shape) if i not in n.attrs["axes"])
        if kept == shape:
            return L.add(n.op, list(n.inputs), {**n.attrs, "keepdim": False}, n.dtype, shape)
        return None
    if n.op not in ELEMENTWISE or len(n.shape) == 0:
        return None  # (a 0-d op's 0-d operands would need reshaping too: left as a reshape)
    ins = []
    for i in n.inputs:
        inp = L.node(i)
        if len(inp.shape) == 0:
            ins.append(i)
        elif tuple(inp.shape) == tuple(n.shape):
            if inp.op == "input":
                ins.append(L.add("reshape", [i], {"shape": list(shape)}, inp.dtype, shape))
                continue
            r = fold_unit_reshape(L, i, shape, depth + 1)
            if r is None:
                return None
            ins.append(r)
        else:
            return None  # a broadcast operand of lower rank may not line up with the new dims
    return L.add(n.op, ins, dict(n.attrs), n.dtype, shape)


def _unfolded_root(L: Lowerer, v: int) -> Tuple[int, bool]:
    """The value whose storage ``v`` would share in eager (followed through IR view ops and folded reshapes), and
    whether a folded reshape lies on the way."""
    from .lowering import IR_VIEW_OPS

    g, folded = L.g, False
    while True:
        if v in L.folded_reshapes:
            v, folded = L.folded_reshapes[v][0], True
        elif g.nodes[v].op in IR_VIEW_OPS:
            v = next(u for u in g.nodes[v].inputs if g.nodes[u].op != "constant")
        else:
            return v, folded


def _unfold(L: Lowerer, v: int, memo: Dict[int, int]) -> int:
    """``v`` rebuilt as views: each folded reshape on its chain of IR views becomes a ``reshape`` of the value it
    reshaped (a view of its storage), and the views above it are repeated on top."""
    from .lowering import IR_VIEW_OPS

    if v in memo:
        return memo[v]
    g, out = L.g, v
    if v in L.folded_reshapes:
        src, shape = L.folded_reshapes[v]
        s = _unfold(L, src, memo)
        out = L.add("reshape", [s], {"shape": list(shape)}, g.nodes[s].dtype, shape)
    elif g.nodes[v].op in IR_VIEW_OPS:
        n = g.nodes[v]
        ins = list(n.inputs)
        k = next(i for i, u in enumerate(ins) if g.nodes[u].op != "constant")
        u = _unfold(L, ins[k], memo)
        if u != ins[k]:
            ins[k] = u
            out = L.add(n.op, ins, dict(n.attrs), n.dtype, n.shape)
    memo[v] = out
    return out


def aliasing_outputs(L: Lowerer, values: Sequence[Optional[int]]) -> List[Optional[int]]:
    """The graph's output values (None for a non-tensor output), each folded view rebuilt as a real view where eager's
    output shares storage with another output or a graph input.

    ``return y, y.unsqueeze(0)`` with ``y = x.exp()``: eager's second output is a view of the first, so an in-place
    update of one shows in the other. The fold gave the unsqueeze its own computed value (the kernel wrote a second
    buffer: review 18 finding 4); such an output becomes ``reshape(y)`` again, run by the program as a view of y's
    storage. A folded output whose storage no other output shares (``return x.exp().unsqueeze(0)``) stays folded, and
    so do folds read inside the graph: only the output gets the view."""
    roots: Dict[int, int] = {}
    found = []
    for v in values:
        r = _unfolded_root(L, v) if isinstance(v, int) else None
        found.append(r)
        if r is not None:
            roots[r[0]] = roots.get(r[0], 0) + 1
    memo: Dict[int, int] = {}
    out: List[Optional[int]] = []
    for v, r in zip(values, found):
        shared = r is not None and (roots[r[0]] > 1 or L.g.nodes[r[0]].op == "input")
        if shared and r[1]:
            v = _unfold(L, v, memo)
        out.append(_lift_broadcast(L, v) if shared else v)
    return out


def _view_chain(L: Lowerer, v: int) -> Optional[List[int]]:
    """The IR view ops from ``v`` down to the value whose storage it shares, lowest first; None when one of them
    reads a constant operand besides its input."""
    from .lowering import IR_VIEW_OPS

    g, chain = L.g, []
    while g.nodes[v].op in IR_VIEW_OPS:
        if len(g.nodes[v].inputs) != 1:
            return None
        chain.append(v)
        v = g.nodes[v].inputs[0]
    return chain[::-1]


def _lift_broadcast(L: Lowerer, v: int) -> int:
    """``v`` with a ``broadcast_to`` inside its chain of views moved to the top: ``slice(broadcast_to(r))`` becomes
    ``broadcast_to(slice(r))`` (a slice of a broadcast axis only shortens the broadcast), ``permute(broadcast_to(r))``
    becomes ``broadcast_to(permute(r))``. A broadcast is computed inside the kernels that read it, so a view of one
    was a buffer of its own (``return y, y[:, None].expand(-1, 2, -1)[1:]``: strides (8, 4, 1), review 18b finding
    2); on top of the chain it is the program's ``.expand`` of a view of ``r`` (program_layout.expand_outputs), with
    eager's zero strides and storage offset. ``v`` itself when no broadcast lies below another view, or when a
    reshape lies above one (an expanded tensor's reshape may be a copy in eager)."""
    g = L.g
    chain = _view_chain(L, v)
    if not chain:
        return v
    low = next((i for i, u in enumerate(chain) if g.nodes[u].op == "broadcast_to"), None)
    if low is None or low == len(chain) - 1:
        return v
    b = g.nodes[chain[low]].inputs[0]
    target = list(g.nodes[chain[low]].shape)
    for u in chain[low + 1:]:
        n, bn = g.nodes[u], g.nodes[b]
        lead = len(target) - len(bn.shape)
        if n.op == "broadcast_to":
            target = list(n.shape)
        elif n.op == "slice":
            a = n.attrs["axis"]
            if a >= lead and bn.shape[a - lead] == target[a]:  # an axis of b's own: slice b
                shape = list(bn.shape)
                shape[a - lead] = n.shape[a]
                b = L.add("slice", [b], dict(n.attrs, axis=a - lead), bn.dtype, shape)
            target[a] = n.shape[a]
        elif n.op == "permute":
            if lead:  # b's rank made the broadcast's by leading unit dims first
                shape = [1] * lead + list(bn.shape)
                b = L.add("reshape", [b], {"shape": shape}, bn.dtype, shape)
            dims = list(n.attrs["dims"])
            shape = [g.nodes[b].shape[d] for d in dims]
            b = L.add("permute", [b], {"dims": dims}, bn.dtype, shape)
            target = [target[d] for d in dims]
        else:
            return v
    return L.add("broadcast_to", [b], {"shape": target}, g.nodes[b].dtype, tuple(target))


def _aten_targets(*names: str) -> frozenset:
    import torch

    out = set()
    for name in names:
        packet, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, packet, None), overload or "default", None)
        if op is not None:
            out.add(op)
    return frozenset(out)


#: FX view ops lowered to fold_unit_reshape's caller (lowering_views._reshape).
RESHAPE_TARGETS = _aten_targets("view", "_unsafe_view", "reshape", "unsqueeze", "squeeze", "squeeze.dim",
                                "squeeze.dims")
#: FX view ops always lowered to IR view ops or to their input itself, whatever the sizes: _unfold repeats them on
#: top of an unfolded reshape. Other views (``slice`` of a symbolic axis, ``as_strided``, ...) may stay ATen calls,
#: which read the folded value itself, so a reshape below them is not folded on an aliased output (keep_views).
IR_VIEW_TARGETS = RESHAPE_TARGETS | _aten_targets("permute", "transpose.int", "t", "expand", "alias", "detach")


def _view_source(node: Any) -> Any:
    """The FX node whose storage the view ``node`` shares (an ATen view op's first argument, or the source of a
    ``getitem`` of a multi-output view), or None when ``node`` is not a view."""
    import operator

    import torch

    if getattr(node, "op", None) != "call_function" or not node.args:
        return None
    src = node.args[0]
    if node.target is operator.getitem:
        return src if _view_source(src) is not None else None
    if isinstance(node.target, torch._ops.OpOverload) and node.target.is_view and isinstance(src, torch.fx.Node):
        return src
    return None


def keep_views(gm: Any) -> set:
    """FX unit reshapes that must not be folded: those on the chain of views of a graph output that shares its
    storage root with another output, below a view op that may stay an ATen call (not in IR_VIEW_TARGETS). That ATen
    call would read the folded value, a buffer of its own, so the output would lose eager's aliasing; aliasing_outputs
    rebuilds only chains of IR views."""
    import torch

    out_node = next((n for n in gm.graph.nodes if n.op == "output"), None)
    if out_node is None:
        return set()
    stack, chains = [out_node.args[0]], []
    while stack:
        a = stack.pop()
        if isinstance(a, (list, tuple)):
            stack.extend(a)
        elif isinstance(a, torch.fx.Node):
            chain = [a]
            while (src := _view_source(chain[-1])) is not None:
                chain.append(src)
            chains.append(chain)
    roots: Dict[Any, int] = {}
    for chain in chains:
        roots[chain[-1]] = roots.get(chain[-1], 0) + 1
    keep = set()
    for chain in chains:
        if roots[chain[-1]] < 2:
            continue
        above = False  # an op nearer the output may stay an ATen call
        for n in chain[:-1]:
            if above and n.target in RESHAPE_TARGETS:
                keep.add(n)
            above = above or n.target not in IR_VIEW_TARGETS
    return keep
