// Kernels whose concat has a source that is only a broadcast along the concat axis (review 19):
// torch.cat([x, t.expand_as(x)], 0), torch.cat([x, t.expand(n, -1)], 0) and MAE's cat([x, mask.expand(B, n, D)], 1).
// Such a segment has no input with an extent along the axis, so its width symbol (ConcatSegment::width_symbol) is set
// by the parent from the width it evaluates; a width the parent's inputs do not determine either is the caller's to
// give (Kernel::given_symbols), as for an ordinary kernel. These kernels used to be refused ("size symbol cw1 is not
// determined by the input sizes"). Checked bit for bit against the interpreter (broadcast, concat and a multiply by 2
// are exact), along the outer and the inner axis, f32 and bf16, sizes 0, 1 and odd, random input layouts, and through
// fusion (CompiledGraph) where the whole graph binds the symbol.
#include <gtest/gtest.h>

#include <string>

#include "autofuse/codegen/kernel.h"
#include "autofuse/driver/compiled_graph.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "autofuse/schedule/concat_split.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using namespace kernel_testing;

// cat([x, t.expand_as(x)], 0) * 2: the parent binds s0 from %x and gives segment 1 its width.
const char* kExpandAsOuter = R"(
graph ea0(%x: DT[s0, s1], %t: DT[s1]) {
  %b = broadcast_to(%t) {shape=[s0, s1]}
  %cat = concat(%x, %b) {axis=0}
  %two = constant() {value=2.0, dtype=DT}
  %y = mul(%cat, %two)
  return %y
})";

// cat([t.expand_as(x), x], 1) * 2: the broadcast segment first, along the inner axis.
const char* kExpandAsInner = R"(
graph ea1(%x: DT[s0, s1], %t: DT[s0, 1]) {
  %b = broadcast_to(%t) {shape=[s0, s1]}
  %cat = concat(%b, %x) {axis=1}
  %two = constant() {value=2.0, dtype=DT}
  %y = mul(%cat, %two)
  return %y
})";

// cat([x, t.expand(n.shape[0], -1)], 0) * 2: no input of the kernel has extent s1, the caller gives it.
const char* kExpandToN = R"(
graph en(%x: DT[s0, s2], %t: DT[1, s2]) {
  %b = broadcast_to(%t) {shape=[s1, s2]}
  %cat = concat(%x, %b) {axis=0}
  %two = constant() {value=2.0, dtype=DT}
  %y = mul(%cat, %two)
  return %y
})";

// MAE: cat([x, mask_token.expand(B, T - L, D)], 1), T = s2 given by the caller (the ids' length).
const char* kMaskTokens = R"(
graph mae(%x: DT[s0, s1, s3], %m: DT[1, 1, s3]) {
  %b = broadcast_to(%m) {shape=[s0, s2 - s1, s3]}
  %cat = concat(%x, %b) {axis=1}
  return %cat
})";

// Every segment a broadcast: both widths are given.
const char* kTwoBroadcasts = R"(
graph bb(%t: DT[1, s2], %u: DT[s2]) {
  %a = broadcast_to(%t) {shape=[s0, s2]}
  %b = broadcast_to(%u) {shape=[s1, s2]}
  %cat = concat(%a, %b) {axis=0}
  %two = constant() {value=2.0, dtype=DT}
  %y = mul(%cat, %two)
  return %y
})";

// Fusion's size-only input (nothing reads it; it carries s2 for the launch to bind: torch's duck sizing gave an
// index's width and n's length one symbol): in no segment, and not refused for its size along the concat axis.
const char* kSizeInput = R"(
graph si(%i: i64[s0, s2], %y: DT[s3, s4], %t: DT[1, s4]) {
  %b = broadcast_to(%t) {shape=[s2, s4]}
  %cat = concat(%y, %b) {axis=0}
  %two = constant() {value=2.0, dtype=DT}
  %z = mul(%cat, %two)
  return %z
})";

// Static sizes (constant widths: nothing to bind), which compiled before too.
const char* kStatic = R"(
graph st(%x: DT[4, 7], %t: DT[7]) {
  %b = broadcast_to(%t) {shape=[3, 7]}
  %cat = concat(%x, %b) {axis=0}
  %two = constant() {value=2.0, dtype=DT}
  %y = mul(%cat, %two)
  return %y
})";

/// A kernel's IR text as the backend's fusion makes it: its outputs' sizes may name symbols no input binds.
Graph kernel_ir(const std::string& text) {
  VerifyOptions vo;
  vo.output_shapes_bind = true;
  return parse_graph(text, "<test>", vo);
}

/// k on random inputs (random layouts) of the sizes `b` gives, called twice (the second call may replay the launch),
/// with only k's given symbols passed as the caller's bindings, against the interpreter bit for bit. "" or a message.
std::string run_given(const Kernel& k, const Bindings& b, std::mt19937_64& rng) {
  const Graph& g = k.graph();
  std::string desc = "sizes";
  for (const auto& [s, v] : b) desc += " " + s + "=" + std::to_string(v);
  std::vector<HostTensor> ins;
  for (ValueId v : g.inputs()) {
    const Node& nd = g.node(v);
    const Layout l =
        pick(std::vector<Layout>{Layout::Contiguous, Layout::Permuted, Layout::Gapped, Layout::Expanded}, rng);
    HostTensor t = make_tensor(nd.dtype, eval_shape(nd.shape, b), l, rng);
    fill_random(t, rng, coin(rng, 0.25));
    desc += " " + t.describe();
    ins.push_back(t);
  }
  Bindings given;
  for (const std::string& s : k.given_symbols()) given[s] = b.at(s);
  const Bindings* gp = k.given_symbols().empty() ? nullptr : &given;
  const std::vector<HostTensor> want = interpret(g, ins, {}, &b);
  for (int call = 0; call < 2; ++call) {
    std::vector<HostTensor> outs;
    for (const auto& s : k.output_sizes(ins, gp))
      outs.push_back(HostTensor::empty(g.node(g.outputs()[outs.size()]).dtype, s));
    k.run(ins, outs, gp);
    for (size_t i = 0; i < outs.size(); ++i) {
      const std::string e = compare(outs[i], want[i], 0.0);
      if (!e.empty()) return "call " + std::to_string(call) + " output " + std::to_string(i) + ": " + e + "; " + desc;
    }
  }
  return "";
}

/// Compile `text` for f32 and bf16; expect `given` as its given symbols and two segments; run it for every set of
/// sizes in `sizes`.
void check(const char* text, const std::vector<std::string>& given, const std::vector<Bindings>& sizes) {
  auto rng = seeded_rng();
  for (const char* dt : {"f32", "bf16"}) {
    SCOPED_TRACE(std::string(dt) + ":" + text);
    std::shared_ptr<Kernel> k;
    ASSERT_NO_THROW(k = Kernel::compile(kernel_ir(with_dtype(text, dt))));
    EXPECT_EQ(k->num_segments(), 2u);
    EXPECT_EQ(k->given_symbols(), given);
    for (const Bindings& b : sizes) ASSERT_EQ(run_given(*k, b, rng), "");
  }
}

/// Every combination of the values listed per symbol.
std::vector<Bindings> grid(const std::vector<std::pair<std::string, std::vector<int64_t>>>& axes) {
  std::vector<Bindings> out{Bindings{}};
  for (const auto& [s, values] : axes) {
    std::vector<Bindings> next;
    for (const Bindings& b : out)
      for (int64_t v : values) {
        Bindings c = b;
        c[s] = v;
        next.push_back(c);
      }
    out = std::move(next);
  }
  return out;
}

TEST(KernelConcatBroadcast, SplitNamesTheWidthSymbols) {
  auto sp = plan_concat_split(kernel_ir(with_dtype(kExpandAsOuter, "f32")));
  ASSERT_TRUE(sp);
  ASSERT_EQ(sp->segments.size(), 2u);
  EXPECT_EQ(sp->segments[0].width_symbol, "cw0");  // bound by segment 0 from %x as well
  EXPECT_EQ(sp->segments[1].width_symbol, "cw1");  // the broadcast: only the parent knows it
  EXPECT_EQ(sp->segments[1].graph.symbols().count("cw1"), 1u);
  auto st = plan_concat_split(kernel_ir(with_dtype(kStatic, "f32")));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->segments[1].width_symbol, "");  // a constant width has no symbol
}

TEST(KernelConcatBroadcast, ExpandAsTakesTheWidthFromTheParent) {
  const auto sizes = grid({{"s0", {0, 1, 2, 7}}, {"s1", {1, 3, 17}}});
  check(kExpandAsOuter, {}, sizes);
  check(kExpandAsInner, {}, sizes);
}

TEST(KernelConcatBroadcast, ExpandToACallerSizeIsAGivenSymbol) {
  check(kExpandToN, {"s1"}, grid({{"s0", {0, 1, 5}}, {"s1", {0, 1, 3, 9}}, {"s2", {1, 8, 19}}}));
  // Without the caller's value the call names the symbol (no guess, no out-of-bounds write).
  auto k = Kernel::compile(kernel_ir(with_dtype(kExpandToN, "f32")));
  HostTensor x = HostTensor::empty(DType::Float32, {2, 3}), t = HostTensor::empty(DType::Float32, {1, 3});
  HostTensor y = HostTensor::empty(DType::Float32, {5, 3});
  try {
    k->run({x, t}, {y});
    FAIL() << "ran without s1";
  } catch (const IRError& e) {
    EXPECT_NE(std::string(e.what()).find("size symbol s1"), std::string::npos) << e.what();
  }
  const Bindings s1{{"s1", 3}};
  EXPECT_EQ(k->output_sizes({x, t}, &s1), (std::vector<std::vector<int64_t>>{{5, 3}}));
}

TEST(KernelConcatBroadcast, MaskTokensLikeMae) {
  std::vector<Bindings> sizes;
  for (const Bindings& b : grid({{"s0", {1, 2, 3}}, {"s1", {0, 1, 4}}, {"s2", {0, 1, 3, 9}}, {"s3", {1, 16, 33}}}))
    if (b.at("s2") >= b.at("s1")) sizes.push_back(b);
  check(kMaskTokens, {"s2"}, sizes);
}

TEST(KernelConcatBroadcast, EverySegmentABroadcast) {
  check(kTwoBroadcasts, {"s0", "s1"}, grid({{"s0", {0, 1, 4}}, {"s1", {0, 1, 3}}, {"s2", {1, 17}}}));
}

TEST(KernelConcatBroadcast, SizeOnlyInputBindsTheWidth) {
  check(kSizeInput, {}, grid({{"s0", {1, 4}}, {"s2", {0, 1, 3}}, {"s3", {0, 2, 5}}, {"s4", {1, 12}}}));
  auto sp = plan_concat_split(kernel_ir(with_dtype(kSizeInput, "f32")));
  ASSERT_TRUE(sp);
  for (const ConcatSegment& seg : sp->segments) EXPECT_EQ(seg.parent_input.size(), 1u);  // %y or %t, never %i
}

TEST(KernelConcatBroadcast, StaticWidths) { check(kStatic, {}, {Bindings{}}); }

// The backend's form: the graph's input %n binds s1, the kernel (broadcast, concat, mul) does not read %n; the
// compiled graph gives the kernel s1 from its own bindings.
TEST(KernelConcatBroadcast, FusedGraphGivesTheKernelItsSymbol) {
  const Graph g = parse_graph(R"(
graph fg(%x: f32[s0, s2], %t: f32[1, s2], %n: f32[s1]) {
  %b = broadcast_to(%t) {shape=[s1, s2]}
  %cat = concat(%x, %b) {axis=0}
  %two = constant() {value=2.0, dtype=f32}
  %y = mul(%cat, %two)
  %m = neg(%n)
  return %y, %m
})");
  CompileGraphOptions o;
  o.strict = true;  // a kernel that does not compile throws instead of running on the interpreter
  CompiledGraph cg = CompiledGraph::compile(g, o);
  size_t concat_kernels = 0;
  for (size_t i = 0; i < cg.fused().groups.size(); ++i)
    if (auto k = cg.kernel(i); k && k->num_segments() == 2) ++concat_kernels;
  EXPECT_EQ(concat_kernels, 1u);
  auto rng = seeded_rng();
  for (int64_t s0 : {0, 1, 3})
    for (int64_t s1 : {0, 1, 5}) {
      HostTensor x = HostTensor::empty(DType::Float32, {s0, 7}), t = HostTensor::empty(DType::Float32, {1, 7}),
                 n = HostTensor::empty(DType::Float32, {s1});
      fill_random(x, rng, false);
      fill_random(t, rng, false);
      fill_random(n, rng, false);
      const auto got = cg.run({x, t, n});
      const auto want = interpret(g, {x, t, n});
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(compare(got[i], want[i], 0.0), "") << "s0=" << s0 << " s1=" << s1 << " output " << i;
    }
}

}  // namespace
}  // namespace autofuse
