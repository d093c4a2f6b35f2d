// Kernels with outer (cross-row) reductions (schedule/outer_reduce.h, codegen/kernel_outer.cpp) against the reference
// interpreter: layer-norm backward with weight / bias gradients, cross-entropy's batch mean, two reductions of one
// tensor over different axes, kept statistics reduced across rows (amax / amin / integer counts), a 3-d domain, and
// an epilogue reading a 0-d input; f32 / f64 / bf16; rows 0, 1, fewer than the threads, many; random input and output
// layouts (run_case: permuted, gapped, expanded). Results must not depend on the thread count (bit-identical).
// Random cases print their seed; AUTOFUSE_OUTER_SEED=N replays one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "autofuse/runtime/runtime.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using namespace kernel_testing;

// Layer-norm backward, output_mask all True (aten.native_layer_norm_backward's decomposition).
const char* kLayerNormBackward = R"(
graph ln_backward(%grad_out: DT[s0, s1], %x: DT[s0, s1], %mean: DT[s0, 1], %rstd: DT[s0, 1], %weight: DT[s1]) {
  %n = constant() {value=64.0, dtype=DT}
  %centered = sub(%x, %mean)
  %x_hat = mul(%centered, %rstd)
  %grad_x_hat = mul(%grad_out, %weight)
  %a = mul(%grad_x_hat, %n)
  %b = sum(%grad_x_hat) {axes=[1], keepdim=true}
  %c1 = mul(%grad_x_hat, %x_hat)
  %c2 = sum(%c1) {axes=[1], keepdim=true}
  %c3 = mul(%x_hat, %c2)
  %ab = sub(%a, %b)
  %inner = sub(%ab, %c3)
  %rstd_n = div(%rstd, %n)
  %d_input = mul(%rstd_n, %inner)
  %go_xhat = mul(%grad_out, %x_hat)
  %d_weight = sum(%go_xhat) {axes=[0], keepdim=false}
  %d_bias = sum(%grad_out) {axes=[0], keepdim=false}
  return %d_input, %d_weight, %d_bias
})";

// Cross-entropy with reduction='mean' (log_softmax, one-hot pick, ignore_index, sum / count).
const char* kCrossEntropyMean = R"(
graph ce_mean(%logits: DT[s0, s1], %target: i64[s0, 1]) {
  %x_max = amax(%logits) {axes=[1], keepdim=true}
  %shifted = sub(%logits, %x_max)
  %e = exp(%shifted)
  %s = sum(%e) {axes=[1], keepdim=true}
  %lse = log(%s)
  %logp = sub(%shifted, %lse)
  %classes = iota() {length=s1, start=0, step=1, dtype=i64}
  %hit = eq(%classes, %target)
  %zero = constant() {value=0.0, dtype=DT}
  %picked = where(%hit, %logp, %zero)
  %target_logp = sum(%picked) {axes=[1], keepdim=true}
  %nll = neg(%target_logp)
  %ignore_index = constant() {value=-100, dtype=i64}
  %valid = ne(%target, %ignore_index)
  %loss = where(%valid, %nll, %zero)
  %count = sum(%valid) {axes=[], keepdim=false}
  %total_weight = cast(%count) {dtype=DT}
  %total = sum(%loss) {axes=[], keepdim=false}
  %mean_loss = div(%total, %total_weight)
  return %mean_loss, %loss
})";

// Two reductions of one tensor over different axes, and amax / mean across rows of full values.
const char* kTwoAxes = R"(
graph two_axes(%x: DT[s0, s1]) {
  %rows = sum(%x) {axes=[1], keepdim=false}
  %cols = sum(%x) {axes=[0], keepdim=true}
  %two = constant() {value=2.0, dtype=DT}
  %y = mul(%x, %two)
  %col_max = amax(%y) {axes=[0], keepdim=false}
  %col_mean = mean(%x) {axes=[0], keepdim=false}
  return %rows, %cols, %col_max, %col_mean
})";

// Per-row statistics reduced across rows: scalars (amax / amin / mean of kept values), an integer count.
const char* kKeptStats = R"(
graph kept_stats(%x: DT[s0, s1], %scale: DT[]) {
  %m = mean(%x) {axes=[1], keepdim=true}
  %hi = amax(%m) {axes=[], keepdim=false}
  %lo = amin(%m) {axes=[0, 1], keepdim=true}
  %avg = mean(%m) {axes=[], keepdim=false}
  %scaled = mul(%avg, %scale)
  %zero = constant() {value=0.0, dtype=DT}
  %pos = gt(%m, %zero)
  %npos = sum(%pos) {axes=[], keepdim=false}
  %mx = amax(%x) {axes=[1], keepdim=false}
  return %hi, %lo, %scaled, %npos, %mx
})";

// A 3-d domain: per-row (axis 2) centring, sums over both row axes (a [s2] vector and a scalar).
const char* kThreeD = R"(
graph three_d(%x: DT[s0, s1, s2]) {
  %rs = mean(%x) {axes=[2], keepdim=true}
  %c = sub(%x, %rs)
  %sq = mul(%c, %c)
  %col = sum(%sq) {axes=[0, 1], keepdim=false}
  %tot = sum(%rs) {axes=[], keepdim=false}
  return %c, %col, %tot
})";

// Integer rows: row sums of an i32 tensor, their total across rows, and a count of positive elements per column.
const char* kIntegers = R"(
graph ints(%x: i32[s0, s1]) {
  %rs = sum(%x) {axes=[1], keepdim=true}
  %tot = sum(%rs) {axes=[], keepdim=false}
  %zero = constant() {value=0, dtype=i32}
  %pos = gt(%x, %zero)
  %cnt = sum(%pos) {axes=[0], keepdim=false}
  %big = amax(%x) {axes=[0], keepdim=false}
  return %rs, %tot, %cnt, %big
})";

struct Case {
  const char* name;
  const char* text;
  std::vector<std::string> dtypes;
  int rank;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"ln_backward", kLayerNormBackward, {"f32", "f64", "bf16"}, 2},
      {"ce_mean", kCrossEntropyMean, {"f32", "f64", "bf16"}, 2},
      {"two_axes", kTwoAxes, {"f32", "f64", "bf16"}, 2},
      {"kept_stats", kKeptStats, {"f32", "f64"}, 2},
      {"three_d", kThreeD, {"f32", "bf16"}, 3},
      {"ints", kIntegers, {"i32"}, 2},
  };
  return c;
}

Graph parse_case(const Case& c, const std::string& dt) { return parse_graph(with_dtype(c.text, dt), c.name); }

TEST(KernelOuter, GraphsAreOneKernelWithCrossRowReductions) {
  for (const Case& c : cases())
    for (const std::string& dt : c.dtypes) {
      SCOPED_TRACE(std::string(c.name) + " " + dt);
      Graph g = parse_case(c, dt);
      // Not an ordinary loop nest (two reduction levels / axis sets), but one kernel.
      EXPECT_TRUE(loop_nest_unsupported_reason(g).has_value());
      EXPECT_EQ(kernel_unsupported_reason(g), std::nullopt);
      auto k = Kernel::compile(g);
      ASSERT_NE(k->outer_plan(), nullptr);
      EXPECT_FALSE(k->outer_plan()->reductions.empty());
      EXPECT_NE(k->source().find("af_oacc_"), std::string::npos);
    }
}

TEST(KernelOuter, LayerNormBackwardPlan) {
  Graph g = parse_case(cases()[0], "f32");
  auto plan = plan_outer_reductions(g);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->reduce_axes, (std::vector<int>{1}));
  EXPECT_EQ(plan->kept_axes, (std::vector<int>{0}));
  ASSERT_EQ(plan->reductions.size(), 2u);  // d_weight and d_bias
  for (const OuterReduction& r : plan->reductions) {
    EXPECT_TRUE(r.full);
    EXPECT_FALSE(r.integer);
  }
  ASSERT_EQ(plan->output_sources.size(), 3u);
  EXPECT_EQ(plan->output_sources[0].kind, OuterOutputSource::Main);
  EXPECT_EQ(plan->output_sources[1].kind, OuterOutputSource::Reduction);
  EXPECT_EQ(plan->output_sources[2].kind, OuterOutputSource::Reduction);
}

TEST(KernelOuter, CrossEntropyPlanHasAnEpilogue) {
  Graph g = parse_case(cases()[1], "f32");
  auto plan = plan_outer_reductions(g);
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->reductions.size(), 2u);  // the count and the total, both one number per row
  for (const OuterReduction& r : plan->reductions) EXPECT_FALSE(r.full);
  EXPECT_EQ(plan->output_sources[0].kind, OuterOutputSource::Epilogue);  // the division
  EXPECT_EQ(plan->output_sources[1].kind, OuterOutputSource::Main);      // the per-row losses
}

TEST(KernelOuter, RefusalsNameTheRule) {
  // Column sums fed back into per-element values: not an epilogue.
  Graph back = parse_graph(R"(
graph back(%x: f32[s0, s1]) {
  %rs = sum(%x) {axes=[1], keepdim=true}
  %c = sub(%x, %rs)
  %cs = sum(%c) {axes=[0], keepdim=true}
  %y = sub(%c, %cs)
  return %y
})");
  auto why = kernel_unsupported_reason(back);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("cross-row"), std::string::npos) << *why;
  EXPECT_NE(why->find("%y"), std::string::npos) << *why;
  // A reduction over only some of the row axes.
  Graph part = parse_graph(R"(
graph part(%x: f32[s0, s1, s2]) {
  %rs = sum(%x) {axes=[2], keepdim=true}
  %p = sum(%rs) {axes=[1], keepdim=true}
  return %p
})");
  why = kernel_unsupported_reason(part);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("does not reduce row domain axis 0"), std::string::npos) << *why;
  // Row reductions along a kept innermost axis cannot carry cross-row ones.
  Graph cols = parse_graph(R"(
graph cols(%x: f32[s0, s1]) {
  %cs = sum(%x) {axes=[0], keepdim=true}
  %c = sub(%x, %cs)
  %t = sum(%c) {axes=[], keepdim=false}
  return %t
})");
  why = kernel_unsupported_reason(cols);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("innermost"), std::string::npos) << *why;
  EXPECT_THROW(Kernel::compile(cols), IRError);
}

/// Sizes for a case: rows 0, 1, fewer than the threads, a chunk's worth, many; row lengths 1, odd, a vector, long.
Bindings pick_sizes(int rank, std::mt19937_64& rng) {
  static const int64_t rows[] = {0, 1, 2, 3, 5, 64, 301, 2000};
  static const int64_t cols[] = {1, 7, 16, 33, 200, 768};
  auto pick = [&](const auto& arr) { return arr[rng() % (sizeof(arr) / sizeof(arr[0]))]; };
  Bindings b{{"s0", pick(rows)}, {"s1", pick(cols)}};
  if (rank == 3) {
    b["s1"] = 1 + static_cast<int64_t>(rng() % 9);
    b["s2"] = pick(cols);
  }
  // Bound the interpreter's work (it evaluates every element of every node).
  if (b["s0"] * b["s1"] * (rank == 3 ? b["s2"] : 1) > 200000) b[rank == 3 ? "s2" : "s1"] = 33;
  return b;
}

TEST(KernelOuter, RandomSizesAndLayoutsMatchTheInterpreter) {
  uint64_t base = 4242;
  int per_case = 6;
  if (const char* s = std::getenv("AUTOFUSE_OUTER_SEED")) {
    base = std::strtoull(s, nullptr, 10);
    per_case = 1;
  }
  int checked = 0;
  for (const Case& c : cases())
    for (const std::string& dt : c.dtypes) {
      RandomGraph rg{parse_case(c, dt), {}, {}};
      rg.exact.assign(rg.graph.outputs().size(), false);
      for (int i = 0; i < per_case; ++i) {
        const uint64_t seed = base + static_cast<uint64_t>(checked++);
        SCOPED_TRACE(std::string(c.name) + " " + dt + " seed " + std::to_string(seed) +
                     " (replay: AUTOFUSE_OUTER_SEED=" + std::to_string(seed) + ")");
        std::mt19937_64 rng(seed);
        Bindings b = pick_sizes(c.rank, rng);
        EXPECT_EQ(run_case(rg, b, rng), "");
      }
    }
  EXPECT_GE(checked, 14 * per_case);  // every case and dtype ran
}

/// Inputs of the cross-entropy case with targets in range, and some ignored rows.
std::vector<HostTensor> ce_inputs(DType dt, int64_t rows, int64_t classes, std::mt19937_64& rng) {
  HostTensor logits = make_tensor(dt, {rows, classes}, Layout::Contiguous, rng);
  fill_random(logits, rng, false);
  HostTensor target = HostTensor::empty(DType::Int64, {rows, 1});
  for (int64_t i = 0; i < rows; ++i)
    target.set_int({i, 0}, rng() % 5 == 0 ? -100 : static_cast<int64_t>(rng() % static_cast<uint64_t>(classes)));
  return {logits, target};
}

TEST(KernelOuter, CrossEntropyMatchesADirectComputation) {
  // Independent of the interpreter: the mean of -log_softmax at the target over non-ignored rows, in double.
  auto k = Kernel::compile(parse_case(cases()[1], "f32"));
  std::mt19937_64 rng(7);
  for (auto [rows, classes] : {std::pair<int64_t, int64_t>{1, 10}, {3, 1000}, {257, 33}, {4096, 50}}) {
    SCOPED_TRACE("rows " + std::to_string(rows) + " classes " + std::to_string(classes));
    auto in = ce_inputs(DType::Float32, rows, classes, rng);
    double total = 0;
    int64_t count = 0;
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t t = in[1].get_int({i, 0});
      if (t == -100) continue;
      double mx = -INFINITY, s = 0;
      for (int64_t j = 0; j < classes; ++j) mx = std::max(mx, in[0].get_double({i, j}));
      for (int64_t j = 0; j < classes; ++j) s += std::exp(in[0].get_double({i, j}) - mx);
      total += -(in[0].get_double({i, t}) - mx - std::log(s));
      ++count;
    }
    HostTensor mean = HostTensor::empty(DType::Float32, {});
    HostTensor loss = HostTensor::empty(DType::Float32, {rows, 1});
    k->run(in, {mean, loss});
    const double want = total / static_cast<double>(count);
    EXPECT_NEAR(mean.get_double({}), want, 1e-6 * std::fabs(want));
    auto ref = interpret(k->graph(), in);
    EXPECT_EQ(compare(mean, ref[0], 1e-6), "");
    EXPECT_EQ(compare(loss, ref[1], default_tolerance(DType::Float32)), "");
  }
}

TEST(KernelOuter, ResultsDoNotDependOnTheThreadCount) {
  const int saved = get_num_threads();
  std::mt19937_64 rng(11);
  for (int which : {0, 1, 2}) {
    const Case& c = cases()[static_cast<size_t>(which)];
    SCOPED_TRACE(c.name);
    Graph g = parse_case(c, "f32");
    auto k = Kernel::compile(g);
    std::vector<HostTensor> in;
    if (which == 1) {
      in = ce_inputs(DType::Float32, 5000, 37, rng);
    } else {
      Bindings b{{"s0", 3001}, {"s1", 129}};
      for (ValueId v : g.inputs()) {
        in.push_back(make_tensor(g.node(v).dtype, eval_shape(g.node(v).shape, b), Layout::Contiguous, rng));
        fill_random(in.back(), rng, false);
      }
    }
    std::vector<std::vector<HostTensor>> runs;
    for (int threads : {1, 2, 4, 3}) {
      set_num_threads(threads);
      std::vector<HostTensor> out;
      for (const auto& s : k->output_sizes(in))
        out.push_back(HostTensor::empty(g.node(g.outputs()[out.size()]).dtype, s));
      k->run(in, out);
      runs.push_back(out);
    }
    for (size_t r = 1; r < runs.size(); ++r)
      for (size_t o = 0; o < runs[0].size(); ++o)
        EXPECT_EQ(compare(runs[r][o], runs[0][o], 0.0), "") << "run " << r << " output " << o;
  }
  set_num_threads(saved);
}

}  // namespace
}  // namespace autofuse
