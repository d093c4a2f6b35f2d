"""Zero-copy conversion of torch tensors and numpy arrays to C++ HostTensor views, and interpret() on both."""

import numpy as np
import pytest

import autofuse
from autofuse import DType

torch = pytest.importorskip("torch")
view = autofuse._core.tensor_view

TORCH_DTYPES = {
    torch.bool: DType.bool, torch.uint8: DType.uint8, torch.int8: DType.int8, torch.int16: DType.int16,
    torch.int32: DType.int32, torch.int64: DType.int64, torch.float16: DType.float16,
    torch.bfloat16: DType.bfloat16, torch.float32: DType.float32, torch.float64: DType.float64,
}


def element_strides(t):
    return list(t.stride())


@pytest.mark.parametrize("dtype", list(TORCH_DTYPES), ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "expanded", "zero_size", "scalar"])
def test_torch_views_share_memory(dtype, layout):
    base = torch.zeros(6, 5, dtype=dtype)
    t = {
        "contiguous": base,
        "transposed": base.t(),
        "sliced": base[1::2, 1:4],
        "expanded": base[:, :1].expand(6, 7),
        "zero_size": base[:, 2:2],
        "scalar": base[2, 3],
    }[layout]
    v = view(t)
    assert v["dtype"] == TORCH_DTYPES[dtype]
    assert v["sizes"] == list(t.shape)
    assert v["strides"] == element_strides(t)
    if t.numel() > 0:
        assert v["data_ptr"] == t.data_ptr()  # the view points into the tensor's own memory: no copy


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                                   "float64"])
def test_numpy_views_share_memory(dtype):
    a = np.zeros((4, 6), dtype=dtype)[::2, ::-3]  # positive and negative strides
    v = view(a)
    assert v["dtype"] == getattr(DType, dtype)
    assert v["sizes"] == list(a.shape)
    assert v["strides"] == [s // a.itemsize for s in a.strides]
    assert v["data_ptr"] == a.ctypes.data


def test_writes_through_the_view_reach_the_tensor():
    g = autofuse.parse("graph f(%x: f32[s0]) {\n  %y = neg(%x)\n  return %y\n}\n")
    x = torch.arange(4, dtype=torch.float32)
    out = torch.full((8,), 7.0)[::2]  # strided output buffer
    res = autofuse._core.interpret_with(g, [x], lambda sizes, dtype: out)
    assert res[0] is out
    assert out.tolist() == [0.0, -1.0, -2.0, -3.0]


def test_requires_grad_tensor_is_viewed_without_copy():
    t = torch.ones(3, requires_grad=True)
    assert view(t)["data_ptr"] == t.data_ptr()


def test_read_only_numpy_is_refused_for_writing_only():
    a = np.zeros(3, dtype=np.float32)
    a.flags.writeable = False
    assert view(a)["data_ptr"] == a.ctypes.data
    with pytest.raises(ValueError, match="read-only"):
        view(a, writable=True)


def test_outputs_with_overlapping_elements_are_refused():
    """Review (session 14): Kernel.run wrote row sums into torch.zeros(1, 1).expand(4096, 1) (one float for every row);
    the threads raced and the value left varied from run to run. Read-only outputs were already refused."""
    expanded = torch.zeros(1, 1).expand(4096, 1)
    with pytest.raises(ValueError, match=r"tensor: its elements overlap in memory \(f32\[4096, 1\] strides \[0, 1\]: "
                                         r"dim 0 has size 4096 and stride 0 \(an expanded tensor\)\)"):
        view(expanded, writable=True)
    with pytest.raises(ValueError, match="dims 0 and 1 both have stride 1"):
        view(torch.zeros(8).as_strided((2, 2), (1, 1)), writable=True)
    assert view(expanded)["sizes"] == [4096, 1]  # read-only use is fine
    for ok in (torch.zeros(3, 1).expand(3, 1), torch.zeros(0, 3).expand(5, 0, 3), torch.zeros(4, 6)[:, ::2],
               torch.zeros(3, 4).t()):
        view(ok, writable=True)
    g = autofuse.parse("graph f(%x: f32[s0, s1]) {\n  %s = sum(%x) {axes=[1], keepdim=true}\n  return %s\n}\n")
    with pytest.raises(ValueError, match="output 0 \\(from the allocator\\): its elements overlap"):
        autofuse._core.interpret_with(g, [torch.ones(4, 3)], lambda sizes, dtype: torch.zeros(1, 1).expand(*sizes))
    from autofuse import backend
    if backend.has_native_kernels():
        k = autofuse._core.Kernel.compile(g)
        with pytest.raises(ValueError, match="output 0: its elements overlap in memory"):
            k.run([torch.ones(4096, 64)], [expanded])
        out = torch.zeros(4096, 1)
        k.run([torch.ones(4096, 64)], [out])
        assert bool((out == 64).all())


def test_unsupported_inputs_are_named():
    with pytest.raises(TypeError, match="tensor: expected a torch.Tensor or numpy.ndarray on the CPU, got 'list'"):
        view([1, 2])
    with pytest.raises(ValueError, match="unsupported element type"):
        view(torch.zeros(2, dtype=torch.complex64))
    with pytest.raises(TypeError, match="input 1: expected"):
        autofuse.interpret(autofuse.parse("graph f(%x: f32[2], %y: f32[2]) {\n  return %x\n}\n"),
                           [torch.zeros(2), "nope"])


NUMPY_REFUSED = {
    "big-endian": (np.arange(6, dtype=">f4"), r"numpy array has non-native byte order \(dtype '>f4'\)"),
    "object": (np.array([object()] * 6), r"numpy array of dtype 'object' is not supported; expected bool, uint8"),
    "str": (np.array(["a", "b"]), r"numpy array of dtype '<U1' is not supported"),
    "float128": (np.zeros(4, np.longdouble), r"numpy array of dtype 'float128' is not supported"),
    "byte stride 6": (np.lib.stride_tricks.as_strided(np.zeros(64, np.uint8).view(np.float32)[:1], shape=(4,),
                                                      strides=(6,)),
                      r"numpy array has byte strides \(6,\), not all multiples of its item size 4"),
}


@pytest.mark.parametrize("case", list(NUMPY_REFUSED))
def test_numpy_arrays_dlpack_refuses_say_why(case):
    """Review (session 14): these said "expected a torch.Tensor or numpy.ndarray on the CPU, got 'ndarray'"."""
    a, why = NUMPY_REFUSED[case]
    with pytest.raises(ValueError, match="tensor: " + why):
        view(a)
    with pytest.raises(ValueError, match="input 1: " + why):
        autofuse.interpret(autofuse.parse("graph f(%x: f32[4], %y: f32[4]) {\n  return %x\n}\n"),
                           [np.zeros(4, np.float32), a])


GRAPH = """\
graph f(%x: f32[s0, 4], %b: f32[4]) {
  %y = add(%x, %b)
  %s = sum(%y) {axes=[1], keepdim=false}
  return %y, %s
}
"""


def test_interpret_torch_non_contiguous():
    g = autofuse.parse(GRAPH)
    x = torch.randn(4, 3).t()  # (3, 4), strides (1, 3)
    b = torch.randn(8)[::2]
    y, s = autofuse.interpret(g, [x, b])
    assert isinstance(y, torch.Tensor) and y.is_contiguous()
    torch.testing.assert_close(y, x + b)
    torch.testing.assert_close(s, (x + b).sum(1))


def test_interpret_numpy_returns_numpy():
    g = autofuse.parse(GRAPH)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    b = np.ones(4, dtype=np.float32)
    y, s = autofuse.interpret(g, [x, b])
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and s.shape == (2,)
    np.testing.assert_allclose(y, x + b)


def test_interpret_bf16_and_zero_size():
    g = autofuse.parse("graph f(%x: bf16[s0, s1]) {\n  %y = mul(%x, %x)\n  return %y\n}\n")
    x = torch.randn(3, 5, dtype=torch.bfloat16)
    (y,) = autofuse.interpret(g, [x])
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y, x * x)
    (z,) = autofuse.interpret(g, [torch.zeros(0, 5, dtype=torch.bfloat16)])
    assert z.shape == (0, 5)


def test_interpret_reports_size_conflicts():
    g = autofuse.parse(GRAPH)
    with pytest.raises(autofuse.IRError, match="%b"):
        autofuse.interpret(g, [torch.zeros(2, 4), torch.zeros(5)])


def test_meta_and_sparse_tensors_are_refused_by_name():
    """Found by a new-user test: these gave 'basic_string: construction from null is not valid'."""
    import autofuse

    g = autofuse.parse("graph f(%x: f32[s0, 8]) {\n  %y = exp(%x)\n  return %y\n}")
    with pytest.raises(ValueError, match="input 0: tensor is on device 'meta'"):
        autofuse.interpret(g, [torch.randn(3, 8).to("meta")])
    with pytest.raises(ValueError, match="input 0: tensor has layout torch.sparse_coo"):
        autofuse.interpret(g, [torch.randn(3, 8).to_sparse()])
