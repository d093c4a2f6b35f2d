"""Elementwise graphs reading a transposed input (`a * 2 + b.t()`, the bench's transposed_input) run in the
transposed-tile loop (codegen/cpu/emit_tiles.cpp): equal to eager bit for bit for every dtype and for sizes around
the tile edges, and with dynamic shapes one compiled variant serves every size (no compile or cache load after the
first call)."""

import pytest
import torch

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs native kernels (autofuse._core built and a C++ compiler)")


def _scale_add(a, bt):
    return a * 3 + bt


def _inputs(dtype, rows, cols, gen):
    if dtype.is_floating_point:
        a = torch.randn(rows, cols, generator=gen).to(dtype)
        b = torch.randn(cols, rows, generator=gen).to(dtype)
        b.view(-1)[::7] = float("nan")
        b.view(-1)[3::11] = float("-inf")
    else:
        a = torch.randint(-100, 100, (rows, cols), generator=gen).to(dtype)
        b = torch.randint(-100, 100, (cols, rows), generator=gen).to(dtype)
    return a, b.t()


def _loads():
    from autofuse import _core
    s = _core.cache_stats()
    return s.compiles + s.disk_hits


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.int64])
def test_transposed_input_matches_eager(dtype):
    gen = torch.Generator().manual_seed(5)
    torch._dynamo.reset()
    start = len(backend.RECORDS)
    f = torch.compile(_scale_add, backend="autofuse", dynamic=False)
    for rows, cols in [(37, 19), (64, 128), (1024, 48), (33, 2)]:
        a, bt = _inputs(dtype, rows, cols, gen)
        want = _scale_add(a, bt)
        got = f(a, bt)
        assert got.dtype == want.dtype and got.stride() == want.stride()
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    assert all(r.mode == "kernels" for r in backend.RECORDS[start:])


def test_batched_transpose_matches_eager():
    gen = torch.Generator().manual_seed(6)
    k = torch.randn(3, 40, 24, generator=gen).to(torch.bfloat16).transpose(1, 2)  # [3, 24, 40], stride 1 along 1
    q = torch.randn(3, 24, 40, generator=gen).to(torch.bfloat16)
    fn = lambda q, k: (q * 0.125 + k).relu()  # noqa: E731
    torch._dynamo.reset()
    got = torch.compile(fn, backend="autofuse", dynamic=False)(q, k)
    torch.testing.assert_close(got, fn(q, k), rtol=0, atol=0)


def test_dynamic_sizes_reuse_one_variant():
    gen = torch.Generator().manual_seed(7)
    torch._dynamo.reset()
    start = len(backend.RECORDS)
    f = torch.compile(_scale_add, backend="autofuse", dynamic=True)
    a, bt = _inputs(torch.float32, 40, 24, gen)
    torch.testing.assert_close(f(a, bt), _scale_add(a, bt), rtol=0, atol=0, equal_nan=True)
    before = _loads()
    for rows, cols in [(3, 5), (17, 100), (256, 33), (100, 17)]:
        a, bt = _inputs(torch.float32, rows, cols, gen)
        torch.testing.assert_close(f(a, bt), _scale_add(a, bt), rtol=0, atol=0, equal_nan=True)
    assert _loads() == before, "a new size compiled or loaded another kernel variant"
    recs = backend.RECORDS[start:]
    assert len(recs) == 1 and recs[0].mode == "kernels", [(r.name, r.mode) for r in recs]


@pytest.mark.parametrize("dynamic", [False, True])
def test_column_broadcast_copy_and_its_transpose_match_eager(dynamic):
    # `b.expand(-1, m)` made contiguous is a copy kernel whose speculative tile variant has no transposed operand
    # (b does not vary along the vector axis); the chunked tile loop of session 27 crashed compiling it (review).
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(7)
    b = torch.randn(129, 1, generator=gen)
    a = torch.randn(17, 129, generator=gen)
    copy = torch.compile(lambda b: b.expand(-1, 17).clone(), backend="autofuse", dynamic=dynamic)
    assert torch.equal(copy(b), b.expand(-1, 17).clone())
    add_t = torch.compile(lambda a, b: a + b.expand(-1, a.shape[0]).t(), backend="autofuse", dynamic=dynamic)
    assert torch.equal(add_t(a, b), a + b.expand(-1, a.shape[0]).t())
