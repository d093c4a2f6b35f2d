"""Compiled results do not change with torch.set_num_threads (docs/precision.md point 3): the same compiled function
called on 1, 2, 3 and 4 threads gives bit-identical outputs. The shapes are the ones whose summation order used to
follow the thread count: reductions over a long axis with few kept elements (the Split tiling: one slice per thread
before session 19, so [100003, 3].sum(0) had four different last bits at 1-4 threads) and short softmax rows (the
vector-rows / rows choice moved between 2 and 3 threads at [1024, 16]). Each result also stays within eager's
tolerance."""

import pytest
import torch

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs native kernels (autofuse._core built and a C++ compiler)")

CASES = [
    ("sum0 f32", lambda x: x.sum(0), (100003, 3), torch.float32),
    ("mean0 f32", lambda x: x.mean(0), (100003, 3), torch.float32),
    ("var0 f32", lambda x: x.var(0), (100003, 3), torch.float32),
    ("amax0 bf16", lambda x: x.amax(0), (100003, 3), torch.bfloat16),
    ("sum0 bf16", lambda x: x.sum(0), (100003, 3), torch.bfloat16),
    ("sum1 long rows f32", lambda x: x.sum(1), (3, 1 << 20), torch.float32),
    ("sum all f32", lambda x: x.sum(), (1 << 22,), torch.float32),
    ("softmax short rows f32", lambda x: torch.softmax(x, -1), (1024, 16), torch.float32),
]

_INT_VIEW = {torch.float32: torch.int32, torch.bfloat16: torch.int16}


def _bits(t):
    return t.contiguous().view(_INT_VIEW[t.dtype])


@pytest.mark.parametrize("name,fn,shape,dtype", CASES, ids=[c[0] for c in CASES])
def test_same_bits_on_one_to_four_threads(name, fn, shape, dtype):
    torch._dynamo.reset()
    f = torch.compile(fn, backend="autofuse", dynamic=False)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(19)).to(dtype)
    before = torch.get_num_threads()
    results = {}
    try:
        for threads in (1, 2, 3, 4):
            torch.set_num_threads(threads)
            results[threads] = f(x)
    finally:
        torch.set_num_threads(before)
    for threads in (2, 3, 4):
        assert torch.equal(_bits(results[threads]), _bits(results[1])), (
            name, threads, (results[threads].double() - results[1].double()).abs().max().item())
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    torch.testing.assert_close(results[1].double(), fn(x.double()).to(dtype).double(), rtol=tol, atol=tol)
