// Kernel::Variant: one compiled stride class of a kernel (shared by kernel.cpp and kernel_outer.cpp).
#pragma once

#include <string>
#include <vector>

#include "autofuse/codegen/cpu/emit.h"
#include "autofuse/codegen/cpu/jit.h"
#include "autofuse/codegen/kernel.h"
#include "autofuse/schedule/schedule.h"
#include "autofuse/tiling/launch.h"
#include "autofuse/tiling/tiling_function.h"

namespace autofuse {

/// The loaded module of one variant, its entry point and its source.
struct Kernel::Variant {
  JitKernel jit;
  KernelFn fn = nullptr;
  std::string source;
};

/// Now in steady_clock ns, into the calling thread's recorded stage `field` when record_launch_stages is on.
void stamp_launch_stage(int64_t LaunchStages::*field);

/// One call of an ordinary kernel, prepared up to the launch (Kernel::prepare): the merged launch domain, operand data
/// pointers (inputs then outputs), the chosen candidate and the variant to run.
struct Kernel::Prepared {
  LaunchDomain domain;
  std::vector<void*> data;
  TilingCandidate candidate;
  bool rows_vector = false;  ///< the variant is the vector-rows one (its nest: tiling().rows_vector_nest())
  std::shared_ptr<const Variant> variant;
  /// The symbols' values the call was bound with (Kernel::bind: from the input sizes and the caller's `given`).
  Bindings bindings;
};

/// A call's launch kept for the next calls with the same operand layouts (kernel_launch_cache.cpp): what run() derived
/// from the operands' dtypes, sizes and strides (bindings, checks, merged domain, tiling decision, variant), so that a
/// call whose operands match `key` only fills in data pointers and launches.
struct Kernel::CachedLaunch {
  /// launch_cache_key() of the call it was made for.
  std::vector<int64_t> key;
  /// One row-schedule call (one per segment for a concat kernel), launched together (tiling/launch.h).
  struct Call {
    TiledKernelFn fn = nullptr;
    std::vector<int64_t> sizes, strides;  ///< merged sizes, flat strides (RowLaunch)
    Schedule schedule;
    /// Per operand of the call (its inputs, then its outputs): the kernel operand it points into (an index into
    /// inputs then outputs of run()) and the byte offset from that operand's data (a concat segment's slice).
    std::vector<int> src;
    std::vector<int64_t> byte_offset;
  };
  std::vector<Call> calls;
  /// A Split call (tiling/launch.h launch_tiled): its one Call gives the entry point and the operands, and it runs
  /// over this merged domain with this candidate (the Call's sizes, strides and schedule are unused).
  bool split = false;
  LaunchDomain domain;
  TilingCandidate candidate;
  /// The symbol values the call was bound with (a concat kernel's: those its launch evaluated, possibly none). A
  /// later call with `given` values replays the launch only when every given value of a kernel symbol is here and
  /// equal (Kernel::run_cached); any other call takes the uncached path, which checks the values against the sizes.
  Bindings bindings;
};

}  // namespace autofuse
