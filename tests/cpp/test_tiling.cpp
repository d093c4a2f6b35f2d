// Tiling: decisions satisfy their constraints over random shapes, every candidate computes what the interpreter does
// (forced per kind, over random shapes, layouts and random kernel graphs), split choice where the model must make it,
// and the cost model's monotonic basics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "autofuse/runtime/thread_pool.h"
#include "autofuse/tiling/cost_model.h"
#include "autofuse/tiling/tiling_function.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using kernel_testing::compare;
using kernel_testing::default_tolerance;
using kernel_testing::Layout;

const char* kGraphs[] = {
    "graph rsum(%x: f32[s0, s1]) {\n  %y = sum(%x) {axes=[1], keepdim=true}\n  return %y\n}\n",
    "graph rsum_bf16(%x: bf16[s0, s1]) {\n  %y = sum(%x) {axes=[1], keepdim=true}\n  return %y\n}\n",
    "graph osum(%x: f32[s0, s1]) {\n  %y = sum(%x) {axes=[0], keepdim=false}\n  return %y\n}\n",
    "graph rmean_max(%x: f32[s0, s1, s2]) {\n  %m = mean(%x) {axes=[1, 2], keepdim=false}\n  %a = amax(%x) {axes=[1, "
    "2], keepdim=false}\n"
    "  return %m, %a\n}\n",
    "graph omin(%x: f32[s0, s1, s2]) {\n  %e = exp(%x)\n  %a = amin(%e) {axes=[0, 1], keepdim=true}\n  return %a\n}\n",
    "graph softmax(%x: f32[s0, s1]) {\n  %m = amax(%x) {axes=[1], keepdim=true}\n  %d = sub(%x, %m)\n"
    "  %e = exp(%d)\n  %s = sum(%e) {axes=[1], keepdim=true}\n  %o = div(%e, %s)\n  return %o\n}\n",
    "graph ew(%x: f32[s0, s1], %y: f32[s1]) {\n  %z = mul(%x, %y)\n  %t = tanh(%z)\n  return %t\n}\n",
};

using Restore = kernel_testing::TilingRestore;

std::vector<int64_t> random_sizes(const Graph& g, std::mt19937_64& rng, std::vector<HostTensor>& inputs, Layout l) {
  Bindings b;
  std::uniform_int_distribution<int> pick(0, 5);
  const int64_t choices[] = {1, 3, 16, 17, 100, 1000};
  int64_t total = 1;
  for (ValueId in : g.inputs())
    for (const Expr& e : g.node(in).shape)
      if (e.kind() == Expr::Kind::Sym && !b.count(e.name())) {
        int64_t v = choices[pick(rng)];
        if (total * v > 300000) v = 1;
        total *= v;
        b[e.name()] = v;
      }
  std::vector<int64_t> all;
  inputs.clear();
  for (ValueId in : g.inputs()) {
    std::vector<int64_t> s = eval_shape(g.node(in).shape, b);
    all.insert(all.end(), s.begin(), s.end());
    HostTensor t = kernel_testing::make_tensor(g.node(in).dtype, s, l, rng);
    kernel_testing::fill_random(t, rng, false);
    inputs.push_back(t);
  }
  return all;
}

TEST(Tiling, DecisionsSatisfyConstraints) {
  Restore restore;
  std::mt19937_64 rng = kernel_testing::seeded_rng();
  for (const char* text : kGraphs) {
    Graph g = parse_graph(text);
    auto k = Kernel::compile(g);
    const LoopNest& n = k->loop_nest();
    for (int it = 0; it < 300; ++it) {
      const int threads = 1 + static_cast<int>(rng() % 16);
      set_num_threads(threads);
      std::vector<int64_t> sizes(static_cast<size_t>(n.rank));
      for (auto& s : sizes) s = static_cast<int64_t>(rng() % 5 == 0 ? rng() % 3 : rng() % 100000);
      TilingDecision d = k->tiling().decide(sizes);
      ASSERT_FALSE(d.candidates.empty());
      ASSERT_LT(d.chosen, d.candidates.size());
      EXPECT_EQ(d.candidates[0].kind, TilingKind::Rows);
      const Schedule base = choose_schedule(n, sizes, k->lanes());
      for (const TilingCandidate& c : d.candidates) {
        SCOPED_TRACE(std::string(g.name()) + ": " + d.describe());
        EXPECT_TRUE(std::isfinite(c.est_ns));
        EXPECT_GE(c.est_ns, 0);
        EXPECT_GE(c.schedule.grain, 1);
        EXPECT_GE(c.schedule.rows, 0);
        if (!n.inner_reduction) {
          EXPECT_GE(c.schedule.vblock, k->lanes());
          EXPECT_EQ(c.schedule.vblock % k->lanes(), 0);
        }
        if (c.kind == TilingKind::Rows) {
          EXPECT_EQ(c.schedule.rows, base.rows);
        }
        if (c.kind == TilingKind::NarrowRows) {
          EXPECT_FALSE(n.inner_reduction);
          EXPECT_GT(c.schedule.rows, base.rows);
        }
        if (c.kind == TilingKind::Split) {
          EXPECT_TRUE(k->tiling().splittable());
          ASSERT_GE(c.split_axis, 0);
          ASSERT_LT(c.split_axis, n.rank);
          EXPECT_TRUE(n.is_reduce[static_cast<size_t>(c.split_axis)]);
          EXPECT_GE(c.splits, 2);
          EXPECT_LE(c.splits, TilingFunction::kSplitLadder[0]);  // whatever the thread count
          EXPECT_LE(c.splits, sizes[static_cast<size_t>(c.split_axis)]);
          // Slices of c.slice elements (the last one shorter), the slice schedule the default one of the first.
          std::vector<int64_t> slice = sizes;
          const int64_t ext = sizes[static_cast<size_t>(c.split_axis)];
          EXPECT_EQ(c.splits, (ext + c.slice - 1) / c.slice);
          EXPECT_GT(ext, (c.splits - 1) * c.slice);
          slice[static_cast<size_t>(c.split_axis)] = c.slice;
          const Schedule ss = choose_schedule(n, slice, k->lanes());
          EXPECT_EQ(c.schedule.rows, ss.rows);
          EXPECT_EQ(c.schedule.vblock, ss.vblock);
          if (n.inner_reduction) {
            EXPECT_EQ(c.schedule.rows, base.rows);  // one row per kept index either way
          }
        }
      }
    }
  }
}

TEST(Tiling, EveryCandidateMatchesInterpreter) {
  Restore restore;
  std::mt19937_64 rng = kernel_testing::seeded_rng();
  const Layout layouts[] = {Layout::Contiguous, Layout::Permuted, Layout::Gapped, Layout::Expanded};
  int split_runs = 0, narrow_runs = 0;  // graphs where the kind applies at a probe shape
  for (const char* text : kGraphs) {
    Graph g = parse_graph(text);
    auto k = Kernel::compile(g);
    for (int it = 0; it < 12; ++it) {
      set_num_threads(1 + static_cast<int>(rng() % 6));
      std::vector<HostTensor> in;
      random_sizes(g, rng, in, layouts[rng() % 4]);
      auto want = interpret(g, in);
      for (TilingKind kind : {TilingKind::Rows, TilingKind::NarrowRows, TilingKind::Split}) {
        force_tiling_kind(kind);
        std::vector<HostTensor> out;
        for (auto& s : k->output_sizes(in)) out.push_back(HostTensor::empty(g.node(g.outputs()[out.size()]).dtype, s));
        k->run(in, out);
        force_tiling_kind(std::nullopt);
        for (size_t o = 0; o < out.size(); ++o) {
          const std::string msg = compare(out[o], want[o], default_tolerance(out[o].dtype));
          EXPECT_EQ(msg, "") << g.name() << " forced " << tiling_kind_name(kind) << " output " << o << " "
                             << in[0].describe();
        }
      }
    }
    // Check, at a shape where they apply, that the kinds exist for this graph (Split forced: a 4096-element call is
    // too small to split unforced, tiling_function.h kSplitOneThreadBudget).
    set_num_threads(4);
    std::vector<int64_t> sizes(static_cast<size_t>(k->loop_nest().rank), 1);
    sizes.back() = 4096;
    force_tiling_kind(TilingKind::Split);
    const TilingDecision probe = k->tiling().decide(sizes);
    force_tiling_kind(std::nullopt);
    for (const TilingCandidate& c : probe.candidates) {
      split_runs += c.kind == TilingKind::Split;
      narrow_runs += c.kind == TilingKind::NarrowRows;
    }
  }
  EXPECT_GT(split_runs, 0);
  EXPECT_GT(narrow_runs, 0);
}

TEST(Tiling, RandomKernelGraphsUnderSplit) {
  Restore restore;
  std::mt19937_64 rng = kernel_testing::seeded_rng();
  set_num_threads(3);
  for (int i = 0; i < 25; ++i) {
    kernel_testing::RandomGraph rg = kernel_testing::random_kernel_graph(rng);
    Bindings b = kernel_testing::random_bindings(rg.graph, rng);
    for (TilingKind kind : {TilingKind::Split, TilingKind::NarrowRows}) {
      force_tiling_kind(kind);
      // Split partials change the summation order: outputs that were exact need not stay bit-exact.
      kernel_testing::RandomGraph loose = rg;
      if (kind == TilingKind::Split) loose.exact.assign(loose.exact.size(), false);
      std::string msg = kernel_testing::run_case(loose, b, rng);
      force_tiling_kind(std::nullopt);
      EXPECT_EQ(msg, "") << "graph " << i << " forced " << tiling_kind_name(kind);
    }
  }
}

TEST(Tiling, SplitChosenForFewLongRowsAndNotForManyRows) {
  Restore restore;
  set_num_threads(8);
  auto k = Kernel::compile(parse_graph(kGraphs[0]));
  TilingDecision one_row = k->tiling().decide({1, 1 << 24});
  EXPECT_EQ(one_row.pick().kind, TilingKind::Split) << one_row.describe();
  // Many short rows: never a split (rows or vector-rows; the quiet sweep measures vector-rows 2x faster at 1M x 16).
  TilingDecision many = k->tiling().decide({1 << 20, 16});
  EXPECT_NE(many.pick().kind, TilingKind::Split) << many.describe();
  TilingDecision many_long = k->tiling().decide({1 << 14, 1024});
  EXPECT_EQ(many_long.pick().kind, TilingKind::Rows) << many_long.describe();
  auto soft = Kernel::compile(parse_graph(kGraphs[5]));
  EXPECT_FALSE(soft->tiling().splittable());
}

// A float16 / bfloat16 sum or mean is never split: the slices' partials would be rounded to the output dtype and
// again after the combination (review 17: bf16 [3000, 300] sum(0) on 2 threads had 40 % of its columns wrong by up
// to 128 of the result's ulps). Two threads give the one-thread bits; amax stays splittable (exact partials).
TEST(Tiling, HalfPrecisionSumsAreNotSplit) {
  Restore restore;
  for (const char* dt : {"bf16", "f16"}) {
    for (const char* op : {"sum", "mean"}) {
      Graph g = parse_graph(std::string("graph s(%x: ") + dt + "[s0, s1]) {\n  %y = " + op +
                            "(%x) {axes=[0], keepdim=false}\n  return %y\n}");
      auto k = Kernel::compile(g);
      EXPECT_FALSE(k->tiling().splittable()) << dt << " " << op;
      std::mt19937_64 rng(17);
      HostTensor x = HostTensor::empty(g.node(g.inputs()[0]).dtype, {3000, 300});
      kernel_testing::fill_random(x, rng, false);
      std::vector<HostTensor> out1, out2;
      set_num_threads(1);
      out1 = kernel_testing::run_kernel(*k, {x});
      set_num_threads(2);
      out2 = kernel_testing::run_kernel(*k, {x});
      EXPECT_EQ(compare(out2[0], out1[0], 0), "") << dt << " " << op << ": 2 threads differ from 1";
    }
  }
  auto mx = Kernel::compile(
      parse_graph("graph m(%x: bf16[s0, s1]) {\n  %y = amax(%x) {axes=[0], keepdim=false}\n  return %y\n}"));
  EXPECT_TRUE(mx->tiling().splittable());
}

TEST(Tiling, TranscendentalRowsUseEveryThreadSooner) {
  // tanh over f32[32, 3072]: the default grain (64K elements per task) keeps 98K elements on one thread; the cost
  // model splits a compute-bound kernel over both threads, and leaves a memory-bound add of the same size alone.
  Restore restore;
  set_num_threads(2);
  auto tanh_k = Kernel::compile(parse_graph("graph t(%x: f32[s0, s1]) {\n  %y = tanh(%x)\n  return %y\n}\n"));
  TilingDecision t = tanh_k->tiling().decide({32, 3072});
  const Schedule ts = t.pick().schedule;
  EXPECT_EQ(t.pick().kind, TilingKind::Rows) << t.describe();
  EXPECT_GE(ts.rows / ts.grain, 2) << t.describe();  // parallel_for runs rows / grain chunks at most
  auto add_k = Kernel::compile(parse_graph("graph a(%x: f32[s0, s1]) {\n  %y = add(%x, %x)\n  return %y\n}\n"));
  TilingDecision a = add_k->tiling().decide({32, 3072});
  EXPECT_EQ(a.pick().schedule.grain, choose_schedule(add_k->loop_nest(), {32, 3072}, add_k->lanes()).grain)
      << a.describe();
}

TEST(Tiling, StaticShapesAreFolded) {
  Restore restore;
  auto k = Kernel::compile(
      parse_graph("graph s(%x: f32[64, 1000]) {\n  %y = sum(%x) {axes=[1], keepdim=false}\n  return %y\n}\n"));
  TilingDecision d = k->tiling().decide({64, 1000});
  EXPECT_TRUE(d.folded) << d.describe();
  set_num_threads(get_num_threads() + 1);
  EXPECT_FALSE(k->tiling().decide({64, 1000}).folded);
}

TEST(Tiling, RepeatedSizesReuseTheLastDecision) {
  // The memo must give the decision decide_uncached would (same sizes and threads), follow a change of either, and
  // never hide a forced kind.
  Restore restore;
  set_num_threads(8);
  auto k = Kernel::compile(parse_graph(kGraphs[0]));
  const TilingDecision a = k->tiling().decide({1, 1 << 24});
  const TilingDecision b = k->tiling().decide({1, 1 << 24});
  EXPECT_EQ(a.describe(), b.describe());
  EXPECT_EQ(b.pick().kind, TilingKind::Split) << b.describe();
  const TilingDecision many = k->tiling().decide({1 << 20, 16});
  EXPECT_NE(many.describe(), a.describe());
  set_num_threads(1);  // one thread: the same split (the slices then run one after the other)
  const TilingDecision one = k->tiling().decide({1, 1 << 24});
  EXPECT_NE(one.describe(), b.describe());  // not the 8-thread decision: its estimates are for 1 thread
  EXPECT_EQ(one.pick().kind, TilingKind::Split) << one.describe();
  EXPECT_EQ(one.pick().splits, b.pick().splits);
  set_num_threads(8);
  force_tiling_kind(TilingKind::Rows);
  EXPECT_EQ(k->tiling().decide({1, 1 << 24}).pick().kind, TilingKind::Rows);
  force_tiling_kind(std::nullopt);
  EXPECT_EQ(k->tiling().decide({1, 1 << 24}).pick().kind, TilingKind::Split);
}

TEST(Tiling, CostModelBasics) {
  CostParams p;
  p.threads = 4;
  p.dram_threads = 4;  // DRAM bandwidth measured over 4 threads: one thread alone gets a quarter of it
  WorkShape w;
  w.rows = 1000;
  w.row_elems = 1000;
  w.reduce_extent = 1000;
  w.inner_reduction = true;
  const double one = estimate_rows_ns(w, 1, 1000, p);
  const double four = estimate_rows_ns(w, 4, 250, p);
  EXPECT_GT(one, 0);
  EXPECT_LT(four, one);  // more threads, less time for the same rows
  WorkShape big = w;
  big.rows = 2000;
  EXPECT_GT(estimate_rows_ns(big, 4, 500, p), four);  // more work, more time
  WorkShape one_row = w;
  one_row.rows = 1;
  one_row.row_elems = one_row.reduce_extent = 1 << 24;
  EXPECT_LT(estimate_split_ns(one_row, 4, 1, 4, p), estimate_rows_ns(one_row, 1, 1, p));
  // When one thread alone draws all the DRAM bandwidth (measured), splitting a memory-bound row gains nothing and
  // pays the launch and the combine: the single-row schedule is cheaper.
  CostParams q = p;
  q.dram1_gbps = q.dram_gbps;
  EXPECT_GT(estimate_split_ns(one_row, 4, 1, 4, q), estimate_rows_ns(one_row, 1, 1, q));
  // A compute-heavy row (transcendental per element) still gains from the split.
  WorkShape heavy = one_row;
  heavy.transcendentals = 2;
  EXPECT_LT(estimate_split_ns(heavy, 4, 1, 4, q), estimate_rows_ns(heavy, 1, 1, q));
}

}  // namespace
}  // namespace autofuse
