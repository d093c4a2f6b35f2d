"""Lowering of AOTAutograd's ATen FX graphs to the Autofuse IR, checked op by op against eager PyTorch.

The FX graphs come from Dynamo + AOTAutograd with the backend's own decomposition table. Each test lowers them and
then (a) inspects the IR (which ops, which casts, which fallbacks) and (b) evaluates the IR with the eager reference
evaluator (lowering_reference.py) and compares with running the FX graph itself. No C++ is needed for these tests.
"""

import random

import pytest
import torch
import torch.nn.functional as F
from torch._dynamo.backends.common import aot_autograd

from autofuse.decompositions import decomposition_table
from autofuse.lowering import lower
from autofuse.lowering_reference import evaluate

SEED = random.randrange(1 << 30)
print(f"test_lowering seed {SEED}")


def aot_graphs(fn, *args, dynamic=False, backward=False):
    """FX graphs AOTAutograd produces for fn(*args), with the real inputs each was called with."""
    torch._dynamo.reset()
    graphs = []

    def capture(gm, example_inputs):
        entry = {"gm": gm, "calls": []}
        graphs.append(entry)

        def run(args):
            entry["calls"].append(list(args))
            return gm(*args)

        run._boxed_call = True
        return run

    be = aot_autograd(fw_compiler=capture, bw_compiler=capture, decompositions=decomposition_table())
    out = torch.compile(fn, backend=be, dynamic=dynamic)(*args)
    if backward:
        out.sum().backward()
    return graphs


def run_extern(lg):
    def call(n, env):
        def arg(a):
            if isinstance(a, torch.fx.Node):
                if a in lg.sym_nodes:
                    return eval(lg.sym_nodes[a], {"args": call.args}, call.bindings)
                v = lg.fx_value[a]
                return tuple(env[i] for i in v) if isinstance(v, tuple) else env[v]
            if isinstance(a, (list, tuple)):
                return type(a)(arg(e) for e in a)
            return a

        if n.item is not None:
            return env[n.inputs[0]][n.item]
        return n.fx.target(*[arg(a) for a in n.fx.args], **{k: arg(v) for k, v in n.fx.kwargs.items()})

    return call


def check_lowering(fn, *args, dynamic=False, backward=False, atol=1e-6, rtol=1e-6):
    """Lower every graph; the IR evaluated eagerly must match the FX graph on the recorded inputs. Returns lgs."""
    from autofuse.lowering_reference import bind_symbols

    lgs = []
    for entry in aot_graphs(fn, *args, dynamic=dynamic, backward=backward):
        lg = lower(entry["gm"])
        lgs.append(lg)
        for call_args in entry["calls"]:
            ext = run_extern(lg)
            ext.args = call_args
            ext.bindings = bind_symbols(lg, call_args)
            got = evaluate(lg, call_args, ext)
            want = entry["gm"](*call_args)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                if isinstance(w, torch.Tensor):
                    assert g.dtype == w.dtype, (g.dtype, w.dtype)
                    assert tuple(g.shape) == tuple(w.shape)
                    torch.testing.assert_close(g, w, atol=atol, rtol=rtol, equal_nan=True)
                else:
                    assert g == w
    return lgs


def ops(lgs):
    return [n.op for lg in lgs for n in lg.nodes]


def fallbacks(lgs):
    return [f for lg in lgs for f in lg.fallbacks]


def test_pointwise_chain_lowers_fully():
    x = torch.randn(4, 33)
    lgs = check_lowering(lambda x: torch.tanh(x * 2 + 1).exp() - x.abs().sqrt(), x)
    assert fallbacks(lgs) == []
    assert {"mul", "add", "tanh", "exp", "abs", "sqrt", "sub"} <= set(ops(lgs))


def test_softmax_is_pointwise_plus_reductions():
    x = torch.randn(5, 17)
    lgs = check_lowering(lambda x: torch.softmax(x, -1), x)
    assert fallbacks(lgs) == []
    assert {"amax", "exp", "sum", "div"} <= set(ops(lgs))


def test_layer_norm_and_gelu():
    x, w, b = torch.randn(6, 32), torch.randn(32), torch.randn(32)
    lgs = check_lowering(lambda x: F.gelu(F.layer_norm(x, (32,), w, b)), x, atol=1e-5, rtol=1e-5)
    assert fallbacks(lgs) == []
    assert {"var", "mean", "rsqrt", "erf"} <= set(ops(lgs))


def test_rms_norm_silu():
    x, w = torch.randn(3, 5, 16), torch.randn(16)

    def f(x):
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
        return F.silu(y)

    lgs = check_lowering(f, x, atol=1e-5, rtol=1e-5)
    assert fallbacks(lgs) == []
    assert "sigmoid" in ops(lgs)


def test_type_promotion_inserts_casts():
    a = torch.randn(4, 4, dtype=torch.float16)
    b = torch.randn(4, 4, dtype=torch.float32)
    i = torch.randint(-5, 5, (4, 4))
    lgs = check_lowering(lambda a, b, i: (a + b) * i + (i / 2) + (i > 0), a, b, i)
    lg = lgs[0]
    casts = [n for n in lg.nodes if n.op == "cast"]
    assert {c.dtype for c in casts} >= {torch.float32}
    for n in lg.nodes:  # every binary op sees one dtype
        if n.op in ("add", "mul", "div", "sub") and len(n.inputs) == 2:
            assert lg.nodes[n.inputs[0]].dtype == lg.nodes[n.inputs[1]].dtype, n


def test_scalars_become_constants_of_the_common_dtype():
    x = torch.randint(0, 10, (8,), dtype=torch.int32)
    lgs = check_lowering(lambda x: (x * 3 + 2.5, x // 2, x % 3, x.float().clamp(1, 4)), x)
    consts = [n for n in lgs[0].nodes if n.op == "constant"]
    assert any(n.dtype == torch.float32 and n.attrs["value"] == 2.5 for n in consts)
    assert any(n.dtype == torch.int32 and n.attrs["value"] == 3 for n in consts)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision(dtype):
    x = torch.randn(4, 64).to(dtype)
    check_lowering(lambda x: torch.softmax(x * 0.5, -1) + x.sigmoid(), x, atol=1e-2, rtol=1e-2)


def test_reductions():
    x = torch.randn(3, 4, 5)
    check_lowering(lambda x: (x.sum(), x.sum((0, 2)), x.amax(1), x.argmax(-1), x.var(1, keepdim=True),
                              x.prod(2), (x > 0).any(1), x.max(1).values, x.mean()), x, atol=1e-5, rtol=1e-5)


def test_views_lower_to_layout_ops_and_are_not_fallbacks():
    x = torch.randn(4, 6)
    lgs = check_lowering(lambda x: (x.t() * 2).exp().reshape(3, 8).unsqueeze(0) + x.t().reshape(1, 3, 8), x)
    assert fallbacks(lgs) == []
    ops = [n.op for n in lgs[0].nodes]
    assert "permute" in ops and "reshape" in ops


@pytest.mark.parametrize("case", ["slice", "select", "split", "unbind", "cat", "transpose", "narrow", "squeeze"])
def test_view_op_lowerings_match_eager(case):
    x = torch.randn(3, 8, 5)
    y = torch.randn(3, 2, 5)
    fns = {
        "slice": lambda x, y: x[:, 1:7:2] * 2 + x[:, -3:].sum(1, keepdim=True),
        "select": lambda x, y: x[:, 3] + x[-1, 2:5, :].t().sum(1),
        "split": lambda x, y: [t.exp() for t in x.split(3, dim=1)],
        "unbind": lambda x, y: sum(t * (i + 1) for i, t in enumerate(x.unbind(2))),
        "cat": lambda x, y: torch.cat([x.neg(), y * 3, x[:, :1].to(torch.float64)], dim=1).sin(),
        "transpose": lambda x, y: x.transpose(0, 2).contiguous().view(5, 24) + 1,
        "narrow": lambda x, y: x.narrow(1, 2, 4).relu(),
        "squeeze": lambda x, y: (x[:, :1] * 2).squeeze(1).unsqueeze(-1).exp(),
    }
    lgs = check_lowering(fns[case], x, y)
    views = {"aten.view", "aten.permute", "aten.transpose", "aten.slice", "aten.select", "aten.split",
             "aten.split_with_sizes", "aten.unbind", "aten.cat", "aten.unsqueeze", "aten.squeeze", "aten.narrow",
             "aten.t", "aten.reshape", "aten._unsafe_view"}
    assert not [op for op, _ in fallbacks(lgs) if op in views], fallbacks(lgs)


def test_views_on_dynamic_shapes():
    x = torch.randn(4, 6, 3)
    lgs = check_lowering(lambda x: (x.permute(2, 0, 1) * 2).reshape(3, -1)[:, 1:].exp(), x, dynamic=True)
    for lg in lgs:
        assert any(n.op == "permute" for n in lg.nodes)


def test_matmul_extern_by_design():
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    lgs = check_lowering(lambda a, b: torch.relu(a @ b + 1), a, b)
    assert ("aten.mm", "extern by design: compute-bound op stays an ATen call") in fallbacks(lgs)
    assert "relu" in ops(lgs)


def test_dynamic_shapes_become_symbols():
    x = torch.randn(7, 12)
    lgs = check_lowering(lambda x: torch.softmax(x, -1) * x.shape[0], x, dynamic=True)
    lg = lgs[0]
    assert lg.sym_sources, "expected IR symbols for dynamic sizes"
    assert all(name.startswith("s") for name in lg.sym_sources)


def test_backward_graph_lowers():
    torch.manual_seed(SEED)
    lin = torch.nn.Linear(8, 8)
    x = torch.randn(4, 8, requires_grad=True)
    lgs = check_lowering(lambda x: F.layer_norm(torch.tanh(lin(x)), (8,)), x, backward=True, atol=1e-5, rtol=1e-5)
    assert len(lgs) == 2
    assert "tanh" in ops(lgs[1:]) or "mul" in ops(lgs[1:])
