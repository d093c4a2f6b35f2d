"""The per-call fast paths: plain torch tensors converted from their attributes (src/bindings/tensor_convert.cpp)
must give the same view as the DLPack path for every layout, and refuse what it refuses; kernels launched through
them compute eager's values; the stage timer (Kernel.time_stages) reports every stage."""

import pytest
import torch

from autofuse import _core, backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs native kernels (autofuse._core built and a C++ compiler)")


class _Sub(torch.Tensor):
    """A tensor subclass: not the fast path's exact type, so it goes through DLPack."""


def _views():
    base = torch.arange(60, dtype=torch.float32).reshape(3, 4, 5)
    return {
        "contiguous": base,
        "transposed": base.transpose(0, 2),
        "offset slice": base[1:, 2:, ::2],
        "expanded": torch.arange(5.0).expand(4, 5),
        "zero-size": torch.empty(0, 3),
        "0-d": torch.tensor(2.5),
        "requires grad": torch.ones(3, requires_grad=True),
        "bf16": torch.ones(4, 2, dtype=torch.bfloat16).t(),
        "bool": torch.tensor([True, False]),
        "parameter": torch.nn.Parameter(torch.ones(2, 2)),
        "subclass": torch.ones(3).as_subclass(_Sub),
    }


@pytest.mark.parametrize("name", list(_views()))
def test_view_matches_the_tensor(name):
    t = _views()[name]
    v = _core.tensor_view(t, False)
    assert v["sizes"] == list(t.shape)
    assert v["strides"] == list(t.stride())
    assert v["dtype"] == _core.tensor_view(torch.empty(0, dtype=t.dtype), False)["dtype"]
    if t.numel():
        assert v["data_ptr"] == t.data_ptr()


def test_neg_bit_view_is_not_read_unnegated():
    t = torch._neg_view(torch.ones(3))  # a lazily negated view: the memory holds +1
    assert t.is_neg()
    with pytest.raises(ValueError, match="negative bit"):  # refused, never silently viewed as +1
        _core.tensor_view(t, False)
    assert _core.tensor_view(t.resolve_neg(), False)["sizes"] == [3]


def test_meta_tensor_refused_by_name():
    with pytest.raises(ValueError, match="device 'meta'"):
        _core.tensor_view(torch.empty(2, device="meta"), False)


def _kernel_of(fn, *args):
    torch._dynamo.reset()
    start = len(backend.RECORDS)
    torch.compile(fn, backend="autofuse", dynamic=False)(*args)
    rec = [r for r in backend.RECORDS[start:] if r.steps][-1]
    return [s.kernel for s in rec.steps if s.kind == "kernel"][0]


def test_kernel_run_on_strided_views_through_the_fast_path():
    x = torch.randn(6, 8)
    k = _kernel_of(lambda a: a * 2 + 1, x)
    for view in (torch.randn(8, 6).t(), torch.randn(12, 10)[::2, 1:9], torch.randn(8).expand(6, 8)):
        out = torch.empty(view.shape).t().contiguous().t()  # a strided output too
        k.run([view], [out])
        torch.testing.assert_close(out, view * 2 + 1)


def test_kernel_run_checks_dtype_and_rank():
    k = _kernel_of(lambda a: a * 2 + 1, torch.randn(6, 8))
    with pytest.raises(Exception, match="dtype"):
        k.run([torch.randn(6, 8, dtype=torch.float64)], [torch.empty(6, 8)])
    with pytest.raises(Exception, match="rank"):
        k.run([torch.randn(48)], [torch.empty(48)])


def test_time_stages_reports_each_stage():
    x = torch.randn(4096)
    k = _kernel_of(lambda a: a * 2 + 1, x)
    out = torch.empty(4096)
    t = k.time_stages([x], [out], 50)
    assert set(t) == {"convert", "bind", "tiling", "variant", "launch", "run"}
    assert all(v >= 0 for v in t.values())
    assert t["run"] >= t["launch"]
    torch.testing.assert_close(out, x * 2 + 1)


def _spec(t: torch.Tensor, base: torch.Tensor):
    """The view spec of view ``t`` of ``base``: (base, (sizes, strides, offset relative to base))."""
    return base, (tuple(t.shape), tuple(t.stride()), t.storage_offset() - base.storage_offset())


def test_kernel_run_takes_view_specs_as_inputs_and_outputs():
    k = _kernel_of(lambda a, b: a * 2 + b, torch.randn(6, 8), torch.randn(6, 8))
    base = torch.randn(14, 20)[1:]  # a base with a storage offset of its own: spec offsets are relative to it
    views = [base.t()[3:11, 2:8].t(), base[::2, 4:12][:6], base[0, :8].expand(6, 8)]
    for a in views:
        for b in views:
            out_base = torch.zeros(8, 12)
            out = out_base.t()[2:8]  # a strided output, given as a spec of its base
            k.run([_spec(a, base), _spec(b, base)], [_spec(out, out_base)])
            torch.testing.assert_close(out, a * 2 + b)
            assert out_base.t()[:2].abs().sum() == 0 and out_base.t()[8:].abs().sum() == 0  # nothing else written


def test_view_spec_outside_its_tensor_is_refused():
    k = _kernel_of(lambda a: a * 2 + 1, torch.randn(6, 8))
    base, out = torch.randn(48), torch.empty(6, 8)
    k.run([(base, ((6, 8), (8, 1), 0))], [out])
    torch.testing.assert_close(out, base.view(6, 8) * 2 + 1)
    with pytest.raises(ValueError, match="input 0: view .* outside"):
        k.run([(base, ((6, 8), (8, 1), 1))], [out])  # one element past the end
    with pytest.raises(ValueError, match="input 0: view .* outside"):
        k.run([(base, ((6, 8), (8, 1), -1))], [out])
    with pytest.raises(ValueError, match="output 0: view .* outside"):
        k.run([(base, ((6, 8), (8, 1), 0))], [(torch.empty(47), ((6, 8), (8, 1), 0))])
    with pytest.raises(ValueError, match="input 0: expected a tensor or"):
        k.run([(base, ((6, 8), (8, 1)))], [out])
    with pytest.raises(ValueError, match="input 0: expected a tensor or"):
        k.run([(base, ((6, 8), (8,), 0))], [out])
