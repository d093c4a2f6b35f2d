// The shared symbol-binding steps (ir/bind_symbols.h) that the interpreter, kernel launches and the compile-time check
// all use: conflicts, unbound symbols, sizes 0 and 1, symbols only in strides, floordiv / mod forms, trial check.
#include <gtest/gtest.h>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/bind_symbols.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "test_interpreter_util.h"

namespace autofuse {
namespace {

using autofuse::testing::error_of;

/// The ShapeArgs of g's inputs against `sizes` (one vector per input; must outlive the result's use).
std::vector<ShapeArg> args_of(const Graph& g, const std::vector<std::vector<int64_t>>& sizes) {
  std::vector<ShapeArg> a;
  const auto ins = g.inputs();
  for (size_t i = 0; i < ins.size(); ++i) a.push_back(ShapeArg{&g.node(ins[i]), &sizes[i]});
  return a;
}

const char* kForms = R"(graph f(%x: f32[s0, 2*s1 + 1], %y: f32[s1 - 2, floordiv(s0, 2), mod(s0, 3)]) {
  %z = neg(%y)
  return %z
})";

TEST(BindSymbols, BareThenLinearThenChecksEveryDim) {
  Graph g = parse_graph(kForms);
  const std::vector<std::vector<int64_t>> ok = {{7, 11}, {3, 3, 1}};
  EXPECT_EQ(bind_shape_symbols(args_of(g, ok), nullptr), (Bindings{{"s0", 7}, {"s1", 5}}));
  // floordiv / mod forms never bind, but they are checked once their symbols are bound.
  const std::vector<std::vector<int64_t>> bad_div = {{7, 11}, {3, 4, 1}};
  EXPECT_EQ(error_of([&] { bind_shape_symbols(args_of(g, bad_div), nullptr); }),
            "input %y: dim 1 has size 4, expected floordiv(s0, 2) = 3");
  const std::vector<std::vector<int64_t>> bad_mod = {{7, 11}, {3, 3, 2}};
  EXPECT_EQ(error_of([&] { bind_shape_symbols(args_of(g, bad_mod), nullptr); }),
            "input %y: dim 2 has size 2, expected mod(s0, 3) = 1");
  // s1 - 2 and 2*s1 + 1 disagree: the first solved form binds, the other is checked.
  const std::vector<std::vector<int64_t>> conflict = {{7, 11}, {4, 3, 1}};
  EXPECT_EQ(error_of([&] { bind_shape_symbols(args_of(g, conflict), nullptr); }),
            "input %y: dim 0 has size 4, expected s1 - 2 = 3");
}

TEST(BindSymbols, ConflictingBareSymbolsNameTheInputAndDim) {
  Graph g = parse_graph(R"(graph c(%a: f32[s0, 4], %b: f32[3, s0]) {
    %z = add(%a, %a)
    return %z
  })");
  const std::vector<std::vector<int64_t>> sizes = {{5, 4}, {3, 6}};
  EXPECT_EQ(error_of([&] { bind_shape_symbols(args_of(g, sizes), nullptr); }),
            "input %b: dim 1 binds s0 = 6, but it is already 5");
}

TEST(BindSymbols, SizesZeroAndOneBindLikeOthers) {
  Graph g = parse_graph(kForms);
  // s0 = 0: floordiv(0, 2) = 0 and mod(0, 3) = 0 are checked; s1 - 2 = 0 agrees with 2*s1 + 1 = 5.
  const std::vector<std::vector<int64_t>> zero = {{0, 5}, {0, 0, 0}};
  EXPECT_EQ(bind_shape_symbols(args_of(g, zero), nullptr), (Bindings{{"s0", 0}, {"s1", 2}}));
  const std::vector<std::vector<int64_t>> one = {{1, 7}, {1, 0, 1}};
  EXPECT_EQ(bind_shape_symbols(args_of(g, one), nullptr), (Bindings{{"s0", 1}, {"s1", 3}}));
  // 2*s1 + 1 = 4 has no whole solution: s1 stays unbound, and a null `need` makes the first dim using it an error.
  Graph odd = parse_graph(R"(graph o(%x: f32[1, 2*s1 + 1]) {
    %z = neg(%x)
    return %z
  })");
  const std::vector<std::vector<int64_t>> even = {{1, 4}};
  const std::string e = error_of([&] { bind_shape_symbols(args_of(odd, even), nullptr); });
  EXPECT_EQ(e.rfind("size symbol s1 is not determined by the input sizes; input %x dim 1 is 2*s1 + 1 (size 4)", 0), 0u)
      << e;
  const std::vector<std::vector<int64_t>> one_elem = {{1, 1}};
  EXPECT_EQ(bind_shape_symbols(args_of(odd, one_elem), nullptr), (Bindings{{"s1", 0}}));
}

TEST(BindSymbols, UnboundSymbolsOnlyMatterWhenNeeded) {
  Graph g = parse_graph(R"(graph h(%x: f32[2, s0 - floordiv(s0, 2)], %w: f32[s2] strides [s3]) {
    %z = neg(%x)
    return %z
  })");
  const std::vector<std::vector<int64_t>> sizes = {{2, 5}, {9}};
  const auto args = args_of(g, sizes);
  // Only s2 binds; with need = {s2} the half-size dim is skipped, not checked.
  const std::set<std::string> need_s2 = {"s2"};
  EXPECT_EQ(bind_shape_symbols(args, &need_s2), (Bindings{{"s2", 9}}));
  const std::set<std::string> need_s0 = {"s0"};
  EXPECT_EQ(error_of([&] { bind_shape_symbols(args, &need_s0); }),
            "size symbol s0 is not determined by the input sizes; input %x dim 1 is s0 - floordiv(s0, 2) (size 5), "
            "which does not determine it (a bare symbol or k*s0 + c with a whole solution >= 0 would)");
  const std::set<std::string> need_s3 = {"s3"};
  EXPECT_EQ(error_of([&] { bind_shape_symbols(args, &need_s3); }),
            "size symbol s3 is not determined by the input sizes; no input's size uses it");
  // The interpreter needs s0 (node shapes) but not s3 (only an input's strides hint).
  EXPECT_EQ(symbols_needed_to_run(g), (std::set<std::string>{"s0", "s2"}));
  EXPECT_NE(error_of([&] {
              bind_symbols(g, {HostTensor::empty(DType::Float32, {2, 5}), HostTensor::empty(DType::Float32, {9})});
            }).find("size symbol s0 is not determined"),
            std::string::npos);
}

TEST(BindSymbols, InterpreterIgnoresSymbolsOnlyInStrides) {
  Graph g = parse_graph(R"(graph s(%x: f32[3, s0] strides [s1, 1]) {
    %z = neg(%x)
    return %z
  })");
  std::vector<float> buf(3 * 8, 1.0f);
  HostTensor x = HostTensor::view(DType::Float32, buf.data(), {3, 5}, {8, 1});
  EXPECT_EQ(bind_symbols(g, {x}), (Bindings{{"s0", 5}}));
  EXPECT_FALSE(unbound_symbol_reason(g, symbols_needed_to_run(g)).has_value());
}

TEST(BindSymbols, TrialCheckFindsWhatALaunchCannotBind) {
  Graph g = parse_graph(R"(graph t(%x: f32[s0, s1 - floordiv(s1, 2)], %y: f32[3*s2 + 1]) {
    %z = neg(%x)
    return %z
  })");
  EXPECT_FALSE(unbound_symbol_reason(g, {"s0", "s2"}).has_value());
  auto why = unbound_symbol_reason(g, {"s0", "s1"});
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why,
            "size symbol s1 is not determined by the input sizes; input %x dim 1 is s1 - floordiv(s1, 2), which does "
            "not determine it (a bare symbol or k*s1 + c with a whole solution >= 0 would)");
  EXPECT_FALSE(unbound_symbol_reason(g, {}).has_value());
}

// A kernel launch binds with the same steps and prefixes its name; a concat kernel needs only its output and width
// symbols, so a symbol only in an input's strides (a sliced q under dynamic shapes) no longer refuses it.
TEST(BindSymbols, KernelsShareTheSteps) {
  auto k = Kernel::compile(parse_graph(R"(graph k(%x: f32[s0, s0]) {
    %z = neg(%x)
    return %z
  })"));
  EXPECT_EQ(error_of([&] {
              k->output_sizes({HostTensor::empty(DType::Float32, {3, 4})});
            }),
            "kernel k: input %x: dim 1 binds s0 = 4, but it is already 3");
  Graph rot = parse_graph(R"(graph r(%q: f32[4, s0] strides [s1, 1], %lo: f32[4, s0 - floordiv(s0, 2)],
                                    %hi: f32[4, floordiv(s0, 2)]) {
    %n = neg(%lo)
    %c = concat(%n, %hi) {axis=1}
    %z = add(%q, %c)
    return %z
  })");
  auto kc = Kernel::compile(rot);
  EXPECT_EQ(kc->num_segments(), 2u);
  std::vector<float> qb(4 * 10), lo(4 * 3), hi(4 * 2), out(4 * 5, 0.0f);
  for (size_t i = 0; i < qb.size(); ++i) qb[i] = static_cast<float>(i);
  for (size_t i = 0; i < lo.size(); ++i) lo[i] = static_cast<float>(100 + i);
  for (size_t i = 0; i < hi.size(); ++i) hi[i] = static_cast<float>(200 + i);
  std::vector<HostTensor> in = {HostTensor::view(DType::Float32, qb.data(), {4, 5}, {10, 1}),
                                HostTensor::view(DType::Float32, lo.data(), {4, 3}, {3, 1}),
                                HostTensor::view(DType::Float32, hi.data(), {4, 2}, {2, 1})};
  EXPECT_EQ(kc->output_sizes(in), (std::vector<std::vector<int64_t>>{{4, 5}}));
  kc->run(in, {HostTensor::view(DType::Float32, out.data(), {4, 5}, {5, 1})});
  const std::vector<HostTensor> want = interpret(rot, in);
  const float* w = static_cast<const float*>(want[0].data);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], w[i]) << "element " << i;
}

// A backward kernel under dynamic shapes (review finding, session 8: nn.Linear on a 3-d input, dynamic=True): its
// only input is the flattened [s0*s1, 32], its outputs need s0 and s1 apart (broadcast back to [s0, s1, 32]) or only
// their product (a column sum, an outer reduction). Both compile; the caller gives s0 and s1.
TEST(BindSymbols, KernelsTakeSymbolsOnlyAProductDetermines) {
  Graph bc = parse_graph(R"(graph k0(%view: f32[s0*s1, 4], %t: f32[]) {
    %v2 = broadcast_to(%t) {shape=[s0, s1, 4]}
    return %v2
  })");
  auto k0 = Kernel::compile(bc);
  EXPECT_EQ(k0->given_symbols(), (std::vector<std::string>{"s0", "s1"}));
  std::vector<float> flat(6 * 4), t = {2.5f}, out(2 * 3 * 4, -1.0f);
  for (size_t i = 0; i < flat.size(); ++i) flat[i] = static_cast<float>(i);
  std::vector<HostTensor> in = {HostTensor::view(DType::Float32, flat.data(), {6, 4}, {4, 1}),
                                HostTensor::view(DType::Float32, t.data(), {}, {})};
  const Bindings given{{"s0", 2}, {"s1", 3}, {"s9", 7}};  // others are ignored
  EXPECT_EQ(k0->output_sizes(in, &given), (std::vector<std::vector<int64_t>>{{2, 3, 4}}));
  EXPECT_THROW(k0->output_sizes(in), IRError);
  for (int rep = 0; rep < 2; ++rep) {  // a second call: no cached launch replays a stale binding
    const Bindings g2{{"s0", rep == 0 ? 2 : 3}, {"s1", rep == 0 ? 3 : 2}};
    std::vector<int64_t> sz = rep == 0 ? std::vector<int64_t>{2, 3, 4} : std::vector<int64_t>{3, 2, 4};
    std::fill(out.begin(), out.end(), -1.0f);
    k0->run(in, {HostTensor::view(DType::Float32, out.data(), sz, {sz[1] * 4, 4, 1})}, &g2);
    for (float v : out) EXPECT_EQ(v, 2.5f);
  }
  const Bindings wrong{{"s0", 4}, {"s1", 3}};  // 12 rows, the input has 6
  EXPECT_THROW(k0->run(in, {HostTensor::view(DType::Float32, out.data(), {4, 3, 4}, {12, 4, 1})}, &wrong), IRError);

  Graph colsum = parse_graph(R"(graph k1(%v3: f32[s0*s1, 4]) {
    %v8 = sum(%v3) {axes=[0], keepdim=false}
    return %v8
  })");
  auto k1 = Kernel::compile(colsum);
  EXPECT_EQ(k1->given_symbols(), (std::vector<std::string>{"s0", "s1"}));
  std::vector<float> sums(4, -1.0f);
  k1->run({in[0]}, {HostTensor::view(DType::Float32, sums.data(), {4}, {1})}, &given);
  for (int c = 0; c < 4; ++c) {
    float want = 0;
    for (int r = 0; r < 6; ++r) want += flat[static_cast<size_t>(r * 4 + c)];
    EXPECT_EQ(sums[static_cast<size_t>(c)], want) << "column " << c;
  }
}

// A SymInt argument's symbol in an input size (review 16c: x[:n] reads [s0 + 9], x[n:] reads [-s0]; n < 0): the
// build-time trial (positive values) finds the size determines s0, but solving it finds only s0 >= 0. A value the
// caller gives is taken as given and the size checked against it.
TEST(BindSymbols, KernelsTakeAGivenSymbolInsteadOfSolvingForIt) {
  Graph g = parse_graph(R"(graph k(%a: f32[s0 + 9]) {
    %m = add(%a, %a)
    return %m
  })");
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, out(6, -1.0f);
  const std::vector<HostTensor> in = {HostTensor::view(DType::Float32, a.data(), {6}, {1})};
  const std::vector<HostTensor> outs = {HostTensor::view(DType::Float32, out.data(), {6}, {1})};
  auto fresh = Kernel::compile(g);
  EXPECT_TRUE(fresh->given_symbols().empty());
  const Bindings wrong{{"s0", -2}};
  EXPECT_NE(error_of([&] { fresh->run(in, outs, &wrong); }).find("dim 0 has size 6, expected s0 + 9 = 7"),
            std::string::npos);
  auto k = Kernel::compile(g);
  EXPECT_NE(error_of([&] { k->run(in, outs); }).find("size symbol s0 is not determined"), std::string::npos);
  const Bindings given{{"s0", -3}, {"s9", 7}};  // s9: not the kernel's, ignored
  EXPECT_EQ(k->output_sizes(in, &given), (std::vector<std::vector<int64_t>>{{6}}));
  k->run(in, outs, &given);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], 2 * a[i]) << "element " << i;
}

}  // namespace
}  // namespace autofuse
