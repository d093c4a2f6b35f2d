"""Comparison helpers shared by the conformance suites: eager vs compiled, with an fp64 reference for fp16/bf16.

This file is the one place where the tolerances of the conformance suites live (docs/precision.md explains them):

* Integers, bool, comparison results and indices: exact.
* float32/float64: ``torch.testing.assert_close``'s default tolerance for the dtype (float32: rtol 1.3e-6, atol 1e-5;
  float64: rtol 1e-7, atol 1e-7) times ``FLOAT_TOL_SCALE`` (4: our vectorized math (SLEEF, 1-ulp functions) differs
  from ATen's by up to a few ulp per op; the hard-input chains pass 64 for chains of up to 5 such ops). NaN positions
  and the sign of zero results must equal eager's.
* float16/bfloat16 (``LOWP``): an element passes when it equals eager's, or is within the dtype's default tolerance of
  eager (f16: rtol 1e-3, atol 1e-5; bf16: rtol 1.6e-2, atol 1e-5), or (with a float64 reference: the same program on
  the inputs upcast to float64) when it is no further from the reference than eager's result plus one ulp of the dtype
  at the reference value. The last rule exists because kernels compute f16/bf16 in float32 between ops and round at
  their outputs (the default precision policy), which is often more accurate than eager's rounding after every op;
  it never accepts a result worse than eager's. NaN and inf count as infinitely far from a finite reference, so ours
  may be finite where eager's per-op rounding overflowed (f16 max is 65504) only if ours is close to the reference,
  and ours may never be NaN where eager is not. A zero of the wrong sign passes only with the reference's sign.
  Without a reference, NaN positions and signed zeros must match eager exactly.
* Gradients (``normwise=True``, f16/bf16 with a reference only): a gradient tensor that fails the element-wise rule
  still passes when, over the whole tensor, ours is no further from the reference than eager is (largest absolute
  error, plus one ulp of the dtype at the largest reference value), and every element ours gets NaN/inf agrees with
  the rule above. Reason: a gradient entry is often a sum or difference of larger terms (the gradient of a broadcast
  input sums over the broadcast dims; var's gradient has x - mean; a backward decomposition adds a mean term), so its
  rounding error is bounded by u * sum|term|, not by an ulp of the entry itself; on such entries eager's roundings and
  ours scatter by several ulps of the entry either way, and element-wise "no worse than eager" is decided by chance
  (measured on atan2/var_mean f16/bf16 backward in the 2026-11-29 full run: ours max error 0.5-0.8 u*sum|term|, eager's
  0.8-1.3). The tensor's largest error is the measure that does not depend on the chance; ours may never exceed
  eager's there. Each acceptance is recorded in ``NORMWISE_ACCEPTED`` (the OpInfo suite logs them per sample).
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


def _dist(v: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """|v - r| in float64 with NaN == NaN and equal infinities at distance 0, NaN vs a number at distance inf."""
    d = (v - r).abs()
    d = torch.where(v == r, torch.zeros_like(d), d)
    d = torch.where(v.isnan() & r.isnan(), torch.zeros_like(d), d)
    return torch.where(d.isnan(), torch.full_like(d, float("inf")), d)


#: Names of the gradient tensors that failed the element-wise rule and passed the norm-wise one (see the docstring).
NORMWISE_ACCEPTED: list = []


def _normwise_ok(a: torch.Tensor, e: torch.Tensor, r: torch.Tensor, ok: torch.Tensor, dtype: torch.dtype) -> bool:
    """The gradient rule of the module docstring: every failing element finite in ours and the reference, and ours'
    largest error against the reference no larger than eager's plus one ulp at the largest reference value."""
    bad = ~ok
    if not bool((a[bad].isfinite() & r[bad].isfinite()).all()):
        return False
    fin = r.isfinite()
    err_a = float(_dist(a[fin], r[fin]).max())
    err_e = float(_dist(e[fin], r[fin]).max())
    fi = torch.finfo(dtype)
    return err_a <= err_e + fi.eps * max(float(r[fin].abs().max()), fi.tiny)


def _lowp_check(actual: torch.Tensor, expected: torch.Tensor, ref: Optional[torch.Tensor], what: str,
                normwise: bool = False) -> None:
    """The float16/bfloat16 rule of the module docstring, element by element (and for ``normwise`` gradients over
    the whole tensor); raises AssertionError naming the first bad element (ours, eager, fp64)."""
    a, e = actual.double(), expected.double()
    rtol, atol = _DEFAULT_TOL[actual.dtype]
    nan_a, nan_e = a.isnan(), e.isnan()
    both_zero = (a == 0) & (e == 0)
    same = ((a == e) & (torch.signbit(a) == torch.signbit(e))) | (nan_a & nan_e)
    near = ~nan_a & ~nan_e & ~both_zero & ((a - e).abs() <= atol + rtol * e.abs())
    ok = same | near
    if ref is not None and isinstance(ref, torch.Tensor) and ref.shape == actual.shape:
        r = ref.double()
        fi = torch.finfo(actual.dtype)
        ulp = fi.eps * r.abs().clamp_min(fi.tiny)
        zero_sign_ok = (a != 0) | (torch.signbit(a) == torch.signbit(r))
        better = (_dist(a, r) <= _dist(e, r) + ulp) & (~nan_a | r.isnan()) & zero_sign_ok
        # where eager is NaN/inf but the reference is finite (eager's per-op rounding overflowed), "no worse than
        # eager" says nothing: ours must then be within the dtype's tolerance of the reference itself
        eager_lost = ~e.isfinite() & r.isfinite()
        better &= ~eager_lost | ((a - r).abs() <= atol + rtol * r.abs() + ulp)
        ok |= better
        if normwise and not bool(ok.all()) and actual.numel() > 0 and _normwise_ok(a, e, r, ok, actual.dtype):
            NORMWISE_ACCEPTED.append(what)
            return
    if not bool(ok.all()):
        i = int((~ok).flatten().nonzero()[0])
        ref_txt = "" if ref is None else f", fp64 {ref.double().flatten()[i].item()!r}"
        raise AssertionError(
            f"{what}: {int((~ok).sum())} of {ok.numel()} elements fail the {actual.dtype} rule (compare.py); "
            f"first at flat index {i}: ours {a.flatten()[i].item()!r}, eager {e.flatten()[i].item()!r}{ref_txt}")


def assert_same(actual: Any, expected: Any, ref64: Optional[Any] = None, what: str = "output",
                tol_scale: float = FLOAT_TOL_SCALE, signed_zeros: bool = True, normwise: bool = False) -> None:
    """Compare two pytrees of results leaf by leaf (shapes, dtypes, values per the policy above).

    ``signed_zeros=False`` skips the sign-of-zero check (for amax/amin of a mix of -0.0 and +0.0, where the zero
    eager returns depends on its vectorized reduction order). ``normwise=True`` (gradients) adds the norm-wise rule
    of the module docstring for f16/bf16 leaves with a reference."""
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
        if e.dtype in LOWP:
            if not signed_zeros:  # the caller says the sign of a zero result is undefined here: take eager's
                a = torch.where((a == 0) & (e == 0), e, a)
            _lowp_check(a, e, r, name, normwise=normwise)
            continue
        nan_a, nan_e = a.isnan(), e.isnan()
        assert torch.equal(nan_a, nan_e), f"{name}: NaN positions differ from eager"
        zeros = (e == 0) & (a == 0)
        if signed_zeros and bool(zeros.any()):
            assert torch.equal(torch.signbit(a[zeros]), torch.signbit(e[zeros])), f"{name}: sign of zero differs"
        rtol, atol = _DEFAULT_TOL[e.dtype]
        torch.testing.assert_close(a, e, rtol=rtol * tol_scale, atol=atol * tol_scale, equal_nan=True,
                                   msg=lambda m: f"{name}: {m}")
