"""Eager-torch evaluation of lowered IR nodes: the executable meaning of the lowering, for tests and as a stand-in.

``evaluate(lg, args)`` runs a LoweredGraph with one eager torch call per IR node. Tests compare it with the FX
graph's own result to check the lowering itself (independently of the C++ compiler); the backend also uses
``eval_nodes`` for groups it has no compiled kernel for (when the C++ pieces are unavailable) and for Host steps.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence

import torch

from .lowering import DTYPE_TO_IR, LNode, LoweredGraph

IR_TO_DTYPE = {v: k for k, v in DTYPE_TO_IR.items()}

_UNARY: Dict[str, Callable] = {
    "exp": torch.exp, "exp2": torch.exp2, "expm1": torch.expm1, "log": torch.log, "log2": torch.log2,
    "log10": torch.log10, "log1p": torch.log1p, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
    "reciprocal": torch.reciprocal, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "tanh": torch.tanh,
    "sigmoid": torch.sigmoid, "erf": torch.erf, "abs": torch.abs, "neg": torch.neg, "relu": torch.relu,
    "floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc, "sign": torch.sign,
    "isnan": torch.isnan, "isinf": torch.isinf, "isfinite": torch.isfinite, "logical_not": torch.logical_not,
    "bitwise_not": torch.bitwise_not,
}
_BINARY: Dict[str, Callable] = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "floordiv": torch.floor_divide,
    "remainder": torch.remainder, "fmod": torch.fmod, "pow": torch.pow, "maximum": torch.maximum,
    "minimum": torch.minimum, "fmax": torch.fmax, "fmin": torch.fmin, "atan2": torch.atan2, "eq": torch.eq,
    "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
    "logical_and": torch.logical_and, "logical_or": torch.logical_or, "logical_xor": torch.logical_xor,
    "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor,
    "shl": torch.bitwise_left_shift, "shr": torch.bitwise_right_shift,
}


def bind_symbols(lg: LoweredGraph, args: Sequence[Any]) -> Dict[str, int]:
    """Values of the IR symbols read off the runtime arguments."""
    return {name: int(eval(src, {"args": args})) for name, src in lg.sym_sources.items()}


def _size(lg: LoweredGraph, s, bindings: Dict[str, int]) -> int:
    return s if isinstance(s, int) else int(eval(lg.symbols.py(s), {}, bindings))


def _reduce(n: LNode, x: torch.Tensor) -> torch.Tensor:
    axes: List[int] = list(n.attrs["axes"]) or list(range(x.dim()))
    keep = n.attrs["keepdim"]
    op = n.op
    if x.dim() == 0:
        axes = []
    if op in ("sum", "mean", "amax", "amin", "any", "all"):
        if not axes:
            r = {"sum": torch.sum, "mean": torch.mean, "amax": torch.amax, "amin": torch.amin,
                 "any": torch.any, "all": torch.all}[op](x)
            return r.reshape([1] * x.dim()) if keep else r
        fn = {"sum": torch.sum, "mean": torch.mean, "amax": torch.amax, "amin": torch.amin,
              "any": torch.any, "all": torch.all}[op]
        return fn(x, dim=axes, keepdim=keep)
    if op == "var":
        return torch.var(x, dim=axes or None, correction=n.attrs["correction"], keepdim=keep)
    if op == "prod":
        r = x
        for a in sorted(axes, reverse=True):
            r = torch.prod(r, dim=a, keepdim=True)
        if not keep:
            r = r.reshape([s for i, s in enumerate(x.shape) if i not in axes])
        return r
    if op in ("argmax", "argmin"):
        fn = torch.argmax if op == "argmax" else torch.argmin
        if x.dim() == 0:
            return torch.zeros((), dtype=torch.int64)
        return fn(x, dim=axes[0], keepdim=keep)
    raise NotImplementedError(op)


def eval_node(lg: LoweredGraph, i: int, env: Dict[int, Any], bindings: Dict[str, int],
              run_extern: Callable[[LNode, Dict[int, Any]], Any]) -> Any:
    """Evaluate IR node ``i`` with eager torch, reading its inputs from ``env`` (LNode index -> tensor)."""
    n = lg.nodes[i]
    ins = [env[j] for j in n.inputs]
    dt = n.dtype
    if n.op in _UNARY:
        return _UNARY[n.op](ins[0])
    if n.op in _BINARY:
        return _BINARY[n.op](ins[0], ins[1])
    if n.op == "constant":
        return torch.tensor(n.attrs["value"], dtype=dt)
    if n.op == "full":
        return torch.full([_size(lg, s, bindings) for s in n.shape], n.attrs["value"], dtype=dt)
    if n.op == "iota":
        length = _size(lg, n.attrs["length"], bindings)
        start, step = n.attrs["start"], n.attrs["step"]
        return torch.arange(start, start + length * step, step, dtype=dt)[:length]
    if n.op == "cast":
        return ins[0].to(dt)
    if n.op == "fma":
        # a * b + c rounded once: eager's addcmul with value 1 is exactly that on CPU (fma(1 * t1, t2, self), in
        # float32 for float16 / bfloat16; docs/precision.md)
        return torch.addcmul(ins[2], ins[0], ins[1])
    if n.op == "where":
        return torch.where(ins[0], ins[1], ins[2])
    if n.op == "clamp":
        return torch.clamp(ins[0], n.attrs.get("min"), n.attrs.get("max"))
    if n.op == "broadcast_to":
        return ins[0].expand([_size(lg, s, bindings) for s in n.shape])
    if n.op == "reshape":
        return ins[0].reshape([_size(lg, s, bindings) for s in n.shape])
    if n.op == "permute":
        return ins[0].permute(list(n.attrs["dims"]))
    if n.op == "slice":
        a = n.attrs
        index = (slice(None),) * a["axis"] + (
            slice(_size(lg, a["start"], bindings), _size(lg, a["stop"], bindings), a["step"]),)
        return ins[0][index]
    if n.op == "concat":
        return torch.cat(ins, n.attrs["axis"])
    if n.op in ("sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "var", "any", "all"):
        return _reduce(n, ins[0]).to(dt)
    if n.op == "extern":
        return run_extern(n, env)
    raise NotImplementedError(f"reference evaluation of IR op {n.op}")


def evaluate(lg: LoweredGraph, args: Sequence[Any], run_extern: Callable[[LNode, Dict[int, Any]], Any]) -> list:
    """Run the whole lowered graph with eager torch; returns the FX graph's outputs."""
    bindings = bind_symbols(lg, args)
    inputs = {v: k for k, v in lg.arg_nodes.items()}
    env: Dict[int, Any] = {}
    for i, n in enumerate(lg.nodes):
        if n.op == "input":
            env[i] = lg.const_inputs[i] if i in lg.const_inputs else args[inputs[i]]
        else:
            env[i] = eval_node(lg, i, env, bindings, run_extern)
    out = []
    for kind, v in lg.outputs:
        if kind == "node":
            out.append(env[v])
        elif kind == "sym":
            out.append(int(eval(v, {"args": args}, bindings)))
        else:
            out.append(v)
    return out
