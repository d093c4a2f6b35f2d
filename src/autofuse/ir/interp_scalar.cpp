#include "autofuse/ir/interp_scalar.h"

#include <cmath>
#include <limits>
#include <string>

#include "autofuse/ir/tensor.h"

namespace autofuse::interp {

namespace {

uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }
int64_t s(uint64_t v) { return static_cast<int64_t>(v); }

[[noreturn]] void unsupported(OpKind op, const char* what) {
  throw std::logic_error(std::string("interpreter: op ") + std::string(op_info(op).name) + " is not a " + what);
}

/// Eager's floor division of floating values (c10/util/generic_math.h div_floor_floating), in type T.
template <class T>
T floordiv_floating(T a, T b) {
  if (b == 0) return a / b;
  T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= T(1);
  if (div == 0) return std::copysign(T(0), a / b);
  T fl = std::floor(div);
  if (div - fl > T(0.5)) fl += T(1);
  return fl;
}

/// Eager's integer pow (BinaryOpsKernel powi): square-and-multiply with wrap-around; negative exponents give
/// 1 for base 1, ±1 for base -1, 0 otherwise.
int64_t powi(int64_t a, int64_t b) {
  if (b < 0) {
    if (a == 1) return 1;
    if (a == -1) return (b % 2 == 0) ? 1 : -1;
    return 0;
  }
  uint64_t result = 1, base = u(a);
  uint64_t e = u(b);
  while (e) {
    if (e & 1u) result *= base;
    e >>= 1;
    base *= base;
  }
  return s(result);
}

}  // namespace

int int_bits(DType t) {
  switch (t) {
    case DType::Bool:
      return 1;
    case DType::UInt8:
    case DType::Int8:
      return 8;
    case DType::Int16:
      return 16;
    case DType::Int32:
      return 32;
    case DType::Int64:
      return 64;
    default:
      throw std::logic_error("int_bits: " + std::string(dtype_name(t)) + " is not an integer dtype");
  }
}

int64_t wrap_int(int64_t v, DType t) {
  switch (t) {
    case DType::Bool:
      return v != 0;
    case DType::UInt8:
      return static_cast<uint8_t>(v);
    case DType::Int8:
      return static_cast<int8_t>(v);
    case DType::Int16:
      return static_cast<int16_t>(v);
    case DType::Int32:
      return static_cast<int32_t>(v);
    case DType::Int64:
      return v;
    default:
      throw std::logic_error("wrap_int: " + std::string(dtype_name(t)) + " is not an integer dtype");
  }
}

double round_float(double v, DType t) { return round_to_dtype(v, t); }

double cast_int_to_float(int64_t v, DType to) {
  if (to == DType::Float64) return static_cast<double>(v);
  // One rounding, int64 -> f32, as static_cast<float> does; f16/bf16 then round from f32 (c10::Half(float)).
  return round_to_dtype(static_cast<double>(static_cast<float>(v)), to);
}

int64_t cast_float_to_int(double v, DType to) {
  if (to == DType::Bool) return v != 0.0;  // NaN != 0 is true
  if (to == DType::Int64) {
    // cvttsd2si semantics: NaN and values outside [-2^63, 2^63) give INT64_MIN.
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(v);
  }
  int64_t i32 = std::numeric_limits<int32_t>::min();
  if (v >= -2147483648.0 && v < 2147483648.0) i32 = static_cast<int64_t>(v);
  return wrap_int(i32, to);
}

double unary_float(OpKind op, double x) {
  switch (op) {
    case OpKind::Exp:
      return std::exp(x);
    case OpKind::Exp2:
      return std::exp2(x);
    case OpKind::Expm1:
      return std::expm1(x);
    case OpKind::Log:
      return std::log(x);
    case OpKind::Log2:
      return std::log2(x);
    case OpKind::Log10:
      return std::log10(x);
    case OpKind::Log1p:
      return std::log1p(x);
    case OpKind::Sqrt:
      return std::sqrt(x);
    case OpKind::Rsqrt:
      return 1.0 / std::sqrt(x);
    case OpKind::Reciprocal:
      return 1.0 / x;
    case OpKind::Sin:
      return std::sin(x);
    case OpKind::Cos:
      return std::cos(x);
    case OpKind::Tan:
      return std::tan(x);
    case OpKind::Tanh:
      return std::tanh(x);
    case OpKind::Sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case OpKind::Erf:
      return std::erf(x);
    case OpKind::Abs:
      return std::fabs(x);
    case OpKind::Neg:
      return -x;
    case OpKind::Relu:
      return std::isnan(x) ? x : (x > 0 ? x : 0.0);
    case OpKind::Floor:
      return std::floor(x);
    case OpKind::Ceil:
      return std::ceil(x);
    case OpKind::Round:
      return std::nearbyint(x);  // default rounding mode: half to even
    case OpKind::Trunc:
      return std::trunc(x);
    case OpKind::Sign:
      return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);  // NaN -> 0, like eager
    default:
      unsupported(op, "unary floating-point op");
  }
}

int64_t unary_int(OpKind op, int64_t x, DType t) {
  switch (op) {
    case OpKind::Abs:
      return x < 0 ? s(0 - u(x)) : x;
    case OpKind::Neg:
      return s(0 - u(x));
    case OpKind::Relu:
      return x > 0 ? x : 0;
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Round:
    case OpKind::Trunc:
      return x;
    case OpKind::Sign:
      return (x > 0) - (x < 0);
    case OpKind::BitwiseNot:
      return t == DType::Bool ? !x : ~x;
    default:
      unsupported(op, "unary integer op");
  }
}

bool predicate_float(OpKind op, double x) {
  switch (op) {
    case OpKind::IsNan:
      return std::isnan(x);
    case OpKind::IsInf:
      return std::isinf(x);
    case OpKind::IsFinite:
      return std::isfinite(x);
    case OpKind::LogicalNot:
      return x == 0.0;
    default:
      unsupported(op, "predicate");
  }
}

bool predicate_int(OpKind op, int64_t x) {
  switch (op) {
    case OpKind::IsNan:
    case OpKind::IsInf:
      return false;
    case OpKind::IsFinite:
      return true;
    case OpKind::LogicalNot:
      return x == 0;
    default:
      unsupported(op, "predicate");
  }
}

double maximum_f(double a, double b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

double minimum_f(double a, double b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

double binary_float(OpKind op, double a, double b, DType t) {
  switch (op) {
    case OpKind::Add:
      return a + b;
    case OpKind::Sub:
      return a - b;
    case OpKind::Mul:
      return a * b;
    case OpKind::Div:
      return a / b;
    case OpKind::FloorDiv:
      if (t == DType::Float64) return floordiv_floating<double>(a, b);
      return floordiv_floating<float>(static_cast<float>(a), static_cast<float>(b));
    case OpKind::Remainder: {
      double mod = std::fmod(a, b);
      if (mod != 0 && (b < 0) != (mod < 0)) mod += b;
      return mod;
    }
    case OpKind::Fmod:
      return std::fmod(a, b);
    case OpKind::Pow:
      return std::pow(a, b);
    case OpKind::Maximum:
      return maximum_f(a, b);
    case OpKind::Minimum:
      return minimum_f(a, b);
    // fmax/fmin keep the first operand on ties (fmax(-0.0, +0.0) is -0.0 in eager), unlike maximum/minimum; for
    // bfloat16 eager keeps the second (measured with torch 2.13 on 0-d, short and vectorized tensors alike).
    case OpKind::Fmax:
      if (t == DType::BFloat16) return std::isnan(a) ? b : std::isnan(b) ? a : (a > b ? a : b);
      return std::isnan(a) ? b : std::isnan(b) ? a : (b > a ? b : a);
    case OpKind::Fmin:
      if (t == DType::BFloat16) return std::isnan(a) ? b : std::isnan(b) ? a : (a < b ? a : b);
      return std::isnan(a) ? b : std::isnan(b) ? a : (b < a ? b : a);
    case OpKind::Atan2:
      return std::atan2(a, b);
    default:
      unsupported(op, "binary floating-point op");
  }
}

double fma_float(double a, double b, double c, DType t) {
  if (t == DType::Float64) return std::fma(a, b, c);
  return std::fma(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c));
}

int64_t binary_int(OpKind op, int64_t a, int64_t b, DType t) {
  const int bits = int_bits(t);
  switch (op) {
    case OpKind::Add:
      return s(u(a) + u(b));
    case OpKind::Sub:
      return s(u(a) - u(b));
    case OpKind::Mul:
      return s(u(a) * u(b));
    case OpKind::FloorDiv: {
      if (b == 0) throw IntegerDivisionByZero();
      if (b == -1) return s(0 - u(a));
      int64_t q = a / b;
      return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    }
    case OpKind::Remainder: {
      if (b == 0) throw IntegerDivisionByZero();
      if (b == -1) return 0;
      int64_t m = a % b;
      return (m != 0 && ((b < 0) != (m < 0))) ? m + b : m;
    }
    case OpKind::Fmod:
      if (b == 0) throw IntegerDivisionByZero();
      return b == -1 ? 0 : a % b;
    case OpKind::Pow:
      return powi(a, b);
    case OpKind::Maximum:
    case OpKind::Fmax:
      return a > b ? a : b;
    case OpKind::Minimum:
    case OpKind::Fmin:
      return a < b ? a : b;
    case OpKind::BitwiseAnd:
      return a & b;
    case OpKind::BitwiseOr:
      return a | b;
    case OpKind::BitwiseXor:
      return a ^ b;
    case OpKind::Shl:
      if (b < 0 || b >= bits) return 0;
      return s(u(a) << b);
    case OpKind::Shr:
      // Values are held sign-extended (signed types) or zero-extended (u8), so an arithmetic shift of the int64 is
      // the dtype's shift. Counts outside [0, bits) give the sign fill (eager shifts by bits - 1, or by 8 for u8).
      if (b < 0 || b >= bits) return t == DType::UInt8 ? 0 : (a < 0 ? -1 : 0);
      return a >> b;
    default:
      unsupported(op, "binary integer op");
  }
}

namespace {
// One comparison for both value kinds: eager compares floats (NaN unordered) and integers with the same operators.
template <class T>
bool compare_values(OpKind op, T a, T b) {
  switch (op) {
    case OpKind::Eq:
      return a == b;
    case OpKind::Ne:
      return a != b;
    case OpKind::Lt:
      return a < b;
    case OpKind::Le:
      return a <= b;
    case OpKind::Gt:
      return a > b;
    case OpKind::Ge:
      return a >= b;
    case OpKind::LogicalAnd:
      return a != 0 && b != 0;
    case OpKind::LogicalOr:
      return a != 0 || b != 0;
    case OpKind::LogicalXor:
      return (a != 0) != (b != 0);
    default:
      unsupported(op, "comparison");
  }
}
}  // namespace

bool compare_float(OpKind op, double a, double b) { return compare_values(op, a, b); }

bool compare_int(OpKind op, int64_t a, int64_t b) { return compare_values(op, a, b); }

}  // namespace autofuse::interp
