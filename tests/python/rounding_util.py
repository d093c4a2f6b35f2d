"""Shared by the eager-bits rounding tests (test_addc_rounding.py, test_lerp_rounding.py): compile and run through
the autofuse backend, and compare results element for element with eager's."""

from __future__ import annotations

import torch

from autofuse import backend


def compiled(fn, *args):
    """``fn(*args)`` compiled by the autofuse backend (static shapes, fresh Dynamo state); asserts that at least one
    native kernel ran."""
    torch._dynamo.reset()
    n0 = len(backend.RECORDS)
    got = torch.compile(fn, backend="autofuse", dynamic=False)(*args)
    assert any(s.kind == "kernel" for r in backend.RECORDS[n0:] for s in r.steps), "expected a kernel"
    return got


def bits_equal(got, want, what, nan_equal: bool = False):
    """Asserts equal dtype, shape and elements; with ``nan_equal``, NaN where eager has NaN also counts as equal (a
    NaN's payload is not compared)."""
    assert got.dtype == want.dtype and got.shape == want.shape, what
    bad = got != want
    if nan_equal:
        bad &= ~(got.isnan() & want.isnan())
    assert not bool(bad.any()), (f"{what}: {int(bad.sum())} of {bad.numel()} differ, e.g. ours "
                                 f"{got[bad][:4].tolist()} eager {want[bad][:4].tolist()}")
