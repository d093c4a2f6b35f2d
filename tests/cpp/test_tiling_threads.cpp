// Results that do not change with the thread count (docs/precision.md point 3, tiling/tiling_function.h
// order_choice): the summation order of a call (Split with its slices, VectorRows, or the row schedules) is decided
// from the sizes alone, Split's slices are the same at every thread count and combine in slice order, and the row
// schedules (Rows, NarrowRows) sum every output in the same order (and argmax ties resolve alike under every
// tiling). Kernels run at 1-4 threads (and more where a decision used to change further up) give bit-identical
// outputs, which also match the interpreter.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/parser.h"
#include "autofuse/runtime/isa.h"
#include "autofuse/runtime/thread_pool.h"
#include "autofuse/tiling/tiling_function.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using kernel_testing::TilingRestore;

std::string reduce_ir(const std::string& op, const std::string& dt, int axis) {
  return "graph r(%x: " + dt + "[s0, s1]) {\n  %y = " + op + "(%x) {axes=[" + std::to_string(axis) +
         "], keepdim=false}\n  return %y\n}\n";
}

/// True when both outputs hold the same bytes (contiguous, same dtype and sizes).
bool same_bits(const HostTensor& a, const HostTensor& b) {
  return a.dtype == b.dtype && a.sizes == b.sizes &&
         std::memcmp(a.data, b.data, static_cast<size_t>(a.numel()) * dtype_size(a.dtype)) == 0;
}

/// What decides a call's summation order: the kind class (Split, VectorRows, or "rows" for Rows / NarrowRows) and,
/// for Split, its axis, slice count and slice length.
std::tuple<std::string, int, int64_t, int64_t> order_of(const TilingDecision& d) {
  const TilingCandidate& c = d.pick();
  if (c.kind == TilingKind::Split) return {"split", c.split_axis, c.splits, c.slice};
  if (c.kind == TilingKind::VectorRows) return {"vector-rows", -1, 0, 0};
  return {"rows", -1, 0, 0};
}

// The decision's order class over a grid of sizes, for reductions that may split, vector-rows kernels (softmax, var)
// and a half-precision sum: the same at 1..16 threads. Before session 19 Split was a candidate only from 2 threads
// with one slice per thread, and the VectorRows / Rows choice moved with the thread count (f32 softmax [1024, 16]:
// vector-rows on 1-2 threads, rows from 3).
TEST(TilingThreads, OrderOfEveryDecisionIsTheSameAtEveryThreadCount) {
  TilingRestore restore;
  std::vector<std::string> irs = {reduce_ir("sum", "f32", 0),
                                  reduce_ir("sum", "f32", 1),
                                  reduce_ir("mean", "f32", 0),
                                  reduce_ir("amax", "bf16", 0),
                                  reduce_ir("amin", "f32", 1),
                                  reduce_ir("sum", "bf16", 1),
                                  kernel_testing::with_dtype(kernel_testing::kSoftmaxRowsIR, "f32"),
                                  "graph v(%x: f32[s0, s1]) {\n  %y = var(%x) {axes=[1], keepdim=true, "
                                  "correction=1}\n  return %y\n}\n"};
  const int64_t sizes[] = {1, 3, 16, 17, 64, 300, 1024, 4096, 16384, 100003, 1 << 20, 1 << 22};
  int split = 0, vrows = 0;
  for (const std::string& ir : irs) {
    auto k = Kernel::compile(parse_graph(ir));
    for (int64_t a : sizes)
      for (int64_t b : sizes) {
        if (static_cast<double>(a) * static_cast<double>(b) > (1 << 24)) continue;
        set_num_threads(1);
        const TilingDecision one = k->tiling().decide({a, b});
        const auto want = order_of(one);
        split += std::get<0>(want) == "split";
        vrows += std::get<0>(want) == "vector-rows";
        for (int t = 2; t <= 16; ++t) {
          set_num_threads(t);
          const TilingDecision d = k->tiling().decide({a, b});
          ASSERT_EQ(order_of(d), want) << k->graph().name() << " [" << a << ", " << b << "] at " << t
                                       << " threads: " << d.describe() << "; at 1 thread: " << one.describe();
        }
      }
  }
  EXPECT_GT(split, 10);  // the grid covers Split ...
  EXPECT_GT(vrows, 10);  // ... and VectorRows
}

// Kernels whose calls run the Split tiling (whether they do is the cost model's, but it is the same at every thread
// count, tiling_function.cpp order_choice): bit-identical outputs on 1, 2, 3 and 4 threads (f32 sum / mean, bf16
// amax over a long axis with few kept elements; f32 sum and amin along rows), each within the interpreter's
// tolerance. Before session 19: [100003, 3] f32 sum(0) gave four different last bits at 1, 2, 3 and 4 threads.
TEST(TilingThreads, SplitResultsAreBitIdenticalOnOneToFourThreads) {
  TilingRestore restore;
  struct Case {
    std::string op, dt;
    int axis;
    int64_t rows, cols;
  };
  const Case cases[] = {{"sum", "f32", 0, 100003, 3},        {"mean", "f32", 0, 100003, 3},
                        {"amax", "bf16", 0, 100003, 3},      {"sum", "f32", 0, 1 << 20, 4},
                        {"sum", "f32", 1, 3, 1 << 20},       {"amin", "f32", 1, 1, 1 << 21},
                        {"mean", "f32", 1, 1, (1 << 22) + 5}};
  std::mt19937_64 rng(19);
  int split_cases = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op + " " + c.dt + " axis " + std::to_string(c.axis) + " [" + std::to_string(c.rows) + ", " +
                 std::to_string(c.cols) + "]");
    const Graph g = parse_graph(reduce_ir(c.op, c.dt, c.axis));
    auto k = Kernel::compile(g);
    HostTensor x = HostTensor::empty(g.node(g.inputs()[0]).dtype, {c.rows, c.cols});
    kernel_testing::fill_random(x, rng, false);
    std::vector<HostTensor> first;
    bool first_split = false;
    for (int t = 1; t <= 4; ++t) {
      set_num_threads(t);
      const TilingDecision d = k->tiling().decide({c.rows, c.cols});
      const bool split = d.pick().kind == TilingKind::Split;
      if (t == 1) first_split = split;
      EXPECT_EQ(split, first_split) << t << " threads: " << d.describe();  // Split or not: the same on every count
      if (t == 1 && split) ++split_cases;
      std::vector<HostTensor> out = kernel_testing::run_kernel(*k, {x});
      if (t == 1) {
        kernel_testing::expect_matches_interpreter(*k, {x}, "1 thread");
        first = out;
      } else {
        EXPECT_TRUE(same_bits(out[0], first[0]))
            << t << " threads differ from 1: " << kernel_testing::compare(out[0], first[0], 0);
      }
    }
  }
  // All 7 on AVX-512 and AVX2; the scalar helpers' [1048576, 4] keeps the row schedules (Split within the model's
  // 5 % noise floor of them there).
  EXPECT_GE(split_cases, 6) << "too few of the cases ran Split to test it";
}

// A forced Split (tests, benchmark) slices by the sizes too: random small shapes give the same bits on 1-5 threads.
TEST(TilingThreads, ForcedSplitGivesTheSameBitsOnEveryThreadCount) {
  TilingRestore restore;
  auto rng = kernel_testing::seeded_rng();
  for (const std::string& ir : {reduce_ir("sum", "f32", 0), reduce_ir("sum", "f32", 1), reduce_ir("mean", "f32", 0),
                                reduce_ir("amax", "f32", 1)}) {
    const Graph g = parse_graph(ir);
    auto k = Kernel::compile(g);
    for (int it = 0; it < 6; ++it) {
      const int64_t rows = kernel_testing::uni(rng, 1, 3000), cols = kernel_testing::uni(rng, 1, 400);
      HostTensor x = HostTensor::empty(DType::Float32, {rows, cols});
      kernel_testing::fill_random(x, rng, false);
      force_tiling_kind(TilingKind::Split);
      set_num_threads(1);
      const std::vector<HostTensor> first = kernel_testing::run_kernel(*k, {x});
      for (int t = 2; t <= 5; ++t) {
        set_num_threads(t);
        const std::vector<HostTensor> out = kernel_testing::run_kernel(*k, {x});
        EXPECT_TRUE(same_bits(out[0], first[0]))
            << g.name() << " [" << rows << ", " << cols << "] forced split, " << t
            << " threads differ from 1: " << k->tiling().decide({rows, cols}).describe();
      }
      force_tiling_kind(std::nullopt);
    }
  }
}

// Short softmax rows where the VectorRows / Rows choice used to move with the thread count ([1024, 16]: vector-rows
// on 1-2 threads, rows from 3; [4096, 16]: from 7): the same bits on 1-8 threads.
TEST(TilingThreads, ShortSoftmaxRowsGiveTheSameBitsOnEveryThreadCount) {
  TilingRestore restore;
  const Graph g = parse_graph(kernel_testing::with_dtype(kernel_testing::kSoftmaxRowsIR, "f32"));
  auto k = Kernel::compile(g);
  std::mt19937_64 rng(7);
  for (int64_t rows : {1024, 4096}) {
    HostTensor x = HostTensor::empty(DType::Float32, {rows, 16});
    kernel_testing::fill_random(x, rng, false);
    set_num_threads(1);
    const std::vector<HostTensor> first = kernel_testing::run_kernel(*k, {x});
    kernel_testing::expect_matches_interpreter(*k, {x}, "softmax");
    for (int t = 2; t <= 8; ++t) {
      set_num_threads(t);
      EXPECT_TRUE(same_bits(kernel_testing::run_kernel(*k, {x})[0], first[0]))
          << "[" << rows << ", 16] " << t << " threads differ from 1: " << k->tiling().decide({rows, 16}).describe();
    }
  }
}

// The row schedules may still differ by thread count (NarrowRows when the default blocks leave threads idle): they
// must sum every output in the same order, so forced Rows and NarrowRows give the same bits. 16 threads, so that
// the default blocks leave threads idle whatever the vector width (at 4, AVX2's [1000, 300] blocked 5 rows); a
// shape whose blocks still fill them (the scalar helpers' [1000, 300]: 38 rows) has no NarrowRows to compare.
TEST(TilingThreads, NarrowRowsSumInTheOrderOfRows) {
  TilingRestore restore;
  std::mt19937_64 rng(11);
  for (const char* op : {"sum", "mean", "amax"}) {
    const Graph g = parse_graph(reduce_ir(op, "f32", 0));
    auto k = Kernel::compile(g);
    int narrow = 0;
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1000, 300}, {4097, 64}, {333, 17}, {20000, 40}}) {
      HostTensor x = HostTensor::empty(DType::Float32, {rows, cols});
      kernel_testing::fill_random(x, rng, false);
      set_num_threads(16);
      force_tiling_kind(TilingKind::Rows);
      const std::vector<HostTensor> a = kernel_testing::run_kernel(*k, {x});
      force_tiling_kind(TilingKind::NarrowRows);
      const TilingDecision d = k->tiling().decide({rows, cols});
      const std::vector<HostTensor> b = kernel_testing::run_kernel(*k, {x});
      force_tiling_kind(std::nullopt);
      if (d.pick().kind != TilingKind::NarrowRows) continue;  // not a candidate here (the blocks fill the threads)
      ++narrow;
      EXPECT_TRUE(same_bits(a[0], b[0])) << op << " [" << rows << ", " << cols << "]";
    }
    EXPECT_GE(narrow, 3) << op << ": NarrowRows was a candidate for too few shapes to test";
  }
}

// argmax / argmin (not splittable) under Rows and VectorRows: ties and NaN resolve alike (the first index), so the
// index does not depend on the tiling either.
TEST(TilingThreads, ArgmaxTiesResolveAlikeUnderRowsAndVectorRows) {
  TilingRestore restore;
  std::mt19937_64 rng(5);
  for (const char* op : {"argmax", "argmin"}) {
    const Graph g = parse_graph(std::string("graph a(%x: f32[s0, s1]) {\n  %y = ") + op +
                                "(%x) {axes=[1], keepdim=false}\n  return %y\n}\n");
    auto k = Kernel::compile(g);
    for (int64_t cols : {3, 16, 31, 200}) {
      HostTensor x = HostTensor::empty(DType::Float32, {2048, cols});
      float* p = static_cast<float*>(x.data);
      for (int64_t i = 0; i < x.numel(); ++i) p[i] = static_cast<float>(rng() % 3);  // many ties
      p[5] = std::numeric_limits<float>::quiet_NaN();
      p[cols * 7 + 1] = std::numeric_limits<float>::quiet_NaN();
      force_tiling_kind(TilingKind::Rows);
      const std::vector<HostTensor> a = kernel_testing::run_kernel(*k, {x});
      force_tiling_kind(TilingKind::VectorRows);
      const std::vector<HostTensor> b = kernel_testing::run_kernel(*k, {x});
      force_tiling_kind(std::nullopt);
      EXPECT_TRUE(same_bits(a[0], b[0])) << op << " [2048, " << cols << "]";
      kernel_testing::expect_matches_interpreter(*k, {x}, std::string(op) + " " + std::to_string(cols));
    }
  }
}

// Split only where its cost on one thread stays within budget (tiling_function.h kSplitOneThreadBudget): small calls
// and wide outputs, which split on 2 threads before, keep the row schedule at every thread count. The budget counts
// vector iterations, so it depends on the vector width: the shapes below are within it on 8 and 16 lanes (AVX2,
// AVX-512), not on the scalar helpers' narrower vectors, where splitting pays sooner. Whether a call that passes the
// budget splits is the cost model's, from the measured machine ([4096, 300] sum(0) split on Zen 3 with AVX2 and not
// on Zen 4 or 5), so for it the test asserts only that Split never runs outside the budget.
TEST(TilingThreads, SmallCallsAndWideOutputsAreNotSplit) {
  if (isa_vector_bytes(host_isa()) < 32)
    GTEST_SKIP() << "budget shapes sized for 8 or 16 f32 lanes; ISA " << host_isa();
  TilingRestore restore;
  auto o = Kernel::compile(parse_graph(reduce_ir("sum", "f32", 0)));
  auto r = Kernel::compile(parse_graph(reduce_ir("sum", "f32", 1)));
  for (int t = 1; t <= 4; ++t) {
    set_num_threads(t);
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1000, 300}, {16384, 3}}) {
      EXPECT_EQ(o->tiling().split_slices({rows, cols}), 0) << rows << " x " << cols;
      EXPECT_NE(o->tiling().decide({rows, cols}).pick().kind, TilingKind::Split) << rows << " x " << cols;
    }
    EXPECT_EQ(r->tiling().split_slices({3, 100003}), 0);
    EXPECT_EQ(r->tiling().split_slices({7, 100003}), 0);
    EXPECT_NE(r->tiling().decide({7, 100003}).pick().kind, TilingKind::Split);
    if (o->tiling().decide({4096, 300}).pick().kind == TilingKind::Split) {
      EXPECT_GE(o->tiling().split_slices({4096, 300}), 2);
    }
    EXPECT_GE(o->tiling().split_slices({100003, 3}), 2);
  }
}

}  // namespace
}  // namespace autofuse
