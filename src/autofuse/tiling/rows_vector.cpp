// Axis permutation for the vector-rows variant (see rows_vector.h).
#include "autofuse/tiling/rows_vector.h"

#include <string>

#include "autofuse/ir/graph.h"

namespace autofuse {

std::optional<std::vector<int>> rows_vector_permutation(const LoopNest& nest) {
  if (!nest.inner_reduction || nest.rank < 2) return std::nullopt;
  int k = -1;
  for (int a = nest.rank - 1; a >= 0 && k < 0; --a)
    if (!nest.is_reduce[static_cast<size_t>(a)] &&
        nest.domain[static_cast<size_t>(a)].as_const() != std::optional<int64_t>(1))
      k = a;
  if (k < 0) return std::nullopt;
  std::vector<int> perm;
  for (int a = 0; a < nest.rank; ++a)
    if (a != k) perm.push_back(a);
  perm.push_back(k);
  return perm;
}

LoopNest permute_loop_nest(const LoopNest& nest, const std::vector<int>& perm) {
  const size_t r = static_cast<size_t>(nest.rank);
  std::vector<int> inv(r, -1);
  if (perm.size() != r)
    throw IRError("permute_loop_nest: permutation of " + std::to_string(perm.size()) + " axes for a nest of rank " +
                  std::to_string(r));
  for (size_t i = 0; i < r; ++i) {
    const int old = perm[i];
    if (old < 0 || static_cast<size_t>(old) >= r || inv[static_cast<size_t>(old)] >= 0)
      throw IRError("permute_loop_nest: entry " + std::to_string(i) + " (" + std::to_string(old) +
                    ") is not a fresh axis of a rank-" + std::to_string(r) + " nest");
    inv[static_cast<size_t>(old)] = static_cast<int>(i);
  }
  if (nest.is_reduce[static_cast<size_t>(perm.back())])
    throw IRError("permute_loop_nest: the innermost axis " + std::to_string(perm.back()) + " is reduced");
  LoopNest p = nest;
  for (size_t i = 0; i < r; ++i) {
    const size_t old = static_cast<size_t>(perm[i]);
    p.domain[i] = nest.domain[old];
    p.is_reduce[i] = nest.is_reduce[old];
  }
  p.inner_reduction = false;
  for (size_t v = 0; v < nest.values.size(); ++v) {
    const ValuePlacement& src = nest.values[v];
    ValuePlacement& dst = p.values[v];
    for (size_t j = 0; j < src.axis_of_dim.size(); ++j)
      dst.axis_of_dim[j] = inv[static_cast<size_t>(src.axis_of_dim[j])];
    for (size_t i = 0; i < r && i < src.varies.size(); ++i) dst.varies[i] = src.varies[static_cast<size_t>(perm[i])];
  }
  return p;
}

std::vector<int64_t> permute_sizes(const std::vector<int64_t>& sizes, const std::vector<int>& perm) {
  std::vector<int64_t> out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = sizes[static_cast<size_t>(perm[i])];
  return out;
}

void permute_launch_domain(LaunchDomain& d, const std::vector<int>& perm) {
  d.sizes = permute_sizes(d.sizes, perm);
  for (auto& st : d.strides) st = permute_sizes(st, perm);
  for (auto& v : d.varies) {
    std::vector<bool> o(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) o[i] = v[static_cast<size_t>(perm[i])];
    v = std::move(o);
  }
}

}  // namespace autofuse
