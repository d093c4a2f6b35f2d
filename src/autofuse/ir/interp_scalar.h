// Eager PyTorch's element semantics, one scalar at a time, in the interpreter's wide types (float64 for floating
// dtypes, int64 for integer and bool dtypes). The interpreter applies these per element; kernels' scalar tails can be
// checked against them. Sources of the semantics: PyTorch 2.13 CPU kernels (c10/util/generic_math.h for floor
// division, aten/src/ATen/native/cpu/BinaryOpsKernel.cpp for remainder, shifts and integer pow), checked against
// eager on the values in tests/python/test_interp_vs_eager.py.
//
// Choices where eager itself is not consistent (its vectorized and scalar paths differ) or undefined:
//  - maximum/minimum/fmax/fmin/relu/clamp of equal zeros of different sign: IEEE 754-2019 maximum/minimum
//    (max(-0, +0) = +0, min(-0, +0) = -0), independent of operand order. Eager returns either.
//  - float -> integer casts of NaN, ±inf and out-of-range values: what eager does on x86-64 — to i64 via a 64-bit
//    truncating conversion (NaN and out-of-range give INT64_MIN), to i32/i16/i8/u8 via a 32-bit one (NaN and values
//    outside [-2^31, 2^31) give INT32_MIN), then two's-complement wrap to the narrower type (so NaN -> i8 is 0).
//  - integer pow with a negative exponent: eager's tensor-tensor rule (1 -> 1, -1 -> ±1, else 0); eager raises only
//    when the exponent is a Python scalar, which the IR does not distinguish.
//  - integer floordiv / remainder / fmod of the most negative value by -1: the wrapped result (INT_MIN, 0, 0).
#pragma once

#include <cstdint>
#include <stdexcept>

#include "autofuse/ir/ops.h"

namespace autofuse::interp {

/// Thrown by binary_int for an integer division, remainder or fmod by zero; the interpreter turns it into an
/// IRError naming the node (eager raises ZeroDivisionError).
struct IntegerDivisionByZero : std::domain_error {
  IntegerDivisionByZero() : std::domain_error("integer division by zero") {}
};

/// Width in bits of an integer dtype (bool: 1).
int int_bits(DType t);
/// Wrap an int64 to the dtype's range by two's complement (u8: 0..255); bool: v != 0.
int64_t wrap_int(int64_t v, DType t);
/// Round a float64 to a floating dtype's value set (f16/bf16 through f32, as eager's f32 compute then store does).
double round_float(double v, DType t);

/// Cast an integer or bool value to another dtype (float dtypes: through f32 for f16/bf16, as c10's conversions do).
double cast_int_to_float(int64_t v, DType to);
/// Cast a floating value to an integer or bool dtype: truncation toward zero; NaN/inf/out of range as the header
/// comment says; bool: v != 0 (NaN is true).
int64_t cast_float_to_int(double v, DType to);

/// Unary elementwise op on a floating value of dtype t (any Elementwise op of arity 1 except cast, clamp and the
/// predicates). Returns the value before rounding to t.
double unary_float(OpKind op, double x);
/// Unary elementwise op on an integer or bool value of dtype t. Returns the value before wrapping to t.
int64_t unary_int(OpKind op, int64_t x, DType t);
/// isnan, isinf, isfinite, logical_not on a floating / integer value.
bool predicate_float(OpKind op, double x);
bool predicate_int(OpKind op, int64_t x);

/// Binary arithmetic op (add ... atan2, bitwise, shifts) on floating values of dtype t. Returns the value before
/// rounding to t. Floor division follows eager's algorithm in t's compute type (f32 for f16/bf16/f32).
double binary_float(OpKind op, double a, double b, DType t);
/// fma(a, b, c) = a * b + c rounded once, in t's compute type: float for f16 / bf16 / f32 (the values are floats
/// already: std::fma in float, not in double, which would round twice), double for f64. Eager's addcmul kernel
/// computes this. Returns the value before rounding to t.
double fma_float(double a, double b, double c, DType t);
/// Binary arithmetic op on integer or bool values of dtype t; wrapping. Returns the value before wrapping to t.
/// Throws IntegerDivisionByZero for floordiv, remainder or fmod by 0.
int64_t binary_int(OpKind op, int64_t a, int64_t b, DType t);
/// Comparisons (eq ... ge) and logical and/or/xor.
bool compare_float(OpKind op, double a, double b);
bool compare_int(OpKind op, int64_t a, int64_t b);

/// IEEE 754-2019 maximum/minimum: NaN if either is NaN; +0 is above -0.
double maximum_f(double a, double b);
double minimum_f(double a, double b);

}  // namespace autofuse::interp
