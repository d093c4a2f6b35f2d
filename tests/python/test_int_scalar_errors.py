"""Integer-dtype cases where eager raises and a kernel would return numbers (review, session 14): out-of-range Python
int scalars that eager converts with a range check (clamp bounds, fill values, where/masked_fill scalars), a scalar
divisor that is 0 in the dtype, and an integer tensor to a negative power. The lowering leaves these ops to ATen,
which raises eager's error; in-range cases still compile to kernels. Also float16's ``x ** +-0.5``, which eager
computes with std::pow (not sqrt / rsqrt as for the other dtypes)."""

import pytest
import torch

import autofuse  # noqa: F401  (registers the backend)
from autofuse import backend as afb

A = torch.tensor([-3, 0, 5, 9], dtype=torch.int32)

RAISING = {
    "clamp_max": lambda a: (a + 1).clamp(max=2**40),
    "clamp_int8": lambda a: (a.to(torch.int8) + 1).clamp(min=-300, max=300),
    "masked_fill": lambda a: (a + 1).masked_fill(a > 0, 2**40),
    "where": lambda a: torch.where(a > 0, a + 1, 2**40),
    "full_like": lambda a: torch.full_like(a, 2**40) + a,
    "floordiv_2e40": lambda a: (a + 1) // 2**40,
    "remainder_2e32": lambda a: (a + 1) % 2**32,
    "pow_negative": lambda a: torch.pow(a + 0, -2),
    # float dtypes: a finite scalar beyond the dtype's range (second review, session 14). Not here: a float
    # masked_fill, which torch's decompositions turn into where(mask, scalar_tensor(v), x) before the lowering sees
    # it, and eager's scalar_tensor / where do not check the range (1e5 in float16 is inf; eager's masked_fill raises)
    "f16_clamp_1e5": lambda a: (a.half() * 1).clamp(max=1e5),
    "f16_clamp_int": lambda a: (a.half() * 1).clamp(max=100000),
    "f16_full_like": lambda a: torch.full_like(a.half(), 1e5) + a.half(),
    "f16_alpha": lambda a: torch.add(a.half() * 1, a.half(), alpha=1e5),
    "f32_alpha": lambda a: torch.sub(a.float() * 1, a.float(), alpha=1e39),
    "u8_fill_256": lambda a: (a.to(torch.uint8) + 1).masked_fill(a > 0, 256),
    "u8_fill_minus_256": lambda a: (a.to(torch.uint8) + 1).masked_fill(a > 0, -256),
    # review 16b: subtraction with a bool operand, where's float scalar beyond float32 (for a float32 result), an
    # out-of-range float16 masked_fill value, pow's exponent out of the tensor's range (float16 / bfloat16 / integer)
    "f32_minus_true": lambda a: a.float() * 1 - True,
    "true_minus_f32": lambda a: True - a.float() * 1,
    "i32_minus_false": lambda a: (a + 1) - False,
    "f32_minus_bool_tensor": lambda a: a.float() * 1 - (a > 0),
    "bool_tensor_minus_i32": lambda a: (a > 0) - (a + 1),
    "sub_bool_alpha": lambda a: torch.sub(a.float() * 1, a.float(), alpha=True),
    "f32_where_1e300": lambda a: torch.where(a > 1, a.float() * 1, 1e300),
    "f32_where_first_3_5e38": lambda a: torch.where(a > 1, 3.5e38, a.float() * 1),
    "i32_where_float_1e300": lambda a: torch.where(a > 1, a + 1, 1e300),
    "f16_masked_fill_3e38": lambda a: (a.half() * 1).masked_fill(a > 1, 3e38),
    "f16_masked_fill_2e31": lambda a: (a.half() * 1).masked_fill(a > 1, 2**31),
    "f32_masked_fill_1e300": lambda a: (a.float() * 1).masked_fill(a > 1, 1e300),
    "f16_pow_1e300": lambda a: (a.half() * 1) ** 1e300,
    "f16_pow_70000": lambda a: (a.half() * 1) ** 70000.0,
    "bf16_pow_3_5e38": lambda a: (a.bfloat16() * 1) ** 3.5e38,
    "f16_pow_2e31": lambda a: (a.half() * 1) ** 2**31,
    "i32_pow_2e31": lambda a: (a + 1) ** 2**31,
    "i8_pow_300": lambda a: (a.to(torch.int8) + 1) ** 300,
    "i8_pow_2e63": lambda a: (a.to(torch.int8) + 1) ** (2**63 - 1),
    # review 16c: a float value on an integer dtype is range-checked too (as a double against the dtype's limits,
    # with no wrap-around for unsigned: -0.5 on uint8 raises), NaN and +-inf always (a Python NaN / inf value Dynamo
    # rejects while tracing, before the backend: int(nan) in torch's masked_fill reference); and a 0-d tensor value of
    # masked_fill (eager checks value.item() at run time, even where the mask is all False): see
    # test_masked_fill_with_a_0d_tensor_value
    "i8_masked_fill_127_9": lambda a: (a.to(torch.int8) + 1).masked_fill(a > 0, 127.9),
    "i8_masked_fill_127_5": lambda a: (a.to(torch.int8) + 1).masked_fill(a > 0, 127.5),
    "i8_masked_fill_minus_128_5": lambda a: (a.to(torch.int8) + 1).masked_fill(a > 0, -128.5),
    "i32_masked_fill_3e9": lambda a: (a + 1).masked_fill(a > 0, 3e9),
    "i32_masked_fill_minus_2e31_5": lambda a: (a + 1).masked_fill(a > 0, -2147483648.5),
    "i32_masked_fill_2e31_5": lambda a: (a + 1).masked_fill(a > 0, 2147483647.5),
    "u8_masked_fill_minus_0_5": lambda a: (a.to(torch.uint8) + 1).masked_fill(a > 0, -0.5),
    "u8_masked_fill_minus_1_0": lambda a: (a.to(torch.uint8) + 1).masked_fill(a > 0, -1.0),
    "i8_fill_300_5": lambda a: (a.to(torch.int8) + 1).fill_(300.5),
    "i8_full_like_127_5": lambda a: torch.full_like(a.to(torch.int8), 127.5) + 1,
}


def _assert_raises_like_eager(fn, *args, eager_error=RuntimeError) -> None:
    """``fn(*args)`` raises ``eager_error`` in eager, and compiled with autofuse raises an error whose message contains
    eager's first line (the op ran in ATen), e.g. "value cannot be converted to type int without overflow"."""
    with pytest.raises(eager_error) as eager:
        fn(*args)
    torch._dynamo.reset()
    with pytest.raises(Exception) as compiled:
        torch.compile(fn, backend="autofuse")(*args)
    assert str(eager.value).splitlines()[0] in str(compiled.value), (str(eager.value), str(compiled.value))


@pytest.mark.parametrize("name", sorted(RAISING))
def test_raises_where_eager_raises(name):
    _assert_raises_like_eager(RAISING[name], A)


IN_RANGE = {
    "clamp_max": lambda a: (a + 1).clamp(max=2**31 - 1),
    "clamp_int8": lambda a: (a.to(torch.int8) + 1).clamp(min=-128, max=127),
    "masked_fill": lambda a: (a + 1).masked_fill(a > 0, -2**31),
    "where": lambda a: torch.where(a > 0, a + 1, 7),
    "floordiv_wraps_to_3": lambda a: (a + 1) // (2**32 + 3),
    "pow_3": lambda a: torch.pow(a + 0, 3),
    # eager's range for unsigned dtypes is [-max, max]: -1 on uint8 is 255 (second review: these fell back)
    "u8_masked_fill_minus_1": lambda a: (a.to(torch.uint8) + 1).masked_fill(a > 0, -1),
    "u8_where_minus_255": lambda a: torch.where(a > 0, a.to(torch.uint8) + 1, -255),
    "u8_clamp_min_minus_1": lambda a: (a.to(torch.uint8) + 1).clamp(min=-1),
    "u8_full_like_minus_1": lambda a: torch.full_like(a.to(torch.uint8), -1) + a.to(torch.uint8),
    "f16_where_1e5_is_inf": lambda a: torch.where(a > 0, a.half() * 1, 1e5),  # eager: no range check here
    "f16_clamp_inf_nan": lambda a: (a.half() * 1).clamp(min=float("-inf"), max=float("inf")),
    "int8_trunc_div_200": lambda a: torch.div(a.to(torch.int8) * 25, 200, rounding_mode="trunc"),
    "int32_trunc_div_wraps_negative": lambda a: torch.div(a * 1000, 2**32 - 5, rounding_mode="trunc"),
    # review 16b: the limits of the new checks (eager takes these)
    "f32_plus_true": lambda a: a.float() * 1 + True,
    "f32_where_70000": lambda a: torch.where(a > 1, a.float() * 1, 70000.0),
    "f32_where_inf": lambda a: torch.where(a > 1, a.float() * 1, float("inf")),
    "f64_where_1e300": lambda a: torch.where(a > 1, a.double() * 1, 1e300),
    "bf16_where_1e300_is_inf": lambda a: torch.where(a > 0, a.bfloat16() * 1, 1e300),
    "f16_masked_fill_inf": lambda a: (a.half() * 1).masked_fill(a > 1, float("inf")),
    "f16_masked_fill_60000": lambda a: (a.half() * 1).masked_fill(a > 1, 60000.0),
    "f32_pow_1e300": lambda a: (a.float() * 1) ** 1e300,
    "f16_pow_inf": lambda a: (a.half() * 1) ** float("inf"),
    "f16_pow_32768": lambda a: (a.half() * 1) ** 32768,
    "i32_pow_float_1e300": lambda a: (a + 1) ** 1e300,
    "i32_pow_300": lambda a: (a + 1) ** 300,
    # review 16c: the limits of the float-value check on integer dtypes (truncated as in eager)
    "i32_masked_fill_127_5": lambda a: (a + 1).masked_fill(a > 0, 127.5),
    "i8_masked_fill_minus_128_0": lambda a: (a.to(torch.int8) + 1).masked_fill(a > 0, -128.0),
    "i8_masked_fill_127_0": lambda a: (a.to(torch.int8) + 1).masked_fill(a > 0, 127.0),
    "u8_masked_fill_255_0": lambda a: (a.to(torch.uint8) + 1).masked_fill(a > 0, 255.0),
    "i32_fill_minus_128_9": lambda a: (a + 1).fill_(-128.9),
    # add, mul, comparisons and bitwise ops convert an out-of-range int scalar without a check in eager: it wraps into
    # the dtype. The lowering stores the wrapped value (the verifier refuses a constant outside its dtype; before it
    # did, the kernel wrapped it alike)
    "i32_plus_2e40": lambda a: (a + 1) + 2**40,
    "i32_minus_2e32_plus_5": lambda a: (a + 1) - (2**32 + 5),
    "i32_times_2e40_plus_3": lambda a: (a + 1) * (2**40 + 3),
    "rsub_2e40_plus_7": lambda a: (2**40 + 7) - (a + 1),
    "i32_eq_2e32": lambda a: (a - 5) == 2**32,
    "i32_lt_2e31": lambda a: (a + 1) < 2**31,
    "i32_or_2e32_plus_1": lambda a: (a + 1) | (2**32 + 1),
    "u8_plus_300": lambda a: (a.to(torch.uint8) + 1) + 300,
    "i8_times_1000": lambda a: (a.to(torch.int8) + 1) * 1000,
    "i64_plus_2e63": lambda a: (a.long() + 1) + 2**63,
    "i64_minus_2e64_minus_1": lambda a: (a.long() + 1) - (2**64 - 1),
}


@pytest.mark.parametrize("name", sorted(IN_RANGE))
def test_in_range_scalars_still_compile(name):
    fn = IN_RANGE[name]
    torch._dynamo.reset()
    n0 = len(afb.RECORDS)
    got, want = torch.compile(fn, backend="autofuse")(A), fn(A)
    assert got.dtype == want.dtype and torch.equal(got, want), (got, want)
    fallbacks = [f for r in afb.RECORDS[n0:] for f in r.fallbacks]
    assert not fallbacks, fallbacks  # the second review found uint8's -1 left to ATen with a false reason
    assert any(s.kind == "kernel" for r in afb.RECORDS[n0:] for s in r.steps), "expected a kernel"


#: masked_fill with a 0-d tensor value (a graph input, known at run time only): (tensor dtype, value, eager raises).
#: Eager converts ``value.item()`` with the range check even where the mask is all False, so a value dtype that can
#: overflow the tensor's stays with ATen; one that cannot (same dtype, bool, int8 on uint8 (-128 wraps: [-max, max]),
#: float16 on float32, int16 on float16) is lowered.
TENSOR_VALUES = {
    "i8_by_i64_300": (torch.int8, torch.tensor(300), True),
    "i8_by_f32_127_9": (torch.int8, torch.tensor(127.9), True),
    "i8_by_u8_200": (torch.int8, torch.tensor(200, dtype=torch.uint8), True),
    "i32_by_f32_nan": (torch.int32, torch.tensor(float("nan")), True),
    "f16_by_f32_1e10": (torch.float16, torch.tensor(1e10), True),
    "f16_by_i32_70000": (torch.float16, torch.tensor(70000, dtype=torch.int32), True),
    "i8_by_i64_7": (torch.int8, torch.tensor(7), False),
    "i8_by_i8": (torch.int8, torch.tensor(-7, dtype=torch.int8), False),
    "u8_by_i8_minus_128": (torch.uint8, torch.tensor(-128, dtype=torch.int8), False),
    "i8_by_bool": (torch.int8, torch.tensor(True), False),
    "f32_by_f16": (torch.float32, torch.tensor(7.5, dtype=torch.float16), False),
    "f16_by_i16": (torch.float16, torch.tensor(300, dtype=torch.int16), False),
    "f16_by_f32_inf": (torch.float16, torch.tensor(float("inf")), False),
}
#: Value dtypes that cannot overflow the tensor's dtype: lowered to a kernel, no ATen fallback.
TENSOR_VALUES_LOWERED = ("i8_by_i8", "u8_by_i8_minus_128", "i8_by_bool", "f32_by_f16", "f16_by_i16")


@pytest.mark.parametrize("mask_any", [True, False], ids=["mask", "no_mask"])
@pytest.mark.parametrize("name", sorted(TENSOR_VALUES))
def test_masked_fill_with_a_0d_tensor_value(name, mask_any):
    """Review 16c: int8 masked_fill(m, tensor(300)) gave 44 and float16 masked_fill(m, tensor(1e10)) inf, where eager
    raises "value cannot be converted to type ... without overflow"."""
    dtype, v, raises = TENSOR_VALUES[name]
    fn = lambda a, m, v: (a.to(dtype) + 1).masked_fill(m, v)  # noqa: E731
    m = A > (0 if mask_any else 99)
    torch._dynamo.reset()
    n0 = len(afb.RECORDS)
    if raises:
        _assert_raises_like_eager(fn, A, m, v)
        return
    got, want = torch.compile(fn, backend="autofuse")(A, m, v), fn(A, m, v)
    assert got.dtype == want.dtype and torch.equal(got, want), (got, want)
    if name in TENSOR_VALUES_LOWERED:
        fallbacks = [f for r in afb.RECORDS[n0:] for f in r.fallbacks]
        assert not fallbacks, fallbacks


def test_fill_with_a_0d_tensor_value_is_unchecked():
    """fill_ with a 0-d tensor value has no range check in eager (int8 fill_(tensor(300)) is 44, float16
    fill_(tensor(1e10)) inf): the same values here, no error."""
    for dtype, v in ((torch.int8, torch.tensor(300)), (torch.float16, torch.tensor(1e10))):
        fn = lambda a, v: (a.to(dtype) + 1).fill_(v)  # noqa: E731
        torch._dynamo.reset()
        got, want = torch.compile(fn, backend="autofuse")(A, v), fn(A, v)
        assert got.dtype == want.dtype and torch.equal(got, want), (got, want)


@pytest.mark.parametrize("p", [0.5, -0.5, -1, -2])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=["f16", "bf16", "f32"])
def test_pow_special_exponents_follow_eager_per_dtype(p, dtype):
    x = torch.tensor([-float("inf"), -0.0, 4.0, -4.0, float("inf"), 0.0, float("nan"), 0.25], dtype=dtype)
    fn = lambda t: (t * 1) ** p  # noqa: E731
    torch._dynamo.reset()
    got, want = torch.compile(fn, backend="autofuse")(x), fn(x)
    assert torch.equal(got.isnan(), want.isnan()), (got, want)
    ok = ~want.isnan()
    assert torch.equal(got[ok], want[ok]) and torch.equal(got[ok].signbit(), want[ok].signbit()), (got, want)


@pytest.mark.parametrize("emulate", ["0", "1"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("swap", [False, True])
def test_alpha_with_a_0d_float32_operand(swap, dtype, emulate, monkeypatch):
    """Second review (session 14): with alpha on f16/bf16 computed in float32, a 0-d float32 tensor operand was used
    unrounded; eager rounds it to the result dtype first (556 of 4096 elements differed)."""
    monkeypatch.setenv("AUTOFUSE_EMULATE_PRECISION_CASTS", emulate)
    g = torch.Generator().manual_seed(7)
    x, s = (torch.randn(4096, generator=g) * 3).to(dtype), torch.tensor(0.1234567)
    fn = (lambda a, b: torch.add(b, a, alpha=3)) if swap else (lambda a, b: torch.add(a, b, alpha=3))
    torch._dynamo.reset()
    got, want = torch.compile(fn, backend="autofuse")(x, s), fn(x, s)
    assert got.dtype == want.dtype and torch.equal(got.view(torch.int16), want.view(torch.int16)), (
        f"{int((got != want).sum())} of 4096 differ")


@pytest.mark.parametrize("exp", [True, False])
def test_bool_tensor_to_a_bool_power_is_bool(exp, monkeypatch):
    """Review 16b: ``b ** True`` is a bool tensor in eager (pow's kernel copies the base, or fills ones for False), but
    torch's metadata for ``aten.pow.Tensor_Scalar(b, True)`` says int64 and the lowering followed it (int64 [1, 0]).
    The graph runs as-is in ATen instead (a bool node downstream would be mistyped alike)."""
    monkeypatch.delenv("AUTOFUSE_STRICT", raising=False)
    b = torch.tensor([True, False, True])
    for fn in (lambda t: t ** exp, lambda t: torch.pow(t, exp), lambda t: (t ** exp) | t.logical_not()):
        torch._dynamo.reset()
        got, want = torch.compile(fn, backend="autofuse")(b), fn(b)
        assert got.dtype == want.dtype == torch.bool and torch.equal(got, want), (got, want)


@pytest.mark.parametrize("name", ["true_pow_bool_tensor", "bool_tensor_pow_bool_tensor"])
def test_pow_with_a_bool_base_and_bool_exponent_tensor_raises(name):
    """Review 16b: eager's pow has no bool kernel ("pow" not implemented for 'Bool'); ours returned int64 ones."""
    fn = {"true_pow_bool_tensor": lambda b: True ** (b | b),
          "bool_tensor_pow_bool_tensor": lambda b: (b | b) ** b}[name]
    _assert_raises_like_eager(fn, torch.tensor([True, False]), eager_error=NotImplementedError)
