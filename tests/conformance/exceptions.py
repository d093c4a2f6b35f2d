"""The one table of skips and expected failures of the conformance suites (tests/conformance, test_hard_inputs).

Key: ``(op, variant, dtype, direction)`` where ``op``/``variant`` are the OpInfo ``name``/``variant_test_name``,
``dtype`` a torch dtype name ("float32") or ``"*"`` for every dtype, ``direction`` "forward" | "backward" | "*".
Value: ``(kind, reason)`` with kind "skip" (not run: the reason says why running it proves nothing) or "xfail"
(run, known to fail; strict, so an unexpected pass is reported and the entry must be removed).

``SAMPLE_XFAILS`` narrows an expected failure to one sample input of a test: that sample's comparison with eager must
fail (strict: when it passes, the test fails and asks for the entry to be removed), and every other sample of the
test is still checked in full (a test-wide xfail would stop at the first failing sample and check none after it).

Every entry names its reason; a reviewer should be able to accept it without reading code.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

Key = Tuple[str, str, str, str]

EXCEPTIONS: Dict[Key, Tuple[str, str]] = {
}

_INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8")
for _op, _variant in (("floor_divide", ""), ("remainder", ""), ("fmod", ""), ("div", "floor_rounding"),
                      ("div", "trunc_rounding")):
    for _dt in _INT_DTYPES:
        EXCEPTIONS[(_op, _variant, _dt, "*")] = (
            "skip", "integer //, %, fmod and trunc division by a tensor stay with ATen by design: eager raises "
                    "ZeroDivisionError on a zero divisor and a kernel cannot raise (tests/python/test_int_division.py "
                    "checks the error and that a nonzero scalar divisor is still compiled; trunc division by a scalar: "
                    "test_regressions.py); every OpInfo sample of these divides by a tensor")


#: Per-sample fallbacks to ATen that the OpInfo suite accepts: (ATen op, substring of the lowering's fallback reason)
#: -> why a reviewer can accept that these samples run in ATen. Only the listed reason is accepted for that op; the
#: sample's result is still compared with eager. Any other fallback fails the sample (test_opinfo.py).
ALLOWED_FALLBACKS: Dict[Tuple[str, str], str] = {
    ("aten.argmax", "arg-reduction over a flattened tensor"): (
        "argmax/argmin with dim=None (index into the flattened tensor) is not lowered yet: the IR's arg-reductions "
        "take one axis and a flattening reshape is a host step; such samples run ATen's argmax (found 12:45)"),
    ("aten.argmin", "arg-reduction over a flattened tensor"): (
        "argmax/argmin with dim=None: see aten.argmax"),
    ("aten.var", "non-integer correction"): (
        "var/std with a fractional correction (e.g. 1.3): the IR's var takes an integer correction; such samples run "
        "ATen's var (models use 0 or 1; found 12:45)"),
    ("aten.var_mean", "non-integer correction"): ("var_mean with a fractional correction: see aten.var"),
    ("aten.cumprod", "no Autofuse lowering"): (
        "prod's backward (PyTorch's decomposition) uses cumprod, a scan; the IR has no scan op, so it runs in ATen "
        "while the rest of the gradient is fused (found 12:55)"),
}


#: Per-sample expected failures of the comparison with eager: (op, variant, dtype, direction, sample index) -> reason.
SAMPLE_XFAILS: Dict[Tuple[str, str, str, str, int], str] = {}

#: atan2 f16/bf16 backward, samples 6 and 7 (found 14:35 in the full run): (dtype, sample) -> (condition number of
#: the worst failing entry, largest error over the 50 entries in units of u * sum|term|: ours, eager's)
_ATAN2 = {("bfloat16", 6): (30, 0.56, 1.32), ("float16", 6): (11, 0.80, 1.22),
          ("bfloat16", 7): (1234, 0.52, 1.14), ("float16", 7): (607, 0.80, 0.79)}
for (_dt, _i), (_cond, _ours, _eager) in _ATAN2.items():
    SAMPLE_XFAILS[("atan2", "", _dt, "backward", _i)] = (
        f"y's gradient (y broadcast against x (10,1,5)) sums 10 terms go*-x/(x^2+y^2) of magnitude up to 0.9 that "
        f"cancel (condition number sum|term| / |sum| up to {_cond}), so rounding a term to {_dt} moves the result by "
        f"many of its ulps; the backward graph rounds 1/(x^2+y^2) to {_dt} once (it crosses from one kernel to the "
        f"next, as its two gradient sums run over different axes), eager rounds after every op. Both stay within "
        f"the error bound of a sum of rounded terms: the largest error over the 50 entries against the fp64 result, "
        f"in units of u * sum|term|, is ours {_ours}, eager's {_eager}; but on 1-3 entries eager's roundings land "
        f"closer to fp64 and the element-wise rule (no worse than eager + 1 ulp) fails")


def sample_xfail(op: str, variant: str, dtype: str, direction: str, sample: int) -> Optional[str]:
    """The reason sample ``sample`` of a test is expected to fail its comparison with eager, or None."""
    return SAMPLE_XFAILS.get((op, variant, dtype, direction, sample))


def allowed_fallback(entry: str) -> Optional[str]:
    """The reason a fallback ``"aten.op: lowering's reason"`` is accepted, or None when it must fail the sample."""
    op, _, why = entry.partition(": ")
    for (aop, sub), reason in ALLOWED_FALLBACKS.items():
        if op == aop and sub in why:
            return reason
    return None


def lookup(op: str, variant: str, dtype: str, direction: str) -> Optional[Tuple[str, str]]:
    """The (kind, reason) entry for a test, most specific first; None when the test must simply pass."""
    for key in ((op, variant, dtype, direction), (op, variant, dtype, "*"), (op, variant, "*", direction),
                (op, variant, "*", "*")):
        if key in EXCEPTIONS:
            return EXCEPTIONS[key]
    return None
