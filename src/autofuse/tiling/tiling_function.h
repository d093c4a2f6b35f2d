// The tiling function of one kernel: from the merged launch sizes of a call, the candidate tilings and the chosen one
// (cost_model.h). Built once per kernel; the per-graph facts (passes, bytes and operations per element, whether the
// reduction can be split) are folded then, and for static shapes the decision itself, so a launch only evaluates a
// few closed-form estimates (measured well under 1 us; `autofuse tiling-sweep` prints the figure).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "autofuse/ir/graph.h"
#include "autofuse/schedule/loop_nest.h"
#include "autofuse/schedule/schedule.h"
#include "autofuse/tiling/cost_model.h"

namespace autofuse {

/// The kinds of tiling a kernel call can use.
enum class TilingKind {
  Rows,        ///< the default row schedule: rows (kept index x vector block) split evenly over the threads
  NarrowRows,  ///< vector-axis-kept kernels: one vector per row, so few kept outer indices still fill the threads
  Split,       ///< two-phase split reduction: each thread reduces a slice of the reduced axis, then partials combine
  VectorRows,  ///< inner reductions of short rows: SIMD lanes across rows (tiling/rows_vector.h; its own variant)
};

/// "rows", "narrow-rows", "split", "vector-rows".
const char* tiling_kind_name(TilingKind k);

/// One candidate for one call, with its estimate.
struct TilingCandidate {
  TilingKind kind = TilingKind::Rows;
  Schedule schedule;    ///< rows / vblock / blk / grain of one kernel call (of one slice for Split; of the
                        ///< permuted nest, rows_vector_nest(), for VectorRows)
  int split_axis = -1;  ///< Split: the merged-domain reduce axis that is sliced
  int64_t splits = 1;   ///< Split: number of slices (<= threads)
  double est_ns = 0;    ///< cost_model estimate
};

/// A launch decision: the chosen candidate and all that were considered (chosen is an index into candidates).
struct TilingDecision {
  std::vector<TilingCandidate> candidates;
  size_t chosen = 0;
  bool folded = false;  ///< taken from the compile-time decision (static shapes)
  const TilingCandidate& pick() const { return candidates[chosen]; }
  std::string describe() const;  ///< one line: every candidate with its estimate, the chosen one marked
};

/// Forces a candidate kind on the calling thread (tests and the benchmark): decisions pick it when it applies,
/// else fall back to the cost model's choice. nullopt restores the cost model. Returns the previous setting.
std::optional<TilingKind> force_tiling_kind(std::optional<TilingKind> k);

/// The calling thread's forced candidate kind (force_tiling_kind), nullopt when the cost model decides.
std::optional<TilingKind> forced_tiling_kind();

/// Forces the launch flags of DRAM-sized calls, Schedule::stream_stores and Schedule::prefetch_far, on (true) or off
/// (false) for the calling thread's decisions (tests: the non-temporal store and far prefetch paths on small
/// tensors); nullopt restores the rules (full outputs, resp. full inputs, larger than the last-level cache). Split
/// candidates never stream. Returns the previous setting.
std::optional<bool> force_stream_stores(std::optional<bool> on);

/// The calling thread's forced streaming setting (force_stream_stores), nullopt when the rule decides.
std::optional<bool> forced_stream_stores();

/// The per-kernel tiling function.
class TilingFunction {
 public:
  TilingFunction() = default;
  /// Fold the graph's facts; `lanes` is the generated code's f32 lane count. Uses machine_info() and
  /// get_num_threads() (read at every decide(), since the thread count can change between calls).
  TilingFunction(const Graph& g, const LoopNest& nest, int lanes);

  /// Candidates and choice for the merged domain sizes of one call (schedule.h merge_axes). Constraints every
  /// decision satisfies: schedule.rows = the row count of the sizes, 1 <= grain, lanes <= vblock (a multiple of
  /// lanes) when the vector axis is kept, 1 <= splits <= threads and splits <= the sliced axis' extent; VectorRows
  /// only for inner reductions of at most kVectorRowsMaxCols reduced elements per row and at least
  /// kVectorRowsMinRows rows (any number > 0 when forced), with lanes <= vblock (a
  /// multiple of lanes) and rows = choose_schedule(rows_vector_nest(), permuted sizes).
  TilingDecision decide(const std::vector<int64_t>& sizes) const;

  /// Whether the graph allows the Split candidate (every output a float sum/mean/amax/amin of the only reduction
  /// stage, no iota).
  bool splittable() const { return splittable_; }
  const CostParams& params() const { return params_; }
  /// The vector-rows axis order (rows_vector.h) and permuted nest; null when the kernel has no such variant.
  const std::vector<int>* rows_vector_perm() const { return rv_nest_ ? &rv_perm_ : nullptr; }
  const LoopNest* rows_vector_nest() const { return rv_nest_.get(); }

  /// VectorRows is a candidate up to this many reduced elements per row (longer rows reduce along the row far
  /// better: a lane-by-lane gather per element against one vector load per AF_W elements).
  static constexpr int64_t kVectorRowsMaxCols = 256;
  /// ... and from this many rows (kept indices) on, unless forced: below it a call takes microseconds either way, and
  /// its first use would compile another variant (about a second) for nothing.
  static constexpr int64_t kVectorRowsMinRows = 1024;

 private:
  TilingDecision decide_uncached(const std::vector<int64_t>& sizes, const CostParams& p) const;
  WorkShape work_shape(const std::vector<int64_t>& sizes, const Schedule& s) const;

  const LoopNest* nest_ = nullptr;  // owned by the Kernel that owns this function
  int lanes_ = 16;
  bool splittable_ = false;
  int passes_ = 1;
  double in_bytes_ = 4, out_bytes_ = 0, ops_ = 1, transcendentals_ = 0, kept_out_bytes_ = 4;
  double full_inputs_ = 0, full_outputs_ = 0;  // operands varying along the reduction (strided under VectorRows)
  CostParams params_;
  std::vector<int> rv_perm_;
  std::shared_ptr<const LoopNest> rv_nest_;  // shared: TilingFunction is copied into its Kernel
  std::vector<int64_t> folded_sizes_;        // the static domain (empty when dynamic)
  std::optional<TilingDecision> folded_;
  int folded_threads_ = 0;
  /// The last decision made for sizes other than the folded ones (a static kernel fed strided views merges its
  /// domain differently from the contiguous fold, so without this every launch re-ran the cost model: about 1.5 us).
  /// Shared by copies, which decide alike; guarded by its mutex (kernels may launch from several threads).
  struct Memo {
    std::mutex mu;
    std::vector<int64_t> sizes;
    int threads = 0;
    std::optional<TilingDecision> decision;
  };
  std::shared_ptr<Memo> memo_ = std::make_shared<Memo>();
};

}  // namespace autofuse
