// The per-kernel tiling function: candidate enumeration, estimates, choice, compile-time folding, debug log.
#include "autofuse/tiling/tiling_function.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include "autofuse/runtime/thread_pool.h"
#include "autofuse/support/env.h"
#include "autofuse/tiling/machine.h"
#include "autofuse/tiling/rows_vector.h"

namespace autofuse {
namespace {

thread_local std::optional<TilingKind> g_forced;
thread_local std::optional<bool> g_forced_stream;

bool debug_enabled() {
  static const bool on = env_bool("AUTOFUSE_DEBUG", false);
  return on;
}

int64_t ceil_div(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

}  // namespace

const char* tiling_kind_name(TilingKind k) {
  switch (k) {
    case TilingKind::Rows:
      return "rows";
    case TilingKind::NarrowRows:
      return "narrow-rows";
    case TilingKind::Split:
      return "split";
    case TilingKind::VectorRows:
      return "vector-rows";
  }
  return "?";
}

std::string TilingDecision::describe() const {
  std::ostringstream o;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const TilingCandidate& c = candidates[i];
    o << (i ? "; " : "") << (i == chosen ? "*" : "") << tiling_kind_name(c.kind) << "(rows " << c.schedule.rows
      << ", vblock " << c.schedule.vblock << ", grain " << c.schedule.grain;
    if (c.kind == TilingKind::Split) o << ", axis " << c.split_axis << " x" << c.splits;
    o << ") ~" << static_cast<int64_t>(c.est_ns) << " ns";
  }
  if (folded) o << " [folded]";
  return o.str();
}

std::optional<TilingKind> force_tiling_kind(std::optional<TilingKind> k) {
  auto prev = g_forced;
  g_forced = k;
  return prev;
}

std::optional<TilingKind> forced_tiling_kind() { return g_forced; }

std::optional<bool> force_stream_stores(std::optional<bool> on) {
  auto prev = g_forced_stream;
  g_forced_stream = on;
  return prev;
}

std::optional<bool> forced_stream_stores() { return g_forced_stream; }

TilingFunction::TilingFunction(const Graph& g, const LoopNest& nest, int lanes) : nest_(&nest), lanes_(lanes) {
  // Per-element facts of the graph.
  in_bytes_ = 0;
  out_bytes_ = 0;
  kept_out_bytes_ = 0;
  ops_ = 0;
  transcendentals_ = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& nd = g.node(static_cast<ValueId>(i));
    const ValuePlacement& vp = nest.values[i];
    if (nd.op == OpKind::Input) {
      if (!vp.kept) {
        in_bytes_ += static_cast<double>(dtype_size(nd.dtype));
        full_inputs_ += 1;
      }
      continue;
    }
    if (vp.kept) continue;
    ops_ += 1;
    if (is_transcendental(nd.op)) transcendentals_ += 1;
  }
  for (ValueId o : g.outputs()) {
    const Node& nd = g.node(o);
    if (nest.values[static_cast<size_t>(o)].kept)
      kept_out_bytes_ += static_cast<double>(dtype_size(nd.dtype));
    else {
      out_bytes_ += static_cast<double>(dtype_size(nd.dtype));
      full_outputs_ += 1;
    }
  }
  ops_ = std::max(1.0, ops_);
  if (in_bytes_ <= 0) in_bytes_ = 1;
  // Passes per row, as the emitter counts them.
  passes_ = nest.num_stages;
  for (ValueId o : g.outputs())
    if (!nest.values[static_cast<size_t>(o)].kept)
      passes_ = std::max(passes_, nest.values[static_cast<size_t>(o)].stage + 1);
  passes_ = std::max(passes_, 1);
  // Split needs every output to be a float reduction whose partials combine by sum, weighted sum or min/max.
  splittable_ = !nest.reduce_axes().empty() && nest.num_stages == 1 && nest.iotas.empty() && !g.outputs().empty();
  for (ValueId o : g.outputs()) {
    const Node& nd = g.node(o);
    const bool ok_op = nd.op == OpKind::Sum || nd.op == OpKind::Mean || nd.op == OpKind::Amax || nd.op == OpKind::Amin;
    if (!ok_op || !is_float(nd.dtype) || !nest.values[static_cast<size_t>(o)].kept) splittable_ = false;
    // The slices' partials are stored in the output dtype: a float16 / bfloat16 sum or mean would be rounded per
    // slice and again after the combination (bf16 [3000, 300] sum(0) on 2 threads: 40 % of the columns off, by up
    // to 128 of the result's ulps where the halves cancel; review 17). Max / min partials are exact in any dtype.
    if ((nd.op == OpKind::Sum || nd.op == OpKind::Mean) && dtype_size(nd.dtype) < 4) splittable_ = false;
  }
  params_ = CostParams::from_machine(machine_info(), get_num_threads(), lanes);
  if (auto perm = rows_vector_permutation(nest)) {
    rv_perm_ = *perm;
    rv_nest_ = std::make_shared<const LoopNest>(permute_loop_nest(nest, rv_perm_));
  }
  // Compile-time folding: a static domain merged as contiguous operands would merge it.
  bool is_static = true;
  std::vector<int64_t> sizes;
  for (const Expr& e : nest.domain) {
    auto c = e.as_const();
    if (!c) {
      is_static = false;
      break;
    }
    sizes.push_back(*c);
  }
  if (is_static) {
    LaunchDomain d;
    d.sizes = sizes;
    auto add = [&](const std::vector<bool>& varies) {
      std::vector<int64_t> st(sizes.size(), 0);
      int64_t stride = 1;
      for (size_t a = sizes.size(); a-- > 0;)
        if (varies[a]) {
          st[a] = stride;
          stride *= sizes[a];
        }
      d.strides.push_back(st);
      d.varies.push_back(varies);
    };
    for (ValueId op : nest.operands) add(nest.values[static_cast<size_t>(op)].varies);
    for (ValueId it : nest.iotas) add(nest.values[static_cast<size_t>(it)].varies);
    merge_axes(nest, d);
    folded_sizes_ = d.sizes;
    folded_threads_ = params_.threads;
    folded_ = decide_uncached(folded_sizes_, params_);
    folded_->folded = true;
    if (debug_enabled())
      std::fprintf(stderr, "[autofuse tiling] %s: folded at compile time: %s\n", g.name().c_str(),
                   folded_->describe().c_str());
  }
}

WorkShape TilingFunction::work_shape(const std::vector<int64_t>& sizes, const Schedule& s) const {
  const LoopNest& n = *nest_;
  WorkShape w;
  int64_t rsize = 1;
  for (int a = 0; a < n.rank; ++a)
    if (n.is_reduce[static_cast<size_t>(a)]) rsize *= sizes[static_cast<size_t>(a)];
  w.rows = s.rows;
  w.reduce_extent = rsize;
  w.inner_reduction = n.inner_reduction;
  w.row_elems = n.inner_reduction ? rsize : rsize * s.vblock;
  w.passes = passes_;
  w.in_bytes = in_bytes_;
  w.out_bytes = out_bytes_;
  w.ops = ops_;
  w.transcendentals = transcendentals_;
  return w;
}

TilingDecision TilingFunction::decide(const std::vector<int64_t>& sizes) const {
  const int threads = get_num_threads();
  if (folded_ && threads == folded_threads_ && sizes == folded_sizes_ && !g_forced) return *folded_;
  std::optional<TilingDecision> memo;
  if (!g_forced && memo_) {
    std::lock_guard<std::mutex> lock(memo_->mu);
    if (memo_->decision && memo_->threads == threads && memo_->sizes == sizes) memo = memo_->decision;
  }
  TilingDecision d;
  if (memo) {
    d = std::move(*memo);
  } else {
    CostParams p = params_;
    p.threads = threads;
    d = decide_uncached(sizes, p);
    if (!g_forced && memo_) {
      std::lock_guard<std::mutex> lock(memo_->mu);
      memo_->sizes = sizes;
      memo_->threads = threads;
      memo_->decision = d;
    }
  }
  if (g_forced_stream)
    for (TilingCandidate& c : d.candidates) {
      c.schedule.stream_stores = *g_forced_stream && c.kind != TilingKind::Split;
      c.schedule.prefetch_far = *g_forced_stream;
    }
  if (debug_enabled()) {
    std::ostringstream o;
    for (size_t i = 0; i < sizes.size(); ++i) o << (i ? "," : "") << sizes[i];
    std::fprintf(stderr, "[autofuse tiling] sizes [%s], %d threads: %s\n", o.str().c_str(), threads,
                 d.describe().c_str());
  }
  return d;
}

TilingDecision TilingFunction::candidates(const std::vector<int64_t>& sizes, const CostParams& p,
                                          int64_t splits) const {
  const LoopNest& n = *nest_;
  TilingDecision d;
  d.candidates.reserve(4);  // one allocation per launch
  // Rows: the default schedule, parallel_for cutting it into at most `threads` chunks of >= grain rows.
  {
    TilingCandidate c;
    c.kind = TilingKind::Rows;
    c.schedule = choose_schedule(n, sizes, lanes_);
    const int64_t tasks =
        std::min<int64_t>(p.threads, std::max<int64_t>(1, c.schedule.rows / std::max<int64_t>(1, c.schedule.grain)));
    c.est_ns = estimate_rows_ns(work_shape(sizes, c.schedule), tasks, ceil_div(c.schedule.rows, tasks), p);
    // The default grain (64K element-passes per task, choose_schedule) suits memory-bound rows. Rows that compute
    // transcendental functions are compute bound and pay for a parallel launch far sooner (tanh GELU over
    // f32[32, 3072] stayed on one thread: 80 us, against eager's 15-25 us on 2 threads), so splitting them over
    // every thread is costed too; it must beat the default by the model's 5% noise floor.
    if (transcendentals_ > 0 && tasks < p.threads && c.schedule.rows > tasks) {
      const int64_t all = std::min<int64_t>(p.threads, c.schedule.rows);
      const int64_t per_task = ceil_div(c.schedule.rows, all);
      const double est = estimate_rows_ns(work_shape(sizes, c.schedule), all, per_task, p);
      if (est < 0.95 * c.est_ns) {
        c.schedule.grain = per_task;
        c.est_ns = est;
      }
    }
    d.candidates.push_back(c);
  }
  const Schedule base = d.candidates[0].schedule;
  if (base.rows <= 0) return d;
  // NarrowRows: when the vector axis is kept and the default blocks leave threads idle.
  if (!n.inner_reduction && base.rows < p.threads) {
    const int64_t nv = sizes[static_cast<size_t>(n.vec_axis())];
    TilingCandidate c;
    c.kind = TilingKind::NarrowRows;
    c.schedule = base;
    c.schedule.vblock = lanes_;
    c.schedule.rows = base.rows / ceil_div(nv, base.vblock) * ceil_div(nv, lanes_);
    c.schedule.grain = 1;
    if (c.schedule.rows > base.rows) {
      const int64_t tasks = std::min<int64_t>(p.threads, c.schedule.rows);
      c.est_ns = estimate_rows_ns(work_shape(sizes, c.schedule), tasks, ceil_div(c.schedule.rows, tasks), p);
      d.candidates.push_back(c);
    }
  }
  // Split: the longest reduce axis in `splits` slices (order_choice: from the sizes only, so that the partials and
  // their combination are the same at every thread count), which the threads take in blocks.
  if (splits >= 2) {
    const int ax = split_axis(sizes);
    const int64_t extent = sizes[static_cast<size_t>(ax)];
    TilingCandidate c;
    c.kind = TilingKind::Split;
    c.split_axis = ax;
    c.slice = split_slice_length(sizes, ax, splits);
    c.splits = ceil_div(extent, c.slice);
    std::vector<int64_t> slice = sizes;
    slice[static_cast<size_t>(ax)] = c.slice;
    c.schedule = choose_schedule(n, slice, lanes_);
    c.est_ns = estimate_split_ns(work_shape(sizes, base), c.splits, kept_elems(sizes), kept_out_bytes_, p);
    d.candidates.push_back(c);
  }
  // VectorRows: short inner-reduction rows, lanes across rows.
  if (rv_nest_) {
    int64_t rsize = 1, kept = 1;
    for (int a = 0; a < n.rank; ++a)
      (n.is_reduce[static_cast<size_t>(a)] ? rsize : kept) *= sizes[static_cast<size_t>(a)];
    if (rsize <= kVectorRowsMaxCols && (kept >= kVectorRowsMinRows || g_forced == TilingKind::VectorRows)) {
      TilingCandidate c;
      c.kind = TilingKind::VectorRows;
      c.schedule = choose_schedule(*rv_nest_, permute_sizes(sizes, rv_perm_), lanes_);
      if (c.schedule.rows > 0) {
        WorkShape w = work_shape(sizes, c.schedule);
        w.rows = c.schedule.rows;
        w.inner_reduction = false;
        w.row_elems = std::max<int64_t>(1, rsize) * c.schedule.vblock;
        // Contiguous rows of more than one element are gathered lane by lane (stride = the row length).
        if (rsize > 1) {
          w.lane_loads = full_inputs_;
          w.lane_stores = full_outputs_;
        }
        const int64_t tasks = std::min<int64_t>(p.threads, std::max<int64_t>(1, c.schedule.rows / c.schedule.grain));
        c.est_ns = estimate_rows_ns(w, tasks, ceil_div(c.schedule.rows, tasks), p);
        d.candidates.push_back(c);
      }
    }
  }
  return d;
}

int TilingFunction::split_axis(const std::vector<int64_t>& sizes) const {
  const LoopNest& n = *nest_;
  int ax = -1;
  for (int a = 0; a < n.rank; ++a)
    if (n.is_reduce[static_cast<size_t>(a)] &&
        (ax < 0 || sizes[static_cast<size_t>(a)] > sizes[static_cast<size_t>(ax)]))
      ax = a;
  return ax;
}

int64_t TilingFunction::split_slice_length(const std::vector<int64_t>& sizes, int ax, int64_t splits) const {
  const int64_t len = ceil_div(sizes[static_cast<size_t>(ax)], splits);
  // Along the vector axis of an inner reduction, whole blocks of 4 vectors, so that every slice starts where the
  // row's alignment does: [1, 4194304] f32 sum(1) on one thread took 1.10x the row schedule's time in 48 slices of
  // 87382 elements (every 64-byte load split across two lines), 1.01x in 16 (session 19).
  if (nest_->inner_reduction && ax == nest_->vec_axis()) return ceil_div(len, 4 * lanes_) * 4 * lanes_;
  return len;
}

int64_t TilingFunction::kept_elems(const std::vector<int64_t>& sizes) const {
  int64_t kept = 1;
  for (int a = 0; a < nest_->rank; ++a)
    if (!nest_->is_reduce[static_cast<size_t>(a)]) kept *= sizes[static_cast<size_t>(a)];
  return kept;
}

int64_t TilingFunction::split_slices(const std::vector<int64_t>& sizes, bool within_budget) const {
  if (!splittable_) return 0;
  const LoopNest& n = *nest_;
  const int ax = split_axis(sizes);
  if (ax < 0) return 0;
  const int64_t extent = sizes[static_cast<size_t>(ax)];
  // A slice of at least 4 elements, 4 vectors along the vector axis of an inner reduction.
  const int64_t min_slice = (n.inner_reduction && ax == n.vec_axis()) ? 4 * lanes_ : 4;
  // The one-thread budget: a lower bound of the call's time on one thread (its vector iterations).
  const Schedule base = choose_schedule(n, sizes, lanes_);
  if (base.rows <= 0) return 0;
  const WorkShape w = work_shape(sizes, base);
  const double iters = static_cast<double>(base.rows) * static_cast<double>(ceil_div(w.row_elems, lanes_)) * passes_;
  const double budget = kSplitOneThreadBudget * kSplitVectorNs * iters;
  if (within_budget && kSplitCallNs > budget) return 0;  // most calls: too small to split at all
  const double kept = static_cast<double>(kept_elems(sizes));
  for (int64_t s : kSplitLadder) {
    if (s > extent / min_slice) continue;
    if (!within_budget) return s;
    std::vector<int64_t> slice = sizes;
    slice[static_cast<size_t>(ax)] = split_slice_length(sizes, ax, s);
    const double slice_rows = static_cast<double>(choose_schedule(n, slice, lanes_).rows);
    const double cost =
        kSplitCallNs + static_cast<double>(s) * (kept * kSplitPartialNs + slice_rows * kSplitSliceRowNs);
    if (cost <= budget) return s;
  }
  return 0;
}

namespace {

/// The index of the first candidate of kind k in d, or -1.
int find_kind(const TilingDecision& d, TilingKind k) {
  for (size_t i = 0; i < d.candidates.size(); ++i)
    if (d.candidates[i].kind == k) return static_cast<int>(i);
  return -1;
}

/// The estimate of what runs in d's row order when the order class is `vrows` (VectorRows) or the row schedules
/// (the lower of Rows and NarrowRows).
double other_ns(const TilingDecision& d, bool vrows) {
  const int v = find_kind(d, TilingKind::VectorRows);
  if (vrows && v >= 0) return d.candidates[static_cast<size_t>(v)].est_ns;
  double best = d.candidates[0].est_ns;
  for (const TilingCandidate& c : d.candidates)
    if (c.kind == TilingKind::NarrowRows) best = std::min(best, c.est_ns);
  return best;
}

}  // namespace

TilingFunction::OrderChoice TilingFunction::order_choice(const std::vector<int64_t>& sizes, const CostParams& p) const {
  OrderChoice oc;
  oc.splits = split_slices(sizes, true);
  bool may_vrows = false;
  if (rv_nest_) {
    int64_t rsize = 1;
    for (int a = 0; a < nest_->rank; ++a)
      if (nest_->is_reduce[static_cast<size_t>(a)]) rsize *= sizes[static_cast<size_t>(a)];
    may_vrows = rsize <= kVectorRowsMaxCols && kept_elems(sizes) >= kVectorRowsMinRows;
  }
  if (oc.splits < 2 && !may_vrows) return oc;
  // VectorRows against the row schedule: the one with less thread time (both spread the same many rows), so the
  // estimates on one thread.
  bool vrows = false;
  if (may_vrows) {
    CostParams one = p;
    one.threads = 1;
    const TilingDecision d1 = candidates(sizes, one, 0);
    const int v1 = find_kind(d1, TilingKind::VectorRows);
    vrows = v1 >= 0 && d1.candidates[static_cast<size_t>(v1)].est_ns < 0.95 * d1.candidates[0].est_ns;
    oc.kind = vrows ? TilingKind::VectorRows : TilingKind::Rows;
  }
  if (oc.splits < 2) return oc;
  // Split: the most slices, from split_slices() down the ladder, that beat the alternative by the model's 5% noise
  // floor at one of kSplitReferenceThreads and cost at most 5% more at the others (a count that the threads do not
  // divide leaves some idle in the last wave: 24 slices lose to one row at 16 threads where 16 win).
  const int ax = split_axis(sizes);
  const int64_t extent = sizes[static_cast<size_t>(ax)], kept = kept_elems(sizes);
  std::vector<std::pair<CostParams, double>> refs;
  WorkShape w;
  for (int t : kSplitReferenceThreads) {
    CostParams q = p;
    q.threads = t;
    const TilingDecision dq = candidates(sizes, q, 0);
    if (dq.candidates[0].schedule.rows <= 0) return oc;
    w = work_shape(sizes, dq.candidates[0].schedule);
    refs.emplace_back(q, other_ns(dq, vrows));
  }
  for (int64_t rung : kSplitLadder) {
    if (rung > oc.splits) continue;
    const int64_t parts = ceil_div(extent, split_slice_length(sizes, ax, rung));
    bool wins = false, loses = false;
    for (const auto& [q, other] : refs) {
      const double split = estimate_split_ns(w, parts, kept, kept_out_bytes_, q);
      wins = wins || split < 0.95 * other;
      loses = loses || split > 1.05 * other;
    }
    if (wins && !loses) {
      oc.kind = TilingKind::Split;
      oc.splits = rung;
      return oc;
    }
  }
  return oc;
}

TilingDecision TilingFunction::decide_uncached(const std::vector<int64_t>& sizes, const CostParams& p) const {
  const OrderChoice oc = order_choice(sizes, p);
  // A forced Split (tests) slices as much as the axis allows when the budget allows no slices.
  const int64_t splits = oc.splits < 2 && g_forced == TilingKind::Split ? split_slices(sizes, false) : oc.splits;
  TilingDecision d = candidates(sizes, p, splits);
  if (d.candidates[0].schedule.rows <= 0) return d;
  // Streaming (non-temporal) output stores when the call's full outputs exceed the last-level cache: their lines
  // would be evicted before any later read anyway, and the stores then skip the read-for-ownership (a third of an
  // elementwise copy's DRAM traffic). Split writes small partials, read back at once: never streamed.
  double elems = 1;
  for (int64_t sz : sizes) elems *= static_cast<double>(sz);
  const bool stream = out_bytes_ * elems > static_cast<double>(p.l3_bytes);
  for (TilingCandidate& c : d.candidates) c.schedule.stream_stores = stream && c.kind != TilingKind::Split;
  // Prefetching two rows ahead into L2 when the call's full inputs exceed the last-level cache (emit_prefetch.cpp):
  // in cache the extra prefetch per vector only costs (bf16 layer_norm 0.114 -> 0.129 ns per element, one thread).
  const bool far = in_bytes_ * elems > static_cast<double>(p.l3_bytes);
  for (TilingCandidate& c : d.candidates) c.schedule.prefetch_far = far;
  // Choice. Split and VectorRows sum in other orders than the row schedules: whether one of them runs, and Split's
  // slices, come from the sizes alone (order_choice), so that every thread count gives the same bits. Rows and
  // NarrowRows sum every output in the same order: between them the lower estimate at this thread count wins,
  // NarrowRows having to beat Rows by 5% (the model's noise floor).
  if (g_forced) {
    const int f = find_kind(d, *g_forced);
    if (f >= 0) {
      d.chosen = static_cast<size_t>(f);
      return d;
    }
  }
  if (oc.kind != TilingKind::Rows) {
    const int f = find_kind(d, oc.kind);
    if (f >= 0) {
      d.chosen = static_cast<size_t>(f);
      return d;
    }
  }
  const int nr = find_kind(d, TilingKind::NarrowRows);
  if (nr >= 0 && d.candidates[static_cast<size_t>(nr)].est_ns < 0.95 * d.candidates[0].est_ns)
    d.chosen = static_cast<size_t>(nr);
  return d;
}

}  // namespace autofuse
