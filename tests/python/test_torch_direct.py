"""The direct torch tensor reader (src/bindings/torch_direct.h): kernel launches read a plain CPU tensor's dtype,
sizes, strides and data pointer from libtorch's C++ object. It must agree with what Python says about every layout it
accepts, hand everything else to the attribute / DLPack path, and un-share a copy-on-write tensor before a kernel
writes into it."""

import random

import pytest
import torch

from autofuse import _core, backend

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
          torch.int8, torch.uint8, torch.bool]


def test_enabled_when_compiled_in():
    if not _core.torch_direct_compiled():
        pytest.skip("this build has no direct reader (built without torch's headers)")
    assert _core.torch_direct_enabled()  # the self-check passed against the installed torch


def _random_view(rng: random.Random, dtype: torch.dtype) -> torch.Tensor:
    rank = rng.randint(0, 4)
    sizes = [rng.randint(1, 5) for _ in range(rank)]
    base = torch.zeros(sizes, dtype=dtype) if dtype is torch.bool else torch.arange(
        max(1, int(torch.tensor(sizes).prod()) if sizes else 1)).to(dtype).reshape(sizes)
    t = base
    for _ in range(rng.randint(0, 3)):
        if t.dim() >= 2 and rng.random() < 0.5:
            a, b = rng.sample(range(t.dim()), 2)
            t = t.transpose(a, b)
        elif t.dim() >= 1 and t.shape[0] > 1:
            t = t[rng.randint(0, t.shape[0] - 1):]  # a storage offset
        elif t.dim() >= 1:
            t = t.expand(3, *t.shape)  # a zero stride
    return t


def test_random_views_match_python():
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")  # replay: set seed to this value
    rng = random.Random(seed)
    for _ in range(200):
        dtype = rng.choice(DTYPES)
        t = _random_view(rng, dtype)
        v = _core.tensor_view(t, False)
        assert v["fast"], (seed, t.shape, t.stride())
        assert v["sizes"] == list(t.shape) and v["strides"] == list(t.stride()), seed
        if t.numel():
            assert v["data_ptr"] == t.data_ptr(), seed


def test_parameter_requires_grad_and_neg_bit():
    p = torch.nn.Parameter(torch.randn(3, 4))
    assert _core.tensor_view(p, False)["data_ptr"] == p.data_ptr()
    g = torch.randn(2, 3, requires_grad=True)
    assert _core.tensor_view(g, False)["strides"] == [3, 1]
    with pytest.raises(ValueError, match="negative bit"):  # handed on, then refused by name
        _core.tensor_view(torch._neg_view(torch.ones(2)), False)


@pytest.mark.skipif(not backend.has_native_kernels(), reason="needs native kernels (autofuse._core and a compiler)")
def test_kernel_writing_into_a_copy_on_write_tensor_leaves_its_source_alone():
    if not hasattr(torch, "_lazy_clone"):
        pytest.skip("this torch has no copy-on-write clones (torch._lazy_clone)")
    k = _core.Kernel.compile(_core.parse("graph d(%x: f32[4]) {\n  %y = add(%x, %x)\n  return %y\n}\n", "<test>"))
    src = torch.arange(4.0)
    out = torch._lazy_clone(torch.full((4,), 9.0))
    keep = torch._lazy_clone(out)  # shares out's storage until one of them is written
    k.run([src], [out])
    assert out.tolist() == [0.0, 2.0, 4.0, 6.0]
    assert keep.tolist() == [9.0] * 4


@pytest.mark.skipif(not backend.has_native_kernels(), reason="needs native kernels (autofuse._core and a compiler)")
def test_kernel_on_strided_views_matches_eager():
    k = _core.Kernel.compile(_core.parse(
        "graph m(%a: f32[3, 5], %b: f32[3, 5]) {\n  %c = mul(%a, %b)\n  return %c\n}\n", "<test>"))
    a_t = torch.randn(5, 3).t()  # transposed
    b_t = torch.randn(4, 7)[1:, 2:]  # offset rows
    out = torch.empty(5, 3).t()
    for _ in range(3):  # borrowed views: nothing is kept between calls
        k.run([a_t, b_t], [out])
    torch.testing.assert_close(out, a_t * b_t, rtol=0, atol=0)
