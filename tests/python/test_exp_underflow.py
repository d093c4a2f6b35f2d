"""exp of large negative inputs (src/autofuse/codegen/cpu/af_kernel.inc: lanes below -104 skip the 2^q scaling and
take +0, so that a causal mask's -inf rows cost no underflow assists): results equal eager's exactly around the
underflow threshold, for -inf and NaN, and a causally masked softmax matches eager."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("autofuse._core")


def test_exp_underflow_region_matches_eager_bitwise():
    vals = [float("-inf"), -1e30, -200.0, -110.0, -104.5, -104.0, -103.98, -103.97, -103.9, -100.0, -90.0, -87.4,
            -87.3, -50.0, 0.0, 1.0, float("nan"), float("inf")]
    x = torch.tensor(vals * 3 + [-104.0 + i * 1e-3 for i in range(200)], dtype=torch.float32)
    got = torch.compile(torch.exp, backend="autofuse", dynamic=False)(x)
    ref = torch.exp(x)
    assert torch.equal(torch.isnan(got), torch.isnan(ref))
    ok = ~torch.isnan(ref)
    assert torch.equal(got[ok].view(torch.int32), ref[ok].view(torch.int32))  # bitwise, +0 included


def test_causal_masked_softmax_matches_eager():
    torch.manual_seed(0)
    x = torch.randn(4, 64, 64)
    mask = torch.triu(torch.ones(64, 64, dtype=torch.bool), diagonal=1)

    def f(x, m):
        return torch.softmax(x.masked_fill(m, float("-inf")), dim=-1)

    got = torch.compile(f, backend="autofuse", dynamic=False)(x, mask)
    ref = f(x, mask)
    assert torch.equal(got == 0, ref == 0)  # masked entries are exactly +0
    assert (got - ref).abs().max() <= 1e-6
