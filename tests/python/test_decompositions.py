"""The decomposition table keeps eager's argument checks that PyTorch's decompositions leave out: a cross-entropy /
NLL target of a dtype other than int64 or uint8 raises eager's RuntimeError instead of giving a loss."""

import pytest
import torch
import torch.nn.functional as F

from autofuse import backend


# int32 is the one wrong dtype that reaches the backend: for int16 or float targets Dynamo's own fake-tensor run already
# raises (a TorchRuntimeError, for every backend).
@pytest.mark.parametrize("dtype", [torch.int32])
@pytest.mark.parametrize("loss", [F.cross_entropy, lambda x, t: F.nll_loss(F.log_softmax(x, -1), t)],
                         ids=["cross_entropy", "nll_loss"])
def test_wrong_target_dtype_raises_like_eager(loss, dtype):
    x = torch.randn(4, 10)
    t = torch.tensor([1, 2, 0, 9]).to(dtype)
    with pytest.raises(RuntimeError) as eager:
        loss(x, t)
    torch._dynamo.reset()
    with pytest.warns(UserWarning, match="could not be traced"), pytest.raises(RuntimeError) as ours:
        torch.compile(loss, backend="autofuse")(x, t)  # the graph falls back to eager, which raises
    assert str(ours.value) == str(eager.value)


# (a uint8 target, which eager accepts, already fails in Dynamo's fake-tensor run of cross_entropy: "gather(): Expected
# dtype int32/int64 for index", torch 2.13, for every backend)
@pytest.mark.parametrize("dtype", [torch.int64])
def test_accepted_target_dtypes_compile(dtype):
    x = torch.randn(4, 10)
    t = torch.tensor([1, 2, 0, 9]).to(dtype)
    torch._dynamo.reset()
    n0 = len(backend.RECORDS)
    got = torch.compile(F.cross_entropy, backend="autofuse")(x, t)
    torch.testing.assert_close(got, F.cross_entropy(x, t))
    assert backend.RECORDS[n0:] and all(r.mode == "kernels" for r in backend.RECORDS[n0:])
