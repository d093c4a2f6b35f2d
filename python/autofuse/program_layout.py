"""How the generated program allocates kernel outputs so that graph outputs have eager's strides.

A kernel writes outputs of any strides, so the program chooses each output's layout when it allocates it
(program.build_program). Two cases:

* a kernel output that is itself a graph output takes the strides of its FX fake tensor (``eager_layout``: a
  channels_last or transposed result stays so);
* a kernel output that reaches a graph output only through host view steps (reshape / permute / expand / slice) is
  laid out so that the *view* has the fake tensor's strides. Example: ``y = x + 1; y.t()[0, 1] = 7; return y``
  becomes ``permute(select_scatter(permute(add)))`` after functionalization; the scatter kernel's output must be
  allocated transposed, so that the returned ``permute`` of it is contiguous as in eager (``y.view(-1)`` works).

A kernel output that is also returned directly keeps its own FX layout. Otherwise the candidates are the dense
layouts of the kernel output (a permutation of its dims, outermost first): row-major first, then every other
permutation (up to rank 5). Each is checked by replaying the view chain on a meta tensor laid out so (torch's own
view rules; extern ATen views such as a slice with symbolic bounds included) at the example sizes Dynamo traced
with (SymInt hints; asking the fake tensors would add shape guards), and comparing with the fake tensor's strides
(size-1 dims take any stride). The one satisfying the most graph outputs wins (row-major on a tie); a chain that no
dense layout satisfies (an expanded output) keeps row-major.
"""

from __future__ import annotations

import itertools
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .lowering import IR_VIEW_OPS

#: Highest rank for which every permutation is tried (5! = 120 replays of a short chain, at compile time only).
MAX_SEARCH_RANK = 5

Perm = Tuple[List[int], List[int]]  # (perm: dims outermost first, inverse: empty(permuted sizes).permute(inverse))


def _size_hint(x: Any) -> Optional[int]:
    """An int, or a SymInt's example value (its hint; None for an unbacked one)."""
    if isinstance(x, int):
        return x
    hint = getattr(getattr(x, "node", None), "hint", None)
    return hint if isinstance(hint, int) else None


def eager_layout(val: Any) -> Optional[Perm]:
    """How eager lays out a graph output whose FX fake tensor is ``val``, when that is not contiguous: (perm, inverse)
    such that ``empty(sizes permuted by perm).permute(inverse)`` has eager's strides (channels_last, a transposed
    result); None for a contiguous result, or one that is overlapping or not dense (symbolic strides are ordered by
    their example values). The fake tensor follows eager's layout rules (an elementwise result keeps its input's
    memory format)."""
    if not isinstance(val, torch.Tensor) or val.dim() < 2:
        return None
    static = all(isinstance(x, int) for x in tuple(val.shape) + tuple(val.stride()))
    if static and val.is_contiguous():
        return None
    # symbolic sizes (dynamic shapes): the order of the strides at the example sizes Dynamo traced with (the
    # SymInts' hints; asking the fake tensor would add shape guards); the layout rule that made them does not
    # depend on the sizes (an elementwise result follows its input's memory format)
    sizes, strides = tuple(_size_hint(x) for x in val.shape), tuple(_size_hint(x) for x in val.stride())
    if None in sizes or None in strides:
        return None
    perm = sorted(range(len(sizes)), key=lambda d: -strides[d])  # outermost first; a stable sort keeps size-1 dims
    if not static and perm == list(range(len(sizes))):
        return None
    expected = 1  # dense and non-overlapping: the permuted sizes' contiguous strides (size-1 dims take any stride)
    for d in reversed(perm):
        if sizes[d] != 1 and strides[d] != expected:
            return None
        expected *= sizes[d]
    return perm, [perm.index(d) for d in range(len(sizes))]


def dense_strides(sizes: Sequence[int], perm: Sequence[int]) -> Tuple[int, ...]:
    """Strides (elements) of ``empty(sizes permuted by perm).permute(inverse)``: dims contiguous in ``perm`` order,
    ``perm[0]`` outermost."""
    out = [0] * len(sizes)
    acc = 1
    for d in reversed(perm):
        out[d] = acc
        acc *= max(int(sizes[d]), 1)
    return tuple(out)


def _hint_env(vals) -> Dict[Any, int]:
    """sympy symbol -> example value, from the shape environment of any SymInt among the fake tensors ``vals``."""
    for val in vals:
        if not isinstance(val, torch.Tensor):
            continue
        for s in tuple(val.shape) + tuple(val.stride()):
            env = getattr(getattr(s, "node", None), "shape_env", None)
            if env is not None:  # torch 2.13 names the backed symbols' values backed_var_to_val
                values = getattr(env, "backed_var_to_val", None)
                return dict(values if values is not None else env.var_to_val)
    return {}


def _hint(s: Any, env: Dict[Any, int]) -> Optional[int]:
    """A static size, or a sympy size expression evaluated at the example values; None when that fails."""
    if isinstance(s, int):
        return s
    try:
        return int(s.xreplace(env))
    except (TypeError, ValueError, AttributeError):
        return None


def _fx_arg_hint(a: Any, src: torch.fx.Node, t: torch.Tensor, env) -> Any:
    """An extern view's FX argument at the example sizes: its input node is the replayed tensor ``t``, other nodes
    (SymInt sizes) their example values; lists recursively."""
    if isinstance(a, torch.fx.Node):
        if a is src:
            return t
        val = a.meta.get("val")
        hint = _size_hint(val) if not isinstance(val, torch.SymInt) else _hint(val.node.expr, env)
        if hint is None:
            raise ValueError(f"no example value for {a.name}")
        return hint
    if isinstance(a, (list, tuple)):
        return type(a)(_fx_arg_hint(e, src, t, env) for e in a)
    return a


def _view_step(lg, v: int, t: torch.Tensor, env) -> Optional[torch.Tensor]:
    """Host view node or extern ATen view ``v`` applied to the meta tensor ``t`` (torch's own stride rules), at the
    example sizes; None when a size is unknown."""
    n = lg.nodes[v]
    if n.op == "extern":
        src = next(a for a in n.fx.args if isinstance(a, torch.fx.Node))
        args = [_fx_arg_hint(a, src, t, env) for a in n.fx.args]
        kwargs = {k: _fx_arg_hint(a, src, t, env) for k, a in n.fx.kwargs.items()}
        return n.fx.target(*args, **kwargs)
    shape = tuple(_hint(s, env) for s in n.shape)
    if None in shape:
        return None
    a = n.attrs
    if n.op == "reshape":
        return t.reshape(shape)
    if n.op == "permute":
        return t.permute(list(a["dims"]))
    if n.op == "broadcast_to":
        return t.expand(shape)
    start, stop = _hint(a["start"], env), _hint(a["stop"], env)  # slice
    if start is None or stop is None:
        return None
    return t[(slice(None),) * a["axis"] + (slice(start, stop, a["step"]),)]


def _replay(lg, u: int, chain: List[int], strides: Tuple[int, ...], env) -> Optional[Tuple[Tuple[int, ...], ...]]:
    """(sizes, strides) of the last view of ``chain`` applied to kernel output ``u`` laid out with ``strides``, at
    the example sizes (on a meta tensor: torch's own view rules); None when a size is unknown or a step fails."""
    sizes = tuple(_hint(s, env) for s in lg.nodes[u].shape)
    if None in sizes:
        return None
    try:
        t = torch.empty_strided(sizes, strides, dtype=torch.float32, device="meta")
        for v in chain:
            t = _view_step(lg, v, t, env)
            if t is None:
                return None
    except (RuntimeError, ValueError, TypeError, IndexError):
        return None
    return tuple(t.shape), tuple(t.stride())


def _matches(got, val) -> bool:
    """Whether replayed (sizes, strides) equal the fake tensor's at the example sizes (size-1 dims: any stride)."""
    sizes = tuple(_size_hint(x) for x in val.shape)
    strides = tuple(_size_hint(x) for x in val.stride())
    if got is None or None in sizes or None in strides or got[0] != sizes:
        return False
    return all(s == 1 or a == b for s, a, b in zip(sizes, got[1], strides))


def _candidates(rank: int) -> List[Optional[Perm]]:
    """Layouts to try, in order of preference: row-major (None), then every other permutation of the dims."""
    out: List[Optional[Perm]] = [None]
    if rank <= MAX_SEARCH_RANK:
        for p in itertools.permutations(range(rank)):
            perm = list(p)
            if perm != list(range(rank)):
                out.append((perm, [perm.index(d) for d in range(rank)]))
    return out


def _extern_view(lg, v: int) -> bool:
    """Whether node ``v`` is an extern ATen view op (``aten.slice`` with symbolic bounds, ...) of one tensor."""
    n = lg.nodes[v]
    target = getattr(n.fx, "target", None) if n.op == "extern" and n.item is None else None
    return bool(getattr(target, "is_view", False))


def kernel_output_layouts(lg, steps, host_nodes: set, fake: Dict[int, Any]) -> Dict[int, Perm]:
    """Kernel output value -> (perm, inverse) for every kernel output the program should not allocate row-major.

    ``steps``: the program's steps; ``host_nodes``: values computed by host steps (views run by the program);
    ``fake``: graph-output value -> its FX fake tensor. A graph output that is a kernel output is a direct request
    (eager_layout); one reached from a kernel output through IR_VIEW_OPS host nodes (each with one non-constant input)
    is a chain request, checked by replaying the chain (module doc)."""
    kernel_outs = {o for st in steps if st.kind == "kernel" for o in st.outputs}
    direct: Dict[int, Optional[Perm]] = {}
    chains: Dict[int, List[Tuple[List[int], Any]]] = {}
    for kind, o in lg.outputs:
        if kind != "node" or not isinstance(fake.get(o), torch.Tensor):
            continue
        if o in kernel_outs:
            direct.setdefault(o, eager_layout(fake[o]))
            continue
        chain, u = [], o
        while u not in kernel_outs and (u in host_nodes and lg.nodes[u].op in IR_VIEW_OPS or _extern_view(lg, u)):
            ins = [i for i in lg.nodes[u].inputs if lg.nodes[i].op != "constant"]
            if len(ins) != 1:
                break
            chain.append(u)
            u = ins[0]
        if chain and u in kernel_outs:
            chains.setdefault(u, []).append((list(reversed(chain)), fake[o]))
    out: Dict[int, Perm] = {o: p for o, p in direct.items() if p is not None}
    if not chains:
        return out
    env = _hint_env(val for reqs in chains.values() for _, val in reqs)
    for u, reqs in chains.items():
        if u in direct:
            continue  # the kernel output is itself returned: its own eager layout comes first
        sizes = tuple(_hint(s, env) for s in lg.nodes[u].shape)
        if None in sizes or len(sizes) < 2 or 0 in sizes:
            continue
        best, best_score = None, -1
        for cand in _candidates(len(sizes)):
            strides = dense_strides(sizes, cand[0] if cand is not None else range(len(sizes)))
            score = sum(_matches(_replay(lg, u, chain, strides, env), val) for chain, val in reqs)
            if score > best_score:
                best, best_score = cand, score
            if score == len(reqs):  # every request met (row-major usually is: one replay per chain)
                break
        if best is not None:
            out[u] = best
    return out


def _expanded(val: Any) -> bool:
    """Whether eager's result ``val`` is an expanded view: a zero stride on a dim of size > 1 (at the example sizes)."""
    if not isinstance(val, torch.Tensor):
        return False
    sizes, strides = [_size_hint(x) for x in val.shape], [_size_hint(x) for x in val.stride()]
    return any(s is not None and s > 1 and t == 0 for s, t in zip(sizes, strides))


def expand_outputs(lg) -> Dict[int, int]:
    """Graph outputs that eager returns as expanded views (``(x + 1).expand(5, 3, 4)``: strides (0, 4, 1)): output
    ``broadcast_to`` node -> its input. The native path then makes the input the kernel's output and the program
    returns ``input.expand(...)`` (no copy, eager's zero strides) instead of a kernel writing every broadcast copy.
    Other IR readers of the broadcast still get it inside their kernels (a broadcast is fused where it is read); not
    for a broadcast that is a mutation's value or an index check, nor for one of a constant. A broadcast of a graph
    input is covered too: the output is then a view of the caller's tensor, as eager's (AOTAutograd's alias replay
    under dynamic shapes needs the view's zero strides: tests/python/test_backend_expand_input.py)."""
    vals = lg.fake_values()
    read = {v for pair in lg.mutations for v in pair} | {c[0] for c in lg.index_checks}
    out: Dict[int, int] = {}
    for kind, o in lg.outputs:
        n = lg.nodes[o] if kind == "node" else None
        if n is None or n.op != "broadcast_to" or o in read or not _expanded(vals.get(o)):
            continue
        ins = [u for u in n.inputs if lg.nodes[u].op != "constant"]
        if len(ins) == 1:
            out[o] = ins[0]
    return out
