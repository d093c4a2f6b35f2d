"""``aten.embedding`` run by the C++ row gather (python/autofuse/program_embedding.py, runtime/host_gather.h): the
program must call ``GR`` instead of ATen's embedding and give eager's bits, shapes and strides for every index shape,
index dtype and table dtype; an index outside the table must raise eager's IndexError before anything is returned;
dynamic sizes, strided tables and training (the backward stays an ATen call) must work."""

from __future__ import annotations

import re

import pytest
import torch

from autofuse import backend
from autofuse.program_embedding import GATHER_ROWS_FN
from program_util import compile_recording

needs_native = pytest.mark.skipif(not backend.has_native_kernels() or GATHER_ROWS_FN is None,
                                  reason="needs the native bindings (_core.gather_rows)")


class Embed(torch.nn.Module):
    """An embedding followed by an elementwise op (so that a kernel reads the gathered rows) and the raw rows."""

    def __init__(self, rows: int = 50, cols: int = 24, dtype=torch.float32) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(rows, cols).to(dtype)

    def forward(self, ids):
        e = self.emb(ids)
        return e * 2.0 + 1.0, e


_compile = compile_recording


@needs_native
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("ishape", [(7,), (2, 5), (3, 1, 4)])
@pytest.mark.parametrize("idtype", [torch.int64, torch.int32])
def test_gathered_rows_are_eager_bits(monkeypatch, dtype, ishape, idtype):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    torch.manual_seed(len(ishape) * 10 + ishape[0])
    m = Embed(dtype=dtype).eval()
    ids = torch.randint(0, 50, ishape, dtype=idtype)
    ids.view(-1)[0] = 49  # the last row and the first one are in range
    ids.view(-1)[-1] = 0
    c, recs = _compile(m)
    with torch.no_grad():
        got, want = c(ids), m(ids)
    src = recs()[0].program_source
    assert "(C++ row gather)" in src and not re.search(r"E\d+\._op\([^)]*\)  # embedding", src), src
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.stride() == w.stride() and g.dtype == w.dtype
        assert torch.equal(g, w)


@needs_native
def test_out_of_range_index_raises_eagers_index_error(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    m = Embed().eval()
    c, recs = _compile(m)
    with torch.no_grad():
        c(torch.tensor([1, 2, 3]))
        assert "GR(" in recs()[0].program_source
        for bad in (50, -1, 1000):
            with pytest.raises(IndexError, match="index out of range in self"):
                m(torch.tensor([1, bad, 3]))  # eager's error ...
            with pytest.raises(IndexError, match=f"index out of range in self: index {bad}, table of 50 rows"):
                c(torch.tensor([1, bad, 3]))  # ... and ours, with the detail


@needs_native
def test_dynamic_lengths_allocate_by_symbol(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    m = Embed().eval()
    c, recs = _compile(m, dynamic=True)
    with torch.no_grad():
        for n in (3, 9, 17):
            ids = torch.randint(0, 50, (2, n))
            got, want = c(ids), m(ids)
            assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    srcs = [r.program_source for r in recs()]
    assert any("GR(" in s for s in srcs), srcs


@needs_native
def test_training_gradient_matches_eager(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    torch.manual_seed(3)
    m = Embed()
    ref = Embed()
    ref.load_state_dict(m.state_dict())
    ids = torch.tensor([[1, 4, 4, 9], [0, 49, 1, 1]])
    c, recs = _compile(m)
    for mod, fn in ((m, c), (ref, ref)):
        a, e = fn(ids)
        (a.square().sum() + e.sum()).backward()
    assert any("GR(" in r.program_source for r in recs())
    torch.testing.assert_close(m.emb.weight.grad, ref.emb.weight.grad, rtol=0, atol=0)


@needs_native
def test_gather_rows_strided_table_and_output():
    torch.manual_seed(5)
    table = torch.randn(6, 40)[:, ::2].t()  # [20, 6], strides (2, 40)
    ids = torch.tensor([[19, 0, 7], [3, 3, 12]], dtype=torch.int32).t()  # [3, 2], transposed strides
    out = torch.full((6, 3, 2), float("nan")).permute(1, 2, 0)  # [3, 2, 6], not row-major
    GATHER_ROWS_FN(table, ids, out)
    assert torch.equal(out, table[ids.long()])
    empty = torch.empty(0, 6)
    GATHER_ROWS_FN(table, torch.empty(0, dtype=torch.int64), empty)  # no rows: nothing to do, no error


@needs_native
def test_gather_rows_rejects_mismatched_operands():
    table = torch.randn(5, 4)
    ids = torch.tensor([0, 1])
    with pytest.raises(ValueError, match="out must be f32"):
        GATHER_ROWS_FN(table, ids, torch.empty(2, 3))
    with pytest.raises(ValueError, match="out must be f32"):
        GATHER_ROWS_FN(table, ids, torch.empty(2, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="indices must be i64 or i32"):
        GATHER_ROWS_FN(table, ids.float(), torch.empty(2, 4))
    with pytest.raises(ValueError, match="table must be 2-d"):
        GATHER_ROWS_FN(table.view(5, 2, 2), ids, torch.empty(2, 2, 2))
    out = torch.zeros(2, 4)
    with pytest.raises(IndexError, match="index 5, table of 5 rows"):
        GATHER_ROWS_FN(table, torch.tensor([0, 5]), out)
    assert torch.equal(out, torch.zeros(2, 4))  # checked before writing
