// The interpreter's driver (symbol binding, strided inputs and outputs, errors), layout ops and reductions, on
// hand-picked cases with exact expected values.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "test_interpreter_util.h"

namespace autofuse {
namespace {

using namespace autofuse::testing;

Expr S(const char* n) { return Expr::sym(n); }

TEST(InterpBind, BindsSymbolsAndSolvesLinearSizes) {
  Graph g("b");
  ValueId x = g.add_input("x", DType::Float32, {S("s0"), S("s1")});
  ValueId y = g.add_input("y", DType::Float32, {S("s0") * Expr(2) + Expr(1)});
  ValueId z = g.add_input("z", DType::Float32, {S("s2") * Expr(3)});
  g.set_outputs({x, y, z});
  auto b = bind_symbols(g, {HostTensor::empty(DType::Float32, {4, 5}), HostTensor::empty(DType::Float32, {9}),
                            HostTensor::empty(DType::Float32, {12})});
  EXPECT_EQ(b, (Bindings{{"s0", 4}, {"s1", 5}, {"s2", 4}}));
  EXPECT_EQ(output_sizes(g, b), (std::vector<std::vector<int64_t>>{{4, 5}, {9}, {12}}));

  EXPECT_EQ(error_of([&] {
              bind_symbols(g, {HostTensor::empty(DType::Float32, {4, 5}), HostTensor::empty(DType::Float32, {8}),
                               HostTensor::empty(DType::Float32, {12})});
            }),
            "input %y: dim 0 has size 8, expected 2*s0 + 1 = 9");
  EXPECT_EQ(error_of([&] {
              bind_symbols(g, {HostTensor::empty(DType::Float32, {4, 5}), HostTensor::empty(DType::Float32, {9}),
                               HostTensor::empty(DType::Float32, {13})});
            }),
            "size symbol s2 is not determined by the input sizes; input %z dim 0 is 3*s2 (size 13), which does not "
            "determine it (a bare symbol or k*s2 + c with a whole solution >= 0 would)");
  EXPECT_EQ(error_of([&] {
              bind_symbols(g, {HostTensor::empty(DType::Float32, {4, 5})});
            }),
            "graph b takes 3 inputs, got 1");
  // A constant size is named once: "expected 8", not "expected 8 = 8".
  Graph c("c");
  c.set_outputs({c.add_input("w", DType::Float32, {Expr(8)})});
  EXPECT_EQ(error_of([&] { bind_symbols(c, {HostTensor::empty(DType::Float32, {7})}); }),
            "input %w: dim 0 has size 7, expected 8");
}

TEST(InterpBind, RejectsRankDtypeAndSymbolConflicts) {
  Graph g("c");
  ValueId x = g.add_input("x", DType::Float32, {S("s0"), S("s0")});
  g.set_outputs({x});
  EXPECT_EQ(error_of([&] {
              bind_symbols(g, {HostTensor::empty(DType::Float32, {3, 4})});
            }),
            "input %x: dim 1 binds s0 = 4, but it is already 3");
  EXPECT_EQ(error_of([&] {
              bind_symbols(g, {HostTensor::empty(DType::Float16, {3, 3})});
            }),
            "input %x: expected dtype f32, got f16");
  EXPECT_NE(
      error_of([&] { bind_symbols(g, {HostTensor::empty(DType::Float32, {3})}); }).find("input %x: expected rank 2"),
      std::string::npos);
}

TEST(InterpDriver, StridedAndExpandedInputsAndStridedOutputs) {
  // x is a transposed view of a 2x3 buffer; y is a row broadcast with stride 0.
  std::vector<float> buf = {1, 2, 3, 4, 5, 6};
  HostTensor x = HostTensor::view(DType::Float32, buf.data(), {3, 2}, {1, 3});
  std::vector<float> row = {10, 20};
  HostTensor y = HostTensor::view(DType::Float32, row.data(), {3, 2}, {0, 1});
  Graph g("s");
  ValueId a = g.add_input("x", DType::Float32, {S("m"), S("n")});
  ValueId b = g.add_input("y", DType::Float32, {S("m"), S("n")});
  ValueId c = g.add(OpKind::Add, {a, b}, {}, "c");
  g.set_outputs({c});
  auto out = interpret(g, {x, y});
  EXPECT_TRUE(out[0].is_contiguous());
  EXPECT_EQ(values(out[0]), (std::vector<double>{11, 24, 12, 25, 13, 26}));

  // Write into a column-major output.
  std::vector<float> obuf(6, -1);
  HostTensor o = HostTensor::view(DType::Float32, obuf.data(), {3, 2}, {1, 3});
  interpret_into(g, {x, y}, {o});
  EXPECT_EQ(obuf, (std::vector<float>{11, 12, 13, 24, 25, 26}));
  HostTensor wrong = HostTensor::empty(DType::Float32, {2, 3});
  EXPECT_EQ(error_of([&] {
              interpret_into(g, {x, y}, {wrong});
            }),
            "output 0 (%c): expected f32[3, 2], got f32[2, 3] strides [3, 1]");
}

TEST(InterpDriver, ZeroDimAndZeroSizeTensors) {
  auto s = tensor(DType::Float64, {}, {2.5});
  auto v = tensor(DType::Float64, {3}, {1, 2, 3});
  EXPECT_EQ(values(run_op(OpKind::Mul, {s, v})), (std::vector<double>{2.5, 5, 7.5}));
  EXPECT_EQ(values(run_op(OpKind::Mul, {s, s})), (std::vector<double>{6.25}));
  auto e = HostTensor::empty(DType::Float32, {0, 4});
  auto r = run_op(OpKind::Exp, {e});
  EXPECT_EQ(r.sizes, (std::vector<int64_t>{0, 4}));
  auto sum = run_op(OpKind::Sum, {e}, {{"axes", std::vector<int64_t>{0}}, {"keepdim", false}});
  EXPECT_EQ(values(sum), (std::vector<double>{0, 0, 0, 0}));
  auto prod = run_op(OpKind::Prod, {e}, {{"axes", std::vector<int64_t>{}}, {"keepdim", true}});
  EXPECT_EQ(prod.sizes, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(values(prod), (std::vector<double>{1}));
  auto amax_inner = run_op(OpKind::Amax, {e}, {{"axes", std::vector<int64_t>{1}}, {"keepdim", false}});
  EXPECT_EQ(amax_inner.sizes, (std::vector<int64_t>{0}));
}

TEST(InterpDriver, ExternIsRefused) {
  Graph g("e");
  ValueId x = g.add_input("x", DType::Float32, {Expr(2)});
  ValueId y = g.add(OpKind::Extern, {x},
                    {{"name", std::string("aten.mm")}, {"dtype", DType::Float32}, {"shape", Shape{2}}}, "y");
  g.set_outputs({y});
  EXPECT_EQ(error_of([&] { interpret(g, {HostTensor::empty(DType::Float32, {2})}); }),
            "%y = extern(%x): extern call 'aten.mm' cannot be run by the reference interpreter");
}

TEST(InterpLayout, BroadcastReshapePermuteSliceConcat) {
  auto x = tensor(DType::Int32, {2, 3}, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(ivalues(run_op(OpKind::Permute, {x}, {{"dims", std::vector<int64_t>{1, 0}}})),
            (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  auto r = run_op(OpKind::Reshape, {x}, {{"shape", Shape{3, 2}}});
  EXPECT_EQ(r.sizes, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(ivalues(r), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  auto col = tensor(DType::Int32, {2, 1}, {7, 8});
  EXPECT_EQ(ivalues(run_op(OpKind::BroadcastTo, {col}, {{"shape", Shape{2, 2, 3}}})),
            (std::vector<int64_t>{7, 7, 7, 8, 8, 8, 7, 7, 7, 8, 8, 8}));
  auto sl =
      run_op(OpKind::Slice, {x}, {{"axis", int64_t{-1}}, {"start", Expr(0)}, {"stop", Expr(3)}, {"step", int64_t{2}}});
  EXPECT_EQ(sl.sizes, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ivalues(sl), (std::vector<int64_t>{0, 2, 3, 5}));
  auto cat = run_op(OpKind::Concat, {x, col}, {{"axis", int64_t{1}}});
  EXPECT_EQ(ivalues(cat), (std::vector<int64_t>{0, 1, 2, 7, 3, 4, 5, 8}));
}

TEST(InterpLayout, SliceBoundsAreCheckedAtRunTime) {
  Graph g("sl");
  ValueId x = g.add_input("x", DType::Float32, {S("n")});
  ValueId y = g.add(OpKind::Slice, {x},
                    {{"axis", int64_t{0}}, {"start", Expr(2)}, {"stop", S("n")}, {"step", int64_t{1}}}, "y");
  g.set_outputs({y});
  EXPECT_EQ(interpret(g, {HostTensor::empty(DType::Float32, {5})})[0].sizes, (std::vector<int64_t>{3}));
  EXPECT_NE(error_of([&] { interpret(g, {HostTensor::empty(DType::Float32, {1})}); }).find("%y"), std::string::npos);
}

TEST(InterpReduce, SumProdMeanOverAxesWithKeepdim) {
  std::vector<double> v(24);
  std::iota(v.begin(), v.end(), 0.0);
  auto x = tensor(DType::Float64, {2, 3, 4}, v);
  auto s = run_op(OpKind::Sum, {x}, {{"axes", std::vector<int64_t>{0, 2}}, {"keepdim", true}});
  EXPECT_EQ(s.sizes, (std::vector<int64_t>{1, 3, 1}));
  // Row j: sum over i, k of 12i + 4j + k = 2*(4*4j + 6) + 4*12 = 32j + 60.
  EXPECT_EQ(values(s), (std::vector<double>{60, 92, 124}));
  auto m = run_op(OpKind::Mean, {x}, {{"axes", std::vector<int64_t>{-1}}, {"keepdim", false}});
  EXPECT_EQ(values(m), (std::vector<double>{1.5, 5.5, 9.5, 13.5, 17.5, 21.5}));
  auto all = run_op(OpKind::Sum, {x}, {{"axes", std::vector<int64_t>{}}, {"keepdim", false}});
  EXPECT_TRUE(all.sizes.empty());
  EXPECT_EQ(values(all), (std::vector<double>{276}));
  auto p = run_op(OpKind::Prod, {tensor(DType::Float32, {2, 2}, {1, 2, 3, 4})},
                  {{"axes", std::vector<int64_t>{0}}, {"keepdim", false}});
  EXPECT_EQ(values(p), (std::vector<double>{3, 8}));
}

// A floating prod multiplies in the compute type, once rounded per element in element order, as kernels do (the
// review: in f64, a row that overflows f32 and holds a zero was 0 here, NaN in the kernel and in eager).
TEST(InterpReduce, ProdMultipliesInTheComputeType) {
  auto prod_all = [](const HostTensor& x) {
    return values(run_op(OpKind::Prod, {x}, {{"axes", std::vector<int64_t>{}}, {"keepdim", false}}))[0];
  };
  std::vector<double> row(130, 30.0);
  row[127] = 0.0;
  EXPECT_TRUE(std::isnan(prod_all(tensor(DType::Float32, {130}, row))));  // 30^27 > FLT_MAX, then inf * 0
  row.assign(10, 60000.0);  // 60000^8 > FLT_MAX; each value exact in f16 and near it in bf16
  row[9] = 0.0;
  EXPECT_TRUE(std::isnan(prod_all(tensor(DType::Float16, {10}, row))));
  EXPECT_TRUE(std::isnan(prod_all(tensor(DType::BFloat16, {10}, row))));
  EXPECT_EQ(prod_all(tensor(DType::Float64, {10}, row)), 0.0);  // 60000^9 is finite in f64
  // Overflow that comes back into range stays inf in f32, and is undone in f64.
  const std::vector<double> back = {1e30, 1e30, 1e-30, 1e-30};
  EXPECT_EQ(prod_all(tensor(DType::Float32, {4}, back)), kInf);
  EXPECT_EQ(prod_all(tensor(DType::Float64, {4}, back)), 1e30 * 1e30 * 1e-30 * 1e-30);
  // Rounded once per step in f32: 64 factors 1 + 2^-12 (the f64 product rounded once differs).
  float p = 1;
  for (int i = 0; i < 64; ++i) p *= 1.0f + 0x1p-12f;
  const double once = static_cast<float>(std::pow(1.0 + 0x1p-12, 64));
  ASSERT_NE(static_cast<double>(p), once);
  EXPECT_EQ(prod_all(tensor(DType::Float32, {64}, std::vector<double>(64, 1.0 + 0x1p-12))), static_cast<double>(p));
}

TEST(InterpReduce, IntegerSumWidensAndWraps) {
  auto x = itensor(DType::Int32, {2147483647, 2147483647, 2});
  auto s = run_op(OpKind::Sum, {x}, {{"axes", std::vector<int64_t>{}}, {"keepdim", false}});
  EXPECT_EQ(s.dtype, DType::Int64);
  EXPECT_EQ(ivalues(s), (std::vector<int64_t>{4294967296}));
  auto big = itensor(DType::Int64, {INT64_MAX, 1});
  EXPECT_EQ(ivalues(run_op(OpKind::Sum, {big}, {{"axes", std::vector<int64_t>{}}, {"keepdim", false}})),
            (std::vector<int64_t>{INT64_MIN}));
  auto b = itensor(DType::Bool, {1, 1, 0, 1});
  EXPECT_EQ(ivalues(run_op(OpKind::Sum, {b}, {{"axes", std::vector<int64_t>{}}, {"keepdim", false}})),
            (std::vector<int64_t>{3}));
}

TEST(InterpReduce, AmaxArgmaxNaNAndTies) {
  auto x = tensor(DType::Float32, {2, 4}, {1, kNaN, 3, kNaN, 2, 5, 5, -1});
  const Attrs ax1{{"axes", std::vector<int64_t>{1}}, {"keepdim", false}};
  auto amax = values(run_op(OpKind::Amax, {x}, ax1));
  EXPECT_TRUE(std::isnan(amax[0]));
  EXPECT_EQ(amax[1], 5);
  EXPECT_EQ(ivalues(run_op(OpKind::Argmax, {x}, ax1)), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(ivalues(run_op(OpKind::Argmin, {x}, ax1)), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(ivalues(run_op(OpKind::Argmax, {x}, {{"axes", std::vector<int64_t>{}}, {"keepdim", false}})),
            (std::vector<int64_t>{1}));
  auto i = itensor(DType::Int8, {3, -7, 3, -7});
  EXPECT_EQ(ivalues(run_op(OpKind::Argmin, {i}, {{"axes", std::vector<int64_t>{0}}, {"keepdim", true}})),
            (std::vector<int64_t>{1}));
}

TEST(InterpReduce, EmptyReductions) {
  auto e = HostTensor::empty(DType::Float32, {0});
  const Attrs all{{"axes", std::vector<int64_t>{}}, {"keepdim", false}};
  EXPECT_TRUE(std::isnan(values(run_op(OpKind::Mean, {e}, all))[0]));
  EXPECT_EQ(ivalues(run_op(OpKind::Any, {e}, all)), (std::vector<int64_t>{0}));
  EXPECT_EQ(ivalues(run_op(OpKind::All, {e}, all)), (std::vector<int64_t>{1}));
  for (OpKind op : {OpKind::Amax, OpKind::Amin, OpKind::Argmax, OpKind::Argmin})
    EXPECT_EQ(error_of([&] { run_op(op, {e}, all); }),
              "%y = " + std::string(op_info(op).name) +
                  "(%a): reduction over zero elements has no identity (eager raises: expected a non-empty "
                  "reduction dim)");
}

TEST(InterpReduce, VarWithCorrection) {
  auto x = tensor(DType::Float64, {4}, {1, 2, 3, 4});
  auto var = [&](const HostTensor& t, int64_t c) {
    return values(
        run_op(OpKind::Var, {t}, {{"axes", std::vector<int64_t>{}}, {"keepdim", false}, {"correction", c}}))[0];
  };
  EXPECT_DOUBLE_EQ(var(x, 1), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(var(x, 0), 1.25);
  EXPECT_TRUE(std::isnan(var(tensor(DType::Float64, {1}, {1}), 1)));  // 0 / 0
  EXPECT_EQ(var(tensor(DType::Float64, {2}, {1, 2}), 3), kInf);       // 0.5 / max(0, -1)
  EXPECT_TRUE(std::isnan(var(tensor(DType::Float64, {2}, {kInf, 1}), 1)));
}

TEST(InterpReduce, AnyAllTreatNaNAsTrue) {
  auto x = tensor(DType::Float32, {2, 2}, {kNaN, 0, 0, 0});
  const Attrs ax1{{"axes", std::vector<int64_t>{1}}, {"keepdim", false}};
  EXPECT_EQ(ivalues(run_op(OpKind::Any, {x}, ax1)), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(ivalues(run_op(OpKind::All, {tensor(DType::Float32, {2}, {kNaN, 1})},
                           {{"axes", std::vector<int64_t>{}}, {"keepdim", false}})),
            (std::vector<int64_t>{1}));
}

TEST(InterpDriver, MultiNodeGraphFreesIntermediatesAndKeepsOutputs) {
  // softmax over the last axis, written as the front end would: amax, sub, exp, sum, div; also output the max.
  Graph g("softmax");
  ValueId x = g.add_input("x", DType::Float32, {S("s0"), S("s1")});
  ValueId m = g.reduce(OpKind::Amax, x, {1}, true);
  ValueId d = g.add(OpKind::Sub, {x, m});
  ValueId e = g.add(OpKind::Exp, {d});
  ValueId s = g.reduce(OpKind::Sum, e, {1}, true);
  ValueId y = g.add(OpKind::Div, {e, s});
  g.set_outputs({y, m});
  auto out = interpret(g, {tensor(DType::Float32, {2, 2}, {0, 0, 1, 1000})});
  EXPECT_EQ(values(out[0]), (std::vector<double>{0.5, 0.5, 0, 1}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{0, 1000}));
}

}  // namespace
}  // namespace autofuse
