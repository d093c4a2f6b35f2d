"""Kernel.run's checks of its operands before it writes: an output sharing memory with an input (other than as the very
same view: the in-place call) or with another output is refused with a ValueError naming both, as eager refuses
``torch.add(x, y, out=x.t())``; disjoint views whose extents interleave still run. interpret_with and gather_rows
refuse such outputs too."""

import pytest

import autofuse

torch = pytest.importorskip("torch")
core = autofuse._core
pytestmark = pytest.mark.skipif(not hasattr(core, "Kernel"), reason="needs the native bindings (_core.Kernel)")

ADD = "graph f(%x: f32[s0, s1], %y: f32[s0, s1]) {\n  %o = add(%x, %y)\n  return %o\n}"
TWO = "graph f(%x: f32[s0, s1]) {\n  %a = exp(%x)\n  %b = neg(%x)\n  return %a, %b\n}"


@pytest.fixture(scope="module")
def add():
    return core.Kernel.compile(autofuse.parse(ADD))


@pytest.fixture(scope="module")
def two():
    return core.Kernel.compile(autofuse.parse(TWO))


def test_output_transposing_an_input_is_refused(add):
    x, y = torch.randn(64, 64), torch.randn(64, 64)
    before = x.clone()
    with pytest.raises(ValueError, match=r"kernel \w+: output 0 overlaps input 0 \(partially\).*write to a separate"):
        add.run([x, y], [x.t()])
    assert torch.equal(x, before)  # refused before anything was written
    with pytest.raises(ValueError, match=r"output 0 overlaps input 1 \(partially\)"):
        add.run([x, y], [y.t()])
    with pytest.raises(RuntimeError, match="single memory location"):  # what eager says about the same call
        torch.add(x, y, out=x.t())


@pytest.mark.parametrize("case", ["shifted_rows", "shifted_by_one", "numpy", "view_spec"])
def test_partial_overlaps_are_refused(add, case):
    buf = torch.randn(65, 64)
    x, y = buf[:64], torch.randn(64, 64)
    if case == "shifted_rows":
        out = buf[1:]
    elif case == "shifted_by_one":
        out = buf.view(-1)[1:1 + 64 * 64].view(64, 64)
    elif case == "numpy":
        x, y = x.numpy(), y.numpy()
        out = x.T
    else:  # the generated program's (tensor, (sizes, strides, offset)) spec of a view of the input's storage
        out = (buf, ((64, 64), (64, 1), 1))
    with pytest.raises(ValueError, match=r"output 0 overlaps input 0 \(partially\)"):
        add.run([x, y], [out])


def test_in_place_output_runs(add):
    x, y = torch.randn(64, 64), torch.randn(64, 64)
    want = x + y
    add.run([x, y], [x])  # the very same view: computed in place
    assert torch.equal(x, want)
    a, b = torch.randn(32, 48).t(), torch.randn(48, 32)  # a transposed input written over itself
    want = a + b
    add.run([a, b], [a])
    assert torch.equal(a, want)
    spec = torch.randn(8, 8)
    want = spec + b[:8, :8]
    add.run([(spec, ((8, 8), (8, 1), 0)), b[:8, :8]], [(spec, ((8, 8), (8, 1), 0))])  # the program's spec form
    assert torch.equal(spec, want)


def test_disjoint_interleaved_views_run(add):
    buf = torch.randn(64, 128)
    y = torch.randn(64, 64)
    halves = [(buf[:, ::2], buf[:, 1::2], y), (buf[:, :64], buf[:, 64:], y), (buf[::2, :64], buf[1::2, :64], y[:32])]
    for out, inp, other in halves:  # element sets apart although each extent reaches into the other
        want = inp + other
        add.run([inp, other], [out])
        assert torch.equal(out, want)


def test_outputs_sharing_memory_are_refused(two):
    x, buf = torch.randn(4, 5), torch.zeros(4, 5)
    with pytest.raises(ValueError, match=r"output 1 is the same memory as output 0.*a tensor of its own"):
        two.run([x], [buf, buf])
    big = torch.zeros(5, 5)
    with pytest.raises(ValueError, match=r"output 1 overlaps output 0 \(partially\)"):
        two.run([x], [big[:4], big[1:]])
    pair = torch.empty(4, 10)
    a, b = pair[:, ::2], pair[:, 1::2]  # even and odd columns: one storage, no shared element
    two.run([x], [a, b])
    assert torch.allclose(a, x.exp(), rtol=1e-6, atol=0) and torch.equal(b, -x)  # exp: SLEEF vs ATen, an ulp apart
    empty = torch.empty(0, 5)
    two.run([empty], [empty, empty])  # no elements: nothing overlaps


def test_interpret_refuses_an_allocator_that_reuses_memory():
    g = autofuse.parse(TWO)
    x, buf = torch.randn(4, 5), torch.zeros(4, 5)
    with pytest.raises(ValueError, match="interpret_with: output 1 is the same memory as output 0"):
        core.interpret_with(g, [x], lambda sizes, dtype: buf)


@pytest.mark.skipif(not hasattr(core, "gather_rows"), reason="needs _core.gather_rows")
def test_gather_rows_refuses_out_over_its_table():
    table = torch.randn(6, 4)
    idx = torch.tensor([5, 4, 3, 2, 1, 0])
    with pytest.raises(ValueError, match="gather_rows: out .* shares memory with table"):
        core.gather_rows(table, idx, table)
