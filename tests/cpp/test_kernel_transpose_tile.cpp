// The transposed-tile loop (codegen/cpu/emit_tiles.cpp): elementwise kernels with inputs read through a transpose,
// against the reference interpreter, bit for bit (the ops are exact), for every dtype, sizes around the tile edges
// (AF_W and 2 AF_W rows, tails along both axes, size-1 and 0-size, rows of several column chunks), a batch axis, two
// transposed inputs, NaN/inf values, poisoned outputs, one and two threads; and that the compiled variant is the tile
// loop when the graph declares the transposed strides (so the first call reuses it).
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "autofuse/runtime/thread_pool.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using kernel_testing::compare;
using kernel_testing::fill_random;
using kernel_testing::TilingRestore;

/// A tensor of `sizes` whose storage has dims `a` and `b` swapped (a transposed view), filled with random values
/// (NaN / inf / -0.0 among the floats). The storage is kept in `keep`.
HostTensor swapped(DType t, std::vector<int64_t> sizes, size_t a, size_t b, std::mt19937_64& rng,
                   std::vector<std::shared_ptr<HostTensor>>& keep) {
  std::vector<int64_t> st_sizes = sizes;
  std::swap(st_sizes[a], st_sizes[b]);
  auto storage = std::make_shared<HostTensor>(HostTensor::empty(t, st_sizes));
  fill_random(*storage, rng, true);
  keep.push_back(storage);
  std::vector<int64_t> strides = storage->strides;
  std::swap(strides[a], strides[b]);
  return HostTensor::view(t, storage->data, sizes, strides);
}

HostTensor contiguous_random(DType t, const std::vector<int64_t>& sizes, std::mt19937_64& rng) {
  HostTensor h = HostTensor::empty(t, sizes);
  fill_random(h, rng, true);
  return h;
}

/// The body of the test graphs: exact ops for the dtype (add / mul, or logical ops on bool).
std::string body(DType t, const std::string& x, const std::string& y) {
  if (t == DType::Bool) return "  %z = logical_xor(" + x + ", " + y + ")\n  return %z\n";
  return "  %p = mul(" + x + ", " + x + ")\n  %z = sub(%p, " + y + ")\n  return %z\n";
}

const std::vector<DType> kDtypes = {DType::Float32, DType::BFloat16, DType::Float16, DType::Float64, DType::Int32,
                                    DType::Int64,   DType::Int8,     DType::UInt8,   DType::Bool};

TEST(KernelTransposeTile, TwoDimensionalEveryDtype) {
  TilingRestore restore;
  std::mt19937_64 rng(kernel_testing::test_seed());
  for (DType t : kDtypes) {
    const std::string T(dtype_name(t));
    Graph g = parse_graph("graph tt(%x: " + T + "[s0, s1], %y: " + T + "[s0, s1] strides [1, s0]) {\n" +
                          body(t, "%x", "%y") + "}");
    auto k = Kernel::compile(g);
    if (k->lanes() >= 4) {
      EXPECT_NE(k->source().find("af_transpose"), std::string::npos) << T;
    }
    for (std::vector<int64_t> sz : {std::vector<int64_t>{16, 16},
                                    {1, 1},
                                    {3, 7},
                                    {8, 16},
                                    {15, 17},
                                    {31, 33},
                                    {32, 32},
                                    {33, 1},
                                    {64, 100},
                                    {100, 64},
                                    {257, 19},
                                    {19, 300},  // column chunks (emit_tiles.cpp): 256 (f32, int8) or 128 (16-bit,
                                    {40, 530},  // 64-bit) columns, then a partial one, ending inside a vector
                                    {0, 5},
                                    {5, 0}}) {
      for (int threads : {1, 2}) {
        set_num_threads(threads);
        std::vector<std::shared_ptr<HostTensor>> keep;
        HostTensor x = contiguous_random(t, sz, rng);
        HostTensor y = swapped(t, sz, 0, 1, rng, keep);
        auto want = interpret(g, {x, y});
        HostTensor out = HostTensor::empty(t, sz);
        fill_random(out, rng, false);  // poisoned: every element must be written
        k->run({x, y}, {out});
        EXPECT_EQ(compare(out, want[0], 0), "") << T << " " << sz[0] << "x" << sz[1] << " threads " << threads;
      }
      // The launch finds the tile axis the declared strides gave the compiled variant: no second compile. (Calls
      // with a size-1 axis are another stride class: the view is contiguous along the vector axis.)
      if (sz == std::vector<int64_t>{16, 16}) {
        EXPECT_EQ(k->num_variants(), 1u) << T;
      }
    }
  }
}

// A batch axis outside the transpose ([b, m, n] read from [b, n, m] storage: stride 1 along axis 1), two transposed
// inputs, a broadcast row and a contiguous input; the graph declares no strides, so the first call compiles the tile
// variant next to the contiguous one.
TEST(KernelTransposeTile, BatchAxisAndTwoTransposedInputs) {
  TilingRestore restore;
  std::mt19937_64 rng(kernel_testing::test_seed() + 1);
  for (DType t : {DType::Float32, DType::BFloat16, DType::Int32}) {
    const std::string T(dtype_name(t));
    Graph g = parse_graph("graph bt(%x: " + T + "[s0, s1, s2], %y: " + T + "[s0, s1, s2], %w: " + T +
                          "[s0, s1, s2], %b: " + T + R"([s2]) {
  %p = mul(%x, %y)
  %q = add(%p, %w)
  %z = sub(%q, %b)
  return %z, %p
})");
    auto k = Kernel::compile(g);
    for (std::vector<int64_t> sz : {std::vector<int64_t>{2, 40, 24}, {3, 17, 5}, {1, 64, 64}, {4, 9, 33}}) {
      for (int threads : {1, 2}) {
        set_num_threads(threads);
        std::vector<std::shared_ptr<HostTensor>> keep;
        HostTensor x = swapped(t, sz, 1, 2, rng, keep);
        HostTensor y = swapped(t, sz, 1, 2, rng, keep);
        HostTensor w = contiguous_random(t, sz, rng);
        HostTensor b = contiguous_random(t, {sz[2]}, rng);
        auto want = interpret(g, {x, y, w, b});
        HostTensor o0 = HostTensor::empty(t, sz), o1 = HostTensor::empty(t, sz);
        fill_random(o0, rng, false);
        fill_random(o1, rng, false);
        k->run({x, y, w, b}, {o0, o1});
        const std::string what = T + " " + std::to_string(sz[0]) + "x" + std::to_string(sz[1]) + "x" +
                                 std::to_string(sz[2]) + " threads " + std::to_string(threads);
        EXPECT_EQ(compare(o0, want[0], 0), "") << what;
        EXPECT_EQ(compare(o1, want[1], 0), "") << what;
      }
    }
    EXPECT_EQ(k->num_variants(), 2u) << T << ": the contiguous variant and the tile (1 lane: lane-by-lane) one";
  }
}

// Every row count along the transposed axis, a tile's worth or two or three rows, runs in the one tile variant (the
// source never depends on the sizes: one compile serves them all); short tiles mask their loads.
TEST(KernelTransposeTile, OneTileVariantForEveryRowCount) {
  TilingRestore restore;
  std::mt19937_64 rng(kernel_testing::test_seed() + 2);
  Graph g = parse_graph(R"(graph s(%x: f32[s0, s1], %y: f32[s0, s1]) {
  %z = add(%x, %y)
  return %z
})");
  auto k = Kernel::compile(g);
  std::vector<std::shared_ptr<HostTensor>> keep;
  for (int64_t rows : {2, 3, 40, 17}) {
    HostTensor x = contiguous_random(DType::Float32, {rows, 50}, rng);
    HostTensor y = swapped(DType::Float32, {rows, 50}, 0, 1, rng, keep);
    auto want = interpret(g, {x, y});
    HostTensor out = HostTensor::empty(DType::Float32, {rows, 50});
    fill_random(out, rng, false);
    k->run({x, y}, {out});
    EXPECT_EQ(compare(out, want[0], 0), "") << rows;
  }
  EXPECT_EQ(k->num_variants(), 2u) << "the contiguous variant, and the tile (or, with 1 lane, lane-by-lane) one";
}

// A kernel that only copies its input (how a transposed view is made contiguous) gets, compiled with the batch, a
// second variant for a strided input: the tile loop over the last two axes, which the launch of a transposed input
// then uses (no compile on the first call).
TEST(KernelTransposeTile, CopyKernelCompilesTheTileVariantWithTheBatch) {
  TilingRestore restore;
  std::mt19937_64 rng(kernel_testing::test_seed() + 3);
  Graph g = parse_graph(R"(graph copy(%x: bf16[s0, s1]) {
  %y = broadcast_to(%x) {shape=[s0, s1]}
  return %y
})");
  auto compiled = Kernel::compile_many({g}, 1);
  ASSERT_EQ(compiled.size(), 1u);
  ASSERT_TRUE(compiled[0].kernel) << "copy kernel failed to compile";
  const Kernel& k = *compiled[0].kernel;
  const size_t variants = k.num_variants();
  std::vector<std::shared_ptr<HostTensor>> keep;
  for (std::vector<int64_t> sz : {std::vector<int64_t>{48, 40}, {7, 300}}) {
    HostTensor x = swapped(DType::BFloat16, sz, 0, 1, rng, keep);
    auto want = interpret(g, {x});
    HostTensor out = HostTensor::empty(DType::BFloat16, sz);
    fill_random(out, rng, false);
    k.run({x}, {out});
    EXPECT_EQ(compare(out, want[0], 0), "") << sz[0] << "x" << sz[1];
  }
  EXPECT_EQ(k.num_variants(), variants) << "the first transposed call compiled a variant of its own";
  if (k.lanes() >= 4) {
    EXPECT_EQ(variants, 2u) << "the contiguous variant and the speculative tile variant";
  }
}

// The copy kernel of a broadcast along the vector axis ([n, 1] -> [n, m], `b.expand(-1, m).clone()`): its speculative
// tile variant has no transposed operand (the input does not vary along the vector axis). Session 27: the chunked
// tile loop read the first transposed operand of an empty list there and the compile crashed (found by review).
TEST(KernelTransposeTile, CopyOfAColumnBroadcastCompilesWithTheBatch) {
  TilingRestore restore;
  std::mt19937_64 rng(kernel_testing::test_seed() + 4);
  Graph g = parse_graph(R"(graph copy(%x: f32[s0, 1]) {
  %y = broadcast_to(%x) {shape=[s0, 17]}
  return %y
})");
  auto compiled = Kernel::compile_many({g}, 1);
  ASSERT_EQ(compiled.size(), 1u);
  ASSERT_TRUE(compiled[0].kernel) << "copy kernel failed to compile";
  for (int64_t n : {1, 129, 300}) {
    HostTensor x = contiguous_random(DType::Float32, {n, 1}, rng);
    auto want = interpret(g, {x});
    HostTensor out = HostTensor::empty(DType::Float32, {n, 17});
    fill_random(out, rng, false);
    compiled[0].kernel->run({x}, {out});
    EXPECT_EQ(compare(out, want[0], 0), "") << n;
  }
}

}  // namespace
}  // namespace autofuse
