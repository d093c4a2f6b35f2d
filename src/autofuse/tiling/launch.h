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
/// entries each), data pointers, row range, vector block, cascade block.
using TiledKernelFn = void (*)(const int64_t*, const int64_t*, void* const*, int64_t, int64_t, int64_t, int64_t);

/// Run `fn` over the merged domain `d` (operands first, iota pseudo-operands after them are ignored) with operand
/// data pointers `data` (inputs then outputs, as nest.operands), under candidate `c` of
/// TilingFunction::decide(d.sizes). Split requires TilingFunction::splittable(); its partials are stored in the output
/// dtype and combined in double (sum; mean weighted by slice length; max/min with NaN propagating), then rounded to the
/// output dtype once more. Throws IRError when a Split candidate is given for a graph that cannot be split.
void launch_tiled(const Graph& g, const LoopNest& nest, TiledKernelFn fn, const LaunchDomain& d,
                  const std::vector<void*>& data, const TilingCandidate& c);

}  // namespace autofuse
