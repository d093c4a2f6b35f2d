"""A ``cat`` whose source is an ``expand`` along the concat axis (review 19, finding 2): ``torch.cat([x,
t.expand_as(x)], 0)``, ``torch.cat([x, t.expand(n.shape[0], -1)], 0)`` and MAE's ``cat([x, mask_token.expand(B, n,
D)], 1)`` before a layer_norm. Under dynamic shapes the broadcast segment has no input of extent along the axis; its
width now comes from the concat kernel (which binds it from its other inputs, or takes it from the program's
bindings), where the kernel used to be refused ("size symbol cw1 is not determined by the input sizes") and its ops
ran in ATen with a warning (AUTOFUSE_STRICT=1: BackendCompilerFailed). Each case runs in strict mode with warnings as
errors, checks that a native kernel holds the concat, and compares with eager bit for bit (the layer_norm after the
MAE concat within the float tolerance of docs/precision.md)."""
import warnings

import pytest
import torch
import torch.nn.functional as F

import autofuse  # noqa: F401
from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")


def expand_as_dim0(x, t):
    return torch.cat([x, t.expand_as(x)], 0) * 2


def expand_as_dim1(x, t):
    return torch.cat([t.expand_as(x), x], 1) * 2


def expand_to_n(x, t, n):
    return torch.cat([x, t.expand(n.shape[0], -1)], 0) * 2


def _concat_kernels(start):
    """The native kernel steps holding a concat among the records compiled since ``start``."""
    return [st for r in backend.RECORDS[start:] for st in r.steps
            if st.kind == "kernel" and st.kernel is not None and "concat" in [r.lowered.nodes[i].op for i in st.nodes]]


def _run(f, cases, dynamic, check=None):
    """Compile ``f`` (strict, warnings as errors), run every argument tuple of ``cases``; the results equal eager's
    bit for bit (``check(got, want)`` instead when given). Returns the concat kernels compiled."""
    torch._dynamo.reset()
    start = len(backend.RECORDS)
    c = torch.compile(f, backend="autofuse", dynamic=dynamic)
    for args in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a kernel refused or failing to compile warns before running in ATen
            got = c(*args)
        want = f(*args)
        if check is not None:
            check(got, want)
        else:
            assert got.shape == want.shape and got.dtype == want.dtype
            assert torch.equal(got, want), f"{f.__name__} {[tuple(a.shape) for a in args]}"
    torch._dynamo.reset()
    return _concat_kernels(start)


DTYPES = [torch.float32, torch.bfloat16]


@pytest.mark.parametrize("dynamic", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_cat_of_expand_as(monkeypatch, dynamic, dtype):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    g = torch.Generator().manual_seed(1)

    def r(*s):
        return torch.randn(*s, generator=g).to(dtype)

    sizes = [(4, 8), (5, 3), (7, 9), (1, 5), (0, 6), (3, 1)]
    assert _run(expand_as_dim0, [(r(a, b), r(b)) for a, b in sizes], dynamic)
    assert _run(expand_as_dim1, [(r(a, b), r(a, 1)) for a, b in sizes], dynamic)


@pytest.mark.parametrize("dynamic", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_cat_of_expand_to_another_inputs_size(monkeypatch, dynamic, dtype):
    """The expand's size is another input's (n.shape[0]): no input of the kernel has it, the program gives it."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    g = torch.Generator().manual_seed(2)

    def r(*s):
        return torch.randn(*s, generator=g).to(dtype)

    cases = [(r(5, 8), r(1, 8), r(3)), (r(4, 8), r(1, 8), r(6)), (r(7, 3), r(1, 3), r(9)), (r(2, 5), r(1, 5), r(1)),
             (r(3, 4), r(1, 4), r(0)), (r(0, 4), r(1, 4), r(5))]
    assert _run(expand_to_n, cases, dynamic)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mae_mask_tokens_then_layer_norm(monkeypatch, dtype):
    """MAE's decoder input: the visible tokens, then the mask token broadcast to the masked positions (their number
    is the ids' length minus the visible count), then a layer_norm (its own kernel: a reduction does not share one with
    a concat)."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    g = torch.Generator().manual_seed(3)
    D = 16
    tok, w, b = (torch.randn(s, generator=g).to(dtype) for s in ((1, 1, D), (D,), (D,)))

    def mae(x, ids):
        B, L, _ = x.shape
        y = torch.cat([x, tok.expand(B, ids.shape[1] - L, D)], 1)
        return y, F.layer_norm(y, (D,), w, b)

    def check(got, want):
        assert torch.equal(got[0], want[0])  # the concat itself: exact
        torch.testing.assert_close(got[1], want[1])

    cases = [(torch.randn(B, L, D, generator=g).to(dtype), torch.zeros(B, T, dtype=torch.long))
             for B, L, T in [(2, 3, 7), (3, 5, 9), (2, 4, 4), (4, 6, 13), (1, 2, 5), (2, 0, 5)]]
    assert _run(mae, cases, True, check)


def test_expand_size_shared_with_an_input_the_kernel_does_not_read(monkeypatch):
    """Dynamo's duck sizing gives n's length and the index's width (both 3) one symbol: fusion hands the concat
    kernel the index as a size-only input (read by nothing, it carries the symbol), which the concat split used to
    refuse for its size along the concat axis."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    g = torch.Generator().manual_seed(4)

    def f(x, i, y, t, n):
        return x.gather(1, i), torch.cat([y, t.expand(n.shape[0], -1)], 0) * 2

    def check(got, want):
        assert all(torch.equal(a, b) for a, b in zip(got, want))

    cases = [(torch.randn(6, 10, generator=g), torch.randint(0, 10, (6, k), generator=g), torch.randn(5, 12, generator=g),
              torch.randn(1, 12, generator=g), torch.randn(k, generator=g)) for k in (3, 5, 2)]
    assert _run(f, cases, True, check)
