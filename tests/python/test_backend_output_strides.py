"""Graph outputs written through views keep eager's strides (program_layout.py; new-user review finding).

``y = x + 1; y.t()[0, 1] = 7; return y`` becomes ``permute(select_scatter(permute(add)))`` after functionalization:
the scatter kernel's output must be allocated transposed so that the returned view of it is contiguous, as in
eager (before the fix autofuse returned strides (1, 3) and ``y.view(-1)`` raised). Every case compares sizes,
strides, storage offset, values and whether ``.view(-1)`` works with eager, with static and dynamic shapes.
Outputs eager returns as expanded views (zero strides) are views here too, not copies (program_layout.expand_outputs):
their storage is no larger than eager's.
"""

import pytest
import torch

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs native kernels (autofuse._core built and a C++ compiler)")


def _select_scatter_t(x):
    y = x + 1
    y.t()[0, 1] = 7
    return y


def _row_of_t_add(x):
    y = x * 2
    y.t()[1] += 3
    return y


def _slice_scatter_t(x):
    y = x - 1
    y.t()[1:3] = 5
    return y


def _permute3d_scatter(x):
    y = x.exp()
    y.permute(2, 0, 1)[1, :, 0] = -1
    return y


def _index_put_t(x):
    y = x + 2
    idx = torch.tensor([0, 2])
    y.t()[idx] = 0.5
    return y


def _scatter_then_view(x):
    y = x * 3
    y.t()[0] = 1
    return y.reshape(-1, 2), y[1:]


def _two_outputs(x):
    y = x + 1
    y.t()[2, 0] = 4
    return y, y.t()


def _transposed_result(x):
    y = (x + 1).t()
    y[0] = 2
    return y


def _narrow_of_scatter(x):
    y = x.sin()
    y.t()[0, 0] = 9
    return y.narrow(1, 1, 2)


def _expand_new_dim(x):
    return (x + 1).unsqueeze(0).expand(5, -1, -1)


def _expand_keepdim_sum(x):
    return (x.sum(0, keepdim=True) + 1).expand(x.shape[0], -1)


def _expand_of_transposed(x):
    return (x.t() * 2).unsqueeze(1).expand(-1, 3, -1)


def _expand_and_its_base(x):
    y = x.exp()
    return y, y.unsqueeze(0).expand(2, -1, -1)


def _expand_also_read(x):
    e = (x + 1).unsqueeze(0).expand(2, -1, -1)
    return e, e * 2


CASES = {  # name -> (fn, make(size))
    "expand_new_dim": (_expand_new_dim, lambda n: torch.randn(n, 4)),
    "expand_keepdim_sum": (_expand_keepdim_sum, lambda n: torch.randn(n, 4)),
    "expand_of_transposed": (_expand_of_transposed, lambda n: torch.randn(n, 4)),
    "expand_and_its_base": (_expand_and_its_base, lambda n: torch.randn(n, 4)),
    "expand_also_read": (_expand_also_read, lambda n: torch.randn(n, 4)),
    "select_scatter_t": (_select_scatter_t, lambda n: torch.randn(n, 4)),
    "row_of_t_add": (_row_of_t_add, lambda n: torch.randn(n, 4)),
    "slice_scatter_t": (_slice_scatter_t, lambda n: torch.randn(n, 5)),
    "permute3d_scatter": (_permute3d_scatter, lambda n: torch.randn(n, 3, 4)),
    "index_put_t": (_index_put_t, lambda n: torch.randn(n, 4)),
    "scatter_then_view": (_scatter_then_view, lambda n: torch.randn(n, 4)),
    "two_outputs": (_two_outputs, lambda n: torch.randn(n, 4)),
    "transposed_result": (_transposed_result, lambda n: torch.randn(n, 4)),
    "narrow_of_scatter": (_narrow_of_scatter, lambda n: torch.randn(n, 4)),
}


def _views_flat(t):
    try:
        return t.view(-1)
    except RuntimeError:
        return None


def _same(got, want, where):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want), where
    for i, (g, w) in enumerate(zip(got, want)):
        msg = f"{where} output {i}: sizes {tuple(g.shape)} vs {tuple(w.shape)}, strides {g.stride()} vs {w.stride()}"
        assert g.shape == w.shape and g.stride() == w.stride(), msg
        assert g.storage_offset() == w.storage_offset(), msg
        assert g.untyped_storage().nbytes() <= w.untyped_storage().nbytes(), msg  # expanded outputs are views
        torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-6)
        gv, wv = _views_flat(g), _views_flat(w)
        assert (gv is None) == (wv is None), msg
        if wv is not None:
            torch.testing.assert_close(gv, wv, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", sorted(CASES))
def test_output_strides_through_views_static(case):
    fn, make = CASES[case]
    torch.manual_seed(5)
    x = make(3)
    torch._dynamo.reset()
    n0 = len(backend.RECORDS)
    got = torch.compile(fn, backend="autofuse", dynamic=False)(x.clone())
    assert backend.RECORDS[n0:] and all(r.mode == "kernels" for r in backend.RECORDS[n0:])
    _same(got, fn(x.clone()), case)


@pytest.mark.parametrize("case", sorted(CASES))
def test_output_strides_through_views_dynamic(case):
    fn, make = CASES[case]
    torch.manual_seed(6)
    torch._dynamo.reset()
    f = torch.compile(fn, backend="autofuse", dynamic=True)
    for n in (6, 7, 11):  # sizes unequal to the other dims (duck sizing would tie them) and > 2 (not specialized)
        x = make(n)
        _same(f(x.clone()), fn(x.clone()), f"{case} n={n}")


def test_layout_search_is_what_fixes_it(monkeypatch):
    """Without the chain layouts (program_layout.kernel_output_layouts limited to direct outputs) the transposed
    scatter case returns eager-incompatible strides: the test above would fail without the fix."""
    from autofuse import program, program_layout

    def direct_only(lg, steps, host_nodes, fake):
        return program_layout.kernel_output_layouts(lg, steps, set(), fake)

    monkeypatch.setattr(program, "kernel_output_layouts", direct_only)
    monkeypatch.setenv("AUTOFUSE_AOT_CACHE", "0")
    torch._dynamo.reset()
    x = torch.randn(3, 4)
    got = torch.compile(_select_scatter_t, backend="autofuse", dynamic=False)(x.clone())
    assert got.stride() != _select_scatter_t(x.clone()).stride()
