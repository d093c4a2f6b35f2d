"""Dynamic shapes whose kernel inputs are sized by non-linear forms of a symbol (the halves of LLaMA's rotate_half
on a dynamic last dim: s1 - floordiv(s1, 2)). The kernel cannot bind s1 at launch; before the fix its first call
raised IRError ("cannot evaluate s1 - floordiv(s1, 2)"). Now such a kernel is refused at compile time and its ops
run in ATen with a warning: values equal eager for contiguous and sliced inputs, with and without concat fusion."""
import warnings

import pytest
import torch

import autofuse  # noqa: F401


def rope(q, c, s):
    h = q.shape[-1] // 2
    return q * c + torch.cat((-q[..., h:], q[..., :h]), -1) * s


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
