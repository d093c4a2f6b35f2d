// A kernel input read for its sizes only (fusion's size inputs) names no loop size: an iota of length s1 beside a
// size input of shape [s0, s1, s2] writes exactly s1 elements (schedule/loop_nest.cpp step 4). Before, the input's
// dims were mapped right-aligned onto the domain and the iota's axis took the size s2: writes past the output.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "autofuse/codegen/kernel.h"
#include "autofuse/driver/compiled_graph.h"
#include "autofuse/ir/parser.h"

namespace autofuse {
namespace {

constexpr int64_t kGuard = 32;
constexpr int64_t kPoison = -77;

/// Runs `k` on `in` with its single i64 output inside a buffer poisoned on both sides; returns the output values and
/// fails the test if a guard element changed.
std::vector<int64_t> run_guarded(const Kernel& k, const std::vector<HostTensor>& in) {
  auto sizes = k.output_sizes(in);
  EXPECT_EQ(sizes.size(), 1u);
  const int64_t n = sizes[0][0];
  std::vector<int64_t> buf(static_cast<size_t>(n + 2 * kGuard), kPoison);
  HostTensor out = HostTensor::view(DType::Int64, buf.data() + kGuard, {n}, {1});
  k.run(in, {out});
  for (int64_t i = 0; i < kGuard; ++i) {
    EXPECT_EQ(buf[static_cast<size_t>(i)], kPoison) << "write before the output at " << i - kGuard;
    EXPECT_EQ(buf[static_cast<size_t>(kGuard + n + i)], kPoison) << "write past the output at " << n + i;
  }
  return {buf.begin() + kGuard, buf.begin() + kGuard + n};
}

TEST(KernelSizeInputs, IotaLengthFollowsItsSymbolNotTheSizeInputsLastDim) {
  for (int axis = 0; axis < 3; ++axis) {
    const std::string sym = "s" + std::to_string(axis);
    Graph g = parse_graph("graph k(%x: f32[s0, s1, s2]) {\n  %v = iota() {length=" + sym +
                          ", start=0, step=1, dtype=i64} : i64[" + sym + "]\n  return %v\n}\n");
    auto k = Kernel::compile(g);
    for (std::vector<int64_t> shape : {std::vector<int64_t>{5, 3, 4}, {2, 3, 7}, {7, 5, 2}}) {
      HostTensor x = HostTensor::empty(DType::Float32, shape);
      std::vector<int64_t> got = run_guarded(*k, {x});
      ASSERT_EQ(static_cast<int64_t>(got.size()), shape[static_cast<size_t>(axis)]) << sym;
      for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], static_cast<int64_t>(i)) << sym << " at " << i;
    }
  }
}

// Two sizes on one loop axis that are not provably equal (iotas of lengths s0 and s1) cannot share a kernel: one loop
// to s0 wrote s0 elements into the s1-element output (a crash in `autofuse run` with s0=1000, s1=3). The kernel is
// refused with a reason naming both sizes, and the graph driver runs them as two kernels with exact sizes.
TEST(KernelSizeInputs, UnequalSymbolsOnOneAxisAreNotOneKernel) {
  Graph g = parse_graph(
      "graph k(%x: f32[s0, s1]) {\n"
      "  %a = iota() {length=s0, start=0, step=1, dtype=i64} : i64[s0]\n"
      "  %b = iota() {length=s1, start=0, step=1, dtype=i64} : i64[s1]\n"
      "  return %a, %b\n}\n");
  auto why = kernel_unsupported_reason(g);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("not provably equal"), std::string::npos) << *why;
  CompiledGraph cg = CompiledGraph::compile(g);
  for (std::vector<int64_t> shape : {std::vector<int64_t>{1000, 3}, {3, 1000}, {1, 0}}) {
    auto out = cg.run({HostTensor::empty(DType::Float32, shape)});
    ASSERT_EQ(out.size(), 2u);
    for (size_t o = 0; o < 2; ++o) {
      ASSERT_EQ(out[o].sizes, std::vector<int64_t>{shape[o]});
      const auto* p = static_cast<const int64_t*>(out[o].data);
      for (int64_t i = 0; i < shape[o]; ++i) EXPECT_EQ(p[i], i) << "output " << o << " at " << i;
    }
  }
}

}  // namespace
}  // namespace autofuse
