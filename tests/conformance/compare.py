"""Comparison helpers shared by the conformance suites: eager vs compiled, with an fp64 reference for fp16/bf16.

Policy (docs/precision.md): integers, bool and comparison results are exact; float32/float64 use
``torch.testing.assert_close``'s default tolerances for the dtype (float32: rtol 1.3e-6, atol 1e-5; float64: rtol 1e-7,
atol 1e-7) scaled by ``FLOAT_TOL_SCALE`` for ops whose kernels use vectorized math (SLEEF, 1-ulp functions);
NaN positions and the sign of zero results must match eager. For float16/bfloat16 a result passes when it is within the
dtype's default tolerance of eager, or when it is at least as close to the float64 reference as eager's result
(plus one unit in the last place of the low-precision dtype): our kernels keep fp32 intermediates and round once at
the output, which can be more accurate than eager's rounding after every op.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch.utils._pytree import tree_leaves

LOWP = (torch.float16, torch.bfloat16)
#: Tolerance multiplier for float32/float64 (vectorized math functions differ from ATen's by up to a few ulp).
FLOAT_TOL_SCALE = 4.0
_DEFAULT_TOL = {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5), torch.float32: (1.3e-6, 1e-5),
                torch.float64: (1e-7, 1e-7)}


def _lowp_vs_reference(actual: torch.Tensor, expected: torch.Tensor, ref: torch.Tensor, what: str) -> None:
    """Accept ``actual`` if it is no further from the fp64 reference ``ref`` than eager (+1 ulp of its dtype)."""
    a, e, r = actual.double(), expected.double(), ref.double()
    eps = torch.finfo(actual.dtype).eps
    tiny = torch.finfo(actual.dtype).tiny
    ulp = eps * r.abs().clamp_min(tiny)
    err_a = (a - r).abs()
    err_e = (e - r).abs()
    both_nan = a.isnan() & e.isnan()
    same_inf = (a == e) & a.isinf()
    ok = both_nan | same_inf | (err_a <= err_e + ulp)
    if not bool(ok.all()):
        i = int((~ok).flatten().nonzero()[0])
        raise AssertionError(
            f"{what}: {int((~ok).sum())} of {ok.numel()} elements are further from the fp64 reference than eager; "
            f"first at flat index {i}: ours {a.flatten()[i].item()!r}, eager {e.flatten()[i].item()!r}, "
            f"fp64 {r.flatten()[i].item()!r}")


def assert_same(actual: Any, expected: Any, ref64: Optional[Any] = None, what: str = "output",
                tol_scale: float = FLOAT_TOL_SCALE, signed_zeros: bool = True) -> None:
    """Compare two pytrees of results leaf by leaf (shapes, dtypes, values per the policy above).

    ``signed_zeros=False`` skips the sign-of-zero check (for amax/amin of a mix of -0.0 and +0.0, where the zero
    eager returns depends on its vectorized reduction order)."""
    a_leaves, e_leaves = tree_leaves(actual), tree_leaves(expected)
    r_leaves = tree_leaves(ref64) if ref64 is not None else [None] * len(e_leaves)
    assert len(a_leaves) == len(e_leaves), f"{what}: {len(a_leaves)} results, eager gives {len(e_leaves)}"
    if len(r_leaves) != len(e_leaves):
        r_leaves = [None] * len(e_leaves)
    for k, (a, e, r) in enumerate(zip(a_leaves, e_leaves, r_leaves)):
        name = f"{what}[{k}]"
        if not isinstance(e, torch.Tensor):
            if isinstance(e, float) and e != e:
                assert a != a, f"{name}: {a!r}, eager NaN"
            else:
                assert a == e, f"{name}: {a!r}, eager {e!r}"
            continue
        assert isinstance(a, torch.Tensor), f"{name}: got {type(a).__name__}, eager a tensor"
        assert a.shape == e.shape, f"{name}: shape {tuple(a.shape)}, eager {tuple(e.shape)}"
        assert a.dtype == e.dtype, f"{name}: dtype {a.dtype}, eager {e.dtype}"
        if not e.is_floating_point():
            torch.testing.assert_close(a, e, rtol=0, atol=0, msg=lambda m: f"{name} (exact): {m}")
            continue
        nan_a, nan_e = a.isnan(), e.isnan()
        assert torch.equal(nan_a, nan_e), f"{name}: NaN positions differ from eager"
        zeros = (e == 0) & (a == 0)
        if signed_zeros and bool(zeros.any()):
            assert torch.equal(torch.signbit(a[zeros]), torch.signbit(e[zeros])), f"{name}: sign of zero differs"
        rtol, atol = _DEFAULT_TOL[e.dtype]
        if e.dtype in LOWP:
            try:
                torch.testing.assert_close(a, e, rtol=rtol, atol=atol, equal_nan=True)
            except AssertionError:
                if r is None or not isinstance(r, torch.Tensor) or r.shape != e.shape:
                    raise
                _lowp_vs_reference(a, e, r, name)
        else:
            torch.testing.assert_close(a, e, rtol=rtol * tol_scale, atol=atol * tol_scale, equal_nan=True,
                                       msg=lambda m: f"{name}: {m}")
