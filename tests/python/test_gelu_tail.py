"""GELU's negative tail (erf form): the documented error bounds of docs/precision.md hold for compiled kernels.

Eager and Autofuse both compute ``0.5 * x * (1 + erf(x / sqrt 2))``, whose sum cancels for x below about -3, so the
float32 bound is absolute, ``|x| * 2^-24`` scaled, against float64's exact ``0.5 * x * erfc(-x / sqrt 2)``; float16
results stay within 2 ulp of the correctly rounded value (eager's are up to 6 ulp off)."""

import math

import pytest
import torch
import torch.nn.functional as F

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs native kernels (autofuse._core built and a C++ compiler)")


def _exact(x: torch.Tensor) -> torch.Tensor:
    xd = x.double()
    return 0.5 * xd * torch.special.erfc(-xd / math.sqrt(2))


def _ordered(bits: torch.Tensor) -> torch.Tensor:
    """16-bit float patterns as integers ordered like the values (ulp distance = difference)."""
    b = bits.int()
    return torch.where(b < 0, -(b & 0x7FFF), b)


def test_f32_error_is_bounded_by_the_cancellation():
    x = torch.linspace(-10, 10, 40001)
    torch._dynamo.reset()
    got = torch.compile(lambda t: F.gelu(t), backend="autofuse", dynamic=False)(x)
    exact = _exact(x)
    e32 = exact.float().abs()
    ulp = (torch.nextafter(e32, torch.tensor(float("inf"))) - e32).double()  # float32 ulp of the exact value
    err = (got.double() - exact).abs()
    assert float((err / (x.double().abs() * 2.0**-24 + ulp)).max()) <= 1.0  # measured 0.70 (eager: 5.28)
    near = (x >= -1) & (x != 0)  # no cancellation: a few ulp (measured 2.17; eager 4.86)
    assert float((err / ulp)[near].max()) <= 3.0


@pytest.mark.parametrize("dtype", [torch.float16])
def test_low_precision_within_two_ulp_of_correctly_rounded(dtype):
    x = torch.linspace(-10, 10, 40001).to(dtype)
    torch._dynamo.reset()
    got = torch.compile(lambda t: F.gelu(t), backend="autofuse", dynamic=False)(x)
    want = _exact(x).to(dtype)
    d = (_ordered(got.view(torch.int16)) - _ordered(want.view(torch.int16))).abs()
    assert int(d.max()) <= 2, float(x[d.argmax()])
