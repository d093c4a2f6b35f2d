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
SAMPLE_XFAILS: Dict[Tuple[str, str, str, str, int], str] = {
    ("nn.functional.layer_norm", "", "float32", "backward", 2): (
        "layer_norm over a normalized shape of (1,) (one element per row): x - mean(x) is exactly 0, so the input's "
        "gradient is exactly 0 (fp64: 0; weight's: 2.5e-14). Ours is 0 and 0; eager's fused backward returns "
        "1.2207e-4 and -9.4e-6: its x - mean keeps a float32 rounding residue that rsqrt(var + eps) = rsqrt(1e-5) = "
        "316 amplifies. The float32 comparison is with eager only (no fp64 reference), so it fails on eager's error "
        "(found 14:58 in the full run)"),
}

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
