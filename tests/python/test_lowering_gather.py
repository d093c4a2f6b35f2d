"""aten.gather / aten.scatter with one index per row (cross-entropy's pattern) lowered to IR (lowering_gather.py):
bit-exact against eager for special values (-0.0, +-inf, NaN at the target and elsewhere in the row), eager's
out-of-bounds error for bad indices, and F.cross_entropy forward/backward as few kernels with eager's values."""

import pytest
import torch
import torch.nn.functional as F

import autofuse
from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs native kernels (autofuse._core built and a C++ compiler)")

SPECIALS = [-0.0, 0.0, float("inf"), float("-inf"), float("nan"), 1.5, -2.25]


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bits of a tensor (NaN payloads and the sign of zero included)."""
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.contiguous().view(width)


def _special_rows(dtype, classes=19):
    """One row per (target value, other-values) combination: every special at the target, with NaN, +-inf or -0.0
    filling the rest of the row."""
    rows, targets = [], []
    for k, v in enumerate(SPECIALS):
        for fill in (float("nan"), float("inf"), float("-inf"), -0.0, 3.0):
            row = torch.full((classes,), fill, dtype=torch.float64)
            tgt = (k * 5 + len(rows)) % classes
            row[tgt] = v
            rows.append(row)
            targets.append(tgt)
    return torch.stack(rows).to(dtype), torch.tensor(targets)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_gather_is_bit_exact_on_special_values(dtype):
    x, t = _special_rows(dtype)
    torch._dynamo.reset()
    f = torch.compile(lambda a, i: torch.gather(a, -1, i[:, None]), backend="autofuse")
    got, want = f(x, t), torch.gather(x, -1, t[:, None])
    assert torch.equal(_bits(got), _bits(want)), (got, want)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int8])
def test_gather_integers_including_the_minimum(dtype):
    info = torch.iinfo(dtype)
    g = torch.Generator().manual_seed(5)
    x = torch.randint(info.min, info.max, (33, 10), generator=g, dtype=dtype)
    x[0, :] = info.min
    x[1, :] = info.max
    t = torch.randint(0, 10, (33,), generator=g)
    torch._dynamo.reset()
    f = torch.compile(lambda a, i: torch.gather(a, 1, i.unsqueeze(1)), backend="autofuse")
    assert torch.equal(f(x, t), torch.gather(x, 1, t.unsqueeze(1)))


def test_gather_is_lowered_not_an_aten_call():
    x, t = torch.randn(8, 30), torch.randint(0, 30, (8,))
    rep = autofuse.explain(lambda a, i: torch.gather(a * 2, -1, i[:, None]) + 1, x, t)
    assert not [f for f in rep.fallbacks if "gather" in f[0]], rep.fallbacks
    assert rep.kernel_count == 1, str(rep)


@pytest.mark.parametrize("bad", [30, 31, -1, -30])
def test_out_of_range_index_raises_like_eager(bad):
    x, t = torch.randn(6, 30), torch.randint(0, 30, (6,))
    t[4] = bad
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.gather(x, -1, t[:, None])  # eager's behaviour, which the compiled graph must match
    torch._dynamo.reset()
    f = torch.compile(lambda a, i: torch.gather(a.exp(), -1, i[:, None]), backend="autofuse")
    with pytest.raises(RuntimeError, match=f"index {bad} is out of bounds for dimension 1 with size 30"):
        f(x, t)
    t[4] = 0
    torch.testing.assert_close(f(x, t), torch.gather(x.exp(), -1, t[:, None]))


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("bad", [10, -1])
def test_out_of_range_target_raises_eagers_index_error(loss, bad):
    """Review, session 28: a cross_entropy / nll_loss target outside [0, C) raised the gather check's RuntimeError
    ("index 10 is out of bounds for dimension 1 ...") where eager raises IndexError("Target 10 is out of bounds."),
    so code catching IndexError missed it. The ignored target (-100) is not checked, as in eager."""
    fn = {"cross_entropy": lambda a, t: F.cross_entropy(a, t),
          "nll_loss": lambda a, t: F.nll_loss(a.log_softmax(-1), t)}[loss]
    x, t = torch.randn(4, 10), torch.tensor([1, -100, 3, 2])
    torch._dynamo.reset()
    f = torch.compile(fn, backend="autofuse")
    torch.testing.assert_close(f(x, t), fn(x, t))
    t[2] = bad
    with pytest.raises(IndexError, match=f"^Target {bad} is out of bounds.$"):
        fn(x, t)  # eager's behaviour, which the compiled graph must match
    with pytest.raises(IndexError, match=f"^Target {bad} is out of bounds.$"):
        f(x, t)


@pytest.mark.parametrize("shape", [(2, 5, 4), (2, 5, 3, 2)], ids=["3d", "4d"])
@pytest.mark.parametrize("bad", [9, -2])
def test_out_of_range_target_of_a_spatial_loss_raises_index_error(shape, bad):
    """Review, session 28: with an [N, C, d...] input the target's gather is along dim 1, an ATen call, which raised
    gather's RuntimeError; eager raises IndexError naming the first bad target in order."""
    x = torch.randn(*shape)
    t = torch.randint(0, shape[1], (shape[0],) + shape[2:])
    t.view(-1)[-1] = -100  # ignored
    torch._dynamo.reset()
    f = torch.compile(lambda a, i: F.cross_entropy(a, i), backend="autofuse")
    torch.testing.assert_close(f(x, t), F.cross_entropy(x, t))
    t.view(-1)[1] = bad
    t.view(-1)[2] = 7 if bad < 0 else -7  # a second bad target later in order: eager names the first
    with pytest.raises(IndexError, match=f"^Target {bad} is out of bounds.$"):
        F.cross_entropy(x, t)
    with pytest.raises(IndexError, match=f"^Target {bad} is out of bounds.$"):
        f(x, t)


def test_first_bad_target_is_named_as_in_eager():
    """Review, session 28: with several bad targets the check named the minimum (or maximum), eager the first."""
    x, t = torch.randn(6, 5), torch.tensor([7, -2, 2, 0, 1, 3])
    torch._dynamo.reset()
    f = torch.compile(lambda a, i: F.cross_entropy(a, i, ignore_index=3), backend="autofuse")
    for targets, first in (([7, -2, 2, 0, 1, 3], 7), ([1, 2, 10, 0, -100, 3], 10)):
        t = torch.tensor(targets)
        with pytest.raises(IndexError, match=f"^Target {first} is out of bounds.$"):
            F.cross_entropy(x, t, ignore_index=3)
        with pytest.raises(IndexError, match=f"^Target {first} is out of bounds.$"):
            f(x, t)


def test_computed_index_is_checked_too():
    # the index is computed inside the kernel (where of the target); the check reads its materialized value
    x, t = torch.randn(5, 12), torch.tensor([1, 2, 40, 3, 4])
    torch._dynamo.reset()
    f = torch.compile(lambda a, i: torch.gather(a, -1, torch.where(i > 3, i - 1, i)[:, None]), backend="autofuse")
    with pytest.raises(RuntimeError, match="index 39 is out of bounds"):
        f(x, t)


@pytest.mark.parametrize("form", ["value", "src"])
def test_scatter_one_per_row_is_exact(form):
    x, t = _special_rows(torch.float32)
    src = torch.randn(x.shape[0], 1)
    src[0, 0] = -0.0
    src[1, 0] = float("nan")
    fn = ((lambda a, i, s: torch.scatter(a, -1, i[:, None], -0.0)) if form == "value"
          else (lambda a, i, s: torch.scatter(a, -1, i[:, None], s)))
    torch._dynamo.reset()
    got, want = torch.compile(fn, backend="autofuse")(x, t, src), fn(x, t, src)
    assert torch.equal(_bits(got), _bits(want))
    rep = autofuse.explain(fn, x, t, src)
    assert not [f for f in rep.fallbacks if "scatter" in f[0]], rep.fallbacks


def _ce_cases():
    return [dict(), dict(reduction="none"), dict(ignore_index=3), dict(reduction="none", ignore_index=3),
            dict(reduction="sum"), dict(label_smoothing=0.0)]


@pytest.mark.parametrize("kw", _ce_cases(), ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "mean")
@pytest.mark.parametrize("rows,classes", [(64, 1000), (1, 7), (13, 50)])
def test_cross_entropy_forward_and_backward(kw, rows, classes):
    g = torch.Generator().manual_seed(rows * 1000 + classes)
    x = torch.randn(rows, classes, generator=g, requires_grad=True)
    t = torch.randint(0, classes, (rows,), generator=g)
    t[0] = 3 % classes  # an ignored row when ignore_index=3
    torch._dynamo.reset()
    f = torch.compile(lambda a, b: F.cross_entropy(a, b, **kw), backend="autofuse")
    got = f(x, t)
    grad = torch.randn_like(got)
    got.backward(grad)
    got_grad = x.grad.clone()
    x.grad = None
    want = F.cross_entropy(x, t, **kw)
    want.backward(grad)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6, equal_nan=True)  # 1 row, ignored: 0/0
    torch.testing.assert_close(got_grad, x.grad, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kw", [dict(), dict(reduction="none"), dict(ignore_index=3), dict(reduction="sum"),
                                dict(weight=torch.rand(1000) + 0.5)],
                         ids=["mean", "none", "ignore_index", "sum", "weight"])
def test_cross_entropy_kernel_counts(kw):
    x, t = torch.randn(64, 1000), torch.randint(0, 1000, (64,))
    rep = autofuse.explain(lambda a, b: F.cross_entropy(a, b, **kw), x, t)
    assert rep.fallbacks == [], rep.fallbacks  # gather no longer an ATen call
    # one kernel: log-softmax, the target's logit, the per-row loss, the batch sum, the count of valid targets and
    # the division (decompositions._nll_loss_forward_kept keeps per-row values as [N, 1]); was 3 kernels, and before
    # that 3 kernels + ATen gather
    assert rep.kernel_count == 1, str(rep)
    x.requires_grad_(True)
    rep = autofuse.explain(lambda a, b: F.cross_entropy(a, b, **kw).sum().backward(), x, t)
    bwd = [k for k in rep.kernels if "backward" in k.graph]
    # the whole gradient: one kernel (was 3 + ATen scatter); reduction="none" adds the .sum()'s gradient expansion
    # (a broadcast_to kernel of its own)
    assert len(bwd) == (2 if kw.get("reduction") == "none" else 1), [(k.graph, k.ops) for k in rep.kernels]


def test_cross_entropy_bf16_against_fp64():
    g = torch.Generator().manual_seed(11)
    x = torch.randn(32, 300, generator=g).to(torch.bfloat16)
    t = torch.randint(0, 300, (32,), generator=g)
    torch._dynamo.reset()
    got = torch.compile(lambda a, b: F.cross_entropy(a, b, reduction="none"), backend="autofuse")(x, t)
    ref = F.cross_entropy(x.double(), t, reduction="none")
    eager = F.cross_entropy(x, t, reduction="none")
    err, eager_err = (got.double() - ref).abs().max(), (eager.double() - ref).abs().max()
    assert got.dtype == torch.bfloat16
    assert err <= max(2 * eager_err, 1e-2 * ref.abs().max()), (err, eager_err)


def test_unit_reshapes_fold_into_values():
    from autofuse.lowering import lower  # noqa: F401  (the lowering table)
    x, t = torch.randn(9, 40), torch.randint(0, 40, (9,))

    def fn(a, b):
        s = a.sum(-1, keepdim=True).squeeze(-1)       # keepdim reduction + squeeze -> keepdim=False
        u = (b * 2 + 1).unsqueeze(1)                  # elementwise chain + unsqueeze -> chain on [9, 1]
        return s, u

    torch._dynamo.reset()
    got = torch.compile(fn, backend="autofuse")(x, t)
    want = fn(x, t)
    torch.testing.assert_close(got[0], want[0])
    assert torch.equal(got[1], want[1])
    rec = backend.RECORDS[-1]
    reshapes = [n for n in rec.lowered.nodes if n.op == "reshape"]
    assert all(rec.lowered.nodes[n.inputs[0]].op == "input" for n in reshapes), rec.lowered.ir_text()


def test_gather_pushed_through_row_ops_is_exact():
    # gather(f(x, per-row values)) is computed as f(gather(x), per-row values): the same ops on the same values
    g = torch.Generator().manual_seed(3)
    x = torch.randn(40, 33, generator=g)
    x[0, :] = -0.0
    x[1, 5] = float("inf")
    x[2, 7] = float("nan")
    t = torch.randint(0, 33, (40,), generator=g)
    t[1], t[2] = 5, 8

    def fn(a, i):
        m = a.amax(-1, keepdim=True)
        c = a.amin(-1, keepdim=True)  # per-row values from exact reductions: every op below is IEEE-exact
        return torch.gather(((a - m) * 0.5) - c, -1, i[:, None])

    torch._dynamo.reset()
    got, want = torch.compile(fn, backend="autofuse")(x, t), fn(x, t)
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(torch.signbit(got), torch.signbit(want))
    rec = backend.RECORDS[-1]
    sel = [n for n in rec.lowered.nodes if n.op == "where" and rec.lowered.nodes[n.inputs[1]].op == "input"]
    assert sel, "the selection should read the input rows directly:\n" + rec.lowered.ir_text()


@pytest.mark.parametrize("kw", [dict(ignore_index=3), dict(reduction="none", ignore_index=3),
                                dict(reduction="sum", ignore_index=3), dict(weight=True, ignore_index=3)],
                         ids=["mean", "none", "sum", "weight"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_nll_and_cross_entropy_backward_keep_eagers_zero_signs(kw, dtype):
    """Eager's nll_loss backward writes only each valid row's target class, so every other entry (ignored rows,
    off-target classes) is +0.0 whatever the incoming gradient; torch's scatter-times-gradient decomposition gave
    -0.0 there for a negative or zeroed gradient. Compared bit for bit, through log_softmax's backward too."""
    g = torch.Generator().manual_seed(5)
    kw = dict(kw)
    if kw.pop("weight", False):
        kw["weight"] = torch.rand(11, generator=g).to(dtype) + 0.5
    x = torch.randn(9, 11, generator=g).to(dtype)
    t = torch.randint(0, 11, (9,), generator=g)
    t[0], t[4] = 3, 3  # ignored rows
    for loss in (F.nll_loss, F.cross_entropy):
        grads = []
        for mode in ("autofuse", "eager", "fp64"):
            xx = (x.double() if mode == "fp64" else x.clone()).requires_grad_(True)
            kw_run = dict(kw, weight=kw["weight"].double()) if mode == "fp64" and "weight" in kw else kw
            fn = (lambda a, b: loss(a, b, **kw_run))
            if mode == "autofuse":
                torch._dynamo.reset()
                fn = torch.compile(fn, backend="autofuse")
            out = fn(xx, t)
            out.backward(-torch.ones_like(out))  # a negative incoming gradient: -0.0 from a product
            grads.append(xx.grad)
        got, want, ref = grads
        assert torch.equal(_bits(got[t == 3]), _bits(want[t == 3])), (loss.__name__, got[t == 3])
        if loss is F.nll_loss:  # off-target entries of valid rows too (CE's rows go through softmax: rounding)
            zero = want == 0
            assert torch.equal(_bits(got[zero]), _bits(want[zero])), (loss.__name__, got, want)
        if dtype == torch.float32:
            torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-7)
        else:  # eager rounds each step to bf16, the f32-inside policy once: judged against fp64 as the demo does
            err, eager_err = (got.double() - ref).abs().max(), (want.double() - ref).abs().max()
            assert err <= 2 * eager_err + 1e-3 * ref.abs().max(), (loss.__name__, err, eager_err)
        assert (torch.signbit(want[t == 3]) == 0).all()  # the case this test exists for: eager's +0.0


@pytest.mark.parametrize("kw", [dict(ignore_index=3), dict(reduction="none", ignore_index=3)], ids=["mean", "none"])
def test_nll_loss2d_backward_keeps_eagers_zero_signs(kw):
    """nll_loss2d_backward ([N, C, H, W], the class axis not last) through the same decomposition: bit-exact."""
    g = torch.Generator().manual_seed(6)
    x = torch.randn(2, 5, 3, 4, generator=g)
    t = torch.randint(0, 5, (2, 3, 4), generator=g)
    t[0, 0, 0] = 3
    grads = []
    for compiled in (True, False):
        xx = x.clone().requires_grad_(True)
        fn = (lambda a, b: F.nll_loss(a, b, **kw))
        if compiled:
            torch._dynamo.reset()
            fn = torch.compile(fn, backend="autofuse")
        out = fn(xx, t)
        out.backward(-torch.ones_like(out))
        grads.append(xx.grad)
    assert torch.equal(_bits(grads[0]), _bits(grads[1]))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("rows", [0, 1, 13])
def test_weighted_cross_entropy_and_empty_batches(reduction, rows):
    """The one-kernel forward (per-row values kept as [N, 1]) with class weights and ignored rows, and an empty batch
    (mean: 0 / 0 = NaN as in eager), forward and backward against eager."""
    g = torch.Generator().manual_seed(rows + 7)
    w = torch.rand(50, generator=g) + 0.5
    x = torch.randn(rows, 50, generator=g, requires_grad=True)
    t = torch.randint(0, 50, (rows,), generator=g)
    if rows:
        t[0] = 3
    fn = (lambda a, b: F.cross_entropy(a, b, weight=w, ignore_index=3, reduction=reduction))
    torch._dynamo.reset()
    got = torch.compile(fn, backend="autofuse")(x, t)
    grad = torch.randn_like(got)
    if rows:
        got.backward(grad)
    got_grad = x.grad
    x.grad = None
    want = fn(x, t)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6, equal_nan=True)
    if rows:
        want.backward(grad)
        torch.testing.assert_close(got_grad, x.grad, rtol=1e-6, atol=1e-7)
