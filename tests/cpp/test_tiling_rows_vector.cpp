// The vector-rows tiling candidate (tiling/rows_vector.h): the axis permutation, results against the interpreter for
// short rows (cols = 1 .. 256, 0 rows, 1 row, odd counts, non-contiguous layouts, bf16, softmax, argmax, var), random
// kernel graphs forced onto it, one compiled variant per stride class whatever the sizes, and the cost model's
// choice at the sweep's extreme points.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "autofuse/runtime/cache.h"
#include "autofuse/runtime/thread_pool.h"
#include "autofuse/tiling/rows_vector.h"
#include "autofuse/tiling/tiling_function.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using kernel_testing::compare;
using kernel_testing::default_tolerance;
using kernel_testing::Layout;

/// Inner-reduction graphs over [s0, s1] (s1 reduced) or [s0, s1, s2] (s1, s2 reduced).
const char* kInner[] = {
    "graph rsum(%x: f32[s0, s1]) {\n  %y = sum(%x) {axes=[1], keepdim=true}\n  return %y\n}\n",
    "graph rsum_bf16(%x: bf16[s0, s1]) {\n  %y = sum(%x) {axes=[1], keepdim=false}\n  return %y\n}\n",
    "graph softmax(%x: f32[s0, s1]) {\n  %m = amax(%x) {axes=[1], keepdim=true}\n  %d = sub(%x, %m)\n"
    "  %e = exp(%d)\n  %s = sum(%e) {axes=[1], keepdim=true}\n  %o = div(%e, %s)\n  return %o\n}\n",
    "graph softmax_bf16(%x: bf16[s0, s1]) {\n  %xf = cast(%x) {dtype=f32}\n  %m = amax(%xf) {axes=[1], keepdim=true}\n"
    "  %d = sub(%xf, %m)\n  %e = exp(%d)\n  %s = sum(%e) {axes=[1], keepdim=true}\n  %o = div(%e, %s)\n"
    "  %r = cast(%o) {dtype=bf16}\n  return %r\n}\n",
    "graph argmax_var(%x: f32[s0, s1], %b: f32[s1]) {\n  %z = add(%x, %b)\n  %a = argmax(%z) {axes=[1], "
    "keepdim=false}\n"
    "  %v = var(%z) {axes=[1], keepdim=false, correction=1}\n  return %a, %v\n}\n",
    "graph rmean_max(%x: f32[s0, s1, s2]) {\n  %m = mean(%x) {axes=[1, 2], keepdim=false}\n"
    "  %a = amax(%x) {axes=[1, 2], keepdim=false}\n  return %m, %a\n}\n",
};

using Restore = kernel_testing::TilingRestore;

TEST(TilingRowsVector, Permutation) {
  LoopNest two = Kernel::compile(parse_graph(kInner[0]))->loop_nest();
  EXPECT_EQ(rows_vector_permutation(two), (std::vector<int>{1, 0}));
  LoopNest p = permute_loop_nest(two, {1, 0});
  EXPECT_FALSE(p.inner_reduction);
  EXPECT_EQ(p.is_reduce, (std::vector<bool>{true, false}));
  EXPECT_EQ(p.domain[0].str(), two.domain[1].str());
  // The input %x (value 0): dim 0 (rows) now on axis 1, dim 1 (cols) on axis 0.
  EXPECT_EQ(p.values[0].axis_of_dim, (std::vector<int>{1, 0}));
  LoopNest three = Kernel::compile(parse_graph(kInner[5]))->loop_nest();
  EXPECT_EQ(rows_vector_permutation(three), (std::vector<int>{1, 2, 0}));
  // No inner reduction: no permutation; a reduced innermost axis is refused.
  LoopNest outer =
      Kernel::compile(
          parse_graph("graph o(%x: f32[s0, s1]) {\n  %y = sum(%x) {axes=[0], keepdim=false}\n  return %y\n}\n"))
          ->loop_nest();
  EXPECT_FALSE(rows_vector_permutation(outer).has_value());
  EXPECT_THROW(permute_loop_nest(two, {0, 1}), IRError);
  EXPECT_THROW(permute_loop_nest(two, {1, 1}), IRError);
}

TEST(TilingRowsVector, MatchesInterpreter) {
  Restore restore;
  std::mt19937_64 rng = kernel_testing::seeded_rng();
  const Layout layouts[] = {Layout::Contiguous, Layout::Permuted, Layout::Gapped, Layout::Expanded};
  const int64_t cols_choices[] = {1, 2, 3, 4, 5, 16, 17, 64, 255};
  const int64_t rows_choices[] = {0, 1, 2, 15, 16, 17, 33, 1000, 5000};
  int ran = 0;
  for (const char* text : kInner) {
    Graph g = parse_graph(text);
    auto k = Kernel::compile(g);
    ASSERT_NE(k->tiling().rows_vector_nest(), nullptr) << g.name();
    for (int it = 0; it < 24; ++it) {
      set_num_threads(1 + static_cast<int>(rng() % 4));
      Bindings b;
      b["s0"] = rows_choices[rng() % 9];
      b["s1"] = cols_choices[rng() % 9];
      b["s2"] = 1 + static_cast<int64_t>(rng() % 3);
      if (it == 0) b["s1"] = 1;  // cols = 1 for every graph
      std::vector<HostTensor> in;
      const Layout l = it < 4 ? Layout::Contiguous : layouts[rng() % 4];
      for (ValueId v : g.inputs()) {
        HostTensor t = kernel_testing::make_tensor(g.node(v).dtype, eval_shape(g.node(v).shape, b), l, rng);
        kernel_testing::fill_random(t, rng, false);
        in.push_back(t);
      }
      auto want = interpret(g, in);
      force_tiling_kind(TilingKind::VectorRows);
      // Forced, the candidate exists whenever there are rows and they are short (merged sizes: [rows, cols] here).
      if (k->loop_nest().rank == 2 && b["s0"] > 0) {
        const TilingDecision d = k->tiling().decide({b["s0"], b["s1"]});
        EXPECT_EQ(d.pick().kind, TilingKind::VectorRows) << d.describe();
      }
      std::vector<HostTensor> out;
      for (auto& s : k->output_sizes(in)) out.push_back(HostTensor::empty(g.node(g.outputs()[out.size()]).dtype, s));
      k->run(in, out);
      force_tiling_kind(std::nullopt);
      for (size_t o = 0; o < out.size(); ++o) {
        const std::string msg = compare(out[o], want[o], default_tolerance(out[o].dtype));
        EXPECT_EQ(msg, "") << g.name() << " output " << o << " " << in[0].describe() << " layout "
                           << static_cast<int>(l);
      }
      ++ran;
    }
  }
  EXPECT_EQ(ran, 24 * static_cast<int>(std::size(kInner)));
}

TEST(TilingRowsVector, CandidateConstraints) {
  Restore restore;
  std::mt19937_64 rng = kernel_testing::seeded_rng();
  for (const char* text : kInner) {
    Graph g = parse_graph(text);
    auto k = Kernel::compile(g);
    const LoopNest& n = k->loop_nest();
    const std::vector<int>& perm = *k->tiling().rows_vector_perm();
    for (int it = 0; it < 300; ++it) {
      set_num_threads(1 + static_cast<int>(rng() % 16));
      std::vector<int64_t> sizes(static_cast<size_t>(n.rank));
      for (auto& s : sizes) s = static_cast<int64_t>(rng() % 3 == 0 ? rng() % 4 : rng() % 5000);
      int64_t rsize = 1, kept = 1;
      for (int a = 0; a < n.rank; ++a)
        (n.is_reduce[static_cast<size_t>(a)] ? rsize : kept) *= sizes[static_cast<size_t>(a)];
      TilingDecision d = k->tiling().decide(sizes);
      bool has = false;
      for (const TilingCandidate& c : d.candidates) {
        if (c.kind != TilingKind::VectorRows) continue;
        SCOPED_TRACE(d.describe());
        has = true;
        EXPECT_LE(rsize, TilingFunction::kVectorRowsMaxCols);
        EXPECT_GE(c.schedule.vblock, k->lanes());
        EXPECT_EQ(c.schedule.vblock % k->lanes(), 0);
        EXPECT_GE(c.schedule.grain, 1);
        const Schedule s = choose_schedule(*k->tiling().rows_vector_nest(), permute_sizes(sizes, perm), k->lanes());
        EXPECT_EQ(c.schedule.rows, s.rows);
        // Every kept index is covered: rows x vblock >= kept indices.
        EXPECT_GE(c.schedule.rows * c.schedule.vblock, kept);
      }
      EXPECT_EQ(has, kept >= TilingFunction::kVectorRowsMinRows && rsize <= TilingFunction::kVectorRowsMaxCols)
          << "sizes " << sizes[0] << " x " << sizes[1];
    }
  }
}

TEST(TilingRowsVector, RandomKernelGraphs) {
  Restore restore;
  std::mt19937_64 rng = kernel_testing::seeded_rng();
  set_num_threads(3);
  for (int i = 0; i < 40; ++i) {
    kernel_testing::RandomGraph rg = kernel_testing::random_kernel_graph(rng);
    Bindings b = kernel_testing::random_bindings(rg.graph, rng);
    force_tiling_kind(TilingKind::VectorRows);
    // Lanes across rows sum each row in a different order: outputs that were exact need not stay bit-exact.
    kernel_testing::RandomGraph loose = rg;
    loose.exact.assign(loose.exact.size(), false);
    const std::string msg = kernel_testing::run_case(loose, b, rng);
    force_tiling_kind(std::nullopt);
    EXPECT_EQ(msg, "") << "graph " << i;
  }
}

TEST(TilingRowsVector, OneCompilePerVariantNotPerSize) {
  Restore restore;
  force_tiling_kind(TilingKind::VectorRows);
  // Every variant compile is one lookup in the kernel cache (a compile, a disk hit or a memory hit).
  auto lookups = [] {
    const CacheStats c = cache_stats();
    return c.compiles + c.disk_hits + c.memory_hits;
  };
  const int64_t before = lookups();
  auto k = Kernel::compile(
      parse_graph("graph rv_count(%x: f32[s0, s1]) {\n  %y = amin(%x) {axes=[1], keepdim=true}\n  return %y\n}\n"));
  EXPECT_EQ(k->num_variants(), 1u);
  std::mt19937_64 rng(7);
  for (int64_t rows : {5, 100, 4096})
    for (int64_t cols : {2, 7, 33}) {
      HostTensor x = HostTensor::empty(DType::Float32, {rows, cols});
      kernel_testing::fill_random(x, rng, false);
      HostTensor y = HostTensor::empty(DType::Float32, {rows, 1});
      k->run({x}, {y});
    }
  EXPECT_EQ(k->num_variants(), 2u);  // the contiguous default + one vector-rows (strided lanes) variant
  for (int64_t rows : {5, 4096}) {
    HostTensor x = HostTensor::empty(DType::Float32, {rows, 1});
    kernel_testing::fill_random(x, rng, false);
    HostTensor y = HostTensor::empty(DType::Float32, {rows, 1});
    k->run({x}, {y});
  }
  EXPECT_EQ(k->num_variants(), 3u);  // + the unit-stride (cols = 1) vector-rows variant
  EXPECT_EQ(lookups() - before, 3);  // one cache lookup per variant, none per size
}

TEST(TilingRowsVector, ChosenForVeryShortRowsOnly) {
  Restore restore;
  set_num_threads(2);
  for (const char* text : {kInner[0], kInner[1], kInner[2], kInner[3]}) {
    auto k = Kernel::compile(parse_graph(text));
    for (int64_t rows : {int64_t{1} << 24, int64_t{1} << 22}) {
      TilingDecision d = k->tiling().decide({rows, (int64_t{1} << 24) / rows});
      EXPECT_EQ(d.pick().kind, TilingKind::VectorRows) << k->name() << ": " << d.describe();
    }
    TilingDecision wide = k->tiling().decide({16, 1 << 20});
    EXPECT_NE(wide.pick().kind, TilingKind::VectorRows) << wide.describe();
  }
}

}  // namespace
}  // namespace autofuse
