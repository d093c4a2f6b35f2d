// The mixed-precision policy for float16 / bfloat16 values (docs/precision.md, issue 7): where a value computed in
// float32 is rounded to its 16-bit dtype. Shared by the code generator (which rounding the kernel source emits) and
// the reference interpreter (which rounding it models), so both agree for the same setting.
#pragma once

#include <string>

#include "autofuse/ir/dtype.h"

namespace autofuse {

/// How f16/bf16 nodes are rounded.
enum class PrecisionPolicy {
  /// Default. f16/bf16 values are converted to float32 when loaded and every computation inside a kernel (or, in the
  /// interpreter, inside the whole graph) stays in float32; values are rounded to f16/bf16 only where they are
  /// stored (kernel / graph outputs), at an explicit `cast` node, and at source nodes (constant, full, iota), which
  /// denote values of their dtype.
  Float32Inside,
  /// AUTOFUSE_EMULATE_PRECISION_CASTS=1: every f16/bf16 elementwise or reduce node is rounded to its dtype right
  /// after it is computed, as eager PyTorch rounds after each ATen op.
  EmulateCasts,
};

/// The policy selected by the environment variable AUTOFUSE_EMULATE_PRECISION_CASTS, a boolean (support/env.h):
/// unset, empty or "0" gives Float32Inside, "1" gives EmulateCasts. Read at each call (kernels read it when they are
/// compiled). Any other value warns once, naming the variable and the value, and gives Float32Inside.
PrecisionPolicy precision_policy_from_env();

/// "f32-inside" or "emulate-casts" (used in generated sources, so the two policies never share a cached binary).
std::string precision_policy_name(PrecisionPolicy p);

/// The dtype a node of dtype t is rounded to right after it is computed, for an implicit (non-cast, non-source)
/// rounding: t itself, except Float32 for f16/bf16 under Float32Inside.
inline DType implicit_rounding_dtype(DType t, PrecisionPolicy p) {
  if (p == PrecisionPolicy::Float32Inside && (t == DType::Float16 || t == DType::BFloat16)) return DType::Float32;
  return t;
}

}  // namespace autofuse
