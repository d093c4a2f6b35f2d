"""A kernel's size-only inputs name no loop size (schedule/loop_nest.cpp, step 4).

Fusion gives a kernel whose sub-graph uses a size symbol none of its inputs carries an extra input read for its sizes
only (``add_size_inputs``): an ``iota`` of length s1 gets the graph input of shape [s0, s1, s2]. The loop nest used
to map that input's dims onto the domain right-aligned, so the iota's axis took the size s2 and the kernel wrote s2
elements into an s1-element output (heap corruption, found through a dynamic-shape scatter into a permuted view:
test_backend_output_strides.py). Each output here sits in a buffer with guard elements on both sides."""

import pytest
import torch

from autofuse import backend

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs native kernels (autofuse._core built and a C++ compiler)")

GUARD = 64


def _run_guarded(kernel, inputs):
    outs, bufs = [], []
    for sizes in kernel.output_sizes(inputs):
        n = 1
        for s in sizes:
            n *= s
        buf = torch.full((n + 2 * GUARD,), -77, dtype=torch.int64)
        bufs.append((buf, n))
        outs.append(buf[GUARD:GUARD + n].view(sizes))
    kernel.run(inputs, outs)
    for buf, n in bufs:
        assert bool((buf[:GUARD] == -77).all()) and bool((buf[GUARD + n:] == -77).all()), "write outside the output"
    return outs


@pytest.mark.parametrize("shape", [(5, 3, 4), (2, 3, 7), (7, 5, 2), (3, 9, 1)])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_iota_length_follows_its_symbol(shape, axis):
    from autofuse import _core

    sym = f"s{axis}"
    g = _core.parse(f"graph k(%x: f32[s0, s1, s2]) {{\n"
                    f"  %v = iota() {{length={sym}, start=0, step=1, dtype=i64}} : i64[{sym}]\n"
                    f"  return %v\n}}\n")
    k = _core.Kernel.compile(g)
    (out,) = _run_guarded(k, [torch.randn(*shape)])
    assert out.tolist() == list(range(shape[axis]))


def test_iota_beside_a_broadcast_source():
    """A size input next to a real input: [s1] iota plus a read [s0, 1] input broadcast to [s0, s1]."""
    from autofuse import _core

    g = _core.parse("graph k(%x: f32[s0, s1, s2], %y: i64[s0, 1]) {\n"
                    "  %v = iota() {length=s1, start=0, step=1, dtype=i64} : i64[s1]\n"
                    "  %w = add(%y, %v) : i64[s0, s1]\n"
                    "  return %w\n}\n")
    k = _core.Kernel.compile(g)
    y = torch.arange(4, dtype=torch.int64).reshape(4, 1) * 100
    (out,) = _run_guarded(k, [torch.randn(4, 3, 6), y])
    assert torch.equal(out, y + torch.arange(3))


def test_negative_size_is_an_error_naming_the_value():
    """A size that evaluates negative for the actual inputs (session-14 review): output_sizes returned [[-7]], and run
    computed a sum over a (-7)-element value. Both raise IRError naming the value and its size, as the interpreter."""
    from autofuse import _core

    g = _core.parse("graph k(%x: f32[s0]) {\n"
                    "  %y = full() {value=1, dtype=f32, shape=[s0 - 10]}\n"
                    "  %z = add(%y, %y)\n"
                    "  return %z\n}\n")
    k = _core.Kernel.compile(g)
    want = r"kernel k: %y: size s0 - 10 evaluates to -7 < 0"
    with pytest.raises(_core.IRError, match=want):
        k.output_sizes([torch.randn(3)])
    with pytest.raises(_core.IRError, match=want):
        k.run([torch.randn(3)], [torch.zeros(0)])
    assert k.output_sizes([torch.randn(12)]) == [[2]]
    # A negative value the outputs do not show: the sum over it is a [1] output whatever s0 is.
    s = _core.Kernel.compile(_core.parse("graph k(%x: f32[s0]) {\n"
                                         "  %y = full() {value=1, dtype=f32, shape=[s0 - 10]}\n"
                                         "  %z = sum(%y) {axes=[0], keepdim=true}\n"
                                         "  return %z\n}\n"))
    with pytest.raises(_core.IRError, match=want):
        s.output_sizes([torch.randn(3)])
    with pytest.raises(_core.IRError, match=want):
        s.run([torch.randn(3)], [torch.zeros(1)])
    out = torch.zeros(1)
    s.run([torch.randn(13)], [out])
    assert out.tolist() == [3.0]
