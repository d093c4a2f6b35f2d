// Launch-time decisions for one kernel call: axis merging for the actual sizes and strides, and the Schedule
// (rows, vector block, cascade block, parallel grain). choose_schedule() is the seam the tiling model replaces.
#pragma once

#include <cstdint>
#include <vector>

#include "autofuse/schedule/loop_nest.h"

namespace autofuse {

/// Sizes and per-operand strides (elements) of the kernel domain for one call. strides[k][a] is operand k's stride
/// along domain axis a, 0 where the operand is statically broadcast. `pinned` lists extra pseudo-operands (iota
/// nodes: stride 1 along their axis) that take part in merging but are not passed to the kernel.
struct LaunchDomain {
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides;
  std::vector<std::vector<bool>> varies;  ///< static flags per operand (and pseudo-operand) and axis
};

/// Merge adjacent axes of one class (both kept or both reduced) wherever every operand agrees (same static
/// broadcast flags, and stride[a] == stride[a+1] * size[a+1], or a size of 1). Merged-away axes are left with size 1
/// and stride 0, so the rank (and the compiled source) does not change. Row-major order over the reduction axes is
/// preserved, so linear reduction indices (argmax) are unchanged.
void merge_axes(const LoopNest& nest, LaunchDomain& d);

/// The generated kernel's launch-flags bit for non-temporal whole-vector output stores (AF_LF_STREAM in
/// codegen/cpu/af_kernel.inc; the kernel's last argument, codegen/cpu/emit.h KernelFn).
constexpr int64_t kLaunchStreamStores = 1;
/// The launch-flags bit for prefetching the inputs of the row after the next one into L2 (AF_LF_FAR in af_kernel.inc;
/// codegen/cpu/emit_prefetch.cpp).
constexpr int64_t kLaunchPrefetchFar = 2;

/// How a call is split into rows and parallel tasks.
struct Schedule {
  int64_t rows = 0;    ///< iterations of the row loop (0: nothing to do)
  int64_t vblock = 0;  ///< vector-axis elements per row when that axis is kept (a multiple of the lane count)
  int64_t blk = 64;    ///< cascade summation block (inner iterations per partial sum)
  int64_t grain = 1;   ///< rows per parallel task at least
  /// Whole-vector output stores are non-temporal (the kernel's launch flag kLaunchStreamStores): set by the tiling
  /// function when the call's full outputs exceed the last-level cache (TilingFunction::decide).
  bool stream_stores = false;
  /// Multi-pass row loops prefetch the inputs of the row two ahead into L2 (kLaunchPrefetchFar): set by the tiling
  /// function when the call's full inputs exceed the last-level cache (TilingFunction::decide).
  bool prefetch_far = false;
  /// The kernel's launch-flags argument for this schedule (codegen/cpu/emit.h KernelFn).
  int64_t launch_flags() const {
    return (stream_stores ? kLaunchStreamStores : 0) | (prefetch_far ? kLaunchPrefetchFar : 0);
  }
};

/// Adjacent vectors that a reduction whose vector axis is kept (sum(x, 0)) reduces in one pass over the reduced axes
/// (codegen/cpu/emit_rows.cpp): 8 accumulators (512 bytes of f32 or 256 of bf16 per row of the walk with AVX-512).
/// 16 measured up to 1.3x faster on in-cache f32 [4096, 1024] but made rows of 256 columns: 5 rows for 1029
/// columns on 2 threads, where the cost model then picked the split reduction (other bits). The rows of such
/// kernels hold a multiple of this many vectors when the axis has them (choose_schedule).
inline constexpr int kColumnReduceVectors = 8;

/// The default schedule: rows of about 16K element-operations, tasks of about 64K; when the vector axis is kept and
/// some axis is reduced, vblock is a multiple of kColumnReduceVectors vectors (or the whole axis). Sizes are
/// the merged domain.
Schedule choose_schedule(const LoopNest& nest, const std::vector<int64_t>& sizes, int lanes);

/// The schedule of a variant with an operand read lane by lane along the kept vector axis (strided_vector_operand in
/// codegen/cpu/emit.h): rows are numbered vector-block-major, and vblock is capped at `max_vblock` elements (a
/// multiple of `lanes`) so that the vblock cache lines of the strided operand touched by one row stay in L1 while the
/// next rows (the next outer indices) use the rest of each line. 256 elements = 256 lines of 64 bytes = 16 KiB, a
/// third of a 48 KiB L1D. `s` is the decision for the contiguous variant; rows and grain are rescaled to the new
/// vblock (same total work per task). Sizes are the merged domain.
Schedule column_block_schedule(const LoopNest& nest, const std::vector<int64_t>& sizes, const Schedule& s, int lanes,
                               int64_t max_vblock = 256);

/// The tile axis of the transposed-tile loop (EmitOptions::tile_axis, codegen/cpu/emit_tiles.cpp) for a call, or -1.
/// An elementwise nest (no reduction axes) whose operands read lane by lane (`unit[k]` false for an operand varying
/// along the vector axis) are all inputs (k < nest.num_inputs) with stride 1 along one kept axis t (of size > 1) of
/// the merged domain `d`: that t, the innermost such axis. -1 when there is no such operand, some output is strided,
/// or lanes < 4. Every size of the stride class takes the same answer (a short axis runs partly empty tiles), so
/// one compiled variant serves them all.
int transpose_tile_axis(const LoopNest& nest, const LaunchDomain& d, const std::vector<bool>& unit, int lanes);

/// The schedule of the transposed-tile variant for tile axis t: `s` (the decision for the row loop) with a row
/// covering `height` indices along t (codegen/cpu/emit.h tile_height), so rows = s.rows / n_t * ceil(n_t / height)
/// and the grain (rows per task) divided by `height` (at least 1). Sizes are the merged domain.
Schedule tile_schedule(const std::vector<int64_t>& sizes, const Schedule& s, int height, int t);

}  // namespace autofuse
