"""Symbolic sizes between torch and Autofuse: sympy expressions (Dynamo's SymInts) to IR size text and to Python.

Dynamo describes dynamic sizes with sympy expressions over symbols such as ``s77``. The Autofuse IR writes sizes as
text (``"s0*2"``, ``"floordiv(s0, 2)"``, see src/autofuse/ir/symbolic.h). This module renames Dynamo's symbols to
``s0, s1, ...`` in order of first appearance and prints expressions in both the IR's syntax and Python's (the
generated runner evaluates output sizes from the symbols it reads off its inputs).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Dict, Iterator, List, Optional, Union

import sympy
import torch

SizeLike = Union[int, sympy.Expr]


class UnsupportedSize(Exception):
    """A size expression the IR cannot express (e.g. a non-integer power, an unbacked symbol)."""


class SizeCanon:
    """One written form for the sizes Dynamo's shape environment proves equal.

    Dynamo gives every input dimension its own symbol and records what tracing learned about them as guards: a
    causal-LM loss flattens the logits ``[s0, s1, V]`` to ``[s0*s1, V]`` and the labels ``[s2, s3]`` to ``[s2*s3]``,
    and the guard ``Eq(s0*s1, s2*s3)`` says the two agree. The IR compares sizes by their form, so without that fact
    the loss's backward ``exp(log_probs) * grad.sum(1, keepdim=True)`` (``[s0*s1, V]`` times ``[s2*s3, 1]``) did not
    broadcast. Every symbolic size the lowering reads goes through ``canonical``: the first form seen (graph order, so
    the inputs' forms first) stands for all later ones the shape environment proves equal to it (its guards and
    axioms, ``ShapeEnv._maybe_evaluate_static``; no guard is added). Only sizes with the same value at the example
    inputs are compared, which keeps the number of proofs small."""

    def __init__(self) -> None:
        self.env = None
        self._memo: Dict[sympy.Expr, sympy.Expr] = {}
        self._by_hint: Dict[Optional[int], List[sympy.Expr]] = {}

    def canonical(self, e: sympy.Expr, env=None) -> sympy.Expr:
        """``e``, or the earlier size the shape environment ``env`` (the first one given when None) proves equal; its
        Min / Max settled where the shape environment proves the winner (_settle_min_max)."""
        if env is not None and self.env is None:
            self.env = env
        got = self._memo.get(e)
        if got is not None:
            return got
        key = e
        out = e = self._settle_min_max(e)
        hint = self._hint(e)
        if self.env is not None and hint is not None and not e.is_number:
            for c in self._by_hint.get(hint, ()):
                if self._proven_equal(e, c):
                    out = c
                    break
            if out is e:
                self._by_hint.setdefault(hint, []).append(e)
        self._memo[key] = out
        return out

    def _settle_min_max(self, e: sympy.Expr) -> sympy.Expr:
        """``e`` with every Min / Max whose winner the shape environment proves replaced by that argument: torch's
        contiguous stride ``Max(1, s//2)`` of a pooled dim is ``s//2`` where the guards give ``s >= 2``. Others stay
        (the IR has min and max)."""
        from torch.utils._sympy.functions import Max as TorchMax, Min as TorchMin

        kinds = (sympy.Min, sympy.Max, TorchMin, TorchMax)
        if self.env is None or not e.has(*kinds):
            return e
        subs = {}
        for m in sympy.postorder_traversal(e):
            if not isinstance(m, kinds):
                continue
            args = [a.xreplace(subs) for a in m.args]
            rel = sympy.Le if isinstance(m, (sympy.Min, TorchMin)) else sympy.Ge
            for a in args:
                if all(b is a or self._proven(rel(a, b)) for b in args):
                    subs[m] = a
                    break
        return e.xreplace(subs) if subs else e

    def _hint(self, e: sympy.Expr) -> Optional[int]:
        if self.env is None:
            return None
        values = getattr(self.env, "backed_var_to_val", None)  # torch 2.13; var_to_val before
        if values is None:
            values = getattr(self.env, "var_to_val", {})
        try:
            v = e.xreplace(values)
            return int(v) if v.is_Integer else None
        except (TypeError, ValueError, AttributeError):
            return None

    def _proven_equal(self, a: sympy.Expr, b: sympy.Expr) -> bool:
        return self._proven(sympy.Eq(a, b))

    def _proven(self, fact) -> bool:
        """Whether the shape environment proves ``fact`` without adding a guard."""
        if fact is sympy.true or fact is sympy.false:
            return fact is sympy.true
        try:
            r = self.env._maybe_evaluate_static(fact)
        except Exception:  # noqa: BLE001 - a private torch API: no proof, the forms stay apart
            return False
        return r is not None and bool(r == sympy.true)


_CANON: ContextVar[Optional[SizeCanon]] = ContextVar("autofuse_size_canon", default=None)


@contextmanager
def canonical_sizes(canon: SizeCanon) -> Iterator[SizeCanon]:
    """Within the block, ``as_size`` returns ``canon``'s form of every symbolic size (one graph's lowering)."""
    token = _CANON.set(canon)
    try:
        yield canon
    finally:
        _CANON.reset(token)


def as_size(s, canonical: bool = True) -> SizeLike:
    """A torch size (int or SymInt) as an int, or a sympy expression when it is symbolic. Inside
    ``canonical_sizes`` a symbolic size is written in its canonical form (``canonical=False``: as torch wrote it)."""
    if isinstance(s, int):
        return s
    env = None
    if isinstance(s, torch.SymInt):
        env = getattr(s.node, "shape_env", None)
        s = s.node.expr
    if isinstance(s, sympy.Expr):
        if s.is_number:
            return int(s)
        canon = _CANON.get()
        if canonical and canon is not None:
            s = canon.canonical(s, env)
            return int(s) if s.is_number else s
        return s
    raise UnsupportedSize(f"size {s!r} of type {type(s).__name__} is not an int or SymInt")


class SymbolTable:
    """Renames sympy symbols to IR symbols ``s0, s1, ...`` in order of first use."""

    def __init__(self) -> None:
        self.names: Dict[sympy.Symbol, str] = {}

    def name(self, sym: sympy.Symbol) -> str:
        if sym not in self.names:
            if str(sym).startswith("u"):
                raise UnsupportedSize(f"data-dependent (unbacked) size {sym}")
            self.names[sym] = f"s{len(self.names)}"
        return self.names[sym]

    def ir(self, s: SizeLike) -> Union[int, str]:
        """IR form of a size: an int, or the IR text of an expression."""
        if isinstance(s, int):
            return s
        return self._print(s, ir=True)

    def py(self, s: SizeLike) -> str:
        """Python expression computing the size from variables named like the IR symbols."""
        if isinstance(s, int):
            return str(s)
        return self._print(s, ir=False)

    def _print(self, e: sympy.Expr, ir: bool) -> str:
        from torch.utils._sympy.functions import FloorDiv, Max as TorchMax, Min as TorchMin, Mod, PythonMod

        if e.is_Integer:
            return str(int(e))
        if e.is_Symbol:
            return self.name(e)
        args = [self._print(a, ir) for a in e.args]
        if e.is_Add:
            return "(" + " + ".join(args) + ")"
        if e.is_Mul:
            return "(" + "*".join(args) + ")"
        if e.is_Pow and e.exp.is_Integer and int(e.exp) > 0:
            base = self._print(e.base, ir)
            return "(" + "*".join([base] * int(e.exp)) + ")"
        if isinstance(e, FloorDiv):
            return f"floordiv({args[0]}, {args[1]})" if ir else f"({args[0]} // {args[1]})"
        if isinstance(e, (Mod, PythonMod)):
            return f"mod({args[0]}, {args[1]})" if ir else f"({args[0]} % {args[1]})"
        if isinstance(e, (sympy.Min, sympy.Max, TorchMin, TorchMax)) and len(args) >= 2:
            # torch's own Min/Max (torch.utils._sympy.functions, e.g. the contiguous stride Max(1, s) of a possibly
            # empty dim) are not sympy's; both may take more than two arguments: nested two-argument calls
            fn = "min" if isinstance(e, (sympy.Min, TorchMin)) else "max"
            out = args[0]
            for a in args[1:]:
                out = f"{fn}({out}, {a})"  # the IR and Python both spell it so
            return out
        raise UnsupportedSize(f"size expression {e} ({type(e).__name__}) has no IR form")


def broadcast_sizes(a, b):
    """NumPy broadcasting of two shapes given as tuples of ints / sympy expressions (torch checked they agree)."""
    ra, rb = len(a), len(b)
    r = max(ra, rb)
    out = []
    for i in range(r):
        x = a[i - (r - ra)] if i >= r - ra else 1
        y = b[i - (r - rb)] if i >= r - rb else 1
        out.append(y if (isinstance(x, int) and x == 1) else x)
    return tuple(out)
