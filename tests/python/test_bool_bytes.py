"""Bool tensors whose bytes are not 0 / 1 (a uint8 tensor viewed as bool: review finding 2, session 8). Eager treats
every nonzero byte as True; the kernels load a bool byte as 0 / 1 (codegen/cpu/emitter.h emit_value), so casts,
products, logical not and masked fills agree with eager bit for bit. Sizes cover a whole vector plus a tail, and
strided / expanded masks."""
import pytest
import torch

import autofuse  # noqa: F401
from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")

CASES = {
    "to_float": lambda s, m: m.to(s.dtype) + s,
    "mul": lambda s, m: s * m,
    "masked_fill_not": lambda s, m: s.masked_fill(~m, -1.0),
    "not_to_float": lambda s, m: (~m).to(s.dtype) + 0 * s,
    "where": lambda s, m: torch.where(m, s, -s),
    "and_or": lambda s, m: (m & m.flip(-1)).to(s.dtype) + (m | m.flip(-1)).to(s.dtype) * s,
    "sum": lambda s, m: m.sum(-1).to(s.dtype) + s[..., 0],
}


def _raw_mask(shape, gen):
    """A bool view of random bytes 0..255 (about 1 in 4 zero), so most true bytes are not 1."""
    raw = torch.randint(0, 256, shape, generator=gen, dtype=torch.uint8)
    raw[torch.rand(shape, generator=gen) < 0.25] = 0
    return raw.view(torch.bool)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", ["contiguous", "strided", "expanded"])
def test_nonzero_bool_bytes_are_true(name, dtype, layout):
    f = CASES[name]
    gen = torch.Generator().manual_seed(3)
    s = torch.randn(5, 37, generator=gen).to(dtype)
    if layout == "contiguous":
        m = _raw_mask((5, 37), gen)
    elif layout == "strided":
        m = _raw_mask((5, 74), gen)[:, ::2]
    else:
        m = _raw_mask((1, 37), gen).expand(5, 37)
    assert (m.view(torch.uint8) > 1).any() if m.is_contiguous() else True
    torch._dynamo.reset()
    got = torch.compile(f, backend="autofuse")(s, m)
    want = f(s, m)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=0, atol=0)
