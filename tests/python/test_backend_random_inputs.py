"""Python numbers drawn from the ``random`` module inside a compiled function (scalar_inputs.py).

Dynamo makes each draw a graph input (``random_value_N``) whose example is a float32 0-d tensor but which it passes as
float64 at every call; the kernels refused it (review 19: ``x * random.Random(3).random()`` raised "IRError: kernel
k0: input %arg0_1 has dtype f64, expected f32"). The graph is now compiled for float64 there, so it computes what
ATen computes on the tensors Dynamo passes (aot_eager's bits), and a call with another dtype than compiled for runs in
ATen with a warning (AUTOFUSE_STRICT=1: raises).
"""

import random

import pytest
import torch

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs native kernels (autofuse._core built and a C++ compiler)")


def _bitwise(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got, want), (got - want).abs().max()


def _scaled_by_private_rng(x):
    r = random.Random(3)
    return x * r.random() + 1


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_random_instance_draw_matches_eager(dtype, dynamic):
    x = (torch.randn(6, 37, generator=torch.Generator().manual_seed(0)) * 10).to(dtype)
    torch._dynamo.reset()
    n0 = len(backend.RECORDS)
    f = torch.compile(_scaled_by_private_rng, backend="autofuse", dynamic=dynamic)
    for _ in range(2):
        _bitwise(f(x), _scaled_by_private_rng(x))
    assert any(r.mode == "kernels" for r in backend.RECORDS[n0:])  # compiled, not run as-is


def test_module_random_uniform_matches_eager():
    def f(x):
        return (x - random.uniform(0.5, 2.0)).relu()

    x = torch.randn(5, 33, generator=torch.Generator().manual_seed(1))
    torch._dynamo.reset()
    c = torch.compile(f, backend="autofuse")
    for seed in (7, 8):
        random.seed(seed)
        want = f(x)
        random.seed(seed)
        _bitwise(c(x), want)


def test_draw_is_compared_and_multiplied_in_float64():
    # Random(3).random() = 0.23796462709189137 rounds up to 0.23796463012695312 in float32; the threshold lies
    # between the two and rounds to the same float32: compared in float32 the branch would flip. A float64 tensor
    # times the draw needs the draw's float64 value too.
    thr = 0.2379646286

    def f(x):
        r = random.Random(3)
        v = r.random()
        if v < thr:
            return x * v
        return x * 3

    x = torch.randn(4, 9, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    torch._dynamo.reset()
    _bitwise(torch.compile(f, backend="autofuse")(x), f(x))


def test_integer_tensor_times_a_draw_is_float64_as_in_aot_eager():
    # Dynamo's pun, not ours: a 0-d float64 tensor sets the dtype of int * float (eager, with a Python float: float32)
    x = torch.arange(-20, 20).reshape(4, 10)
    torch._dynamo.reset()
    want = torch.compile(_scaled_by_private_rng, backend="aot_eager")(x)
    torch._dynamo.reset()
    got = torch.compile(_scaled_by_private_rng, backend="autofuse")(x)
    _bitwise(got, want)
    assert got.dtype == torch.float64


def _compiled_with_graph(f, x):
    """Autofuse's callable for the Dynamo graph of f(x), and that graph."""
    seen = {}

    def be(gm, example_inputs):
        seen["gm"] = gm
        seen["fn"] = backend.autofuse_backend(gm, example_inputs)
        return seen["fn"]

    torch._dynamo.reset()
    torch.compile(f, backend=be)(x)
    return seen["fn"], seen["gm"]


def test_scalar_input_of_another_dtype_runs_in_aten_with_a_warning(monkeypatch):
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(3))
    fn, gm = _compiled_with_graph(_scaled_by_private_rng, x)
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    assert names[0].startswith("random_value")
    _bitwise(fn(torch.tensor(0.25, dtype=torch.float64), x)[0], x * 0.25 + 1)
    odd = torch.tensor(0.3, dtype=torch.float32)  # not what Dynamo passes: a float32 0-d
    with pytest.warns(UserWarning, match=r"graph input random_value_0 is torch.float32 at run time, the graph was "
                                         r"compiled for torch.float64; this call runs in ATen"):
        got = fn(odd, x)[0]
    _bitwise(got, gm(odd, x)[0])
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    with pytest.raises(RuntimeError, match="compiled for torch.float64"):
        fn(odd, x)
