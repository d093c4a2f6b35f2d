"""lerp / lerp_ (scalar and tensor weight) give eager's bits; lerp's gradients stay eager's (session 19). Adam's
``exp_avg.lerp_(grad, 1 - beta1)``: tests/python/test_addc_rounding.py.

Eager's CPU lerp is a fused multiply-add on one of two formulas chosen by ``|weight| < 0.5``: ``fma(w, end - start,
start)`` when it holds, else ``fma(w - 1, end - start, end)``, in float32 for float16 / bfloat16 (rounded once).
torch's decomposition, which Autofuse lowered before, rounds the product: ``(w - 1) * (end - start) + end``. lerp is now
kept whole (decompositions.KEEP_FOR_ROUNDING) and lowered to the IR's ``fma`` (lowering_pointwise._lerp).

Before, elements differing from eager out of 100003 (seed below): float32 / float64 9754-38684 for the scalar weights
0.1-0.9, -0.1, -0.5, -0.7 (24555 / 24645 for the tensor weights); float16 / bfloat16 up to 735 for a scalar weight
that is inexact in float32 (0.3, 0.1, 0.7; a tensor weight of the dtype makes the products exact in float32).
"""

from __future__ import annotations

import math

import pytest
import torch

from rounding_util import bits_equal, compiled
from autofuse import backend

needs_native = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel path (_core.Kernel)")

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
FLOAT_IDS = ["f16", "bf16", "f32", "f64"]

#: Scalar weights: both formulas and the switch between them (|w| = 0.5 takes the second), 0 and 1 (exact ends),
#: negative weights (-0.7 and -1: the second formula, by |w|), extrapolation, NaN and infinities.
WEIGHTS = [0.0, 0.1, 0.3, 0.4999999, 0.5, 0.5000001, 0.7, 0.9, 1.0, 1, -0.1, -0.4999, -0.5, -0.7, -1.0, 1.5, 2.0,
           1e-30, float("nan"), float("inf"), float("-inf")]
SPECIAL = [math.nan, math.inf, -math.inf, 1.0, math.inf, 0.0, -0.0, 3.0]
SPECIAL_END = [1.0, 1.0, 2.0, math.nan, math.inf, -0.0, 0.0, -math.inf]


def _inputs(dtype, n=100003, seed=19):
    """start, end, tensor weight of n elements; NaN / inf / signed zero at the first start / end elements and every
    WEIGHTS value (and +-0.25, 0.75) at the first weights, the rest of the weights in [-1.5, 2.5). float64 values
    are drawn in float64 (float32 values would make every product exact there)."""
    g = torch.Generator().manual_seed(seed)
    wide = torch.float64 if dtype == torch.float64 else torch.float32
    s = torch.randn(n, generator=g, dtype=wide)
    e = torch.randn(n, generator=g, dtype=wide)
    w = torch.rand(n, generator=g, dtype=wide) * 4 - 1.5
    if n > 64:
        s[:len(SPECIAL)] = torch.tensor(SPECIAL, dtype=wide)
        e[:len(SPECIAL_END)] = torch.tensor(SPECIAL_END, dtype=wide)
        extra = WEIGHTS + [0.25, -0.25, 0.75]
        w[len(SPECIAL):len(SPECIAL) + len(extra)] = torch.tensor(extra, dtype=wide)
    return s.to(dtype), e.to(dtype), w.to(dtype)


def _all_scalar_weights(s, e):
    return tuple(torch.lerp(s, e, w) for w in WEIGHTS)


def _all_scalar_weights_inplace(xs, e):
    for x, w in zip(xs, WEIGHTS):
        x.lerp_(e, w)
    return xs


@needs_native
@pytest.mark.parametrize("emulate", ["0", "1"])
@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_lerp_scalar_weight_is_eagers_bits(dtype, emulate, monkeypatch):
    """torch.lerp and lerp_ (on graph inputs, as torch.optim's) with every WEIGHTS value, 100003 elements (a tail).
    Before: f32 0.1 / 0.3 / 0.7 / -0.7: 11325 / 35917 / 25079 / 38684 of 100003 differed, f64 as many, f16 0.3: 697."""
    monkeypatch.setenv("AUTOFUSE_EMULATE_PRECISION_CASTS", emulate)
    s, e, _ = _inputs(dtype)
    want = _all_scalar_weights(s, e)
    got = compiled(_all_scalar_weights, s, e)
    for w, a, b in zip(WEIGHTS, got, want):
        bits_equal(a, b, f"torch.lerp {dtype} weight={w}", nan_equal=True)
    want = _all_scalar_weights_inplace([s.clone() for _ in WEIGHTS], e)
    got = compiled(_all_scalar_weights_inplace, [s.clone() for _ in WEIGHTS], e)
    for w, a, b in zip(WEIGHTS, got, want):
        bits_equal(a, b, f"lerp_ {dtype} weight={w}", nan_equal=True)


@needs_native
@pytest.mark.parametrize("emulate", ["0", "1"])
@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_lerp_tensor_weight_is_eagers_bits(dtype, emulate, monkeypatch):
    """torch.lerp and lerp_ with a tensor weight (per element: both formulas, |w| = 0.5, NaN, inf, > 1, < -0.5) and
    with 0-d weights (of the dtype and float64: converted to the dtype first, as eager's TensorIterator does). Before:
    f32 / f64 24555 / 24645 of 100003 differed."""
    monkeypatch.setenv("AUTOFUSE_EMULATE_PRECISION_CASTS", emulate)
    s, e, w = _inputs(dtype)
    fn = lambda s, e, w: torch.lerp(s, e, w)  # noqa: E731
    bits_equal(compiled(fn, s, e, w), fn(s, e, w), f"torch.lerp {dtype} tensor weight", nan_equal=True)
    inplace = lambda s, e, w: s.lerp_(e, w)  # noqa: E731
    bits_equal(compiled(inplace, s.clone(), e, w), inplace(s.clone(), e, w), f"lerp_ {dtype} tensor weight",
               nan_equal=True)
    for w0 in (torch.tensor(0.1, dtype=dtype), torch.tensor(-0.9, dtype=torch.float64)):
        bits_equal(compiled(inplace, s.clone(), e, w0), inplace(s.clone(), e, w0), f"lerp_ {dtype} weight {w0}",
                   nan_equal=True)


@needs_native
@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_lerp_layouts_and_tails(dtype):
    """Sizes 1, 7, 15, 17 (tails only), a strided start written in place with strided operands, a transposed end,
    broadcast weights ([7] and [n, 1]) and a broadcast start: eager's bits in each."""
    scalar = lambda s, e: torch.lerp(s, e, 0.7)  # noqa: E731
    tensor = lambda s, e, w: torch.lerp(s, e, w)  # noqa: E731
    for n in (1, 7, 15, 17):
        s, e, w = _inputs(dtype, n=n, seed=n)
        bits_equal(compiled(scalar, s, e), scalar(s, e), f"lerp {dtype} n={n} weight 0.7", nan_equal=True)
        bits_equal(compiled(tensor, s, e, w), tensor(s, e, w), f"lerp {dtype} n={n} tensor weight", nan_equal=True)
    s, e, w = _inputs(dtype, n=4002, seed=3)
    inplace = lambda s, e, w: s.lerp_(e, w)  # noqa: E731
    strided = lambda: (s.clone()[::2], e.reshape(2001, 2)[:, 1], w[1::2])  # noqa: E731
    bits_equal(compiled(inplace, *strided()), inplace(*strided()), f"lerp_ {dtype} strided", nan_equal=True)
    args = (s[:4000].reshape(40, 100), e[:4000].reshape(100, 40).t(), w[:100])
    bits_equal(compiled(tensor, *args), tensor(*args), f"lerp {dtype} transposed end, weight [100]", nan_equal=True)
    args = (s[:4000].reshape(40, 100), e[:4000].reshape(40, 100), w[:40].reshape(40, 1))
    bits_equal(compiled(tensor, *args), tensor(*args), f"lerp {dtype} weight [40, 1]", nan_equal=True)
    args = (s[:40].reshape(40, 1), e[:4000].reshape(40, 100))
    bits_equal(compiled(scalar, *args), scalar(*args), f"lerp {dtype} start [40, 1] weight 0.7", nan_equal=True)
    low = lambda s, e: torch.lerp(s, e, 0.2)  # noqa: E731
    bits_equal(compiled(low, *args), low(*args), f"lerp {dtype} start [40, 1] weight 0.2", nan_equal=True)


@needs_native
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_lerp_gradients(dtype):
    """Gradients of lerp (start, end and a tensor weight, also broadcast ones, summed back to their shapes; start and
    end for a scalar weight) match eager's: the backward is autograd's formula for the whole op (grad * (1 - w),
    grad * w, grad * (end - start)). Before, the forward differed (270 / 229 of 1003 f32 / f64 elements), the
    gradients did not (the decomposition's backward computes the same products)."""
    s, e, w = _inputs(dtype, n=1003, seed=5)
    s, e, w = (t.nan_to_num(0.0, 2.0, -2.0) for t in (s, e, w))
    g = torch.randn(1003, generator=torch.Generator().manual_seed(6), dtype=dtype)

    def run(fn, *ts):
        leaves = [t.clone().requires_grad_() for t in ts]
        out = fn(*leaves)
        out.backward(g)
        return [out.detach()] + [t.grad for t in leaves]

    for name, fn, ts in (("tensor", lambda s, e, w: torch.lerp(s, e, w), (s, e, w)),
                         ("broadcast", lambda s, e, w: torch.lerp(s, e, w).reshape(1003),
                          (s[:59], e.reshape(17, 59), w[:17].reshape(17, 1))),
                         ("scalar 0.3", lambda s, e: torch.lerp(s, e, 0.3), (s, e)),
                         ("scalar 0.8", lambda s, e: torch.lerp(s, e, 0.8), (s, e))):
        torch._dynamo.reset()
        got = run(torch.compile(fn, backend="autofuse", dynamic=False), *ts)
        want = run(fn, *ts)
        bits_equal(got[0], want[0], f"lerp {name} forward", nan_equal=True)
        for i, (a, b) in enumerate(zip(got[1:], want[1:])):
            torch.testing.assert_close(a, b, msg=f"lerp {name}: gradient of argument {i}")
