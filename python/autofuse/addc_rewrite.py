"""Dynamo's decompositions of addcmul_ / addcdiv_ / addcdiv undone: the ops are put back whole (a pre-AOT pass).

With ``torch._dynamo.config.enable_dynamo_decompositions`` (on by default), Dynamo does not record these calls when
they have a ``value`` keyword (so that a tensor ``value`` needs no ``.item()`` graph break); it records their parts::

    x.addcmul_(t1, t2, value=v)      ->  p = torch.mul(t1, t2);  r = prims.fma(p, v, x);  x.copy_(r)
    x.addcdiv_(t1, t2, value=v)      ->  q = torch.div(t1, t2);  r = prims.fma(q, v, x);  x.copy_(r)
    torch.addcdiv(x, t1, t2, value=v) ->  q = torch.div(t1, t2);  m = torch.mul(q, v);  r = torch.add(x, m)

Eager's addcmul / addcdiv kernels compute ``fma(v * t1, t2, x)`` (a fused multiply-add) and ``x + (v * t1) / t2`` in
float32 for float16 / bfloat16 tensors (v read in float32, the products in that order) and round once; Dynamo's parts
are separate ops on the tensor's dtype, so ``t1 * t2`` (or ``t1 / t2``), the scaled value and the sum were each
rounded to float16 / bfloat16 (prims.fma has no lowering and ran in ATen, as ``a * b + c`` on float16), and float32
computed ``(t1 * t2) * v`` instead of eager's ``(v * t1) * t2`` (review 18: 10 % of float16 ``addcmul_(y, y,
value=0.1)`` elements one ulp off eager, each further from float64; Adam's ``exp_avg_sq.addcmul_(g, g, value=1 -
beta2)`` and ``p.addcdiv_(m, d, value=-lr)`` are these ops). This pass replaces the parts with ``torch.addcmul`` /
``torch.addcdiv`` (the ``copy_`` stays: AOTAutograd turns it into the input mutation). addcdiv's decomposition
(torch._refs) upcasts to float32 and rounds once, under both precision policies; addcmul is kept whole
(decompositions.KEEP_FOR_ROUNDING) and lowered to the IR's ``fma``: eager's bits, for float32 / float64 too. A 0-d
tensor ``value``, which the whole op does not take while AOTAutograd traces, gets ``addcmul_tensor_value`` /
``addcdiv_tensor_value`` instead: the same computation written out.

Only Dynamo's own chains are matched: every part has one user and all parts carry the same ``stack_trace`` (one
source position, including its column range: Dynamo made them while tracing one call). A user's own ``torch.add(x,
torch.mul(torch.div(y, z), v))`` has a different column range per call and is left as written (eager rounds after
each of its ops). Column ranges are in tracebacks from Python 3.11 on; before, such a chain written on one line would
be rewritten too (within the default policy, which rounds a fused chain once; under
AUTOFUSE_EMULATE_PRECISION_CASTS=1 it would then round once where eager rounds three times).
"""

from __future__ import annotations

import torch

__all__ = ["rewrite"]


def _fma_target():
    """``torch.ops.prims.fma.default`` (registered by torch._inductor.inductor_prims, which Dynamo imports when it
    decomposes), or None when it is not registered."""
    try:
        return torch.ops.prims.fma.default
    except (AttributeError, RuntimeError):
        return None


def _single_use_call(node, targets, nargs: int):
    """``node`` when it is a call_function of one of ``targets`` with exactly ``nargs`` positional arguments, no
    keyword arguments and exactly one user; else None."""
    if not isinstance(node, torch.fx.Node) or node.op != "call_function" or node.target not in targets:
        return None
    if len(node.args) != nargs or node.kwargs or len(node.users) != 1:
        return None
    return node


def _same_source(*nodes) -> bool:
    """Whether every node carries the same, non-empty ``stack_trace`` (Dynamo recorded them for one call)."""
    traces = {n.meta.get("stack_trace") for n in nodes}
    return len(traces) == 1 and bool(next(iter(traces)))


def _widened(t: torch.Tensor) -> torch.Tensor:
    """``t`` in the type eager's addcmul / addcdiv kernels compute in: float32 for float16 / bfloat16."""
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def addcmul_tensor_value(x: torch.Tensor, t1: torch.Tensor, t2: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """``torch.addcmul(x, t1, t2, value=value)`` for a 0-d tensor ``value``, which the whole op does not take while
    AOTAutograd traces: ``addcmul(x, value * t1, t2)`` with value 1, in float32 for float16 / bfloat16 tensors and
    rounded once to x's dtype, i.e. eager's fused multiply-add ``fma(value * t1, t2, x)`` (value rounded to the
    compute type as eager's ``value.item()`` is; the lowering of aten.addcmul builds the IR's fma). Tensors of one
    dtype (``_tensor_value``)."""
    return torch.addcmul(_widened(x), value * _widened(t1), _widened(t2)).to(x.dtype)


def addcdiv_tensor_value(x: torch.Tensor, t1: torch.Tensor, t2: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """``torch.addcdiv(x, t1, t2, value=value)`` for a 0-d tensor ``value``: x + (value t1) / t2 in float32 for
    float16 / bfloat16 tensors, rounded once (eager's order: measured bit-identical on 10^5 elements of float16,
    bfloat16 and float32, where x + value (t1 / t2) differed on 11 % of the float32 ones)."""
    return (_widened(x) + (value * _widened(t1)) / _widened(t2)).to(x.dtype)


def _tensor_value(value, tensors) -> bool:
    """Whether ``value`` is a graph value holding a 0-d float tensor (torch.optim's step size under torch.compile)
    and ``tensors`` share one float dtype: the chain is then replaced by addcmul_tensor_value /
    addcdiv_tensor_value."""
    if not isinstance(value, torch.fx.Node):
        return False
    v = value.meta.get("example_value")
    metas = [n.meta.get("example_value") for n in tensors]
    if not isinstance(v, torch.Tensor) or v.dim() != 0 or not v.dtype.is_floating_point:
        return False
    if not all(isinstance(m, torch.Tensor) for m in metas):
        return False
    return len({m.dtype for m in metas}) == 1 and metas[0].dtype.is_floating_point


def _scalar(value) -> bool:
    """Whether ``value`` can be the whole op's ``value`` argument: a Python number, or a graph value that is a
    symbolic number (a float Dynamo made dynamic reaches the chain as ``.item()`` of a 0-d tensor). A tensor (a 0-d
    tensor ``value``) is not: the whole op would need its ``.item()`` while AOTAutograd traces (``_tensor_value``
    handles it)."""
    if isinstance(value, torch.fx.Node):
        return isinstance(value.meta.get("example_value"), (torch.SymFloat, torch.SymInt, float, int))
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _match(node, fma):
    """(op, self, t1, t2, value, parts) when ``node`` ends one of the module doc's chains, else None. ``op`` is
    torch.addcmul or torch.addcdiv; ``parts`` are the chain's nodes from ``node`` back, erased in that order."""
    if fma is not None and node.op == "call_function" and node.target is fma and len(node.args) == 3 \
            and not node.kwargs:
        inner, value, self_ = node.args
        inner = _single_use_call(inner, (torch.mul, torch.div), 2)
        if inner is None or not _same_source(node, inner):
            return None
        op = torch.addcmul if inner.target is torch.mul else torch.addcdiv
        return op, self_, inner.args[0], inner.args[1], value, (node, inner)
    if node.op == "call_function" and node.target is torch.add and len(node.args) == 2 and not node.kwargs:
        self_, scaled = node.args
        scaled = _single_use_call(scaled, (torch.mul,), 2)
        if scaled is None:
            return None
        quotient = _single_use_call(scaled.args[0], (torch.div,), 2)
        if quotient is None or not _same_source(node, scaled, quotient):
            return None
        return torch.addcdiv, self_, quotient.args[0], quotient.args[1], scaled.args[1], (node, scaled, quotient)
    return None


def rewrite(gm: torch.fx.GraphModule) -> int:
    """Replace every Dynamo addcmul / addcdiv chain of ``gm`` (module doc) with the whole op, in place; returns how
    many were replaced. ``self``, the two tensors and ``value`` (a Python number or a graph value) are kept as they
    are; an argument the whole op rejects (a float ``value`` on an integer tensor, integer addcdiv) then raises when
    AOTAutograd traces it, and the graph runs eagerly, where eager raises its own error."""
    fma = _fma_target()
    count = 0
    for node in list(gm.graph.nodes):
        found = _match(node, fma)
        if found is None:
            continue
        op, self_, t1, t2, value, parts = found
        if not all(isinstance(t, torch.fx.Node) for t in (self_, t1, t2)):
            continue
        if _scalar(value):
            target, args, kwargs = op, (self_, t1, t2), {"value": value}
        elif _tensor_value(value, (self_, t1, t2)):
            target = addcmul_tensor_value if op is torch.addcmul else addcdiv_tensor_value
            args, kwargs = (self_, t1, t2, value), {}
        else:
            continue
        with gm.graph.inserting_before(node):
            new = gm.graph.call_function(target, args, kwargs)
        new.meta = dict(node.meta)
        node.replace_all_uses_with(new)
        for dead in parts:  # the chain's end first: each part is unused once its user is gone
            gm.graph.erase_node(dead)
        count += 1
    if count:
        gm.graph.lint()
        gm.recompile()
    return count
