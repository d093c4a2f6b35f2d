// Kernels against the reference interpreter where the two used to disagree (review of the IR layer): integer
// constants whose value is a float (converted as eager converts it, exactly, up to int64's range), and a floating prod
// whose running product overflows before a zero (NaN in the kernel, eager and the interpreter: all multiply in f32).
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

// The review's repro (fixrepros/interp_prod_overflow_zero.py): rows of 130 values 30.0 with a zero at 127. The
// running product passes FLT_MAX (30^27) long before the zero in the interpreter's element order and in the
// kernel's lane order (8 or 16 lanes, then across them), so both give NaN (inf * 0), as eager does; the interpreter
// multiplied in f64 before and gave 0. f16 / bf16 rows multiply in f32 in both too; f64 rows do not overflow here.
TEST(KernelProd, OverflowThenZeroIsNaNInKernelAndInterpreter) {
  for (const char* dt : {"f32", "f16", "bf16", "f64"}) {
    Graph g = parse_graph(kernel_testing::with_dtype(
        "graph p(%x: DT[s0, s1]) {\n  %p = prod(%x) {axes=[1], keepdim=false}\n  return %p\n}", dt));
    const DType t = kernel_testing::float_dtype_of(dt);
    HostTensor x = HostTensor::empty(t, {2, 130});
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t c = 0; c < 130; ++c) x.set_double({r, c}, c == 127 ? 0.0 : 30.0);
    auto got = run_kernel(*Kernel::compile(g), {x});
    auto want = interpret(g, {x});
    for (int64_t r = 0; r < 2; ++r) {
      const bool f64 = t == DType::Float64;  // 30^129 = 1.5e190 is finite in f64: the zero gives 0
      EXPECT_EQ(std::isnan(want[0].get_double({r})), !f64) << dt << " interpreter " << want[0].get_double({r});
      EXPECT_EQ(std::isnan(got[0].get_double({r})), !f64) << dt << " kernel " << got[0].get_double({r});
    }
    EXPECT_EQ(compare(got[0], want[0], 0.0), "") << dt;
  }
}

}  // namespace
}  // namespace autofuse
