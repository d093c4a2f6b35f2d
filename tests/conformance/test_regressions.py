"""Regressions found by the full OpInfo run (``make conformance``), each checked on the one sample that failed, so the
fast shard in ``make test`` keeps them fixed. Every test names the OpInfo test that found it."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest
import torch

from autofuse import backend

_spec = importlib.util.spec_from_file_location("af_conformance_compare_r", pathlib.Path(__file__).parent / "compare.py")
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)

native = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel path (_core.Kernel)")


def _check(fn, *args):
    """fn compiled (fullgraph, strict) vs eager; at least one kernel must have run."""
    torch._dynamo.reset()
    n0 = len(backend.RECORDS)
    got = torch.compile(fn, backend="autofuse", dynamic=False, fullgraph=True)(*args)
    compare.assert_same(got, fn(*args))
    records = backend.RECORDS[n0:]
    assert records and all(r.mode == "kernels" for r in records) and sum(len(r.kernels) for r in records) > 0


@native
@pytest.mark.parametrize("alpha", [False, True])
def test_bool_add_alpha(alpha):
    """OpInfo add-bool-forward sample 10: ``torch.add(x, y, alpha=False)`` on bool is ``x`` in eager; the lowering
    ignored alpha and returned ``x | y``. The broadcast to y's shape must stay."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(1, 5, generator=g) < 0.5
    y = torch.rand(4, 5, generator=g) < 0.5
    _check(lambda a, b: torch.add(a, b, alpha=alpha), x, y)


@native
def test_backward_graph_without_computed_outputs():
    """OpInfo norm-bfloat16-backward: the backward graph of ``norm(x, p=0)`` computes nothing (its gradient is a
    constant zero tensor), and fusing it raised "fuse: graph ... has no outputs"; such a graph now has no steps."""
    x = torch.randn(5, 5, requires_grad=True)
    x_eager = x.detach().clone().requires_grad_(True)
    torch._dynamo.reset()
    n0 = len(backend.RECORDS)
    torch.compile(lambda t: torch.norm(t, p=0), backend="autofuse", fullgraph=True)(x).backward()
    torch.norm(x_eager, p=0).backward()
    compare.assert_same(x.grad, x_eager.grad)
    kinds = [r.kind for r in backend.RECORDS[n0:]]
    assert kinds == ["forward", "backward"] and all(r.mode == "kernels" for r in backend.RECORDS[n0:])


@native
@pytest.mark.parametrize("name", ["max", "min"])
def test_bool_max_min_with_dim(name):
    """OpInfo min.reduction_with_dim-bool-forward: ``torch.min(x, dim)`` on bool failed to lower ("argmin: does not
    accept bool inputs"); the index is now taken on a uint8 copy."""
    g = torch.Generator().manual_seed(1)
    x = torch.rand(4, 6, generator=g) < 0.5
    f = getattr(torch, name)
    _check(lambda t: tuple(f(t, 1)), x)
