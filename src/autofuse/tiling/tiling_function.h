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
  int64_t splits = 1;   ///< Split: number of slices, ceil(extent / slice) (from the sizes only, never the threads)
  int64_t slice = 0;    ///< Split: elements of the sliced axis per slice (the last one shorter)
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
  /// lanes) when the vector axis is kept, Split slices of `slice` elements along the longest reduced axis, splits =
  /// ceil(extent / slice) of them, 2 <= splits <= kSplitLadder[0] (a rung of the ladder, at most split_slices(), the
  /// last slice shorter); VectorRows only for inner reductions of at most kVectorRowsMaxCols reduced elements per row
  /// and at least kVectorRowsMinRows rows (any number > 0 when forced), with lanes <= vblock (a multiple of lanes) and
  /// rows = choose_schedule(rows_vector_nest(), permuted sizes). Unless a kind is forced, whether the chosen kind is
  /// Split, VectorRows or one of the row schedules (Rows, NarrowRows: the same summation order) depends on the sizes
  /// only, never on the thread count, so results do not change with it (docs/precision.md point 3).
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
  /// Split slices the reduced axis into one of these counts of slices, the most that the axis and the one-thread
  /// budget below allow, whatever the thread count: 2, 3, 4, 6, 8, 12 and 16 threads take equal blocks of 48 slices
  /// (5 and 7 threads 1.04 and 1.02 times their share).
  static constexpr int64_t kSplitLadder[] = {48, 24, 16, 12, 8, 6, 4, 3, 2};
  /// Split must beat the other candidates by 5% at one of these thread counts, and cost at most 5% more at the others.
  static constexpr int kSplitReferenceThreads[] = {2, 16};
  /// The one-thread budget of a Split: its slices run one after the other there, and what the split adds (below) must
  /// stay within this fraction of kSplitVectorNs per vector iteration (and pass) of the row schedule, a lower bound of
  /// the call's time: f32 sums measured 0.43-0.65 ns per vector iteration on one thread (session 19: [100003, 3] and
  /// [1000, 300] sum(0), [3 / 7 / 16, 100003] and [1, 262144 / 4194304] sum(1), Zen 5).
  static constexpr double kSplitOneThreadBudget = 0.03;
  static constexpr double kSplitVectorNs = 0.4;
  /// What a split adds on one thread, measured there (same calls as above, 2-48 slices): about 0.5 us per call
  /// (scratch set-up, the combine), 0.5 ns per partial (each slice's kept outputs, stored and combined), and 40 ns
  /// per row of each slice (a kernel row's set-up and horizontal sum, and a new input stream: [7, 100003] sum(1) in
  /// 48 slices took 34 against 22 us).
  static constexpr double kSplitCallNs = 500;
  static constexpr double kSplitPartialNs = 0.5;
  static constexpr double kSplitSliceRowNs = 40;

  /// The slices of a Split of `sizes` (0: none): the first count of kSplitLadder that leaves slices of at least 4
  /// elements (4 vectors along the vector axis of an inner reduction) of the longest reduced axis and, `within_budget`,
  /// keeps what the split adds within the one-thread budget. 0 when the graph is not splittable(). A function of the
  /// sizes only.
  int64_t split_slices(const std::vector<int64_t>& sizes, bool within_budget = true) const;

 private:
  TilingDecision decide_uncached(const std::vector<int64_t>& sizes, const CostParams& p) const;
  /// Every candidate that applies to `sizes`, Rows first, with its estimate under `p`; Split with `splits` slices
  /// (none when splits < 2). None chosen.
  TilingDecision candidates(const std::vector<int64_t>& sizes, const CostParams& p, int64_t splits) const;
  /// What order_choice decides.
  struct OrderChoice {
    TilingKind kind = TilingKind::Rows;  ///< Split, VectorRows, or Rows for the row schedules (one summation order)
    int64_t splits = 0;                  ///< Split's slices (the chosen ones, else split_slices(); 0: no Split)
  };
  /// The summation order of a call: Split (with its slices), VectorRows or the row schedules. Decided from
  /// split_slices() and estimates at fixed thread counts (1 for VectorRows, kSplitReferenceThreads for Split), so
  /// from the sizes only; p gives the machine.
  OrderChoice order_choice(const std::vector<int64_t>& sizes, const CostParams& p) const;
  /// Elements per slice when axis `ax` of `sizes` is cut into at most `splits` slices: ceil(extent / splits), along
  /// the vector axis of an inner reduction rounded up to whole blocks of 4 vectors.
  int64_t split_slice_length(const std::vector<int64_t>& sizes, int ax, int64_t splits) const;
  /// The longest reduced axis (the one Split slices), -1 when none.
  int split_axis(const std::vector<int64_t>& sizes) const;
  /// Elements kept (the product of the kept axes' sizes).
  int64_t kept_elems(const std::vector<int64_t>& sizes) const;
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
