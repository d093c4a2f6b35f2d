// Kernels against the reference interpreter where the two used to disagree (review of the IR layer): integer
// constants whose value is a float (converted as eager converts it, exactly, up to int64's range).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using kernel_testing::compare;
using kernel_testing::run_kernel;

// Each constant is added to a zero input, so the outputs are the constants as the kernel converts them. Eager's values:
// torch.full((2,), v, dtype=...) (measured, torch 2.13): 2.5 -> 2, -2.5 -> -2, -127.5 -> -127 (i8), 255.0 -> 255 and
// -1 -> 255 (u8), 9.21e18 -> 9210000000000000000 (i64; the kernel's literal was 0 from 9.2e18 up), -2^63 -> -2^63.
TEST(KernelConstant, IntegerDtypesTakeEagersValues) {
  Graph g = parse_graph(R"(graph c(%a: i32[s0], %b: i8[s0], %u: u8[s0], %l: i64[s0]) {
    %c1 = constant() {value=2.5, dtype=i32}
    %c2 = constant() {value=-2.5, dtype=i32}
    %c3 = constant() {value=-127.5, dtype=i8}
    %c4 = full() {value=255.0, dtype=u8, shape=[s0]}
    %c5 = constant() {value=-1, dtype=u8}
    %c6 = constant() {value=9.21e18, dtype=i64}
    %c7 = full() {value=-9.223372036854775808e18, dtype=i64, shape=[s0]}
    %y1 = add(%a, %c1)
    %y2 = add(%a, %c2)
    %y3 = add(%b, %c3)
    %y4 = add(%u, %c4)
    %y5 = add(%u, %c5)
    %y6 = add(%l, %c6)
    %y7 = add(%l, %c7)
    return %y1, %y2, %y3, %y4, %y5, %y6, %y7
  })");
  std::vector<HostTensor> in;
  for (DType t : {DType::Int32, DType::Int8, DType::UInt8, DType::Int64}) {
    in.push_back(HostTensor::empty(t, {19}));  // a whole vector and a tail
    for (int64_t i = 0; i < 19; ++i) in.back().set_int({i}, 0);
  }
  auto got = run_kernel(*Kernel::compile(g), in);
  auto want = interpret(g, in);
  const std::vector<int64_t> eager = {2, -2, -127, 255, 255, 9210000000000000000LL, INT64_MIN};
  ASSERT_EQ(got.size(), eager.size());
  for (size_t o = 0; o < eager.size(); ++o) {
    EXPECT_EQ(compare(got[o], want[o], 0.0), "") << "output " << o;
    for (int64_t i : {int64_t{0}, int64_t{18}}) {
      EXPECT_EQ(got[o].get_int({i}), eager[o]) << "kernel, output " << o;
      EXPECT_EQ(want[o].get_int({i}), eager[o]) << "interpreter, output " << o;
    }
  }
}

}  // namespace
}  // namespace autofuse
