// Running one kernel call under a tiling decision: the row schedules as one parallel_for over rows, the split
// reduction as one parallel_for over slices of the reduced axis (partials into scratch buffers) and a combine.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "autofuse/ir/graph.h"
#include "autofuse/schedule/loop_nest.h"
#include "autofuse/schedule/schedule.h"
#include "autofuse/tiling/tiling_function.h"

namespace autofuse {

/// The generated kernel's entry point (codegen/cpu/emit.h KernelFn): sizes, flat strides (operand-major, rank
/// entries each), data pointers, row range, vector block, cascade block, launch flags (Schedule::launch_flags); returns
/// 0, or kKernelStatusNoMemory when its row stash could not be allocated (check_kernel_status).
using TiledKernelFn = int64_t (*)(const int64_t*, const int64_t*, void* const*, int64_t, int64_t, int64_t, int64_t,
                                  int64_t);

/// A kernel's status when the heap block of its row stash could not be allocated (af_kernel.inc AF_STATUS_NO_MEMORY).
inline constexpr int64_t kKernelStatusNoMemory = 1;

/// The first nonzero status any call of a launch returned (set by the calls, possibly from several threads).
using KernelStatus = std::atomic<int64_t>;

/// Records a call's status `rc` in `status` (the first nonzero one wins).
inline void note_kernel_status(KernelStatus& status, int64_t rc) {
  int64_t zero = 0;
  if (rc != 0) status.compare_exchange_strong(zero, rc);
}

/// After a launch: throws std::bad_alloc when a call could not allocate its row stash (kKernelStatusNoMemory; that
/// call wrote none of its rows), std::runtime_error for any other nonzero status.
void check_kernel_status(const KernelStatus& status);

/// Run `fn` over the merged domain `d` (operands first, iota pseudo-operands after them are ignored) with operand
/// data pointers `data` (inputs then outputs, as nest.operands), under candidate `c` of
/// TilingFunction::decide(d.sizes). Split requires TilingFunction::splittable() (never for a float16 / bfloat16 sum or
/// mean, whose partials would round twice): slices of c.slice elements of axis c.split_axis (the last one shorter;
/// c.splits of them), run by parallel_for in blocks; their partials are stored in the output dtype and combined in
/// double in slice order (sum; mean weighted by slice length; max/min with NaN propagating), then rounded to the
/// output dtype once more, so the result does not depend on the thread count (only which thread runs which slices
/// does). Scratch buffers are the calling thread's, reused from call to call. Throws IRError when a Split candidate
/// is given for a graph that cannot be split.
void launch_tiled(const Graph& g, const LoopNest& nest, TiledKernelFn fn, const LaunchDomain& d,
                  const std::vector<void*>& data, const TilingCandidate& c);

/// One row-schedule call of a kernel (a Rows, NarrowRows or VectorRows candidate), ready to run: entry point, merged
/// sizes, flat strides (operand-major, rank entries each), data pointers and schedule. The pointers are borrowed.
struct RowLaunch {
  TiledKernelFn fn = nullptr;
  const int64_t* sizes = nullptr;
  const int64_t* strides = nullptr;
  void* const* data = nullptr;
  Schedule schedule;
};

/// The flat strides (operand-major, d.sizes.size() entries per operand) of the first `nops` operands of d.
std::vector<int64_t> flat_launch_strides(const LaunchDomain& d, size_t nops);

/// Elements per call that launch_rows_together runs before moving to the next call (its interleaving block: 16 rows
/// of a 64-wide rotary segment, 2-4 KiB per operand; 8-16 rows measured best of 4-32 on Zen 5, docs/codegen.md
/// session 17).
constexpr int64_t kInterleaveElems = 1024;

/// Run several row-schedule calls (the segments of a concat kernel) as one parallel_for. One call runs as
/// launch_tiled would: parallel_for over its rows with its grain. Several calls share the index space [0, M), M the
/// most rows of a call: index b starts row floor(rows_j * b / M) of call j, so every row of every call runs exactly
/// once and an index range covers the same fraction of each call's rows (calls of equal rows: the same rows). A
/// task walks its range in blocks of max(1, kInterleaveElems / max vblock) indices and runs each call's rows of a
/// block, in call order, before the next block, so the segments of one output row run close together on one thread
/// (their shared inputs still in L1) rather than on different threads. Tasks hold at least the smallest grain of
/// the calls in rows of all calls together. Calls with no rows are skipped. One thread-pool hand-off for all calls.
void launch_rows_together(const std::vector<RowLaunch>& calls);

}  // namespace autofuse
