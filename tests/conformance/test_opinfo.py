"""PyTorch's OpInfo database through ``torch.compile(backend="autofuse")``, compared with eager.

For every OpInfo entry in ``OPS`` (the ATen ops Autofuse lowers and the composites that decompose into them), every
supported dtype of ``DTYPES``, and both directions (forward; backward where the op is differentiable and the dtype is
floating point), every sample input is compiled with a fresh Dynamo and compared with eager (compare.py holds the
tolerance policy; fp16/bf16 are also judged against an fp64 reference).

Honest counting: the backend runs with AUTOFUSE_STRICT=1 (conftest.py), so a graph or kernel fallback raises, and
Dynamo runs with ``fullgraph=True``, so a graph break (part of the function silently run by eager Python) raises.
Every sample must produce backend records in mode "kernels" with at least one compiled kernel and no op that fell back
to an ATen call (fallbacks "by design", e.g. mm, are allowed, and the per-sample ones listed in
exceptions.ALLOWED_FALLBACKS): an op that silently ran in ATen fails. Skips and
expected failures come only from exceptions.py. ``AUTOFUSE_CONFORMANCE_LOG=path`` appends one JSON line per sample
(test id, sample index, seconds, kernels) for timing the full run.

Shards: ``AUTOFUSE_CONFORMANCE=full`` (``make conformance``) runs everything; the default fast shard (``make test``)
runs the float32 forward of every entry and the float32 backward of the composites, on the first sample only.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import sys
import time

import pytest
import torch
from torch.utils._pytree import tree_leaves, tree_map

import autofuse  # noqa: F401  (registers the backend)
from autofuse import backend as afb

_HERE = pathlib.Path(__file__).parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"af_conformance_{name}", _HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


exceptions = _load("exceptions")
compare = _load("compare")

FULL = os.environ.get("AUTOFUSE_CONFORMANCE", "") == "full"

#: OpInfo names: ops with a lowering of their own (lowering_*.py) ...
LOWERED = """exp exp2 expm1 log log2 log10 log1p sqrt rsqrt reciprocal sin cos tan tanh sigmoid erf abs neg
nn.functional.relu floor ceil trunc sign bitwise_not isnan isinf isfinite logical_not round mul maximum minimum fmax
fmin atan2 remainder fmod floor_divide bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift eq ne
lt le gt ge logical_and logical_or logical_xor add sub rsub div pow where masked_fill clamp clamp_min clamp_max sum
prod mean amax amin argmax argmin max min var var_mean any all""".split()
#: ... and composites that decompose into them (decompositions.py).
COMPOSITES = """softmax log_softmax nn.functional.layer_norm nn.functional.group_norm nn.functional.rms_norm
nn.functional.gelu nn.functional.silu nn.functional.mish nn.functional.hardswish logsumexp std std_mean norm
nn.functional.cross_entropy nn.functional.nll_loss nn.functional.hardtanh nn.functional.hardsigmoid
nn.functional.leaky_relu nn.functional.elu""".split()

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int8, torch.uint8, torch.int16,
          torch.int32, torch.int64, torch.bool]
FAST_SAMPLES = 1


def _opinfos():
    from torch.testing._internal.common_methods_invocations import op_db

    wanted = set(LOWERED) | set(COMPOSITES)
    return [o for o in op_db if o.name in wanted and o.variant_test_name not in ("complex", "nuc")]


def _cases():
    cases = []
    for op in _opinfos():
        supported = op.supported_dtypes("cpu")
        for dt in DTYPES:
            if dt not in supported:
                continue
            dirs = ["forward"]
            if op.supports_autograd and dt.is_floating_point:
                dirs.append("backward")
            for d in dirs:
                if not FULL:
                    if dt != torch.float32:
                        continue
                    if d == "backward" and op.name not in COMPOSITES:
                        continue
                dtname = str(dt).split(".")[1]
                marks = []
                exc = exceptions.lookup(op.name, op.variant_test_name, dtname, d)
                if exc is not None:
                    kind, reason = exc
                    marks.append(pytest.mark.skip(reason=reason) if kind == "skip"
                                 else pytest.mark.xfail(reason=reason, strict=True))
                tid = f"{op.name}{'.' + op.variant_test_name if op.variant_test_name else ''}-{dtname}-{d}"
                cases.append(pytest.param(op, dt, d, id=tid, marks=marks))
    return cases


def _samples(op, dtype, requires_grad):
    torch.manual_seed(0)
    s = list(op.sample_inputs("cpu", dtype, requires_grad=requires_grad))
    return s if FULL else s[:FAST_SAMPLES]


def _call(op, sample):
    def fn(inp, *args):
        return op.op(inp, *args, **sample.kwargs)

    return fn


def _kernel_count(records) -> int:
    n = 0
    for r in records:
        assert r.mode == "kernels", f"backend graph {r.name} ran in mode {r.mode!r}: {r.reason}"
        n += sum(1 for s in r.steps if s.kind == "kernel" and s.kernel is not None)
    return n


#: Fallback reasons that are the lowering's design, not a missing lowering: compute-bound ops (mm, ...), view/layout
#: ops (python/autofuse/lowering_layout.py: a view costs no copy; gather/scatter move data, they compute nothing), and
#: plain copies that only fix a memory layout. Any other reason means an op ran in ATen instead of a kernel.
_BY_DESIGN = ("by design", "view/layout op", "stays an ATen copy")


def _fallbacks(records):
    """The op fallbacks to ATen in ``records`` that are not by design (["aten.op: reason", ...])."""
    out = []
    for r in records:
        if r.lowered is not None:
            out += [f"{op}: {why}" for op, why in r.lowered.fallbacks if not any(d in why for d in _BY_DESIGN)]
    return out


def _to64(x):
    return tree_map(lambda t: t.detach().double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t, x)


def _ref64(op, sample):
    """The op evaluated in float64 on the same (upcast) inputs; None when the op refuses float64 inputs."""
    try:
        with torch.no_grad():
            return op.op(_to64(sample.input), *_to64(sample.args), **_to64(sample.kwargs))  # tensor kwargs too (weight=)
    except Exception:  # noqa: BLE001 - e.g. a dtype= keyword that conflicts; the eager comparison still applies
        return None


def _grads(fn, sample, seed, round_to=None):
    """Gradients of ``fn(sample)`` w.r.t. its inputs that require grad, for random output gradients drawn from
    ``seed`` (float64 normal values cast to each output's dtype, first rounded to ``round_to`` when given: the fp64
    reference of a float16/bfloat16 test must see the same, rounded, output gradients as eager and the kernels, or
    a gradient that sums many terms with cancellation is judged against a different problem). None when nothing
    requires grad."""
    inputs = [t for t in tree_leaves((sample.input, sample.args)) if isinstance(t, torch.Tensor) and t.requires_grad]
    out = fn(sample.input, *sample.args)
    outs = [o for o in tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    if not inputs or not outs:
        return None
    g = torch.Generator().manual_seed(seed)
    gos = [torch.randn(o.shape, generator=g, dtype=torch.float64) for o in outs]
    gos = [(go if round_to is None else go.to(round_to)).to(o.dtype) for go, o in zip(gos, outs)]
    grads = torch.autograd.grad(outs, inputs, gos, allow_unused=True)
    return [torch.zeros_like(i) if gr is None else gr for i, gr in zip(inputs, grads)]


_LOG = os.environ.get("AUTOFUSE_CONFORMANCE_LOG", "")


def _log(request, i: int, seconds: float, kernels: int, normwise: int = 0) -> None:
    """One JSON line per passing sample (test id, index, seconds, kernels, and ``normwise``: how many of its gradient
    tensors passed by compare.py's norm-wise rule only) to AUTOFUSE_CONFORMANCE_LOG."""
    if _LOG:
        with open(_LOG, "a") as f:
            f.write(json.dumps({"test": request.node.callspec.id, "sample": i, "seconds": round(seconds, 3),
                                "kernels": kernels, "normwise": normwise}) + "\n")


def _check_sample(op, dtype, direction: str, i: int, sample, request) -> None:
    """Sample ``i`` of a test through the backend, compared with eager (and fp64 for f16/bf16); raises
    AssertionError (or the backend's error) naming the sample when it fails. See the module docstring."""
    what = f"sample {i} ({sample.summary() if hasattr(sample, 'summary') else sample})"
    t0 = time.perf_counter()
    torch._dynamo.reset()
    n0, nw0 = len(afb.RECORDS), len(compare.NORMWISE_ACCEPTED)
    compiled = torch.compile(_call(op, sample), backend="autofuse", dynamic=False, fullgraph=True)
    if direction == "forward":
        with torch.no_grad():
            expected = _call(op, sample)(sample.input, *sample.args)
            actual = compiled(sample.input, *sample.args)
        ref = _ref64(op, sample) if dtype in compare.LOWP else None
    else:
        expected = _grads(_call(op, sample), sample, seed=i)
        if expected is None:
            return
        actual = _grads(compiled, sample, seed=i)
        ref = None
        if dtype in compare.LOWP:
            s64 = tree_map(lambda t: t.detach().double().requires_grad_(t.requires_grad)
                           if isinstance(t, torch.Tensor) and t.is_floating_point() else t,
                           (sample.input, sample.args))
            try:
                s64 = type("S", (), {"input": s64[0], "args": s64[1], "kwargs": _to64(sample.kwargs)})()
                ref = _grads(_call(op, s64), s64, seed=i, round_to=dtype)  # tensor kwargs (weight=) in float64 too
            except Exception:  # noqa: BLE001 - no fp64 reference: eager comparison only
                ref = None
    records = afb.RECORDS[n0:]
    assert records, f"{what}: the autofuse backend never ran (Dynamo fell back or did not compile)"
    k = _kernel_count(records)
    known = exceptions.sample_xfail(op.name, op.variant_test_name, str(dtype).split(".")[1], direction, i)
    try:
        # gradients: the sign of a zero gradient entry depends on how the chain rule is evaluated (PyTorch's
        # backward decompositions vs eager's fused backward kernels, e.g. nll_loss, prod), so it is not compared;
        # forward results keep the strict signed-zero check
        # gradients also get compare.py's norm-wise rule (entries that are sums of larger terms; see its docstring)
        compare.assert_same(actual, expected, ref, what=f"{direction} {what}",
                            signed_zeros=(direction == "forward"), normwise=(direction == "backward"))
    except AssertionError as e:
        if known is None:
            raise AssertionError(f"{e}\nfallbacks: {_fallbacks(records)}") from None
    else:
        assert known is None, f"{what} passes but exceptions.SAMPLE_XFAILS expects it to fail: remove the entry"
    fallbacks = _fallbacks(records)
    accepted = [f for f in fallbacks if exceptions.allowed_fallback(f) is not None]
    refused = [f for f in fallbacks if f not in accepted]
    assert not refused, f"{what}: ops ran in ATen instead of a kernel: {refused}"
    assert k > 0 or accepted, f"{what}: no compiled kernel (the graphs hold only host steps or externs)"
    _log(request, i, time.perf_counter() - t0, k, normwise=len(compare.NORMWISE_ACCEPTED) - nw0)


@pytest.mark.parametrize("op,dtype,direction", _cases())
def test_opinfo(op, dtype, direction, request):
    """Every sample is checked (a failing sample does not hide the ones after it); the test fails listing each
    failing sample's index and message."""
    samples = _samples(op, dtype, requires_grad=(direction == "backward"))
    if not samples:
        pytest.skip("OpInfo yields no sample input for this dtype")
    failures = []
    for i, sample in enumerate(samples):
        try:
            _check_sample(op, dtype, direction, i, sample, request)
        except Exception as e:  # noqa: BLE001 - reported below with the others (type and message)
            failures.append((i, f"{type(e).__name__}: {e}"))
    assert not failures, (f"{len(failures)} of {len(samples)} samples fail: {[i for i, _ in failures]}\n"
                          + "\n".join(msg for _, msg in failures))
