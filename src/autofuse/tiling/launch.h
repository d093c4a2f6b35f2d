// Running one kernel call under a tiling decision: the row schedules as one parallel_for over rows, the split
// reduction as one parallel_for over slices of the reduced axis (partials into scratch buffers) and a combine.
#pragma once

#include <cstdint>
#include <vector>

#include "autofuse/ir/graph.h"
#include "autofuse/schedule/loop_nest.h"
#include "autofuse/schedule/schedule.h"
#include "autofuse/tiling/tiling_function.h"

namespace autofuse {

/// The generated kernel's entry point (codegen/cpu/emit.h KernelFn): sizes, flat strides (operand-major, rank
/// entries each), data pointers, row range, vector block, cascade block, launch flags (Schedule::launch_flags).
using TiledKernelFn = void (*)(const int64_t*, const int64_t*, void* const*, int64_t, int64_t, int64_t, int64_t,
                               int64_t);

/// Run `fn` over the merged domain `d` (operands first, iota pseudo-operands after them are ignored) with operand
/// data pointers `data` (inputs then outputs, as nest.operands), under candidate `c` of
/// TilingFunction::decide(d.sizes). Split requires TilingFunction::splittable(); its partials are stored in the output
/// dtype and combined in double (sum; mean weighted by slice length; max/min with NaN propagating), then rounded to the
/// output dtype once more. Throws IRError when a Split candidate is given for a graph that cannot be split.
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

/// Run several row-schedule calls (the segments of a concat kernel) as one parallel_for over the concatenation of
/// their row ranges: call j's rows [0, rows_j) are indices [R_j, R_j + rows_j) of the combined space, R_j the sum of
/// the rows before it, and a chunk that spans calls runs each call's part of it with that call's own entry point and
/// schedule. One thread-pool hand-off for all of them instead of one each. The combined grain is the smallest of the
/// calls' grains (each call's grain is the rows worth one task of its own rows). Calls with no rows are skipped.
void launch_rows_together(const std::vector<RowLaunch>& calls);

}  // namespace autofuse
