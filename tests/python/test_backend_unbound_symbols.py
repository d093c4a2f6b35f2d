"""Dynamic shapes whose kernel inputs are sized by non-linear forms of a symbol (the halves of LLaMA's rotate_half
on a dynamic last dim: s1 - floordiv(s1, 2)), or that carry a symbol only in an input's strides (a sliced q: the
base's row length). Binding (ir/bind_symbols.h) solves only what a launch evaluates: a concat kernel binds its output
and segment-width symbols, each segment its own inputs, and a symbol only in strides is never needed. So the sliced
q stays one kernel, compiled once for every size. A kernel whose own inputs cannot bind a symbol it evaluates (a lone
half, AUTOFUSE_FUSE_CONCAT=0; a backward kernel whose only input is a flattened [s0*s1, n]) takes its value from the
program's bindings (Kernel.run's `given`, codegen/kernel.h given_symbols). Values equal eager's in every case."""
import warnings

import pytest
import torch

import autofuse  # noqa: F401
from autofuse import _core, backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")


def rope(q, c, s):
    h = q.shape[-1] // 2
    return q * c + torch.cat((-q[..., h:], q[..., :h]), -1) * s


def _kernel_ops(recs):
    """The IR ops of every kernel step of the records."""
    return [[r.lowered.nodes[i].op for i in st.nodes] for r in recs for st in r.steps if st.kind == "kernel"]


def _args(q, gen):
    c = torch.randn(q.shape[-2], q.shape[-1], generator=gen)
    return q, c, torch.randn(c.shape, generator=gen)


@pytest.mark.parametrize("fuse_concat", ["1", "0"])
def test_rotate_half_on_dynamic_last_dim(monkeypatch, fuse_concat):
    monkeypatch.setenv("AUTOFUSE_FUSE_CONCAT", fuse_concat)
    torch._dynamo.reset()
    f = torch.compile(rope, backend="autofuse", dynamic=True)
    torch.manual_seed(7)
    cases = [torch.randn(1, 64, 96), torch.randn(1, 64, 96)[:, ::2, 3:49], torch.randn(2, 32, 45)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for q in cases:
            c = torch.randn(q.shape[-2], q.shape[-1])
            s = torch.randn_like(c)
            got = f(q, c, s)
            torch.testing.assert_close(got, rope(q, c, s), rtol=1e-6, atol=1e-6)
    torch._dynamo.reset()


def _sliced_q(rows, cols, width, gen):
    """q read through a slice of a larger buffer: its row stride is the buffer's row length, a symbol under dynamic
    shapes that appears only in q's strides."""
    return torch.randn(1, 2 * rows, cols, generator=gen)[:, ::2, 3 : 3 + width]


@pytest.mark.parametrize("mode", ["dynamic", "mark_dynamic"])
def test_sliced_q_stays_one_kernel_compiled_once(monkeypatch, mode):
    """Before the shared binding, the concat kernel bound its whole graph, the stride-only symbol too, and fell back
    to ATen (a warning, and no kernel step). Now: one kernel with the neg, concat, mul and add, strict mode (no
    fallback warning), the same compiled code for every size (no C++ compile after the first call)."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    gen = torch.Generator().manual_seed(11)
    torch._dynamo.reset()
    f = torch.compile(rope, backend="autofuse", dynamic=True if mode == "dynamic" else None)
    start = len(backend.RECORDS)
    compiles_after_first = None
    for rows, cols, width in [(32, 96, 46), (16, 80, 30), (8, 70, 31), (24, 128, 64)]:
        q, c, s = _args(_sliced_q(rows, cols, width, gen), gen)
        if mode == "mark_dynamic":
            for t, dims in ((q, (1, 2)), (c, (0, 1)), (s, (0, 1))):
                for d in dims:
                    torch._dynamo.mark_dynamic(t, d)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a kernel that fails to compile warns before running in ATen
            got = f(q, c, s)
        torch.testing.assert_close(got, rope(q, c, s), rtol=1e-6, atol=1e-6)
        if compiles_after_first is None:
            compiles_after_first = _core.cache_stats().compiles
    assert _core.cache_stats().compiles == compiles_after_first, "a later size compiled C++ again"
    kernels = _kernel_ops(backend.RECORDS[start:])
    assert len(kernels) == 1, kernels
    assert {"neg", "concat", "mul", "add"} <= set(kernels[0]), kernels
    torch._dynamo.reset()


def test_dynamic_training_through_linear_on_3d_input(monkeypatch):
    """Review finding (session 8): nn.Linear on a [B, T, C] input under dynamic=True. The backward's kernels read the
    flattened [s0*s1, C] gradient only, but broadcast back to [s0, s1, C] (or sum its columns): their inputs cannot
    bind s0 and s1 apart. They were sent to ATen with a 'failed to compile' warning (strict mode: an error); now they
    are kernels given s0 and s1 by the program, in strict mode, with eager's gradients for every size."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(5)
    lin = torch.nn.Linear(32, 24)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(24, 32, generator=gen))
        lin.bias.copy_(torch.randn(24, generator=gen))
    f = lambda x: torch.nn.functional.gelu(lin(x)).sum()  # noqa: E731
    cf = torch.compile(f, backend="autofuse", dynamic=True)
    start = len(backend.RECORDS)
    for shape in [(2, 7, 32), (3, 5, 32), (1, 9, 32), (4, 1, 32)]:
        x = torch.randn(*shape, generator=gen, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            lin.zero_grad()
            cf(x).backward()
        got = (x.grad.clone(), lin.weight.grad.clone(), lin.bias.grad.clone())
        x2 = x.detach().clone().requires_grad_(True)
        lin.zero_grad()
        f(x2).backward()
        for g, w in zip(got, (x2.grad, lin.weight.grad, lin.bias.grad)):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4)
    given = [st.kernel.given_symbols for r in backend.RECORDS[start:] for st in r.steps
             if st.kind == "kernel" and st.kernel is not None]
    assert any(given), f"no kernel took a given symbol: {given}"
    torch._dynamo.reset()
