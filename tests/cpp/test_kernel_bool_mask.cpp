// where() on a boolean tensor read from memory, for every lane width of the select (af_mask in af_kernel.inc: 4-byte
// lanes compare the bytes first, 8-byte and 1-byte lanes widen first): results must equal the interpreter's, for row
// lengths with and without a vector tail, a mask broadcast over the leading dims (the causal attention mask) and
// inside a softmax row kernel.
#include <gtest/gtest.h>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "kernel_test_util.h"

using namespace autofuse;
using kernel_testing::compare;
using kernel_testing::default_tolerance;
using kernel_testing::fill_random;
using kernel_testing::Layout;
using kernel_testing::make_tensor;
using kernel_testing::run_kernel;

namespace {

void check(const std::string& text, const std::vector<std::vector<int64_t>>& sizes) {
  const Graph g = parse_graph(text);
  auto k = Kernel::compile(g);
  auto rng = kernel_testing::seeded_rng();
  std::vector<HostTensor> in;
  for (size_t i = 0; i < sizes.size(); ++i) {
    in.push_back(make_tensor(g.node(g.inputs()[i]).dtype, sizes[i], Layout::Contiguous, rng));
    fill_random(in.back(), rng, /*specials=*/false);
  }
  const auto got = run_kernel(*k, in);
  const auto want = interpret(g, in);
  for (size_t o = 0; o < got.size(); ++o) {
    const std::string diff = compare(got[o], want[o], default_tolerance(got[o].dtype));
    EXPECT_TRUE(diff.empty()) << text << "\n" << diff;
  }
}

}  // namespace

TEST(KernelBoolMask, WhereOfEveryLaneWidthMatchesInterpreter) {
  for (const char* dt : {"f32", "bf16", "f16", "i32", "f64", "i64", "u8"}) {
    for (int64_t n : {16, 37, 128}) {
      const std::string t = std::string(dt);
      check("graph g(%m: bool[s0, s1], %a: " + t + "[s0, s1], %b: " + t +
                "[s0, s1]) {\n  %r = where(%m, %a, %b) : " + t + "[s0, s1]\n  return %r\n}\n",
            {{5, n}, {5, n}, {5, n}});
    }
  }
}

TEST(KernelBoolMask, BroadcastCausalMaskInSoftmaxMatchesInterpreter) {
  for (const char* dt : {"f32", "bf16", "f64"}) {
    const std::string t = dt;
    check("graph g(%m: bool[1, 1, s1, s1], %x: " + t + "[s0, 2, s1, s1]) {\n" + "  %z = constant() {value=0.0, dtype=" +
              t + "} : " + t + "[]\n" + "  %lo = constant() {value=-1.0e30, dtype=" + t + "} : " + t + "[]\n" +
              "  %w = where(%m, %z, %lo) : " + t + "[1, 1, s1, s1]\n" + "  %y = add(%x, %w) : " + t +
              "[s0, 2, s1, s1]\n" + "  %mx = amax(%y) {axes=[3], keepdim=true} : " + t + "[s0, 2, s1, 1]\n" +
              "  %d = sub(%y, %mx) : " + t + "[s0, 2, s1, s1]\n" + "  %e = exp(%d) : " + t + "[s0, 2, s1, s1]\n" +
              "  %s = sum(%e) {axes=[3], keepdim=true} : " + t + "[s0, 2, s1, 1]\n" + "  %r = div(%e, %s) : " + t +
              "[s0, 2, s1, s1]\n" + "  return %r\n}\n",
          {{1, 1, 40, 40}, {3, 2, 40, 40}});
  }
}
