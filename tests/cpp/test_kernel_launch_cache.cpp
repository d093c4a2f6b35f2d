// Kernel's launch cache (codegen/kernel_launch_cache.cpp): a call whose operands have the same dtypes, sizes and
// strides as the last one replays its launch with the new data pointers. Every call here is checked against the
// reference interpreter on fresh storage and values, so a replay that kept an old pointer, slice offset or layout
// shows up as a wrong or unwritten output: same layouts with new storage, a different layout in between, other
// sizes, another thread count, a forced tiling kind; an ordinary row kernel and a concat kernel (rotary), f32 and
// bf16. Random values are seeded (AUTOFUSE_TEST_SEED=N replays).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using namespace kernel_testing;

// A row softmax-like kernel with a broadcast bias (reduction, broadcast operand).
const char* kRows = R"(
graph rows(%x: DT[s0, s1], %b: DT[s1]) {
  %y = add(%x, %b)
  %m = amax(%y) {axes=[1], keepdim=true}
  %d = sub(%y, %m)
  %e = exp(%d)
  %s = sum(%e) {axes=[1], keepdim=true}
  %o = div(%e, %s)
  return %o
})";

// rotate_half for q: q*cos + concat(-q2, q1)*sin (a concat kernel: two segments, sliced operands).
const char* kRotary = R"(
graph rotary(%q: DT[s0, s1, 2*s2], %cos: DT[s1, 2*s2], %sin: DT[s1, 2*s2], %q1: DT[s0, s1, s2],
             %q2: DT[s0, s1, s2]) {
  %qc = mul(%q, %cos)
  %nq = neg(%q2)
  %rq = concat(%nq, %q1) {axis=2}
  %qs = mul(%rq, %sin)
  %qo = add(%qc, %qs)
  return %qo
})";

/// Inputs of g for sizes b in `layout`, random values; and outputs of the same layout (not initialised).
struct Call {
  std::vector<HostTensor> in, out;
};
Call make_call(const Graph& g, const Bindings& b, Layout layout, std::mt19937_64& rng) {
  Call c;
  for (ValueId i : g.inputs()) {
    const Node& nd = g.node(i);
    c.in.push_back(
        make_tensor(nd.dtype, eval_shape(nd.shape, b), layout == Layout::Expanded ? Layout::Gapped : layout, rng));
    fill_random(c.in.back(), rng, false);
  }
  for (ValueId o : g.outputs()) {
    const Node& nd = g.node(o);
    c.out.push_back(
        make_tensor(nd.dtype, eval_shape(nd.shape, b), layout == Layout::Expanded ? Layout::Gapped : layout, rng));
    fill_random(c.out.back(), rng, false);  // stale values: an output the replay does not write fails the check
  }
  return c;
}

/// Run k on the call and compare every output with the interpreter's (tolerance per output: tol[j] when given and
/// >= 0, else the dtype's default).
std::string check_call(const Kernel& k, const Graph& g, const Call& c, const std::vector<double>& tol = {}) {
  k.run(c.in, c.out);
  const std::vector<HostTensor> want = interpret(g, c.in, InterpretOptions{k.precision()});
  for (size_t j = 0; j < want.size(); ++j) {
    const double t = j < tol.size() && tol[j] >= 0 ? tol[j] : default_tolerance(want[j].dtype);
    const std::string e = compare(c.out[j], want[j], t);
    if (!e.empty()) return "output " + std::to_string(j) + ": " + e;
  }
  return "";
}

void check_sequence(const char* text, const std::string& dt, const Bindings& big, const Bindings& small) {
  SCOPED_TRACE(dt + " " + text);
  TilingRestore restore;
  const Graph g = parse_graph(with_dtype(text, dt));
  auto k = Kernel::compile(g);
  auto rng = seeded_rng();
  struct Step {
    const Bindings* b;
    Layout layout;
    int threads;
    bool forced;
  };
  // Repeats of one layout (cache hits on new storage), another layout and back, other sizes and back, one thread,
  // a forced kind (cache bypassed), then the first layout again.
  const std::vector<Step> steps = {
      {&big, Layout::Contiguous, 2, false},   {&big, Layout::Contiguous, 2, false},
      {&big, Layout::Contiguous, 2, false},   {&big, Layout::Gapped, 2, false},
      {&big, Layout::Gapped, 2, false},       {&big, Layout::Contiguous, 2, false},
      {&small, Layout::Contiguous, 2, false}, {&big, Layout::Contiguous, 2, false},
      {&big, Layout::Permuted, 2, false},     {&big, Layout::Contiguous, 1, false},
      {&big, Layout::Contiguous, 1, false},   {&big, Layout::Contiguous, 2, true},
      {&big, Layout::Contiguous, 2, false},   {&big, Layout::Contiguous, 2, false},
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    set_num_threads(steps[i].threads);
    force_tiling_kind(steps[i].forced ? std::optional<TilingKind>(TilingKind::Rows) : std::nullopt);
    const Call c = make_call(g, *steps[i].b, steps[i].layout, rng);
    ASSERT_EQ(check_call(*k, g, c), "") << "step " << i;
  }
}

TEST(KernelLaunchCache, RowKernelReplaysWithNewPointers) {
  for (const std::string dt : {"f32", "bf16"})
    check_sequence(kRows, dt, Bindings{{"s0", 300}, {"s1", 77}}, Bindings{{"s0", 3}, {"s1", 5}});
}

TEST(KernelLaunchCache, ConcatKernelReplaysSliceOffsets) {
  for (const std::string dt : {"f32", "bf16"})
    check_sequence(kRotary, dt, Bindings{{"s0", 4}, {"s1", 256}, {"s2", 32}},
                   Bindings{{"s0", 1}, {"s1", 3}, {"s2", 5}});
}

// Random kernel graphs (kernel_test_util.h), each called three times with the same sizes: contiguous, then the
// same layout on fresh storage (a cache hit), then gapped strides; every call checked.
TEST(KernelLaunchCache, RandomGraphsReplay) {
  TilingRestore restore;
  auto rng = seeded_rng();
  for (int i = 0; i < 15; ++i) {
    const RandomGraph rg = random_kernel_graph(rng);
    auto k = Kernel::compile(rg.graph);
    const Bindings b = random_bindings(rg.graph, rng);
    for (Layout layout : {Layout::Contiguous, Layout::Contiguous, Layout::Gapped, Layout::Gapped}) {
      const Call c = make_call(rg.graph, b, layout, rng);
      ASSERT_EQ(check_call(*k, rg.graph, c, rg.tol), "") << "graph " << i << " layout " << static_cast<int>(layout);
    }
  }
}

// A Split call (a long reduced axis, few kept elements) is cached too (before session 19 it was not: every call
// bound, checked and decided again): replays on new storage, other layouts, sizes and thread counts are each
// checked, and a replay on one thread gives the bits of the first call on two.
const char* kColumnSums = R"(
graph colsum(%x: DT[s0, s1]) {
  %s = sum(%x) {axes=[0], keepdim=false}
  %m = amax(%x) {axes=[0], keepdim=false}
  return %s, %m
})";

TEST(KernelLaunchCache, SplitKernelReplays) {
  const Bindings big{{"s0", 100003}, {"s1", 3}};
  check_sequence(kColumnSums, "f32", big, Bindings{{"s0", 7}, {"s1", 2}});
  TilingRestore restore;
  const Graph g = parse_graph(with_dtype(kColumnSums, "f32"));
  auto k = Kernel::compile(g);
  EXPECT_EQ(k->tiling().decide({100003, 3}).pick().kind, TilingKind::Split);
  auto rng = seeded_rng();
  Call c = make_call(g, big, Layout::Contiguous, rng);
  set_num_threads(2);
  ASSERT_EQ(check_call(*k, g, c), "");
  const std::vector<HostTensor> first = {c.out[0], c.out[1]};
  for (int t : {2, 1, 1, 3}) {  // a replay, another thread count (a new entry), its replay, a third
    set_num_threads(t);
    Call again = c;
    for (HostTensor& o : again.out) {
      o = make_tensor(o.dtype, o.sizes, Layout::Contiguous, rng);
      fill_random(o, rng, false);
    }
    k->run(again.in, again.out);
    for (size_t j = 0; j < first.size(); ++j)
      EXPECT_EQ(compare(again.out[j], first[j], 0), "") << t << " threads, output " << j;
  }
}

// An empty call between two cached ones: the empty operands are not replayed from the cache entry, and the next
// full call still computes everything.
TEST(KernelLaunchCache, EmptyOperandsBetweenCachedCalls) {
  TilingRestore restore;
  const Graph g = parse_graph(with_dtype(kRotary, "f32"));
  auto k = Kernel::compile(g);
  auto rng = seeded_rng();
  const Bindings full{{"s0", 2}, {"s1", 64}, {"s2", 16}}, empty{{"s0", 0}, {"s1", 64}, {"s2", 16}};
  for (const Bindings* b : {&full, &empty, &full, &empty, &full}) {
    const Call c = make_call(g, *b, Layout::Contiguous, rng);
    ASSERT_EQ(check_call(*k, g, c), "") << "s0 " << b->at("s0");
  }
}

// `given` values on a replayed call: a plain run caches the launch, and a later call on the same layouts with a given
// value the input sizes contradict must still throw the binding error of an uncached call (it used to replay the
// cached launch unchecked). Right values and names the kernel does not use still replay; an ordinary kernel and a
// concat kernel (whose cached bindings hold only what its launch evaluated).
void check_given_on_replay(const char* text, const Bindings& b, const std::string& sym, int64_t wrong) {
  SCOPED_TRACE(text);
  TilingRestore restore;
  const Graph g = parse_graph(with_dtype(text, "f32"));
  auto k = Kernel::compile(g);
  ASSERT_TRUE(k->given_symbols().empty());
  auto rng = seeded_rng();
  const Call c = make_call(g, b, Layout::Contiguous, rng);
  const Bindings bad{{sym, wrong}};
  const std::string want = "but it is already " + std::to_string(wrong);
  auto throws_binding_error = [&](const Bindings& given) {
    try {
      k->run(c.in, c.out, &given);
    } catch (const IRError& e) {
      return std::string(e.what()).find(want) != std::string::npos ? std::string() : std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(throws_binding_error(bad), "") << "fresh kernel";
  ASSERT_EQ(check_call(*k, g, c), "");  // a plain run: the launch is cached
  EXPECT_EQ(throws_binding_error(bad), "") << "after a plain run";
  Bindings right = b;
  right["not_a_symbol_of_the_kernel"] = 12345;
  const Call c2 = make_call(g, b, Layout::Contiguous, rng);
  k->run(c2.in, c2.out, &right);  // right values (and an unused name): runs, as a replay or not
  const std::vector<HostTensor> want_out = interpret(g, c2.in);
  for (size_t j = 0; j < want_out.size(); ++j)
    EXPECT_EQ(compare(c2.out[j], want_out[j], default_tolerance(want_out[j].dtype)), "") << "output " << j;
  EXPECT_EQ(throws_binding_error(bad), "") << "after a run with right given values";
}

TEST(KernelLaunchCache, GivenValuesCheckedOnReplay) {
  check_given_on_replay(kRows, Bindings{{"s0", 4}, {"s1", 5}}, "s0", 7);
  check_given_on_replay(kRows, Bindings{{"s0", 4}, {"s1", 5}}, "s1", 1000000);
  check_given_on_replay(kRotary, Bindings{{"s0", 2}, {"s1", 16}, {"s2", 8}}, "s1", 3);
  check_given_on_replay(kRotary, Bindings{{"s0", 2}, {"s1", 16}, {"s2", 8}}, "s2", 9);
}

}  // namespace
}  // namespace autofuse
