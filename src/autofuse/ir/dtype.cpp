#include "autofuse/ir/dtype.h"

#include <array>

namespace autofuse {
namespace {
struct DTypeInfo {
  std::string_view name;
  std::string_view torch_name;
  int size;
};
constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {"bool", "bool", 1},
    {"u8", "uint8", 1},
    {"i8", "int8", 1},
    {"i16", "int16", 2},
    {"i32", "int32", 4},
    {"i64", "int64", 8},
    {"f16", "float16", 2},
    {"bf16", "bfloat16", 2},
    {"f32", "float32", 4},
    {"f64", "float64", 8},
}};
}  // namespace

std::string_view dtype_name(DType t) { return kInfo[static_cast<int>(t)].name; }

std::optional<DType> parse_dtype(std::string_view s) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (kInfo[i].name == s || kInfo[i].torch_name == s) return static_cast<DType>(i);
  if (s == "half") return DType::Float16;
  if (s == "float") return DType::Float32;
  if (s == "double") return DType::Float64;
  if (s == "long") return DType::Int64;
  if (s == "int") return DType::Int32;
  return std::nullopt;
}

int dtype_size(DType t) { return kInfo[static_cast<int>(t)].size; }

bool is_float(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
bool is_integer(DType t) { return t >= DType::UInt8 && t <= DType::Int64; }
bool is_signed_integer(DType t) { return t >= DType::Int8 && t <= DType::Int64; }

DType compute_dtype(DType t) {
  if (t == DType::Float16 || t == DType::BFloat16) return DType::Float32;
  return t;
}

// Source of the lattice: c10/core/ScalarType.h (promoteTypes), restated: bool < integers < floats; u8 with a signed
// integer promotes to the wider signed type (i16 at least); f16 with bf16 promotes to f32.
DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (is_float(a) != is_float(b)) return is_float(a) ? a : b;
  if (is_float(a)) {
    if ((a == DType::Float16 && b == DType::BFloat16) || (a == DType::BFloat16 && b == DType::Float16))
      return DType::Float32;
    return static_cast<int>(a) > static_cast<int>(b) ? a : b;
  }
  // Both integers.
  if (a == DType::UInt8 || b == DType::UInt8) {
    DType other = a == DType::UInt8 ? b : a;
    return other == DType::Int8 ? DType::Int16 : other;
  }
  return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

}  // namespace autofuse
