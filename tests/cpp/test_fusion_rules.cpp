// Fusion rules and refusal reasons on graphs built with the builder API (the IR-text goldens are in
// test_fusion_golden.cpp).
#include <gtest/gtest.h>

#include <algorithm>

#include "autofuse/fusion/cost.h"
#include "autofuse/fusion/fusion.h"

namespace autofuse {
namespace {

Expr S(const char* n) { return Expr::sym(n); }

int count_kind(const FusedGraph& f, GroupKind k) {
  return static_cast<int>(
      std::count_if(f.groups.begin(), f.groups.end(), [&](const FusionGroup& g) { return g.kind == k; }));
}

ValueId cf(Graph& g, double v) { return g.constant(Scalar::of_float(v), DType::Float32); }

TEST(FusionRules, ByteFiguresSaturateInsteadOfOverflowing) {
  // a size near INT64_MAX made the report's byte figures negative (the session-4 review)
  Graph g("huge");
  ValueId x = g.add_input("x", DType::Float32, {Expr(INT64_MAX), Expr(2)});
  ValueId y = g.add(OpKind::Exp, {x});
  g.set_outputs({y});
  EXPECT_EQ(value_bytes(g, x, {}), kMaxValueBytes);
  FusedGraph f = fuse(g);
  EXPECT_GT(f.report.total_bytes_fused, 0);
  EXPECT_LE(f.report.total_bytes_fused, 2 * kMaxValueBytes);
  Graph small("small");
  ValueId z = small.add_input("z", DType::Float32, {Expr(3), Expr(5)});
  EXPECT_EQ(value_bytes(small, z, {}), 60);
}

TEST(FusionRules, ElementwiseChainIsOneKernel) {
  Graph g("chain");
  ValueId x = g.add_input("x", DType::Float32, {S("s0"), S("s1")});
  ValueId b = g.add_input("b", DType::Float32, {S("s1")});
  ValueId a = g.add(OpKind::Add, {x, b});
  ValueId r = g.add(OpKind::Relu, {a});
  ValueId m = g.add(OpKind::Mul, {r, cf(g, 2.0)});
  g.set_outputs({m});
  FusedGraph f = fuse(g);
  ASSERT_EQ(f.num_kernels(), 1) << f.str();
  const FusionGroup& k = f.groups[0];
  EXPECT_EQ(k.inputs, (std::vector<ValueId>{x, b}));
  EXPECT_EQ(k.outputs, (std::vector<ValueId>{m}));
  EXPECT_FALSE(k.space.has_reduce);
  EXPECT_EQ(k.subgraph.inputs().size(), 2u);
  // Unfused: add reads x, b, writes a; relu reads a, writes; mul reads, writes. Fused: x, b in, m out.
  int64_t full = 1024 * 1024 * 4, row = 1024 * 4;
  EXPECT_EQ(k.bytes_fused, full + row + full);
  EXPECT_EQ(k.bytes_unfused, (full + row + full) + 2 * full + 2 * full);
  EXPECT_EQ(f.report.bytes_saved(), 4 * full);
  EXPECT_EQ(f.report.merges.size(), 2u);
}

TEST(FusionRules, SoftmaxIsOneKernelReducingTheRow) {
  Graph g("softmax");
  ValueId x = g.add_input("x", DType::Float32, {S("s0"), S("s1")});
  ValueId m = g.reduce(OpKind::Amax, x, {-1}, true);
  ValueId d = g.add(OpKind::Sub, {x, m});
  ValueId e = g.add(OpKind::Exp, {d});
  ValueId s = g.reduce(OpKind::Sum, e, {-1}, true);
  ValueId o = g.add(OpKind::Div, {e, s});
  g.set_outputs({o});
  FusedGraph f = fuse(g);
  ASSERT_EQ(f.num_kernels(), 1) << f.str();
  EXPECT_TRUE(f.groups[0].space.has_reduce);
  EXPECT_EQ(f.groups[0].space.reduce_axes, (std::vector<int64_t>{1}));
  EXPECT_EQ(f.groups[0].inputs, (std::vector<ValueId>{x}));
  EXPECT_TRUE(f.report.refusals.empty()) << f.report.str();
}

TEST(FusionRules, ColumnSumsAfterRowSumsRunAcrossRows) {
  // Row sums, then sums over the rows of a full value: one kernel with a cross-row reduction over axis 0.
  Graph g("rows_then_cols");
  ValueId x = g.add_input("x", DType::Float32, {S("s0"), S("s1")});
  ValueId rs = g.reduce(OpKind::Sum, x, {1}, true);
  ValueId y = g.add(OpKind::Sub, {x, rs});
  ValueId cs = g.reduce(OpKind::Sum, y, {0}, true);
  g.set_outputs({cs});
  FusedGraph f = fuse(g);
  ASSERT_EQ(f.num_kernels(), 1) << f.str();
  EXPECT_EQ(f.groups[0].space.reduce_axes, (std::vector<int64_t>{1}));
  EXPECT_EQ(f.groups[0].space.outer_axes, (std::vector<int64_t>{0}));
  EXPECT_TRUE(f.report.refusals.empty()) << f.report.str();
}

TEST(FusionRules, DifferentReductionAxesAreRefused) {
  // The column sums feed back into per-element values: not an epilogue, so two kernels, and the refusal says why.
  Graph g("rows_then_cols_back");
  ValueId x = g.add_input("x", DType::Float32, {S("s0"), S("s1")});
  ValueId rs = g.reduce(OpKind::Sum, x, {1}, true);
  ValueId y = g.add(OpKind::Sub, {x, rs});
  ValueId cs = g.reduce(OpKind::Sum, y, {0}, true);
  ValueId z = g.add(OpKind::Sub, {y, cs});
  g.set_outputs({z});
  FusedGraph f = fuse(g);
  EXPECT_EQ(f.num_kernels(), 2) << f.str();
  ASSERT_TRUE(f.report.refused_with(nf::kReduceAxes)) << f.report.str();
  bool named = false;
  for (const auto& r : f.report.refusals)
    named |= r.code == nf::kReduceAxes && r.message.find("axes [0]") != std::string::npos &&
             r.message.find("[1]") != std::string::npos;
  EXPECT_TRUE(named) << f.report.str();
}

TEST(FusionRules, ExternIsItsOwnStepAndNoCycleThroughIt) {
  // a = exp(x); m = extern(a); out = a + m: fusing exp with the add would need the extern inside the kernel.
  Graph g("cycle");
  ValueId x = g.add_input("x", DType::Float32, {S("s0"), S("s1")});
  ValueId a = g.add(OpKind::Exp, {x});
  ValueId m = g.add(OpKind::Extern, {a},
                    {{"name", std::string("aten.mm")}, {"dtype", DType::Float32}, {"shape", Shape{S("s0"), S("s1")}}});
  ValueId o = g.add(OpKind::Add, {a, m});
  g.set_outputs({o});
  FusedGraph f = fuse(g);
  EXPECT_EQ(f.num_kernels(), 2) << f.str();
  EXPECT_EQ(count_kind(f, GroupKind::Extern), 1);
  EXPECT_TRUE(f.report.refused_with(nf::kCycle)) << f.report.str();
  EXPECT_TRUE(f.report.refused_with(nf::kExtern)) << f.report.str();
  // Topological order: exp kernel, extern, add kernel.
  ASSERT_EQ(f.groups.size(), 3u);
  EXPECT_EQ(f.groups[0].kind, GroupKind::Kernel);
  EXPECT_EQ(f.groups[1].kind, GroupKind::Extern);
  EXPECT_EQ(f.groups[2].kind, GroupKind::Kernel);
  EXPECT_EQ(f.groups[0].outputs, (std::vector<ValueId>{a}));
}

TEST(FusionRules, LayoutOpIsAHostStep) {
  Graph g("perm");
  ValueId x = g.add_input("x", DType::Float32, {S("s0"), S("s1")});
  ValueId e = g.add(OpKind::Exp, {x});
  ValueId p = g.add(OpKind::Permute, {e}, {{"dims", std::vector<int64_t>{1, 0}}});
  ValueId n = g.add(OpKind::Neg, {p});
  g.set_outputs({n});
  FusedGraph f = fuse(g);
  EXPECT_EQ(f.num_kernels(), 2);
  EXPECT_EQ(count_kind(f, GroupKind::Host), 1);
  EXPECT_TRUE(f.report.refused_with(nf::kLayout));
}

TEST(FusionRules, DroppedKeptValueMeetingFullValueIsRefused) {
  Graph g("kept_mix");
  ValueId x = g.add_input("x", DType::Float32, {S("s0"), S("s0")});
  ValueId s = g.reduce(OpKind::Sum, x, {1}, false);  // [s0], lives in the kept domain
  ValueId y = g.add(OpKind::Add, {x, s});            // right-aligned: pairs s with axis 1
  g.set_outputs({y});
  FusedGraph f = fuse(g);
  EXPECT_EQ(f.num_kernels(), 2) << f.str();
  EXPECT_TRUE(f.report.refused_with(nf::kKeptMix)) << f.report.str();
}

TEST(FusionRules, SizeCapIsRespected) {
  Graph g("long_chain");
  ValueId v = g.add_input("x", DType::Float32, {S("s0")});
  for (int i = 0; i < 10; ++i) v = g.add(OpKind::Exp, {v});
  g.set_outputs({v});
  FusionOptions o;
  o.max_group_nodes = 4;
  FusedGraph f = fuse(g, o);
  EXPECT_EQ(f.num_kernels(), 3) << f.str();
  for (const auto& k : f.groups) EXPECT_LE(k.nodes.size(), 4u);
  EXPECT_TRUE(f.report.refused_with(nf::kSize));
}

TEST(FusionRules, InputCapIsRespected) {
  Graph g("many_inputs");
  ValueId acc = g.add_input("x0", DType::Float32, {S("s0")});
  for (int i = 1; i < 6; ++i)
    acc = g.add(OpKind::Add, {acc, g.add_input("x" + std::to_string(i), DType::Float32, {S("s0")})});
  g.set_outputs({acc});
  FusionOptions o;
  o.max_group_inputs = 3;
  FusedGraph f = fuse(g, o);
  EXPECT_GT(f.num_kernels(), 1);
  for (const auto& k : f.groups) EXPECT_LE(k.inputs.size(), 3u);
  EXPECT_TRUE(f.report.refused_with(nf::kInputs));
}

TEST(FusionRules, HorizontalSiblingsShareTheirInput) {
  Graph g("two_sums");
  ValueId x = g.add_input("x", DType::Float32, {S("s0"), S("s1")});
  ValueId a = g.reduce(OpKind::Sum, x, {1}, true);
  ValueId sq = g.add(OpKind::Mul, {x, x});
  ValueId b = g.reduce(OpKind::Sum, sq, {1}, true);
  g.set_outputs({a, b});
  FusedGraph f = fuse(g);
  ASSERT_EQ(f.num_kernels(), 1) << f.str();
  EXPECT_EQ(f.groups[0].outputs, (std::vector<ValueId>{a, b}));
  FusionOptions o;
  o.horizontal = false;
  EXPECT_EQ(fuse(g, o).num_kernels(), 2);
}

TEST(FusionRules, CheapValueIsRecomputedExpensiveOneMaterialized) {
  // c = cast(x) feeds two kernels separated by an extern: it is duplicated into both; e = exp(x) is materialized.
  Graph g("recompute");
  ValueId x = g.add_input("x", DType::Float16, {S("s0"), S("s1")});
  ValueId c = g.cast(x, DType::Float32);
  ValueId mm = g.add(OpKind::Extern, {c},
                     {{"name", std::string("aten.mm")}, {"dtype", DType::Float32}, {"shape", Shape{S("s0"), S("s1")}}});
  ValueId y = g.add(OpKind::Add, {mm, c});
  g.set_outputs({y});
  FusedGraph f = fuse(g);
  // The extern reads c, so c has a home kernel; the add recomputes c from x instead of reading it.
  ASSERT_EQ(f.num_kernels(), 2) << f.str();
  const FusionGroup& last = f.groups.back();
  EXPECT_EQ(last.inputs, (std::vector<ValueId>{x, mm})) << f.str();
  EXPECT_FALSE(last.recomputed.empty());

  Graph h("materialize");
  ValueId x2 = h.add_input("x", DType::Float32, {S("s0"), S("s1")});
  ValueId e = h.add(OpKind::Exp, {x2});
  ValueId mm2 =
      h.add(OpKind::Extern, {e},
            {{"name", std::string("aten.mm")}, {"dtype", DType::Float32}, {"shape", Shape{S("s0"), S("s1")}}});
  ValueId y2 = h.add(OpKind::Add, {mm2, e});
  h.set_outputs({y2});
  FusedGraph f2 = fuse(h);
  ASSERT_EQ(f2.num_kernels(), 2);
  EXPECT_EQ(f2.groups.back().inputs, (std::vector<ValueId>{e, mm2}));
  EXPECT_TRUE(f2.report.refused_with(nf::kRecompute)) << f2.report.str();
}

TEST(FusionRules, CodegenVerdictIsHonoured) {
  Graph g("veto");
  ValueId x = g.add_input("x", DType::Float32, {S("s0")});
  ValueId a = g.add(OpKind::Exp, {x});
  ValueId b = g.add(OpKind::Log, {a});
  g.set_outputs({b});
  FusionOptions o;
  o.kernel_check = [](const Graph& sub) -> std::optional<std::string> {
    if (sub.size() > 2) return "test veto: more than one op";
    return std::nullopt;
  };
  FusedGraph f = fuse(g, o);
  EXPECT_EQ(f.num_kernels(), 2);
  EXPECT_TRUE(f.report.refused_with(nf::kCodegen)) << f.report.str();
}

TEST(FusionRules, DeadNodesAreDroppedAndOutputsOfInputsWork) {
  Graph g("dead");
  ValueId x = g.add_input("x", DType::Float32, {S("s0")});
  g.add(OpKind::Exp, {x});
  ValueId n = g.add(OpKind::Neg, {x});
  g.set_outputs({n, x});
  FusedGraph f = fuse(g);
  ASSERT_EQ(f.num_kernels(), 1);
  EXPECT_EQ(f.groups[0].nodes, (std::vector<ValueId>{n}));
}

TEST(FusionRules, KernelLearnsEverySizeFromItsInputs) {
  // The broadcast of a [s1] bias to [s0, s1] is a kernel of its own: it reads the bias, and x only for s0.
  Graph g("size_inputs");
  ValueId x = g.add_input("x", DType::Float32, {S("s0"), S("s1")});
  ValueId bias = g.add_input("bias", DType::Float32, {S("s1")});
  ValueId b = g.add(OpKind::BroadcastTo, {bias}, {{"shape", Shape{S("s0"), S("s1")}}});
  ValueId mm = g.add(OpKind::Extern, {x},
                     {{"name", std::string("aten.mm")}, {"dtype", DType::Float32}, {"shape", Shape{S("s0"), S("s1")}}});
  g.set_outputs({b, mm});
  FusedGraph f = fuse(g);
  ASSERT_EQ(f.num_kernels(), 1) << f.str();
  const FusionGroup& k = f.groups[0].kind == GroupKind::Kernel ? f.groups[0] : f.groups[1];
  EXPECT_EQ(k.size_inputs, (std::vector<ValueId>{x}));
  EXPECT_EQ(k.inputs, (std::vector<ValueId>{x, bias}));
  EXPECT_EQ(k.bytes_fused, 1024 * 4 + 1024 * 1024 * 4);  // x is not read: bias in, the broadcast out
}

TEST(FusionRules, BroadcastOutputGetsAHomeKernel) {
  Graph g("bcast_out");
  ValueId x = g.add_input("x", DType::Float32, {S("s1")});
  ValueId b = g.add(OpKind::BroadcastTo, {x}, {{"shape", Shape{S("s0"), S("s1")}}});
  ValueId e = g.add(OpKind::Exp, {b});
  g.set_outputs({b, e});
  FusedGraph f = fuse(g);
  ASSERT_EQ(f.num_kernels(), 1) << f.str();
  EXPECT_EQ(f.groups[0].outputs, (std::vector<ValueId>{b, e}));
}

}  // namespace
}  // namespace autofuse
