// A host tensor: a typed, strided view of CPU memory, owned or borrowed. The interpreter, the kernel launcher and the
// bindings all pass tensors in this form.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autofuse/ir/dtype.h"

namespace autofuse {

/// A strided CPU tensor. Sizes and strides are in elements (not bytes). Storage is in the dtype's memory format:
/// f16 as IEEE binary16 bits, bf16 as the upper 16 bits of a binary32, bool as one byte 0/1.
struct HostTensor {
  DType dtype = DType::Float32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  void* data = nullptr;
  std::shared_ptr<void> owner;  ///< keeps owned storage alive; null for a borrowed view

  /// A new contiguous tensor, uninitialised storage owned by the tensor (64-byte aligned).
  static HostTensor empty(DType dtype, std::vector<int64_t> sizes);
  /// A borrowed view of memory owned elsewhere.
  static HostTensor view(DType dtype, void* data, std::vector<int64_t> sizes, std::vector<int64_t> strides);

  int64_t numel() const;
  bool is_contiguous() const;
  /// Byte offset of the element at a multi-index.
  int64_t offset_bytes(const std::vector<int64_t>& index) const;
  /// Read one element as double / int64 (converting from the storage format).
  double get_double(const std::vector<int64_t>& index) const;
  int64_t get_int(const std::vector<int64_t>& index) const;
  /// Write one element, rounding to the dtype as eager PyTorch does (round to nearest even; integer wrap-around).
  void set_double(const std::vector<int64_t>& index, double v);
  void set_int(const std::vector<int64_t>& index, int64_t v);
  std::string describe() const;  ///< "f32[3, 4] strides [4, 1]"
};

/// Calls fn(index) for every multi-index of `sizes` in row-major order (the last axis fastest); nothing for 0 elements.
/// The index vector is reused between calls. For test and tool code: one std::function call per element.
void for_each_multi_index(const std::vector<int64_t>& sizes,
                          const std::function<void(const std::vector<int64_t>&)>& fn);

/// Relative tolerance for comparing a compiled kernel's float output of dtype t with the reference interpreter: a few
/// ulps of the format plus the transcendental functions' error (SLEEF u10: 1.0 ulp) compounded over a short chain:
/// f16 2e-2, bf16 6e-2, f32 2e-4, f64 1e-9; 0 (exact) for integers and bool.
double kernel_tolerance(DType t);

/// Row-major contiguous strides for sizes.
std::vector<int64_t> contiguous_strides_i64(const std::vector<int64_t>& sizes);

/// IEEE binary16 and bfloat16 conversions, round to nearest even; NaN stays NaN.
uint16_t float_to_half_bits(float f);
float half_bits_to_float(uint16_t h);
uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(uint16_t b);
/// Round a double to the dtype's value set, as storing it in eager would (floats: nearest even, via f32 for f16/bf16
/// exactly as eager's float compute does; integers: C++ conversion then two's-complement wrap; bool: != 0).
double round_to_dtype(double v, DType t);

}  // namespace autofuse
