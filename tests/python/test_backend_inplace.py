"""In-place updates of graph inputs through torch.compile(backend="autofuse") reach the caller's tensors, including
the 0-d float64 case that PyTorch 2.13's AOTAutograd drops (backend._aot_drops_mutation: such graphs run eagerly,
with the reason recorded)."""

import pytest
import torch

from autofuse import backend


def _add_(x, y):
    x.add_(1)
    return (x / y).sqrt()


def _copy_(x, y):
    x.copy_(y * 3)
    return x * y


def _out(x, y):
    torch.add(x, 1, out=x)
    return x * y


def _iadd(x, y):
    x += 1
    return x * y


@pytest.mark.parametrize("fn", [_add_, _copy_, _out, _iadd], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape,dtype", [((), torch.float64), ((), torch.float32), ((3,), torch.float64),
                                         ((2, 3), torch.bfloat16)], ids=["0d-f64", "0d-f32", "3-f64", "2x3-bf16"])
def test_input_mutation_reaches_the_caller(fn, shape, dtype):
    torch.manual_seed(7)
    x = torch.rand(shape, dtype=dtype) + 0.5
    y = torch.rand(shape, dtype=dtype) + 0.5
    xe = x.clone()
    want = fn(xe, y)
    torch._dynamo.reset()
    n0 = len(backend.RECORDS)
    got = torch.compile(fn, backend="autofuse", dynamic=False)(x, y)
    torch.testing.assert_close(x, xe, rtol=0, atol=0)  # the update reached the caller's tensor
    torch.testing.assert_close(got, want)
    records = backend.RECORDS[n0:]
    assert records
    if shape == () and dtype == torch.float64 and fn is not _iadd:
        assert all(r.mode == "eager" and "0-d float64" in r.reason for r in records), [r.reason for r in records]
    else:
        assert all(r.mode == "kernels" for r in records), [(r.mode, r.reason) for r in records]
