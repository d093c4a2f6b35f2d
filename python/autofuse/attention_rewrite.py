"""Attention written out as matmul-softmax-matmul becomes one scaled-dot-product-attention call (a pre-AOT pass).

Models written with "eager" attention (Hugging Face's GPT-2, BERT and LLaMA in eager mode, and most hand-written
blocks) compute ``softmax(q @ k^T * scale + mask) @ v`` as two batched matmuls around a row softmax. On CPU, ATen's
flash kernel for scaled dot-product attention (``_scaled_dot_product_flash_attention_for_cpu``) does the same in one
call: it never writes the [B, H, S, L] score and probability tensors, it keeps the scores in fp32 (bf16 / fp16
inputs), it reads the keys in their own layout (no transposed copy), and with ``is_causal`` it skips the blocks above
the diagonal. Measured on this machine (docs/demo.md, session 9: the demo's three models, 2 layers, with the rewrite
off and on in one process, interleaved): 0.96-1.00 of the time in 10 of the 12 cases (model x fp32/bf16 x 1x32/4x128),
LLaMA-style 1x32 1.02 / 0.99 (bf16 / fp32) -- within the windows' noise. Like matmul, the attention call is an ATen
call by design (lowering.EXTERN_BY_DESIGN). The pass is off by default (``AUTOFUSE_ATTENTION_REWRITE=1`` turns it
on): the flash kernel does not keep eager's NaN rows (below), and its gain is within the windows' noise.

The pass runs on the Dynamo graph (torch-level calls), before AOTAutograd, so that AOTAutograd traces the attention
op itself: its backward (the flash backward) comes from ATen, and dynamic sizes need no rule (the kernel takes any
sequence length). It matches, on one chain of single-use values::

    s = matmul(q, transpose(k, -2, -1))      # q [B, H, S, D], k [B, H, L, D]: 4-d, same B and H
    s = s * c  |  c * s  |  s / c            # optional; c a Python number -> scale c or 1/c (else scale 1)
    s = s + mask                             # optional; mask of s's dtype, no gradient, broadcastable
    p = softmax(s, dim=-1[, dtype=float32])  # F.softmax, torch.softmax or Tensor.softmax
    p = p.to(dtype) | p.type(dtype)          # optional, back to v's dtype
    p = dropout(p, p=0.0 | training=False)   # optional, and only when it drops nothing
    o = matmul(p, v)                         # v [B, H, L, Dv]

and replaces ``o`` with ``scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)``. Anything else (the
scores or probabilities used elsewhere, e.g. returned as attention weights or saved by a user hook, a dropout that
drops, a mask that needs a gradient, a scale that is a tensor, another order of scale and mask) is left as written.
The flash kernel rounds differently from the written-out form (scores kept in fp32, online softmax), so results
differ in the last bits: fp32 within ~1e-6 relative, bf16 no further from float64 than eager's own error.

One rule differs from the written-out form, as in eager's own ``scaled_dot_product_attention`` and in Inductor's
attention rewrite: a query row whose scores are all -inf (every key masked by a -inf mask, or an infinite input) gives
0 where the written-out softmax gives NaN, and so does a short row (measured at 1 and 7 keys, not at 64) with a NaN
or inf in q (tests/python/test_attention_rewrite.py shows both). Masks built with the dtype's finite minimum
(transformers' form) are not affected in the forward. That is why the pass is off unless
``AUTOFUSE_ATTENTION_REWRITE=1``.

Gradients: where a mask masks a query row entirely with the dtype's finite minimum (left padding in transformers),
ATen's attention backward gives gradients through that row that differ from the written-out softmax's by O(1)
(eager's own ``scaled_dot_product_attention`` does the same: its forward matches, to 2.4e-7; review 18). So when q,
k or v needs a gradient, only chains without a mask or with a constant causal mask (``is_causal``: no row is fully
masked) are rewritten; a run-time mask keeps the written form (tests/python/test_attention_rewrite.py).
"""

from __future__ import annotations

import operator
from typing import Any, List, Optional, Tuple

import torch
import torch.nn.functional as F

#: Switch for A/B measurements and tests (module attribute): None follows ``AUTOFUSE_ATTENTION_REWRITE`` (default off:
#: written-out attention keeps eager's NaN rows, see below), True / False force the pass on / off.
ENABLED = None

_MATMUL = (torch.matmul, operator.matmul)
_SOFTMAX = (F.softmax, torch.softmax, torch.Tensor.softmax)
_DROPOUT = (F.dropout, torch.dropout)


def _is_call(n: Any, fns: Tuple, method: str) -> bool:
    """``n`` calls one of ``fns`` (call_function) or the Tensor method ``method`` (call_method)."""
    if not isinstance(n, torch.fx.Node):
        return False
    return (n.op == "call_function" and n.target in fns) or (n.op == "call_method" and n.target == method)


def _meta(n: Any) -> Optional[torch.Tensor]:
    """The fake tensor Dynamo recorded for ``n`` (None when there is none)."""
    v = n.meta.get("example_value") if isinstance(n, torch.fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None


def _same(a, b) -> bool:
    """Two (possibly symbolic) sizes are known equal without adding a guard."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    return bool(statically_known_true(a == b))


def _single_user(n: torch.fx.Node) -> Optional[torch.fx.Node]:
    """The one user of ``n``, or None when it has several (or none)."""
    users = list(n.users)
    return users[0] if len(users) == 1 else None


def _arg(n: torch.fx.Node, index: int, name: str, default: Any = None) -> Any:
    """Argument ``index`` (positional, counting ``self`` for methods) or keyword ``name`` of a call node."""
    if len(n.args) > index:
        return n.args[index]
    return n.kwargs.get(name, default)


def _key_of_transpose(t: Any) -> Optional[torch.fx.Node]:
    """``k`` when ``t`` is ``k.transpose(-2, -1)`` of a 4-d ``k`` (any spelling of the last two dims), else None."""
    if not _is_call(t, (torch.transpose,), "transpose"):
        return None
    k, d0, d1 = _arg(t, 0, "input"), _arg(t, 1, "dim0"), _arg(t, 2, "dim1")
    km = _meta(k)
    if km is None or km.dim() != 4 or not all(isinstance(d, int) for d in (d0, d1)):
        return None
    return k if {d0 % 4, d1 % 4} == {2, 3} else None


def _softmax_last_dim(n: Any) -> bool:
    """``n`` is a softmax over the last dim, with no dtype or with float32."""
    m = _meta(n)
    if not _is_call(n, _SOFTMAX, "softmax") or m is None:
        return False
    functional = n.op == "call_function" and n.target is F.softmax
    if functional and len(n.args) > 2:
        return False  # positional _stacklevel / dtype: not how the models we know spell it; left as written
    dim, dtype = _arg(n, 1, "dim"), _arg(n, 3 if functional else 2, "dtype")
    return isinstance(dim, int) and dim in (-1, m.dim() - 1) and dtype in (None, torch.float32)


def _is_scores(n: Any) -> bool:
    """``n`` is a node the scores chain can end in before the mask: a scaling or the first matmul."""
    return (isinstance(n, torch.fx.Node) and n.op == "call_function" and n.target in (operator.mul, operator.truediv)) \
        or _is_call(n, _MATMUL, "matmul")


def _dropout_is_identity(n: torch.fx.Node) -> bool:
    """``n`` is a dropout that drops nothing (p == 0, or training False)."""
    p, training = _arg(n, 1, "p", 0.5), _arg(n, 2, "training", True)
    return (isinstance(p, (int, float)) and p == 0) or training is False


def _match(o: torch.fx.Node) -> Optional[Tuple[List[torch.fx.Node], tuple, dict]]:
    """If ``o`` is the second matmul of the pattern (module doc), return (the chain's nodes from the first matmul to
    ``o``, the SDPA call's args, its kwargs); None otherwise."""
    if not _is_call(o, _MATMUL, "matmul") or len(o.args) != 2 or o.kwargs:
        return None
    p, v = o.args
    vm, om = _meta(v), _meta(o)
    if vm is None or om is None or vm.dim() != 4:
        return None
    chain = [o]
    n = p
    if _is_call(n, _DROPOUT, "dropout"):
        if not _dropout_is_identity(n):
            return None
        chain.append(n)
        n = _arg(n, 0, "input")
    if _is_call(n, (), "to") or _is_call(n, (), "type"):
        target = _arg(n, 1, "dtype")
        if len(n.args) != 2 or n.kwargs or target != vm.dtype:
            return None
        chain.append(n)
        n = n.args[0]
    if not isinstance(n, torch.fx.Node) or not _softmax_last_dim(n):
        return None
    chain.append(n)
    n = _arg(n, 0, "input")
    mask = None
    if isinstance(n, torch.fx.Node) and n.op == "call_function" and n.target in (operator.add, torch.add) \
            and len(n.args) == 2 and not n.kwargs:
        add = n
        a, b = add.args
        n, mask = (a, b) if _is_scores(a) else (b, a)
        mm, sm, am = _meta(mask), _meta(n), _meta(add)
        if mm is None or sm is None or am is None or mm.requires_grad or mm.dtype != vm.dtype or mm.dim() > 4 \
                or am.dim() != sm.dim() or not all(_same(x, y) for x, y in zip(am.shape, sm.shape)):
            return None
        chain.append(add)
    scale = 1.0
    if isinstance(n, torch.fx.Node) and n.op == "call_function" and n.target in (operator.mul, operator.truediv) \
            and len(n.args) == 2:
        a, b = n.args
        if n.target is operator.mul and isinstance(a, (int, float)):
            a, b = b, a
        if not isinstance(b, (int, float)) or isinstance(b, bool) or b == 0:
            return None
        scale = float(b) if n.target is operator.mul else 1.0 / float(b)
        chain.append(n)
        n = a
    if not _is_call(n, _MATMUL, "matmul") or len(n.args) != 2 or n.kwargs:
        return None
    chain.append(n)
    q, kt = n.args
    k = _key_of_transpose(kt)
    qm = _meta(q)
    if k is None or qm is None or qm.dim() != 4:
        return None
    km = _meta(k)
    dtypes = {qm.dtype, km.dtype, vm.dtype}
    if len(dtypes) != 1 or dtypes.pop() not in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
        return None
    sizes_ok = (all(_same(qm.shape[i], km.shape[i]) and _same(qm.shape[i], vm.shape[i]) for i in (0, 1))
                and _same(qm.shape[3], km.shape[3]) and _same(km.shape[2], vm.shape[2]))
    if not sizes_ok:
        return None
    # every intermediate value feeds only the next step (the chain's last node is the first matmul)
    for inner in chain[1:]:
        if _single_user(inner) is None:
            return None
    return chain, (q, k, v), {"attn_mask": mask, "dropout_p": 0.0, "is_causal": False, "scale": scale}


#: An additive mask entry at or below this counts as "masked out": exp() of it underflows to exactly 0 in float32
#: whatever the scores are (float32's smallest normal is about e^-87), so the row's softmax ignores that key.
_MASKED_OUT = -1e30
#: Largest mask (elements) evaluated at compile time: 16 Mi elements, 64 MB in fp32 (a 4 x 1 x 2048 x 2048 mask).
_MAX_EVALUATED = 1 << 24


def _constant_value(n: torch.fx.Node) -> Optional[torch.Tensor]:
    """The value of ``n`` when it depends on no graph input (only on constants: arange, comparisons, where, ...),
    computed now by running its producers; None when it depends on an input, a module attribute, or something that
    cannot run here (a symbolic size under dynamic shapes is an input's size: also None)."""
    order: List[torch.fx.Node] = []
    seen = set()

    def visit(x: torch.fx.Node) -> bool:
        if x in seen:
            return True
        seen.add(x)
        if x.op not in ("call_function", "call_method"):
            return False
        deps = [d for d in x.all_input_nodes]
        if not all(visit(d) for d in deps):
            return False
        order.append(x)
        return True

    if not visit(n) or len(order) > 64:
        return None
    env: dict = {}
    load = lambda a: torch.fx.node.map_arg(a, lambda d: env[d])  # noqa: E731
    try:  # the generator state is restored: a random op here must not shift the program's random stream
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            for x in order:
                args, kwargs = load(x.args), load(x.kwargs)
                env[x] = x.target(*args, **kwargs) if x.op == "call_function" else \
                    getattr(args[0], x.target)(*args[1:], **kwargs)
    except Exception:  # noqa: BLE001 - anything that cannot run on concrete values here is simply not a constant
        return None
    v = env[n]
    return v if isinstance(v, torch.Tensor) else None


def _is_causal_mask(mask: torch.Tensor, s: int, l: int) -> bool:
    """``mask`` (additive, broadcast to [.., S, L]) is exactly the causal mask with S == L: 0 at key j <= query i,
    at most _MASKED_OUT above the diagonal, in every leading (batch, head) slice."""
    if s != l or mask.dim() < 2 or tuple(mask.shape[-2:]) != (s, l):
        return False
    keep = torch.ones(s, l, dtype=torch.bool).tril()
    m = mask.float()
    return bool((m[..., keep] == 0).all()) and bool((m[..., ~keep] <= _MASKED_OUT).all())


def _causal_static(q: torch.fx.Node, k: torch.fx.Node, mask: Optional[torch.fx.Node], cache: dict) -> bool:
    """The mask node is a constant causal mask for these static sizes (evaluated once per mask node)."""
    if mask is None:
        return False
    qm, km = _meta(q), _meta(k)
    s, l = qm.shape[2], km.shape[2]
    if not isinstance(s, int) or not isinstance(l, int):
        return False
    if mask not in cache:
        mm = _meta(mask)
        small = mm is not None and all(isinstance(d, int) for d in mm.shape) and mm.numel() <= _MAX_EVALUATED
        value = _constant_value(mask) if small else None
        cache[mask] = value is not None and _is_causal_mask(value, s, l)
    return cache[mask]


def _erase_unused(graph: torch.fx.Graph, n: torch.fx.Node) -> None:
    """Erase ``n`` if nothing uses it, then its producers that become unused (only pure calls: the mask's)."""
    if n.users or n.op not in ("call_function", "call_method"):
        return
    deps = list(n.all_input_nodes)
    graph.erase_node(n)
    for d in deps:
        _erase_unused(graph, d)


def rewrite(gm: torch.fx.GraphModule) -> int:
    """Replace every matching attention chain of ``gm`` (module doc) in place; returns how many were replaced.

    A mask that is a constant (it depends on no input) and equals the causal mask at static sizes becomes
    ``is_causal=True`` (the flash kernel then skips the blocks above the diagonal and reads no mask); its producers
    are erased when nothing else uses them."""
    from .env import env_bool

    if not (env_bool("AUTOFUSE_ATTENTION_REWRITE", False) if ENABLED is None else ENABLED):
        return 0
    count, causal_cache, masks = 0, {}, []
    for o in list(gm.graph.nodes):
        found = _match(o)
        if found is None:
            continue
        chain, args, kwargs = found
        mask = kwargs["attn_mask"]
        if _causal_static(args[0], args[1], mask, causal_cache):
            kwargs = {**kwargs, "attn_mask": None, "is_causal": True}
            masks.append(mask)
        elif mask is not None and getattr(_meta(chain[-1]), "requires_grad", False):  # the scores need gradients
            # A mask known only at run time can mask a query row entirely (transformers' left padding, with the
            # dtype's finite minimum): ATen's attention backward then gives other gradients than the written-out
            # softmax (eager's own scaled_dot_product_attention does too; review 18), so graphs that need
            # gradients keep the written form. No mask, or a causal one, never masks a whole row.
            continue
        with gm.graph.inserting_before(o):
            new = gm.graph.call_function(F.scaled_dot_product_attention, args, kwargs)
        new.meta = dict(o.meta)
        o.replace_all_uses_with(new)
        for dead in chain:  # from the second matmul back to the first: each is unused once its user is gone
            gm.graph.erase_node(dead)
        count += 1
    for mask in dict.fromkeys(masks):
        _erase_unused(gm.graph, mask)
    if count:
        gm.graph.lint()
        gm.recompile()
    return count
