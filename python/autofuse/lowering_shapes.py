"""Symbolic sizes between torch and Autofuse: sympy expressions (Dynamo's SymInts) to IR size text and to Python.

Dynamo describes dynamic sizes with sympy expressions over symbols such as ``s77``. The Autofuse IR writes sizes as
text (``"s0*2"``, ``"floordiv(s0, 2)"``, see src/autofuse/ir/symbolic.h). This module renames Dynamo's symbols to
``s0, s1, ...`` in order of first appearance and prints expressions in both the IR's syntax and Python's (the
generated runner evaluates output sizes from the symbols it reads off its inputs).
"""

from __future__ import annotations

from typing import Dict, Union

import sympy
import torch

SizeLike = Union[int, sympy.Expr]


class UnsupportedSize(Exception):
    """A size expression the IR cannot express (e.g. a non-integer power, an unbacked symbol)."""


def as_size(s) -> SizeLike:
    """A torch size (int or SymInt) as an int, or a sympy expression when it is symbolic."""
    if isinstance(s, int):
        return s
    if isinstance(s, torch.SymInt):
        expr = s.node.expr
        if isinstance(expr, sympy.Integer) or (hasattr(expr, "is_number") and expr.is_number):
            return int(expr)
        return expr
    if isinstance(s, sympy.Expr):
        return int(s) if s.is_number else s
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
        from torch.utils._sympy.functions import FloorDiv, Mod, PythonMod

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
        if isinstance(e, sympy.Min) and len(args) == 2:
            return f"min({args[0]}, {args[1]})"
        if isinstance(e, sympy.Max) and len(args) == 2:
            return f"max({args[0]}, {args[1]})"
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
