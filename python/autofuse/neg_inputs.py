"""Lazily negated input views (``torch._neg_view(x)``, the negative bit that ``conj`` of a negated view leaves).

Such a tensor's memory holds the un-negated values and its negative bit tells ATen to negate on read. A kernel reads
memory directly, so the backend hands the kernels ``t.resolve_neg()`` (a negated copy) instead. Dynamo guards on the
negative bit (it is a dispatch key), so a call with such an input gets a graph of its own and these wrappers cost
nothing on other graphs. A graph that may write into its inputs runs as Dynamo traced it (eagerly) when one of them
is a negated view, since the write would go to the copy.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, List, Optional

import torch
import torch.fx

#: Python's in-place operators as Dynamo records them (``x += 1`` -> operator.iadd, ``x[i] = v`` -> setitem).
_INPLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                      operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor, operator.ilshift,
                      operator.irshift, operator.setitem}


def negated_inputs(example_inputs) -> List[int]:
    """Indices of the example inputs that are tensors with the negative bit set."""
    return [i for i, v in enumerate(example_inputs) if isinstance(v, torch.Tensor) and v.is_neg()]


def written_value(n: torch.fx.Node, operators: bool = True) -> Optional[Any]:
    """The value a node of a Dynamo graph writes into in place, or None: the first argument of an ``op_`` method (and,
    with ``operators``, of an ``op_`` function, an in-place operator or item assignment), or its ``out=``
    argument."""
    if n.op not in ("call_method", "call_function"):
        return None
    if "out" in n.kwargs:
        return n.kwargs["out"]
    name = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", "")
    inplace = name.endswith("_") and not name.endswith("__") and (operators or n.op == "call_method")
    if (inplace or (operators and n.target in _INPLACE_OPERATORS)) and n.args:
        return n.args[0]
    return None


def may_write_inputs(gm: torch.fx.GraphModule) -> Optional[str]:
    """The first node of a Dynamo graph that may write into a tensor in place (written_value), as text; None if
    there is none."""
    return next((n.format_node() for n in gm.graph.nodes if written_value(n) is not None), None)


def resolving(fn: Callable, indices: List[int]) -> Callable:
    """``fn`` called with the inputs at ``indices`` replaced by their negated copies (``resolve_neg()``)."""

    def run(*args):
        args = list(args)
        for i in indices:
            args[i] = args[i].resolve_neg()
        return fn(*args)

    return run
