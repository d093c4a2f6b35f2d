"""Slices by a dynamic int argument (``x[n:]``, ``x[:n]``) whose value may be negative (review 16c).

Under dynamic=True, or automatic dynamic once ``n`` changes, ``n`` reaches the graph as a SymInt argument; its symbol
is then both given by the program (``args[i]``) and part of a kernel input's size (``-s1`` for ``x[n:]``,
``s0 + 9`` for ``x[:n]``). The kernel used to solve that size for the symbol, reject the negative answer and raise
IRError ("size symbol s1 is not determined by the input sizes") at run time, even in non-strict mode. Here every run,
under strict mode (fallbacks raise), matches eager exactly: positive, negative and zero ``n``, and ``|n|`` beyond the
size.
"""
import warnings

import pytest
import torch

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")


def tail(x, n):
    return x[n:] * 2


def head(x, n):
    return x[:n] * 2


def both(x, n):
    return x[n:].sum() + (x[:n] * 3).sum()  # whole numbers: exact in any summation order


def rotate(x, n):
    """A concat kernel: its segments read [s0, -s2] and [s0, s1 + s2] for n = s2 < 0."""
    return torch.cat([x[:, n:], x[:, :n]], dim=1) * 2 + 1


NS = [-2, -5, 3, 4, 0, -3, 12, -12, 8, -9, 9, 1, -1]


@pytest.mark.parametrize("dynamic", [True, None], ids=["dynamic_true", "automatic_dynamic"])
@pytest.mark.parametrize("fn", [tail, head, both, rotate])
def test_slice_by_int_argument_of_any_sign(monkeypatch, fn, dynamic):
    """Every ``n`` of NS (x with 9 elements along the sliced dim) matches eager; none raises or falls back (strict
    mode)."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    x = torch.arange(36.0).reshape(4, 9) if fn is rotate else torch.arange(9.0)
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="autofuse", dynamic=dynamic)
    start = len(backend.RECORDS)
    for n in NS:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = compiled(x, n)
        torch.testing.assert_close(got, fn(x, n), rtol=0, atol=0, msg=lambda m: f"n={n}: {m}")
    recs = backend.RECORDS[start:]
    assert recs and all(r.mode == "kernels" for r in recs), [(r.name, r.mode, r.reason) for r in recs]
    torch._dynamo.reset()


def test_given_symbol_disagreeing_with_an_input_size_is_a_clear_error():
    """A kernel whose input size ``-s1`` determines s1 (for s1 <= 0) takes the caller's s1 and checks the size against
    it: a value that disagrees is an error naming the input, its size and the expected one. (The check is part of
    binding; a call with an operand layout already launched replays that launch, Kernel.run's cache, without it.)"""
    from autofuse import _core as core  # type: ignore

    g = core.Graph("k")
    v = g.add_input("a", "f32", ["-s1"])
    g.set_outputs([g.add("mul", [v, v], {}, "m")])
    k = core.Kernel.compile(g)
    a = torch.arange(3.0)
    out = torch.empty(3)
    with pytest.raises(core.IRError, match=r"dim 0 has size 3, expected -s1 = 2"):
        k.run([a], [out], {"s1": -2})
    k.run([a], [out], {"s1": -3})
    torch.testing.assert_close(out, a * a, rtol=0, atol=0)
    b = torch.arange(4.0)
    out = torch.empty(4)
    k.run([b], [out], {"s1": -4, "s7": 5})  # a symbol the kernel does not use is ignored
    torch.testing.assert_close(out, b * b, rtol=0, atol=0)
