// Element types of the Autofuse IR and PyTorch's type-promotion lattice over them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace autofuse {

/// Element type of a tensor value. The order is the IR's; names follow PyTorch (torch.float32 is "f32" in IR text).
enum class DType : uint8_t { Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64 };

inline constexpr int kNumDTypes = 10;

/// IR text name: bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64.
std::string_view dtype_name(DType t);
/// Inverse of dtype_name; also accepts PyTorch names ("float32", "bfloat16", "int64", ...). nullopt if unknown.
std::optional<DType> parse_dtype(std::string_view s);
/// Storage size of one element in bytes.
int dtype_size(DType t);
bool is_float(DType t);    ///< f16, bf16, f32, f64
bool is_integer(DType t);  ///< u8, i8, i16, i32, i64 (not bool)
bool is_signed_integer(DType t);
/// The type arithmetic is carried out in inside a kernel: f32 for f16/bf16/f32, f64 for f64, the type itself else.
DType compute_dtype(DType t);
/// torch.promote_types(a, b) for two tensors of the same category rank (no scalar rules).
DType promote_types(DType a, DType b);

}  // namespace autofuse
