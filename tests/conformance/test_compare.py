"""The tolerance policy of compare.py, tested on hand-made values: what it must accept and what it must reject."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest
import torch

_spec = importlib.util.spec_from_file_location("af_conformance_compare_t", pathlib.Path(__file__).parent / "compare.py")
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)

NAN, INF = float("nan"), float("inf")

#: (name, ours, eager, fp64 reference or None, must pass) for float16
LOWP_CASES = [
    ("equal incl. NaN and -0.0", [1.0, NAN, -0.0], [1.0, NAN, -0.0], None, True),
    ("within f16 tolerance of eager", [1.0005], [1.0], None, True),
    ("outside tolerance, no reference", [1.1], [1.0], None, False),
    ("NaN where eager is a number", [NAN], [1.0], None, False),
    ("zero of the other sign, no reference", [0.0], [-0.0], None, False),
    ("closer to fp64 than eager", [1.5], [1.25], [1.49], True),
    ("further from fp64 than eager", [1.0], [1.25], [1.3], False),
    ("eager overflowed to inf, ours near fp64", [35000.0], [INF], [35000.0], True),
    ("eager NaN, ours far from fp64", [100.0], [NAN], [35000.0], False),
    ("ours NaN, fp64 finite", [NAN], [INF], [5.0], False),
    ("zero with the reference's sign", [-0.0], [0.0], [-1e-30], True),
    ("zero against the reference's sign", [0.0], [-0.0], [-1e-30], False),
]


@pytest.mark.parametrize("name,ours,eager,ref,ok", LOWP_CASES, ids=[c[0] for c in LOWP_CASES])
def test_lowp_rule(name, ours, eager, ref, ok):
    a, e = torch.tensor(ours, dtype=torch.float16), torch.tensor(eager, dtype=torch.float16)
    r = None if ref is None else torch.tensor(ref, dtype=torch.float64)
    if ok:
        compare.assert_same(a, e, r, what=name)
    else:
        with pytest.raises(AssertionError):
            compare.assert_same(a, e, r, what=name)


def test_float32_exact_nan_and_zero_sign():
    e = torch.tensor([1.0, NAN, -0.0])
    compare.assert_same(e.clone(), e)
    with pytest.raises(AssertionError):
        compare.assert_same(torch.tensor([1.0, 2.0, -0.0]), e)
    with pytest.raises(AssertionError):
        compare.assert_same(torch.tensor([1.0, NAN, 0.0]), e)
    compare.assert_same(torch.tensor([1.0, NAN, 0.0]), e, signed_zeros=False)


def test_integers_exact():
    with pytest.raises(AssertionError):
        compare.assert_same(torch.tensor([1, 2]), torch.tensor([1, 3]))


#: (name, ours, eager, fp64 reference, must pass with normwise=True) for float16 gradients; every case fails the
#: element-wise rule (first entry: ours 6 ulps off where eager is 2 ulps off)
NORMWISE_CASES = [
    ("ours worse on a small entry, better on the tensor", [0.00998, 7.49], [0.01001, 7.48], [0.010028, 7.4915], True),
    ("ours worse on the tensor", [0.00998, 7.46], [0.01001, 7.49], [0.010028, 7.4915], False),
    ("ours NaN where fp64 is finite", [NAN, 7.49], [0.01001, 7.48], [0.010028, 7.4915], False),
    ("ours inf where fp64 is finite", [INF, 7.49], [0.01001, 7.48], [0.010028, 7.4915], False),
]


@pytest.mark.parametrize("name,ours,eager,ref,ok", NORMWISE_CASES, ids=[c[0] for c in NORMWISE_CASES])
def test_normwise_gradient_rule(name, ours, eager, ref, ok):
    """compare.py's norm-wise gradient rule: accepted only when ours' largest error over the tensor is no larger
    than eager's, and never with a NaN/inf where fp64 is finite; the element-wise rule alone rejects all four."""
    t = lambda v: torch.tensor(v, dtype=torch.float16)  # noqa: E731
    r = torch.tensor(ref, dtype=torch.float64)
    with pytest.raises(AssertionError):
        compare.assert_same(t(ours), t(eager), r, signed_zeros=False)
    n0 = len(compare.NORMWISE_ACCEPTED)
    if ok:
        compare.assert_same(t(ours), t(eager), r, signed_zeros=False, normwise=True)
        assert len(compare.NORMWISE_ACCEPTED) == n0 + 1
    else:
        with pytest.raises(AssertionError):
            compare.assert_same(t(ours), t(eager), r, signed_zeros=False, normwise=True)
