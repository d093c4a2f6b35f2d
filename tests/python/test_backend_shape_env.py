"""Dynamic-shape graphs whose sizes only Dynamo's shape environment relates (review 16a). They used to be refused
(a warning and eager execution, an exception under AUTOFUSE_STRICT=1); here each compiles under strict mode, matches
eager, and a later size of the same shape class compiles no C++ and no new graph.

- F2: a causal-LM loss flattens logits [b, s, V] and labels [b', s'] separately: [s0*s1, V] and [s2*s3]; the guard
  s0*s1 == s2*s3 makes them one size (lowering_shapes.SizeCanon).
- F5, F1: a symbol that reaches the graph only as a SymInt argument (``torch.arange(x.shape[0])`` after a graph break,
  GPT-2's ``logits_to_keep`` under dynamic=True) is bound by that argument (fuse's given_symbols).
- F4: torch's own ``Max(1, s)`` (the contiguous strides of a possibly empty dim, max-pool's saved indices) has an IR
  form (``max(1, s)``).
"""
import warnings

import pytest
import sympy
import torch
import torch.nn.functional as F

import autofuse
from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")


def _kernel_work():
    s = autofuse.cache_stats()
    return s.compiles + s.disk_hits + s.memory_hits


def _run_sizes(fn, make_args, sizes, dynamic=None, backward=False, rtol=1e-5, atol=1e-5):
    """Run the compiled ``fn`` (strict mode, fallbacks as errors) on the arguments of each size against eager; returns
    the records of the graphs compiled. After the second size (Dynamo's dynamic recompile) no graph and no kernel is
    compiled again."""
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="autofuse", dynamic=dynamic)
    start = len(backend.RECORDS)
    work = graphs = None
    for k, size in enumerate(sizes):
        args = make_args(*size)
        ref = [a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = compiled(*args)
            if backward:
                got.backward()
        want = fn(*ref)
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol)
        if backward:
            want.backward()
            for a, r in zip(args, ref):
                if isinstance(a, torch.Tensor) and a.requires_grad:
                    torch.testing.assert_close(a.grad, r.grad, rtol=rtol, atol=atol)
        if k == 1:
            work, graphs = _kernel_work(), len(backend.RECORDS)
    if work is not None:
        assert len(backend.RECORDS) == graphs, "a later size of the same shape class compiled a new graph"
        assert _kernel_work() == work, "a later size of the same shape class compiled (or loaded) a kernel again"
    recs = backend.RECORDS[start:]
    assert recs and all(r.mode == "kernels" for r in recs), [(r.name, r.mode, r.reason) for r in recs]
    torch._dynamo.reset()
    return recs


V = 50


def lm_loss(logits, labels):
    return F.cross_entropy(logits.view(-1, V), labels.view(-1))


def test_causal_lm_loss_training_automatic_dynamic(monkeypatch):
    """F2: the backward multiplies exp(log_probs) [s0*s1, V] by a row sum over the labels' length [s2*s3, 1]; the
    IR refused the broadcast ("size s0*s1 against s2*s3")."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    gen = torch.Generator().manual_seed(3)

    def make(b, s):
        return (torch.randn(b, s, V, generator=gen, requires_grad=True), torch.randint(0, V, (b, s), generator=gen))

    _run_sizes(lm_loss, make, [(2, 8), (3, 11), (4, 5), (2, 13)], backward=True)


def test_flattened_inputs_added_dynamic(monkeypatch):
    """F2's second form: two flattened inputs whose element counts Dynamo's guards equate ([1, s0*s1] + [1, s2*s3])."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    gen = torch.Generator().manual_seed(4)

    def f(x, y):
        return x.reshape(-1).unsqueeze(0) + y.reshape(1, -1)

    # distinct sizes, so that Dynamo's duck sizing gives all four dims their own symbol
    _run_sizes(f, lambda a, b, c, d: (torch.randn(a, b, generator=gen), torch.randn(c, d, generator=gen)),
               [(2, 6, 3, 4), (4, 6, 3, 8), (2, 10, 5, 4)], dynamic=True)


def test_arange_of_a_symint_argument(monkeypatch):
    """F5: after Dynamo's graph break the graph gets x.shape[0] only as a SymInt; iota's length is that symbol."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")

    def f(x):
        x[torch.arange(x.shape[0]) % 2 == 0] += 1
        return x

    gen = torch.Generator().manual_seed(5)
    torch._dynamo.reset()
    c = torch.compile(f, backend="autofuse", dynamic=True)
    start = len(backend.RECORDS)
    for n in [4, 5, 9]:
        x = torch.randn(n, 6, generator=gen)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = c(x.clone())
        torch.testing.assert_close(got, f(x.clone()), rtol=0, atol=0)
    recs = backend.RECORDS[start:]
    assert any(st.kind == "kernel" for r in recs for st in r.steps), [(r.name, r.mode, r.reason) for r in recs]
    assert all(r.mode == "kernels" for r in recs), [(r.name, r.mode, r.reason) for r in recs]
    torch._dynamo.reset()


def test_int_argument_sizes_a_slice_dynamic_true(monkeypatch):
    """F1 (GPT-2 training, dynamic=True): an int argument becomes a SymInt input, and a view's size uses its symbol
    (``h[:, -keep:]`` flattened for the LM head); it was "not bound by any graph input's shape"."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    gen = torch.Generator().manual_seed(6)
    w = torch.randn(30, 16, generator=gen)

    def f(h, keep):
        x = torch.tanh(h)[:, -keep:, :]
        return (x.reshape(-1, 16) @ w.t()).view(h.shape[0], -1, 30).relu().sum()

    def make(b, s, keep):
        return torch.randn(b, s, 16, generator=gen, requires_grad=True), keep

    _run_sizes(f, make, [(2, 9, 3), (3, 7, 4), (4, 5, 2)], dynamic=True, backward=True)


def test_conv_maxpool_training_new_image_size(monkeypatch):
    """F4: max-pool's saved indices in a training graph have strides Max(1, s//2) once the image size is dynamic."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.MaxPool2d(2), torch.nn.GELU())
    gen = torch.Generator().manual_seed(7)

    def f(x):
        return m(x).sum()

    def make(h):
        return (torch.randn(2, 3, h, h, generator=gen, requires_grad=True),)

    recs = _run_sizes(f, make, [(32,), (24,), (20,)], backward=True, rtol=1e-4, atol=1e-4)
    # the shape environment proves s >= 2 for the pooled dims: Max(1, s//2) is written s//2
    assert not any("max(" in r.lowered.ir_text() for r in recs)


def test_torch_min_max_have_an_ir_form():
    """torch's Min / Max (torch.utils._sympy.functions, not sympy's) print as the IR's min / max, nested when they take
    more than two arguments, and the IR reads them back."""
    from torch.utils._sympy.functions import Max, Min

    from autofuse import _core
    from autofuse.lowering_shapes import SymbolTable

    a, b, c = sympy.symbols("a b c", integer=True, nonnegative=True)
    t = SymbolTable()
    assert t.ir(Max(1, a)) == "max(1, s0)"
    assert t.ir(Min(a, b, c)) == "min(min(s0, s1), s2)"
    assert t.py(Max(a, 2 * b)) == "max(s0, (2*s1))"
    g = _core.Graph("g")
    g.add_input("x", "f32", [t.ir(a), t.ir(b), t.ir(c)], [t.ir(Max(1, b)), 1, t.ir(Min(a, b, c))])
    assert "strides [max(1, s1), 1, min(s2, min(s0, s1))]" in str(g)  # the IR's own (canonical) order


def test_class_token_concat_dynamic_batch(monkeypatch):
    """F3: ViT's class token, cat([cls.expand(B, -1, -1), x], 1) under dynamic shapes. The concat kernel's first
    segment reads only cls [1, 1, D] and could not bind B ("size symbol s0 is not determined by the input sizes"): the
    kernel ran in ATen with a warning. Now the segment takes B from the kernel's bindings: one concat kernel, strict."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    gen = torch.Generator().manual_seed(8)
    cls = torch.randn(1, 1, 16, generator=gen)

    def f(x):
        return torch.cat([cls.expand(x.shape[0], -1, -1), x], dim=1) * 2

    recs = _run_sizes(f, lambda b, n: (torch.randn(b, n, 16, generator=gen),), [(3, 4), (5, 7), (2, 9)],
                      dynamic=True, rtol=0, atol=0)
    kernels = [st for r in recs for st in r.steps if st.kind == "kernel"]
    assert len(kernels) == 1 and kernels[0].kernel is not None
    assert "concat segment 1 of 2" in kernels[0].kernel.source  # one kernel, split in two segments
