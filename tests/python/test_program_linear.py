"""Weight transposes folded into ``LIN(x, w)`` and repeated views bound once (python/autofuse/program_linear.py,
program_views.py's aliases): ATen's linear must give the bits of the decomposed ``mm``/``addmm`` it replaces, and
compiled programs must keep eager's values, strides and aliasing, read a weight replaced between calls, and build
every view afresh per call (no view survives from one call to the next)."""

from __future__ import annotations

import re

import pytest
import torch

from autofuse import backend
from autofuse.program_linear import LINEAR_FN
from program_util import compile_recording

needs_native = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")

MM = torch.ops.aten.mm.default
ADDMM = torch.ops.aten.addmm.default


@pytest.fixture(autouse=True)
def _aten_matmuls(monkeypatch):
    """These tests check the ATen calls' lines and bits: ATen's linear kernels whatever AUTOFUSE_MATMUL says
    (oneDNN's are tested in test_extern_matmul.py)."""
    from autofuse import extern_matmul

    monkeypatch.setenv("AUTOFUSE_MATMUL", "aten")
    extern_matmul.reset()
    yield
    extern_matmul.reset()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("mkn", [(32, 256, 256), (512, 256, 688), (1, 7, 3), (33, 768, 130)])
def test_linear_is_bit_identical_to_the_decomposed_matmul(dtype, mkn):
    m, k, n = mkn
    g = torch.Generator().manual_seed(m * 1000 + k + n)
    x = torch.randn(m, k, generator=g).to(dtype)
    w = torch.randn(n, k, generator=g).to(dtype)
    b = torch.randn(n, generator=g).to(dtype)
    assert torch.equal(LINEAR_FN(x, w), MM(x, w.permute([1, 0])))
    assert torch.equal(LINEAR_FN(x, w, b), ADDMM(b, x, w.permute([1, 0])))
    for lead in [(1, m), (m, 1)]:  # the input fold: a contiguous 3-d input, flattened by linear itself
        x3 = x.reshape(*lead, k)
        assert torch.equal(LINEAR_FN(x3, w).reshape(m, n), MM(x, w.permute([1, 0])))
        assert torch.equal(LINEAR_FN(x3, w, b).reshape(m, n), ADDMM(b, x, w.permute([1, 0])))


class Block(torch.nn.Module):
    """Two linears (with and without bias) around an exact elementwise op, three projections of one input (q/k/v:
    one view read by three matmuls), and a head split of a matmul result."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.up = torch.nn.Linear(d, 2 * d)
        self.down = torch.nn.Linear(2 * d, d, bias=False)
        self.q = torch.nn.Linear(d, d, bias=False)
        self.k = torch.nn.Linear(d, d, bias=False)
        self.v = torch.nn.Linear(d, d, bias=False)

    def forward(self, x):
        h = self.down(torch.relu(self.up(x)) * 2.0)
        y = h * 0.5
        b, s, d = y.shape
        q, k, v = (p(y).view(b, s, 4, d // 4).transpose(1, 2) for p in (self.q, self.k, self.v))
        return (q * k + v).sum(-1)


_compile = compile_recording


@needs_native
def test_block_folds_every_weight_transpose_and_matches_eager_bits(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    torch.manual_seed(0)
    m = Block().eval()
    x = torch.randn(2, 5, 16)
    c, recs = _compile(m)
    with torch.no_grad():
        got, want = c(x), m(x)
    src = recs()[0].program_source
    # every matmul folded: ``LIN(x, w)``, or the direct ``MM(x, RT(w, ...))`` / ``ADDMM(b, x, RT(w, ...))`` form for
    # a contiguous weight of static sizes (program_linear.py)
    firsts = re.findall(r"(?:LIN\(|ADDMM\(v\d+, |MM\()(?:RT\()?(v\d+)[,)]", src)
    assert len(firsts) == 5, src
    assert src.count("MM(") == 5, src  # all five weights are contiguous with static sizes: the direct form
    assert ".permute([1, 0])" not in src, src
    # q, k and v read one kernel result: no view of it per projection (the 3-d input is read in place)
    assert max(firsts.count(f) for f in firsts) == 3, src
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    with torch.no_grad():
        assert torch.equal(c(x), got)  # the second call (no view carried over) gives the same bits


@needs_native
def test_weight_replaced_between_calls_is_read_anew(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    torch.manual_seed(1)
    m = Block().eval()
    x = torch.randn(2, 5, 16)
    c, _ = _compile(m)
    with torch.no_grad():
        c(x)
        m.up.weight.data = torch.randn_like(m.up.weight)  # new storage, same sizes and strides
        m.q.weight.data.mul_(-3.0)  # same storage, new values
        torch.testing.assert_close(c(x), m(x), rtol=1e-6, atol=1e-6)
        # same sizes, transposed strides: linear reads the weight's strides at every call
        m.down.weight.data = m.down.weight.data.t().contiguous().t()
        assert not m.down.weight.is_contiguous()
        torch.testing.assert_close(c(x), m(x), rtol=1e-6, atol=1e-6)


def transpose_also_returned(x, w):
    """A weight transpose read by the matmul and returned: it must stay a view of its own (not folded)."""
    wt = w.t()
    return (x * 2.0) @ wt, wt


def same_view_twice(x):
    """Two graph outputs that are the same view of one kernel result: two tensor objects, as in eager."""
    y = torch.exp(x)
    return y.view(3, 4), y.view(3, 4), y.view(3, 4) @ torch.ones(4, 2)


@needs_native
def test_transpose_read_elsewhere_is_not_folded(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    x, w = torch.randn(3, 4), torch.randn(5, 4)
    c, recs = _compile(transpose_also_returned)
    (y, wt) = c(x, w)
    ey, ewt = transpose_also_returned(x, w)
    torch.testing.assert_close(y, ey)
    assert wt.stride() == ewt.stride() and wt.data_ptr() == w.data_ptr()
    assert "LIN(" not in recs()[0].program_source


@needs_native
def test_equal_views_returned_twice_are_distinct_objects(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    x = torch.randn(12)
    c, _ = _compile(same_view_twice)
    a, b, z = c(x)
    ea, eb, ez = same_view_twice(x)
    assert a is not b and a.data_ptr() == b.data_ptr()
    torch.testing.assert_close(a, ea)
    torch.testing.assert_close(z, ez)
    a.t_()  # changing one output's metadata leaves the other alone, as in eager
    assert b.shape == (3, 4)


def mm_read_twice(x, w):
    """A matmul result read by a kernel directly and through a view: the input may not be folded to 3-d then."""
    h = torch.nn.functional.linear(x.reshape(-1, 8) * 1.0, w)
    return torch.relu(h), h.view(2, 3, 5) + 1.0


@needs_native
def test_matmul_result_read_by_a_kernel_keeps_its_rank(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    x, w = torch.randn(2, 3, 8), torch.randn(5, 8)
    c, _ = _compile(mm_read_twice)
    for got, want in zip(c(x, w), mm_read_twice(x, w)):
        assert got.shape == want.shape and got.stride() == want.stride()
        torch.testing.assert_close(got, want)


@needs_native
def test_dynamic_sequence_lengths(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    torch.manual_seed(2)
    m = Block().eval()
    c, recs = _compile(m, dynamic=None)
    with torch.no_grad():
        for s in range(1, 17):
            x = torch.randn(2, s, 16)
            if s == 1:
                torch._dynamo.mark_dynamic(x, 1)
            torch.testing.assert_close(c(x), m(x), rtol=1e-5, atol=1e-5)
    assert any("LIN(" in r.program_source for r in recs())
