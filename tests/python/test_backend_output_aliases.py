"""Graph outputs that are views of other outputs alias them as in eager (review 18 finding 4).

``y = x.exp(); return y, y.unsqueeze(0)``: eager's second output is a view of the first, so ``y.mul_(3)`` shows in
both. The lowering folds a unit-dim reshape of a computed value into the value itself (lowering_unit_reshape.py: no
host step, one kernel), which made the unsqueeze a second buffer the kernel wrote. An output whose storage root is
shared with another output is now rebuilt as a view (``aliasing_outputs``), and a unit reshape below a view op that
may stay an ATen call (``as_strided``, a slice of a symbolic axis) is not folded (``keep_views``). A view of an
expand (``y[:, None].expand(-1, 2, -1)[1:]``) has the broadcast moved to the top of its chain (``_lift_broadcast``),
so the program returns ``.expand`` of a view of y (review 18b finding 2). Each case compares
with eager which outputs share storage (with each other and the input), every output's sizes, strides and storage
offset, the values, and the values after an in-place update of the first output; static and dynamic shapes.
"""

from __future__ import annotations

import pytest
import torch

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")


def _with(view):
    """``fn(x) = (y, *view(y))`` with ``y = x.exp()`` (view returns a tuple of outputs)."""
    def fn(x):
        y = x.exp()
        return (y, *view(y))
    return fn


CASES = {
    "unsqueeze": ((4, 3), _with(lambda y: (y.unsqueeze(0),))),
    "unsqueeze(-1)": ((4, 3), _with(lambda y: (y.unsqueeze(-1),))),
    "y[None]": ((4, 3), _with(lambda y: (y[None],))),
    "y[:, None]": ((4, 3), _with(lambda y: (y[:, None],))),
    "squeeze(1)": ((4, 1, 3), _with(lambda y: (y.squeeze(1),))),
    "squeeze()": ((4, 1, 3), _with(lambda y: (y.squeeze(),))),
    "unsqueeze.expand": ((4, 3), _with(lambda y: (y.unsqueeze(0).expand(2, *y.shape),))),
    "unsqueeze twice": ((4, 3), _with(lambda y: (y.unsqueeze(0).unsqueeze(0),))),
    "unsqueeze.permute": ((4, 3), _with(lambda y: (y.unsqueeze(0).permute(2, 0, 1),))),
    "unsqueeze.slice": ((4, 3), _with(lambda y: (y.unsqueeze(0)[..., 1:],))),
    "unsqueeze.as_strided": ((4, 3), _with(lambda y: (y.unsqueeze(0).as_strided((2, 2), (1, 1)),))),
    "unsqueeze.split": ((4, 3), _with(lambda y: y.unsqueeze(0).split(2, dim=1))),
    "unsqueeze read inside": ((4, 3), _with(lambda y: (y.unsqueeze(0), y.unsqueeze(0) * 2))),
    "view": ((4, 3), _with(lambda y: (y.view(1, -1),))),
    "select": ((4, 3), _with(lambda y: (y[2],))),
    "two unsqueezes only": ((4, 3), lambda x: (lambda y: (y.unsqueeze(0), y.unsqueeze(1)))(x.exp())),
    "keepdim sum, squeeze": ((4, 3), lambda x: (lambda s: (s, s.squeeze(1)))(x.sum(1, keepdim=True))),
    "sum, unsqueeze": ((4, 3), lambda x: (lambda s: (s, s[None]))(x.sum(0))),
    "where, unsqueeze": ((4, 3), lambda x: (lambda y: (y, y.unsqueeze(0)))(torch.where(x > 0, x, x * 2))),
    "cast, unsqueeze": ((4, 3), lambda x: (lambda y: (y, y[None]))(x.double())),
    "input view": ((4, 3), lambda x: (x.unsqueeze(0), x.exp())),
    # a view of a broadcast was a buffer of its own: the broadcast now sits on top (review 18b finding 2)
    "y[:, None].expand.slice": ((4, 3), _with(lambda y: (y[:, None].expand(-1, 2, -1)[1:],))),
    "unsqueeze(1).expand.slice": ((4, 3), _with(lambda y: (y.unsqueeze(1).expand(-1, 2, -1)[1:],))),
    "unsqueeze.expand.slice(1)": ((4, 3), _with(lambda y: (y.unsqueeze(0).expand(3, -1, -1)[:, 1:],))),
    "unsqueeze.expand.slice broadcast axis": ((4, 3), _with(lambda y: (y.unsqueeze(0).expand(3, -1, -1)[1:],))),
    "unsqueeze.expand.permute": ((4, 3), _with(lambda y: (y.unsqueeze(0).expand(2, -1, -1).permute(2, 0, 1),))),
    "keepdim sum, expand.slice": ((4, 3), lambda x: (lambda s: (s, s.expand(-1, 3)[1:]))(x.sum(1, keepdim=True))),
    "var, unsqueeze.expand.slice": ((4, 3), lambda x: (lambda s: (s, s[:, None].expand(-1, 2)[1:]))(x.var(1))),
}


def _signature(outs, x):
    """Which of outputs + input share storage, and each output's sizes / strides / storage offset."""
    ts = list(outs) + [x]
    ptrs = [t.untyped_storage().data_ptr() for t in ts]
    share = [[a == b for b in ptrs] for a in ptrs]
    return share, [(tuple(t.shape), t.stride(), t.storage_offset()) for t in outs]


def _check(fn, compiled, shape):
    torch.manual_seed(0)
    x0 = torch.randn(shape)
    xe, xc = x0.clone(), x0.clone()
    eager, got = fn(xe), compiled(xc)
    assert _signature(got, xc) == _signature(eager, xe)
    for a, b in zip(got, eager):
        torch.testing.assert_close(a, b)
    eager[0].mul_(3)
    got[0].mul_(3)  # seen through every output that aliases it, as in eager
    for a, b in zip(got, eager):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_aliases_match_eager(monkeypatch, name):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    shape, fn = CASES[name]
    torch._dynamo.reset()
    _check(fn, torch.compile(fn, backend="autofuse"), shape)


@pytest.mark.parametrize("name", ["unsqueeze", "y[:, None]", "squeeze(1)", "unsqueeze.expand", "unsqueeze.slice",
                                  "keepdim sum, squeeze", "two unsqueezes only", "y[:, None].expand.slice",
                                  "unsqueeze(1).expand.slice", "unsqueeze.expand.slice(1)",
                                  "unsqueeze.expand.slice broadcast axis", "unsqueeze.expand.permute",
                                  "keepdim sum, expand.slice", "var, unsqueeze.expand.slice"])
def test_output_aliases_match_eager_dynamic(monkeypatch, name):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    shape, fn = CASES[name]
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="autofuse", dynamic=True)
    for grow in (0, 3):
        _check(fn, compiled, tuple(s + grow if s > 1 else s for s in shape))


def test_aliased_outputs_in_training(monkeypatch):
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    fn = CASES["unsqueeze"][1]
    x0 = torch.randn(4, 3)
    xe, xc = x0.clone().requires_grad_(True), x0.clone().requires_grad_(True)
    torch._dynamo.reset()
    eager, got = fn(xe), torch.compile(fn, backend="autofuse")(xc)
    assert _signature(got, xc) == _signature(eager, xe)
    (eager[0].sum() + (eager[1] * 2).sum()).backward()
    (got[0].sum() + (got[1] * 2).sum()).backward()
    torch.testing.assert_close(xc.grad, xe.grad)


def _reshapes_of_computed_values(records) -> int:
    """IR reshapes whose input is computed (not a graph input): the host view steps a fold avoids."""
    return sum(1 for r in records for n in r.lowered.nodes
               if n.op == "reshape" and r.lowered.nodes[n.inputs[0]].op != "input")


def test_unaliased_folds_stay_in_the_kernel(monkeypatch):
    """Where no other output shares the storage, unit reshapes of computed values stay folded (no host view step);
    only an aliased output is rebuilt as a view."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    monkeypatch.setenv("AUTOFUSE_AOT_CACHE", "0")  # the records must hold the lowered IR
    x = torch.randn(4, 3)

    def unaliased(x):
        y = x.exp()
        return y, (y * 2).unsqueeze(0), (y + 1).unsqueeze(-1) * 3

    def aliased(x):
        y = x.exp()
        return y, y.unsqueeze(0), y.unsqueeze(0) * 3

    for fn, expected in ((unaliased, 0), (aliased, 1)):
        start = len(backend.RECORDS)
        torch._dynamo.reset()
        got = torch.compile(fn, backend="autofuse")(x)
        for a, b in zip(got, fn(x)):
            torch.testing.assert_close(a, b)
        assert _reshapes_of_computed_values(backend.RECORDS[start:]) == expected, fn.__name__
