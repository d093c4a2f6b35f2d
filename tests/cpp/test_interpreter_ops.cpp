// The interpreter's elementwise semantics on hand-picked values. Expected values are eager PyTorch 2.13's results
// (checked by hand in Python), asserted exactly.
#include <gtest/gtest.h>

#include "test_interpreter_util.h"

namespace autofuse {
namespace {

using namespace autofuse::testing;

/// Expect bitwise-equal doubles (NaN equals NaN; the sign of zero counts).
void expect_bits(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k)
    EXPECT_TRUE(same_bits(got[k], want[k])) << "element " << k << ": got " << got[k] << ", want " << want[k];
}

TEST(InterpFloat, FloorDivAndRemainderFollowPython) {
  auto a = tensor(DType::Float64, {6}, {5, -5, 5, -0.0, 1, -1});
  auto b = tensor(DType::Float64, {6}, {-2, 2, 0, 3, kInf, kInf});
  expect_bits(values(run_op(OpKind::FloorDiv, {a, b})), {-3, -3, kInf, -0.0, 0, -1});
  auto ra = tensor(DType::Float32, {6}, {5, -5, -1, 1, 0, -0.0});
  auto rb = tensor(DType::Float32, {6}, {-2, 2, kInf, -kInf, -2, 2});
  expect_bits(values(run_op(OpKind::Remainder, {ra, rb})), {-1, 1, kInf, -kInf, 0, -0.0});
}

TEST(InterpFloat, FmodKeepsTheDividendSign) {
  auto a = tensor(DType::Float32, {4}, {5, -5, 1, kInf});
  auto b = tensor(DType::Float32, {4}, {0, 3, kInf, 2});
  expect_bits(values(run_op(OpKind::Fmod, {a, b})), {kNaN, -2, 1, kNaN});
}

TEST(InterpFloat, MaximumPropagatesNaNFmaxIgnoresIt) {
  auto a = tensor(DType::Float32, {4}, {kNaN, 1, kNaN, -0.0});
  auto b = tensor(DType::Float32, {4}, {1, kNaN, kNaN, 0.0});
  expect_bits(values(run_op(OpKind::Maximum, {a, b})), {kNaN, kNaN, kNaN, 0.0});
  expect_bits(values(run_op(OpKind::Minimum, {a, b})), {kNaN, kNaN, kNaN, -0.0});
  // fmax/fmin keep the first operand on a tie of signed zeros, as eager does (torch.fmax(-0.0, 0.0) is -0.0).
  expect_bits(values(run_op(OpKind::Fmax, {a, b})), {1, 1, kNaN, -0.0});
  expect_bits(values(run_op(OpKind::Fmin, {a, b})), {1, 1, kNaN, -0.0});
  expect_bits(values(run_op(OpKind::Fmax, {b, a})), {1, 1, kNaN, 0.0});
  // Order of the signed zeros does not matter (IEEE 754-2019 maximum/minimum).
  expect_bits(values(run_op(OpKind::Maximum, {b, a})), {kNaN, kNaN, kNaN, 0.0});
  expect_bits(values(run_op(OpKind::Minimum, {b, a})), {kNaN, kNaN, kNaN, -0.0});
}

TEST(InterpFloat, UnaryHardValues) {
  auto x = tensor(DType::Float32, {5}, {0.5, 1.5, 2.5, -0.5, -2.5});
  expect_bits(values(run_op(OpKind::Round, {x})), {0, 2, 2, -0.0, -2});
  auto s = tensor(DType::Float32, {5}, {kNaN, -0.0, 0.0, -3, kInf});
  expect_bits(values(run_op(OpKind::Sign, {s})), {0, 0, 0, -1, 1});
  expect_bits(values(run_op(OpKind::Relu, {s})), {kNaN, 0, 0, 0, kInf});
  auto inf = tensor(DType::Float32, {3}, {kInf, -kInf, kNaN});
  expect_bits(values(run_op(OpKind::Sigmoid, {inf})), {1, 0, kNaN});
  expect_bits(values(run_op(OpKind::Tanh, {inf})), {1, -1, kNaN});
  expect_bits(values(run_op(OpKind::Erf, {inf})), {1, -1, kNaN});
  auto z = tensor(DType::Float32, {4}, {0.0, -0.0, -1, kInf});
  expect_bits(values(run_op(OpKind::Rsqrt, {z})), {kInf, -kInf, kNaN, 0});
  expect_bits(values(run_op(OpKind::Reciprocal, {z})), {kInf, -kInf, -1, 0});
  expect_bits(values(run_op(OpKind::Log, {z})), {-kInf, -kInf, kNaN, kInf});
}

TEST(InterpFloat, PredicatesAndLogic) {
  auto x = tensor(DType::Float16, {4}, {kNaN, kInf, -0.0, 2});
  EXPECT_EQ(ivalues(run_op(OpKind::IsNan, {x})), (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(ivalues(run_op(OpKind::IsInf, {x})), (std::vector<int64_t>{0, 1, 0, 0}));
  EXPECT_EQ(ivalues(run_op(OpKind::IsFinite, {x})), (std::vector<int64_t>{0, 0, 1, 1}));
  // NaN is truthy, -0.0 is not.
  EXPECT_EQ(ivalues(run_op(OpKind::LogicalNot, {x})), (std::vector<int64_t>{0, 0, 1, 0}));
  auto y = tensor(DType::Float16, {4}, {0, 0, 0, kNaN});
  EXPECT_EQ(ivalues(run_op(OpKind::LogicalXor, {x, y})), (std::vector<int64_t>{1, 1, 0, 0}));
  EXPECT_EQ(ivalues(run_op(OpKind::Ne, {x, x})), (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(ivalues(run_op(OpKind::Le, {x, y})), (std::vector<int64_t>{0, 0, 1, 0}));
}

TEST(InterpFloat, HalfRoundsAfterEachOp) {
  // 2048 + 1 is a tie in f16 (spacing 2 above 2048) and rounds to even; bf16 keeps 8 significant bits.
  auto a = tensor(DType::Float16, {2}, {2048, 2048});
  auto b = tensor(DType::Float16, {2}, {1, 3});
  expect_bits(values(run_op(OpKind::Add, {a, b})), {2048, 2052});
  auto big = tensor(DType::Float16, {1}, {65504});
  expect_bits(values(run_op(OpKind::Add, {big, big})), {kInf});
  auto c = tensor(DType::BFloat16, {1}, {256});
  auto d = tensor(DType::BFloat16, {1}, {1});
  expect_bits(values(run_op(OpKind::Add, {c, d})), {256});
  // Division result rounded to f32: 1/3.
  auto one = tensor(DType::Float32, {1}, {1}), three = tensor(DType::Float32, {1}, {3});
  expect_bits(values(run_op(OpKind::Div, {one, three})), {static_cast<double>(1.0f / 3.0f)});
}

TEST(InterpFloat, PowAndAtan2SpecialCases) {
  auto a = tensor(DType::Float64, {5}, {-8, 0, kNaN, 1, 2});
  auto b = tensor(DType::Float64, {5}, {1.0 / 3.0, -1, 0, kNaN, 10});
  expect_bits(values(run_op(OpKind::Pow, {a, b})), {kNaN, kInf, 1, 1, 1024});
  auto y = tensor(DType::Float64, {4}, {0.0, -0.0, 0.0, -0.0});
  auto x = tensor(DType::Float64, {4}, {-0.0, -0.0, 0.0, 0.0});
  expect_bits(values(run_op(OpKind::Atan2, {y, x})), {M_PI, -M_PI, 0.0, -0.0});
}

TEST(InterpInt, FloorDivRemainderFmodWithNegativeOperands) {
  auto a = itensor(DType::Int32, {7, -7, 7, -7, -128});
  auto b = itensor(DType::Int32, {2, 2, -2, -2, -1});
  EXPECT_EQ(ivalues(run_op(OpKind::FloorDiv, {a, b})), (std::vector<int64_t>{3, -4, -4, 3, 128}));
  EXPECT_EQ(ivalues(run_op(OpKind::Remainder, {a, b})), (std::vector<int64_t>{1, 1, -1, -1, 0}));
  EXPECT_EQ(ivalues(run_op(OpKind::Fmod, {a, b})), (std::vector<int64_t>{1, -1, 1, -1, 0}));
  // The most negative int8 divided by -1 wraps, as eager does.
  auto m = itensor(DType::Int8, {-128}), n1 = itensor(DType::Int8, {-1});
  EXPECT_EQ(ivalues(run_op(OpKind::FloorDiv, {m, n1})), (std::vector<int64_t>{-128}));
  // In i64 the same division traps in C++ (and in eager); the interpreter gives the wrapped result instead.
  auto lmin = itensor(DType::Int64, {INT64_MIN, INT64_MIN}), lm1 = itensor(DType::Int64, {-1, -1});
  EXPECT_EQ(ivalues(run_op(OpKind::FloorDiv, {lmin, lm1})), (std::vector<int64_t>{INT64_MIN, INT64_MIN}));
  EXPECT_EQ(ivalues(run_op(OpKind::Remainder, {lmin, lm1})), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(ivalues(run_op(OpKind::Fmod, {lmin, lm1})), (std::vector<int64_t>{0, 0}));
}

TEST(InterpInt, DivisionByZeroNamesTheNode) {
  for (OpKind op : {OpKind::FloorDiv, OpKind::Remainder, OpKind::Fmod}) {
    auto a = itensor(DType::Int64, {5, -5}), b = itensor(DType::Int64, {1, 0});
    try {
      run_op(op, {a, b});
      FAIL() << "expected IRError for " << op_info(op).name;
    } catch (const IRError& e) {
      EXPECT_EQ(std::string(e.what()), "%y = " + std::string(op_info(op).name) +
                                           "(%a, %b): integer division by zero (eager raises ZeroDivisionError)");
    }
  }
}

TEST(InterpInt, WrapAroundAndAbsOfMinimum) {
  auto a = itensor(DType::Int32, {2147483647, -2147483647 - 1, 65536});
  auto b = itensor(DType::Int32, {1, -1, 65536});
  EXPECT_EQ(ivalues(run_op(OpKind::Add, {a, b})), (std::vector<int64_t>{-2147483647 - 1, 2147483647, 131072}));
  EXPECT_EQ(ivalues(run_op(OpKind::Mul, {a, b})), (std::vector<int64_t>{2147483647, -2147483647 - 1, 0}));
  auto m = itensor(DType::Int8, {-128, -5, 5});
  EXPECT_EQ(ivalues(run_op(OpKind::Abs, {m})), (std::vector<int64_t>{-128, 5, 5}));
  EXPECT_EQ(ivalues(run_op(OpKind::Neg, {m})), (std::vector<int64_t>{-128, 5, -5}));
  auto u = itensor(DType::UInt8, {1, 0, 200});
  EXPECT_EQ(ivalues(run_op(OpKind::Neg, {u})), (std::vector<int64_t>{255, 0, 56}));
  EXPECT_EQ(ivalues(run_op(OpKind::Sign, {u})), (std::vector<int64_t>{1, 0, 1}));
  auto i64 = itensor(DType::Int64, {INT64_MAX, INT64_MIN});
  auto one = itensor(DType::Int64, {1, 1});
  EXPECT_EQ(ivalues(run_op(OpKind::Add, {i64, one})), (std::vector<int64_t>{INT64_MIN, INT64_MIN + 1}));
}

TEST(InterpInt, ShiftsOutOfRangeFollowEager) {
  auto a = itensor(DType::Int32, {1, -1, 3, -8, 8, -8});
  auto b = itensor(DType::Int32, {31, 32, 40, 31, 32, -1});
  EXPECT_EQ(ivalues(run_op(OpKind::Shl, {a, b})), (std::vector<int64_t>{-2147483647 - 1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(ivalues(run_op(OpKind::Shr, {a, b})), (std::vector<int64_t>{0, -1, 0, -1, 0, -1}));
  auto i8 = itensor(DType::Int8, {1, -1, 3}), s8 = itensor(DType::Int8, {7, 8, -1});
  EXPECT_EQ(ivalues(run_op(OpKind::Shl, {i8, s8})), (std::vector<int64_t>{-128, 0, 0}));
  auto u = itensor(DType::UInt8, {200, 200, 200, 200}), su = itensor(DType::UInt8, {7, 8, 9, 255});
  EXPECT_EQ(ivalues(run_op(OpKind::Shr, {u, su})), (std::vector<int64_t>{1, 0, 0, 0}));
  auto l = itensor(DType::Int64, {1, 1, -1, 5}), sl = itensor(DType::Int64, {63, 64, 64, -1});
  EXPECT_EQ(ivalues(run_op(OpKind::Shl, {l, sl})), (std::vector<int64_t>{INT64_MIN, 0, 0, 0}));
  EXPECT_EQ(ivalues(run_op(OpKind::Shr, {l, sl})), (std::vector<int64_t>{0, 0, -1, 0}));
}

TEST(InterpInt, PowWithNegativeExponentsAndWrap) {
  auto a = itensor(DType::Int64, {2, 1, -1, -1, 0, 3});
  auto b = itensor(DType::Int64, {-1, -2, -3, -2, -1, 4});
  EXPECT_EQ(ivalues(run_op(OpKind::Pow, {a, b})), (std::vector<int64_t>{0, 1, -1, 1, 0, 81}));
  auto u = itensor(DType::UInt8, {2, 3}), e = itensor(DType::UInt8, {9, 255});
  EXPECT_EQ(ivalues(run_op(OpKind::Pow, {u, e})), (std::vector<int64_t>{0, 171}));
}

TEST(InterpBool, LogicAndBitwise) {
  auto a = itensor(DType::Bool, {1, 1, 0, 0}), b = itensor(DType::Bool, {1, 0, 1, 0});
  EXPECT_EQ(ivalues(run_op(OpKind::Mul, {a, b})), (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(ivalues(run_op(OpKind::BitwiseNot, {a})), (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(ivalues(run_op(OpKind::BitwiseXor, {a, b})), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(ivalues(run_op(OpKind::Maximum, {a, b})), (std::vector<int64_t>{1, 1, 1, 0}));
  auto i = itensor(DType::Int16, {5, -1});
  EXPECT_EQ(ivalues(run_op(OpKind::BitwiseNot, {i})), (std::vector<int64_t>{-6, 0}));
}

TEST(InterpCast, FloatToIntegerFollowsX86Eager) {
  auto x = tensor(DType::Float32, {6}, {kNaN, kInf, -kInf, 300, -1, -2.9});
  EXPECT_EQ(ivalues(run_op(OpKind::Cast, {x}, {{"dtype", DType::Int32}})),
            (std::vector<int64_t>{INT32_MIN, INT32_MIN, INT32_MIN, 300, -1, -2}));
  EXPECT_EQ(ivalues(run_op(OpKind::Cast, {x}, {{"dtype", DType::Int8}})), (std::vector<int64_t>{0, 0, 0, 44, -1, -2}));
  EXPECT_EQ(ivalues(run_op(OpKind::Cast, {x}, {{"dtype", DType::UInt8}})),
            (std::vector<int64_t>{0, 0, 0, 44, 255, 254}));
  EXPECT_EQ(ivalues(run_op(OpKind::Cast, {x}, {{"dtype", DType::Int64}})),
            (std::vector<int64_t>{INT64_MIN, INT64_MIN, INT64_MIN, 300, -1, -2}));
  EXPECT_EQ(ivalues(run_op(OpKind::Cast, {x}, {{"dtype", DType::Bool}})), (std::vector<int64_t>{1, 1, 1, 1, 1, 1}));
  auto h = tensor(DType::Float16, {2}, {65504, 3e9});  // 3e9 is inf in f16
  EXPECT_EQ(ivalues(run_op(OpKind::Cast, {h}, {{"dtype", DType::Int8}})), (std::vector<int64_t>{-32, 0}));
}

TEST(InterpCast, IntegerToFloatRoundsOnce) {
  // 2^53 + 1 is not a double; int64 -> f32 rounds directly (to 2^53), f64 rounds to even (2^53).
  auto x = itensor(DType::Int64, {(int64_t{1} << 53) + 1, (int64_t{1} << 24) + 1, -3});
  expect_bits(values(run_op(OpKind::Cast, {x}, {{"dtype", DType::Float32}})), {9007199254740992.0, 16777216, -3});
  auto b = itensor(DType::Int32, {2049, 257});
  expect_bits(values(run_op(OpKind::Cast, {b}, {{"dtype", DType::Float16}})), {2048, 257});
  expect_bits(values(run_op(OpKind::Cast, {b}, {{"dtype", DType::BFloat16}})), {2048, 256});
  auto big = itensor(DType::Int64, {300, -129});
  EXPECT_EQ(ivalues(run_op(OpKind::Cast, {big}, {{"dtype", DType::Int8}})), (std::vector<int64_t>{44, 127}));
}

TEST(InterpSelect, WhereAndClamp) {
  auto c = itensor(DType::Bool, {1, 0, 1});
  auto a = tensor(DType::Float32, {3}, {1, 2, 3}), b = tensor(DType::Float32, {1}, {-1});
  expect_bits(values(run_op(OpKind::Where, {c, a, b})), {1, -1, 3});
  auto x = tensor(DType::Float32, {3}, {kNaN, 1, 5});
  expect_bits(values(run_op(OpKind::Clamp, {x}, {{"min", Scalar::of_float(2)}, {"max", Scalar::of_float(1)}})),
              {kNaN, 1, 1});
  expect_bits(values(run_op(OpKind::Clamp, {x}, {{"min", Scalar::of_float(kNaN)}})), {kNaN, kNaN, kNaN});
  expect_bits(values(run_op(OpKind::Clamp, {x}, {{"max", Scalar::of_int(3)}})), {kNaN, 1, 3});
  auto i = itensor(DType::Int32, {-5, 0, 7});
  EXPECT_EQ(ivalues(run_op(OpKind::Clamp, {i}, {{"min", Scalar::of_int(-1)}, {"max", Scalar::of_int(4)}})),
            (std::vector<int64_t>{-1, 0, 4}));
  // Bounds convert to the dtype first, as eager's kernel does: -2 as u8 is 254.
  auto u = itensor(DType::UInt8, {0, 255});
  EXPECT_EQ(ivalues(run_op(OpKind::Clamp, {u}, {{"min", Scalar::of_int(-2)}})), (std::vector<int64_t>{254, 255}));
}

TEST(InterpSources, ConstantFullIota) {
  Graph g("src");
  ValueId c = g.add(OpKind::Constant, {}, {{"value", Scalar::of_float(0.1)}, {"dtype", DType::Float16}}, "c");
  ValueId f =
      g.add(OpKind::Full, {}, {{"value", Scalar::of_int(-1)}, {"dtype", DType::UInt8}, {"shape", Shape{2, 3}}}, "f");
  ValueId i =
      g.add(OpKind::Iota, {},
            {{"length", Expr(4)}, {"start", int64_t{5}}, {"step", int64_t{-2}}, {"dtype", DType::Float32}}, "i");
  g.set_outputs({c, f, i});
  auto out = interpret(g, {});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(out[0].sizes.empty());
  expect_bits(values(out[0]), {static_cast<double>(half_bits_to_float(float_to_half_bits(0.1f)))});
  EXPECT_EQ(out[1].sizes, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ivalues(out[1]), (std::vector<int64_t>(6, 255)));
  expect_bits(values(out[2]), {5, 3, 1, -1});
}

}  // namespace
}  // namespace autofuse
