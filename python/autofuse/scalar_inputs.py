"""Graph inputs that Dynamo passes as 0-d tensors for Python numbers, whose dtype at run time can differ from the
example the graph is compiled for.

Dynamo makes a value drawn from the ``random`` module (``random.random()``, ``random.uniform(a, b)``, the draws of a
``random.Random`` instance: placeholders ``random_value_N``, source ``RandomValueSource``) a graph input. Its graph
call converts the drawn number with ``torch._as_tensor_fullprec``: a Python float becomes a 0-d float64 tensor (an
int an int64 one). The example value it hands the backend is ``torch.tensor(value)``, whose dtype for a float is the
default dtype, float32 (torch 2.13): the graph was traced with a float32 input that is float64 at every call. The
kernels check their inputs' dtypes and refused the call (review 19: ``x * random.Random(3).random()`` raised
"IRError: kernel k0: input %arg0_1 has dtype f64, expected f32"; Inductor reads the float64's bytes as a float32 and
returns garbage, aot_eager runs ATen on the float64 tensor).

Autofuse traces such an input with the dtype it will have (``as_passed``), so the compiled graph computes what ATen
computes on the tensors Dynamo passes, i.e. what aot_eager computes: the float64 value in ops with a float tensor is
converted as ATen converts a 0-d operand, comparisons and arithmetic on the draw itself are float64 as in Python.
One difference from uncompiled eager is Dynamo's, and aot_eager has it too: an integer tensor times a drawn float is
float64 (a 0-d float64 tensor sets the result dtype) where eager, with a Python float, gives float32. Other inputs
Dynamo passes as tensors for Python numbers (a float argument under ``specialize_float=False``, NumPy scalars, random
integers) already have their run-time dtype as example. ``checked`` guards the inputs of this kind anyway: one of
another dtype than compiled for runs that call in ATen (Dynamo's graph, eagerly) with a warning, or raises under
AUTOFUSE_STRICT=1, instead of reaching a kernel with the wrong dtype.
"""

from __future__ import annotations

import logging
import warnings
from typing import Callable, Dict, List, Tuple

import torch

log = logging.getLogger("autofuse")


def _placeholders(gm: torch.fx.GraphModule) -> List[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "placeholder"]


def _passed_dtype(node: torch.fx.Node, example) -> torch.dtype:
    """The dtype Dynamo's call gives graph input ``node`` (a Python number passed as a tensor), whose example is the
    0-d tensor ``example``."""
    from torch._dynamo.source import RandomValueSource

    arg = node.meta.get("grapharg")
    if isinstance(getattr(arg, "source", None), RandomValueSource) and example.dtype.is_floating_point:
        return torch.float64  # torch._as_tensor_fullprec(float)
    return example.dtype


def as_passed(gm: torch.fx.GraphModule, example_inputs) -> Tuple[list, Dict[int, torch.dtype]]:
    """``example_inputs`` with each Python number that Dynamo passes as a 0-d tensor given the dtype it has at run
    time, and the dtypes of those inputs by position (empty when the graph has none: nothing to check at run time)."""
    examples = list(example_inputs)
    expected: Dict[int, torch.dtype] = {}
    for i, (node, ex) in enumerate(zip(_placeholders(gm), examples)):
        arg = node.meta.get("grapharg")
        if arg is None or not getattr(arg, "pass_arg_as_tensor", False) or getattr(arg, "is_tensor", True):
            continue
        if not isinstance(ex, torch.Tensor) or ex.dim() != 0:
            continue
        dt = _passed_dtype(node, ex)
        if dt != ex.dtype:
            log.info("autofuse: graph input %s (%s) is traced as %s, the dtype Dynamo passes it with", node.name,
                     type(arg.source).__name__, dt)
            examples[i] = ex.to(dt)
        expected[i] = dt
    return examples, expected


def checked(fn: Callable, gm: torch.fx.GraphModule, expected: Dict[int, torch.dtype]) -> Callable:
    """``fn`` (the compiled graph, which Dynamo calls as ``fn(*args)``, as neg_inputs.resolving assumes) preceded by
    a check of the inputs in ``expected`` (position -> dtype): a call where one has another dtype runs ``gm`` (Dynamo's graph) in ATen, with a warning
    once, or raises RuntimeError under AUTOFUSE_STRICT=1."""
    from .backend import strict

    names = [n.name for n in _placeholders(gm)]
    checks = tuple(expected.items())
    warned = [False]

    def run(*args):
        for i, dt in checks:
            a = args[i]
            if isinstance(a, torch.Tensor) and a.dtype is not dt:
                return fallback(args, f"graph input {names[i]} is {a.dtype} at run time, the graph was compiled for "
                                      f"{dt}")
        return fn(*args)

    def fallback(args, why: str):
        if strict():
            raise RuntimeError(f"autofuse: {why} (AUTOFUSE_STRICT=1)")
        msg = f"autofuse: {why}; this call runs in ATen (AUTOFUSE_STRICT=1 raises instead)"
        if not warned[0]:
            warned[0] = True
            warnings.warn(msg)
        log.info(msg)
        return gm(*args)

    return run
