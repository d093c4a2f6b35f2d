"""torch.max / torch.min over an empty dim raise eager's IndexError (review 18, finding 5).

The max.dim / min.dim lowering (amax / amin + argmax / argmin) returned -inf / +inf and index 0 for a [4, 0] input,
where eager raises ``IndexError: max(): Expected reduction dim 1 to have non-zero size.``; Dynamo's fake tensors check
amax / argmax, not max.dim. A reduced dim of size 0, or of a symbolic size not known to be nonzero, now leaves the op
to ATen, which raises eager's error.
"""

from __future__ import annotations

import pytest
import torch

from autofuse import backend

OPS = {
    "max.dim": lambda x: (x * 1).max(-1),
    "min.dim": lambda x: (x * 2).min(1),
    "max.dim keepdim": lambda x: torch.max(x + 1, dim=1, keepdim=True),
}


def _eager_error(fn, x):
    with pytest.raises(IndexError) as e:
        fn(x)
    return str(e.value)


@pytest.mark.parametrize("name", sorted(OPS))
def test_static_empty_dim_raises_eagers_error(name):
    fn, x = OPS[name], torch.randn(4, 0)
    want = _eager_error(fn, x)
    torch._dynamo.reset()
    with pytest.raises(IndexError) as e:
        torch.compile(fn, backend="autofuse", dynamic=False)(x)
    assert str(e.value) == want


def test_dynamic_size_that_becomes_zero_raises():
    """A dynamic size that is 0 in a later call: Dynamo recompiles with a static 0 (sizes 0 and 1 are specialized);
    the recompiled graph raises eager's error instead of returning -inf."""
    fn = OPS["max.dim"]
    torch._dynamo.reset()
    c = torch.compile(fn, backend="autofuse", dynamic=True)
    for n in (5, 7):
        x = torch.randn(4, n)
        got, want = c(x), fn(x)
        assert torch.equal(got.values, want.values) and torch.equal(got.indices, want.indices)
    x = torch.randn(4, 0)
    want = _eager_error(fn, x)
    with pytest.raises(IndexError) as e:
        c(x)
    assert str(e.value) == want


def test_nonempty_dim_still_fuses():
    """A non-empty reduced dim next to an empty kept dim is a kernel as before (empty output, no error)."""
    fn = OPS["min.dim"]
    for x in (torch.randn(0, 5), torch.randn(3, 5)):
        torch._dynamo.reset()
        n0 = len(backend.RECORDS)
        got, want = torch.compile(fn, backend="autofuse", dynamic=False)(x), fn(x)
        assert torch.equal(got.values, want.values) and torch.equal(got.indices, want.indices)
        if x.numel():
            assert any(s.kind == "kernel" for r in backend.RECORDS[n0:] for s in r.steps), "expected a kernel"
