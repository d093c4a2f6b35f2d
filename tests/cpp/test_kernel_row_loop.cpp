// The row loop's index bookkeeping and the interleaved vector steps (codegen/cpu/emit_rows.cpp, session 10):
// - interleaved steps: elementwise kernels emit a loop of 4 vectors per step (statement by statement, names
//   suffixed), then single vectors, then the masked tail; checked at every row length around those boundaries, with
//   an iota (the vector index is renamed per copy), NaN / inf inputs, f32 / f16 / bf16, and permuted, gapped and
//   expanded inputs;
// - the row odometer: a call's rows start at row_begin (a parallel chunk's first row, in the middle of the index
//   space) and advance with carries; checked with several thread counts on layouts whose axes do not merge, for an
//   elementwise kernel (row-major and column-block-major rows) and a softmax row kernel (with its second odometer,
//   the next row's prefetch offsets);
// - unit strides: an operand of unit stride along the vector axis (the variant's stride class) takes the constant 1
//   for that stride, not st[...] (session 17: no per-row stride products), also when the axis has size 1 and any
//   stride, while a strided operand keeps its runtime stride.
// Every result is compared with the reference interpreter.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/parser.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using kernel_testing::expect_matches_interpreter;
using kernel_testing::fill_random;
using kernel_testing::float_dtype_of;
using kernel_testing::Layout;
using kernel_testing::make_tensor;
using kernel_testing::TilingRestore;
using kernel_testing::with_dtype;

// GELU-tanh as GPT-2 writes it in bf16 (rounded casts between the steps), plus an iota term.
const char* kGeluIota = R"(graph gelu(%x: DT[s0, s1]) {
  %xf = cast(%x) {dtype=f32}
  %h = constant() {value=0.5, dtype=f32}
  %c = constant() {value=0.044715, dtype=f32}
  %k = constant() {value=0.7978845608028654, dtype=f32}
  %one = constant() {value=1.0, dtype=f32}
  %x3 = mul(%xf, %xf)
  %x3b = mul(%x3, %xf)
  %t0 = mul(%x3b, %c)
  %t0r = cast(%t0) {dtype=DT}
  %t0f = cast(%t0r) {dtype=f32}
  %t1 = add(%xf, %t0f)
  %t2 = mul(%t1, %k)
  %th = tanh(%t2)
  %t3 = add(%th, %one)
  %hx = mul(%xf, %h)
  %g = mul(%hx, %t3)
  %i = iota() {length=s1, start=3, step=2, dtype=f32}
  %gi = add(%g, %i)
  %y = cast(%gi) {dtype=DT}
  return %y
})";

TEST(KernelRowLoop, InterleavedElementwiseStepsAtEveryLength) {
  for (const std::string dt : {"f32", "bf16", "f16"}) {
    auto k = Kernel::compile(parse_graph(with_dtype(kGeluIota, dt)));
    // The interleaved loop is emitted (4 vectors per step) and its copies renamed (the iota's index too).
    EXPECT_NE(k->source().find("4 * AF_W <= vend"), std::string::npos) << dt;
    EXPECT_NE(k->source().find("_3 = "), std::string::npos) << dt;
    for (int64_t d : {1, 15, 16, 17, 48, 63, 64, 65, 80, 97, 128, 143, 300}) {
      for (Layout l : {Layout::Contiguous, Layout::Permuted, Layout::Gapped, Layout::Expanded}) {
        std::mt19937_64 rng(static_cast<uint64_t>(d) * 31 + static_cast<uint64_t>(l) + dt.size());
        HostTensor x = make_tensor(float_dtype_of(dt), {5, d}, l, rng);
        fill_random(x, rng, /*specials=*/true);
        expect_matches_interpreter(*k, {x},
                                   dt + " d=" + std::to_string(d) + " layout " + std::to_string(static_cast<int>(l)));
      }
    }
  }
}

TEST(KernelRowLoop, RowsStartingMidIndexSpaceWithAnyThreadCount) {
  TilingRestore restore;
  // Elementwise over a 4-d domain whose axes do not merge (x is a permuted view: rows column-block-major when its
  // innermost stride is not 1), and a softmax over the last axis of the same layouts (row odometer + next-row one).
  auto ew = Kernel::compile(parse_graph(R"(graph ew(%x: f32[s0, s1, s2, s3], %b: f32[s2, s3]) {
    %e = exp(%x)
    %y = mul(%e, %b)
    return %y
  })"));
  auto sm = Kernel::compile(parse_graph(R"(graph sm(%x: f32[s0, s1, s2, s3]) {
    %m = amax(%x) {axes=[3], keepdim=true}
    %d = sub(%x, %m)
    %e = exp(%d)
    %s = sum(%e) {axes=[3], keepdim=true}
    %y = div(%e, %s)
    return %y
  })"));
  for (int threads : {1, 2, 3, 5}) {
    set_num_threads(threads);
    for (Layout l : {Layout::Contiguous, Layout::Permuted, Layout::Gapped}) {
      std::mt19937_64 rng(static_cast<uint64_t>(threads) * 7 + static_cast<uint64_t>(l));
      // 5 x 7 x 130 rows of 20: more rows than one parallel chunk's grain, so chunks start mid-index.
      HostTensor x = make_tensor(DType::Float32, {5, 7, 130, 20}, l, rng);
      HostTensor b = make_tensor(DType::Float32, {130, 20}, Layout::Contiguous, rng);
      fill_random(x, rng, /*specials=*/true);
      fill_random(b, rng, false);
      const std::string what = std::to_string(threads) + " threads, layout " + std::to_string(static_cast<int>(l));
      expect_matches_interpreter(*ew, {x, b}, "elementwise, " + what);
      HostTensor xs = make_tensor(DType::Float32, {5, 7, 130, 20}, l, rng);
      fill_random(xs, rng, /*specials=*/true);
      expect_matches_interpreter(*sm, {xs}, "softmax, " + what);
    }
  }
}

TEST(KernelRowLoop, UnitStrideOperandsTakeTheConstantStride) {
  auto k = Kernel::compile(parse_graph(R"(graph ew(%x: f32[s0, s1], %b: f32[s1]) {
    %y = mul(%x, %b)
    return %y
  })"));
  // Operands x (0), b (1), y (2): each varies along the vector axis 1, and the contiguous variant names its stride 1.
  for (const char* k_ : {"s0_1", "s1_1", "s2_1"}) {
    EXPECT_NE(k->source().find(std::string("const int64_t ") + k_ + " = 1;  // unit stride"), std::string::npos) << k_;
    EXPECT_EQ(k->source().find(std::string("const int64_t ") + k_ + " = st["), std::string::npos) << k_;
  }
  // The outer stride of x stays a launch argument.
  EXPECT_NE(k->source().find("const int64_t s0_0 = st["), std::string::npos);
  // Results: contiguous, strided (a permuted x: its own variant, lane by lane), and a vector axis of size 1 with a
  // stride other than 1 (gapped), which runs the unit-stride variant.
  for (int64_t d : {1, 16, 33}) {
    for (Layout l : {Layout::Contiguous, Layout::Permuted, Layout::Gapped}) {
      std::mt19937_64 rng(static_cast<uint64_t>(d) * 5 + static_cast<uint64_t>(l));
      HostTensor x = make_tensor(DType::Float32, {7, d}, l, rng);
      HostTensor b = make_tensor(DType::Float32, {d}, l, rng);
      fill_random(x, rng, /*specials=*/true);
      fill_random(b, rng, false);
      expect_matches_interpreter(*k, {x, b},
                                 "d=" + std::to_string(d) + " layout " + std::to_string(static_cast<int>(l)));
    }
  }
}

}  // namespace
}  // namespace autofuse
