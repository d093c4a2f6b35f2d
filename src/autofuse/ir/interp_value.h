// Internal to the reference interpreter: the value of one node while the graph runs, strided iteration helpers, and
// the per-category evaluation entry points (interp_elementwise.cpp, interp_layout.cpp, interp_reduce.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autofuse/ir/graph.h"
#include "autofuse/ir/precision.h"
#include "autofuse/ir/symbolic.h"

namespace autofuse::interp {

/// A node's value: a contiguous row-major tensor held in the interpreter's wide types. Floating dtypes keep float64
/// values in `f` (already rounded to the dtype; f16/bf16 values computed under PrecisionPolicy::Float32Inside are
/// rounded to float32 only, and to their dtype when written out), integer and bool dtypes keep int64 values in `i`
/// (already wrapped to the dtype; bool as 0/1). Exactly one of the two vectors is used.
struct Value {
  DType dtype = DType::Float32;
  std::vector<int64_t> sizes;
  std::vector<double> f;
  std::vector<int64_t> i;

  bool is_float() const { return autofuse::is_float(dtype); }
  int64_t numel() const;
  /// A value of the given dtype and sizes with zeroed storage of the right kind.
  static Value zeros(DType dtype, std::vector<int64_t> sizes);
};

/// Row-major element strides of sizes (size-1 and size-0 dims get the stride they would have with size 1).
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& sizes);

/// Strides that read a tensor of `in_sizes` (row-major) as if broadcast NumPy-style to `out_sizes`: leading missing
/// dims and size-1 dims get stride 0.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in_sizes, const std::vector<int64_t>& out_sizes);

/// Call fn(linear_index, offsets) for every multi-index of `sizes` in row-major order, where offsets[k] is the sum of
/// index[d] * strides[k][d]. 64-bit throughout; does nothing when a size is 0; calls once for rank 0.
template <class F>
void for_each_index(const std::vector<int64_t>& sizes, const std::vector<std::vector<int64_t>>& strides, F&& fn) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  if (n == 0) return;
  const size_t rank = sizes.size(), k = strides.size();
  std::vector<int64_t> off(k, 0), cur(k, 0);
  if (rank == 0) {
    fn(int64_t{0}, static_cast<const int64_t*>(cur.data()));
    return;
  }
  // The innermost axis runs in a tight loop; an odometer over the outer axes moves the base offsets.
  const int64_t inner = sizes[rank - 1];
  std::vector<int64_t> inner_stride(k), idx(rank - 1, 0);
  for (size_t j = 0; j < k; ++j) inner_stride[j] = strides[j][rank - 1];
  for (int64_t lin = 0; lin < n; lin += inner) {
    for (size_t j = 0; j < k; ++j) cur[j] = off[j];
    for (int64_t i = 0; i < inner; ++i) {
      fn(lin + i, static_cast<const int64_t*>(cur.data()));
      for (size_t j = 0; j < k; ++j) cur[j] += inner_stride[j];
    }
    for (size_t d = rank - 1; d-- > 0;) {
      ++idx[d];
      for (size_t j = 0; j < k; ++j) off[j] += strides[j][d];
      if (idx[d] < sizes[d]) break;
      for (size_t j = 0; j < k; ++j) off[j] -= strides[j][d] * sizes[d];
      idx[d] = 0;
    }
  }
}

/// What an evaluation routine needs to know about the node it evaluates.
struct NodeContext {
  const Graph& graph;
  const Node& node;
  const Bindings& bindings;
  /// The node's output sizes under the bindings.
  std::vector<int64_t> out_sizes;
  /// The f16/bf16 rounding policy of this run.
  PrecisionPolicy precision = PrecisionPolicy::EmulateCasts;
  /// The dtype a computed (non-cast, non-source) float result of dtype t is rounded to under the policy.
  DType round_dtype(DType t) const { return implicit_rounding_dtype(t, precision); }
  /// `%v = op(%a, %b)`, the prefix of every run-time error about this node.
  std::string describe() const;
  /// Throw IRError "`describe()`: what".
  [[noreturn]] void fail(const std::string& what) const;
};

/// Evaluate a source (constant, full, iota) or elementwise node (incl. where, clamp, cast).
Value eval_elementwise(const NodeContext& c, const std::vector<const Value*>& in);
/// Evaluate a layout node: reshape, permute, slice, concat, broadcast_to.
Value eval_layout(const NodeContext& c, const std::vector<const Value*>& in);
/// Evaluate a reduction node.
Value eval_reduce(const NodeContext& c, const std::vector<const Value*>& in);

}  // namespace autofuse::interp
