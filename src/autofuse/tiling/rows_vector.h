// The vectorize-across-rows ("vector-rows") variant of inner reductions over short rows: the loop nest is permuted so
// that the innermost kept axis becomes the vectorized one and the reduction axes are walked one element at a time,
// each SIMD lane owning one row (one accumulator per lane, no horizontal reduction). The permuted nest is an ordinary
// outer-reduction nest, so the CPU emitter (codegen/cpu/emit_kernel.cpp, case "vector axis kept") generates it
// unchanged; for contiguous [rows, cols] inputs a lane's loads are strided by cols (gathered lane by lane), and for
// cols = 1 they are plain vector loads (the kernel is elementwise). Reductions that are broadcast back over the row
// (softmax) work as in any outer reduction: the final pass writes the row's elements lane by lane.
#pragma once

#include <optional>
#include <vector>

#include "autofuse/schedule/loop_nest.h"
#include "autofuse/schedule/schedule.h"

namespace autofuse {

/// Axis order of the vector-rows nest: perm[new axis] = old axis. The innermost kept axis whose size is not statically
/// 1 moves to the end; every other axis keeps its relative order (so a reduction's row-major linear index, used by
/// argmax, is unchanged). nullopt when the nest has no inner reduction or no such kept axis.
std::optional<std::vector<int>> rows_vector_permutation(const LoopNest& nest);

/// The nest with its axes reordered by `perm` (as rows_vector_permutation returns): domain, reduce flags, every
/// value's dim-to-axis map and varies flags; inner_reduction becomes false. Throws IRError when perm is not a
/// permutation of the nest's axes or leaves a reduced axis innermost.
LoopNest permute_loop_nest(const LoopNest& nest, const std::vector<int>& perm);

/// Reorder a launch domain's sizes, strides and varies flags (per operand) by `perm`, in place.
void permute_launch_domain(LaunchDomain& d, const std::vector<int>& perm);

/// Reorder a merged size vector by `perm`.
std::vector<int64_t> permute_sizes(const std::vector<int64_t>& sizes, const std::vector<int>& perm);

}  // namespace autofuse
