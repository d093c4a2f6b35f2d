"""The native path's launcher integration: the profiling hook in generated programs and thread-count syncing."""

from __future__ import annotations

import pytest
import torch

from autofuse import backend, profile

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")


def _compile_one_kernel():
    """torch.compile of x * 2 + 1 (one fused kernel); returns the compiled function and its graph record."""
    torch._dynamo.reset()
    start = len(backend.RECORDS)
    compiled = torch.compile(lambda t: (t * 2 + 1).exp(), backend="autofuse")
    x = torch.randn(64, 33)
    torch.testing.assert_close(compiled(x), (x * 2 + 1).exp())
    rec = backend.RECORDS[start]
    assert rec.mode == "kernels" and len(rec.kernels) == 1 and rec.kernels[0].kernel is not None
    return compiled, rec, x


def test_profile_hook_records_each_launch_with_bytes():
    compiled, rec, x = _compile_one_kernel()
    with profile.profile() as p:
        for _ in range(3):
            compiled(x)
    assert len(p.kernels) == 1
    name, s = next(iter(p.kernels.items()))
    assert name.startswith(f"af_{rec.name}.") and "exp" in name, name
    assert s.calls == 3
    assert s.bytes_read == 3 * x.numel() * 4 and s.bytes_written == 3 * x.numel() * 4
    assert s.seconds > 0
    # outside the context nothing is recorded
    compiled(x)
    assert s.calls == 3


def test_launcher_threads_follow_torch():
    from autofuse import _core

    compiled, _, x = _compile_one_kernel()
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        compiled(x)
        assert _core.get_num_threads() == 1
        torch.set_num_threads(2)
        compiled(x)
        assert _core.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
        compiled(x)
    assert _core.get_num_threads() == before


def test_record_splits_out_kernel_compile_time():
    """GraphRecord.kernel_compile_seconds is the part of compile_seconds spent in native.compile_kernels (codegen,
    C++ compiler runs, loading): present for a graph with a kernel step, at most its whole compile time, and 0 for a
    graph without kernels (demo.py's cold-compile breakdown sums it)."""
    _, rec, _ = _compile_one_kernel()
    assert 0 < rec.kernel_compile_seconds <= rec.compile_seconds
    torch._dynamo.reset()
    start = len(backend.RECORDS)
    f = torch.compile(lambda a, b: a @ b, backend="autofuse")  # one ATen call, no kernel step
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    torch.testing.assert_close(f(a, b), a @ b)
    recs = backend.RECORDS[start:]
    assert recs and all(not r.kernels and r.kernel_compile_seconds == 0.0 for r in recs)
