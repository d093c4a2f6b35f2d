"""Integer division by zero through the backend: eager raises, so must we (found by a new-user test: the compiled
kernel returned numbers). Integer //, % and fmod by a tensor stay with ATen; by a nonzero Python scalar they compile."""

import pytest
import torch

import autofuse  # noqa: F401  (registers the backend)
from autofuse import backend as afb


@pytest.mark.parametrize("fn", [lambda a, b: a // b, lambda a, b: a % b, lambda a, b: torch.fmod(a, b),
                                lambda a, b: torch.div(a, b, rounding_mode="floor")],
                         ids=["floordiv", "remainder", "fmod", "div_floor"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
def test_integer_division_by_zero_raises_like_eager(fn, dtype):
    torch._dynamo.reset()
    a = torch.tensor([7, 5, 9], dtype=dtype)
    b = torch.tensor([0, 2, 4], dtype=dtype)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(a, b)
    with pytest.raises(Exception, match="ZeroDivisionError"):
        torch.compile(fn, backend="autofuse")(a, b)
    b = torch.tensor([3, 2, 4], dtype=dtype)
    torch._dynamo.reset()
    assert torch.equal(torch.compile(fn, backend="autofuse")(a, b), fn(a, b))


def test_integer_division_by_nonzero_scalar_is_compiled():
    torch._dynamo.reset()
    n0 = len(afb.RECORDS)
    a = torch.arange(-20, 20, dtype=torch.int64)
    out = torch.compile(lambda x: (x // 3) + (x % -4), backend="autofuse")(a)
    assert torch.equal(out, (a // 3) + (a % -4))
    kernels = [s for r in afb.RECORDS[n0:] for s in r.steps if s.kind == "kernel" and s.kernel is not None]
    assert kernels, "a nonzero scalar divisor should still be lowered into a kernel"
