// Kernels with concat (schedule/concat_split.h, codegen/kernel_concat.cpp) against the reference interpreter: the
// rotary embedding's rotate_half (q and k in one kernel), unequal and odd segment widths, three sources, a concat
// along an outer axis, a concat as an output (cos / sin of a doubled table), an operand broadcast along the concat
// axis; f32, bf16, f16; random sizes (0, 1, odd, large) and random input / output layouts (kernel_test_util.h
// run_case: permuted, gapped, expanded), a segment whose inputs cannot bind a symbol (a broadcast class token). Also:
// what the split refuses, and fusion putting the rotary pattern (slices, neg, concat, mul, add) into one kernel through
// the whole pipeline. Random cases print their seed (AUTOFUSE_TEST_SEED=N replays).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "autofuse/codegen/kernel.h"
#include "autofuse/driver/compiled_graph.h"
#include "autofuse/driver/pipeline.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "autofuse/runtime/thread_pool.h"
#include "autofuse/schedule/concat_split.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using namespace kernel_testing;

// rotate_half for q and k: x*cos + concat(-x2, x1)*sin, the halves given as inputs (views of x in the backend).
const char* kRotary = R"(
graph rotary(%q: DT[s0, s1, 2*s2], %k: DT[s0, s1, 2*s2], %cos: DT[s1, 2*s2], %sin: DT[s1, 2*s2],
             %q1: DT[s0, s1, s2], %q2: DT[s0, s1, s2], %k1: DT[s0, s1, s2], %k2: DT[s0, s1, s2]) {
  %qc = mul(%q, %cos)
  %nq = neg(%q2)
  %rq = concat(%nq, %q1) {axis=2}
  %qs = mul(%rq, %sin)
  %qo = add(%qc, %qs)
  %kc = mul(%k, %cos)
  %nk = neg(%k2)
  %rk = concat(%nk, %k1) {axis=-1}
  %ks = mul(%rk, %sin)
  %ko = add(%kc, %ks)
  return %qo, %ko
})";

// Unequal widths, a source computed from two inputs, an operand broadcast along the concat axis.
const char* kUnequal = R"(
graph unequal(%a: DT[s0, s1], %b: DT[s0, s2], %c: DT[s0, s2], %x: DT[s0, s1 + s2], %w: DT[s0, 1]) {
  %e = exp(%a)
  %bc = mul(%b, %c)
  %cat = concat(%e, %bc) {axis=1}
  %y = mul(%cat, %x)
  %z = sub(%y, %w)
  return %z, %y
})";

// Three sources, a constant feeding one of them and a full value.
const char* kThree = R"(
graph three(%a: DT[s0, 3], %b: DT[s0, s1], %c: DT[s0, 1], %x: DT[s0, s1 + 4]) {
  %two = constant() {value=2.0, dtype=DT}
  %a2 = mul(%a, %two)
  %cat = concat(%a2, %b, %c) {axis=1}
  %y = add(%cat, %x)
  %z = mul(%y, %two)
  return %z
})";

// A concat along the outer axis (whole rows per segment), with a bias along the inner axis.
const char* kOuter = R"(
graph outer(%a: DT[s0, s2], %b: DT[s1, s2], %bias: DT[s2], %x: DT[s0 + s1, s2]) {
  %na = neg(%a)
  %cat = concat(%na, %b) {axis=0}
  %y = add(%cat, %bias)
  %z = mul(%y, %x)
  return %z
})";

// The rotary table: cos / sin of concat(f, f), the concat itself is not written.
const char* kTable = R"(
graph table(%pos: DT[s0, 1], %inv: DT[s1]) {
  %f = mul(%pos, %inv)
  %emb = concat(%f, %f) {axis=1}
  %c = cos(%emb)
  %s = sin(%emb)
  return %c, %s
})";

// ViT's class token (review 16a F3): segment 0 reads only the [1, 1, D] token broadcast to [s0, 1, D], so its own
// inputs cannot bind s0; it takes s0 from the parent, whose %x binds it.
const char* kClassToken = R"(
graph cls(%c: DT[1, 1, s1], %x: DT[s0, s2, s1]) {
  %b = broadcast_to(%c) {shape=[s0, 1, s1]}
  %cat = concat(%b, %x) {axis=1}
  %two = constant() {value=2.0, dtype=DT}
  %y = mul(%cat, %two)
  return %y
})";

void check_graph(const std::string& text, const std::string& dt, int cases) {
  SCOPED_TRACE(dt + ":" + text);
  RandomGraph rg;
  rg.graph = parse_graph(with_dtype(text, dt));
  ASSERT_EQ(kernel_unsupported_reason(rg.graph), std::nullopt);
  auto k = Kernel::compile(rg.graph);
  EXPECT_GE(k->num_segments(), 2u);
  rg.exact.assign(rg.graph.outputs().size(), false);
  rg.tol.assign(rg.graph.outputs().size(), -1.0);
  auto rng = seeded_rng();
  for (int i = 0; i < cases; ++i) {
    const Bindings b = random_bindings(rg.graph, rng);
    const std::string err = run_case(rg, b, rng);
    ASSERT_EQ(err, "") << "case " << i;
  }
}

TEST(KernelConcat, RotaryMatchesInterpreter) {
  for (const char* dt : {"f32", "bf16", "f16"}) check_graph(kRotary, dt, 12);
}

TEST(KernelConcat, UnequalWidthsAndBroadcastOperand) {
  for (const char* dt : {"f32", "bf16"}) check_graph(kUnequal, dt, 12);
}

TEST(KernelConcat, ThreeSources) { check_graph(kThree, "f32", 16); }

TEST(KernelConcat, OuterAxis) {
  for (const char* dt : {"f32", "bf16"}) check_graph(kOuter, dt, 12);
}

TEST(KernelConcat, ConcatOfOneValueTwice) { check_graph(kTable, "f32", 16); }

TEST(KernelConcat, SegmentTakesASymbolFromTheParent) {
  for (const char* dt : {"f32", "bf16"}) check_graph(kClassToken, dt, 16);
  auto k = Kernel::compile(parse_graph(with_dtype(kClassToken, "f32")));
  EXPECT_TRUE(k->given_symbols().empty());  // the program gives the parent nothing: it binds s0 from %x
}

TEST(KernelConcat, SplitKeepsFullValuesAndSlicesInputs) {
  Graph g = parse_graph(with_dtype(kRotary, "f32"));
  std::string why;
  auto sp = plan_concat_split(g, &why);
  ASSERT_TRUE(sp) << why;
  EXPECT_EQ(sp->domain_axis, 2);
  ASSERT_EQ(sp->segments.size(), 2u);
  // Segment 0 reads q, k, cos, sin (sliced along their last dim) and the second halves; segment 1 the first halves.
  for (size_t j = 0; j < 2; ++j) {
    const ConcatSegment& s = sp->segments[j];
    EXPECT_FALSE(has_concat(s.graph));
    EXPECT_EQ(s.parent_input.size(), 6u);
    int sliced = 0;
    for (int d : s.input_dim) sliced += d >= 0 ? 1 : 0;
    EXPECT_EQ(sliced, 4);
  }
  EXPECT_EQ(sp->output_dim, (std::vector<int>{2, 2}));
}

TEST(KernelConcat, RefusesWhatCannotBeSplit) {
  auto reason = [](const std::string& text) {
    auto r = kernel_unsupported_reason(parse_graph(text));
    return r ? *r : std::string();
  };
  // A reduction in the same kernel.
  EXPECT_NE(reason(R"(graph g(%a: f32[4, 3], %b: f32[4, 5]) {
      %c = concat(%a, %b) {axis=1}
      %s = sum(%c) {axes=[1], keepdim=true}
      return %s
    })")
                .find("cannot share a kernel with the graph's concat"),
            std::string::npos);
  // Nested concats.
  EXPECT_NE(reason(R"(graph g(%a: f32[4, 3], %b: f32[4, 5]) {
      %c = concat(%a, %b) {axis=1}
      %d = concat(%c, %a) {axis=1}
      %e = neg(%d)
      return %e
    })"),
            "");
  // Concats splitting different points.
  EXPECT_NE(reason(R"(graph g(%a: f32[4, 3], %b: f32[4, 5], %x: f32[4, 5], %y: f32[4, 3]) {
      %c = concat(%a, %b) {axis=1}
      %d = concat(%x, %y) {axis=1}
      %e = add(%c, %d)
      return %e
    })")
                .find("differently"),
            std::string::npos);
  // An output that is part of a concat source.
  EXPECT_NE(reason(R"(graph g(%a: f32[4, 3], %b: f32[4, 5]) {
      %n = neg(%a)
      %c = concat(%n, %b) {axis=1}
      %e = exp(%c)
      return %e, %n
    })")
                .find("part of a concat source"),
            std::string::npos);
  // A full value that is neither as wide as the concat nor broadcast along its axis.
  EXPECT_NE(reason(R"(graph g(%a: f32[4, 3], %b: f32[4, 3], %x: f32[4, 3]) {
      %c = concat(%a, %b) {axis=1}
      %e = exp(%c)
      %y = neg(%x)
      return %e, %y
    })")
                .find("neither"),
            std::string::npos);
}

// Sizes large enough that the segments' rows are spread over several threads in one launch (run_concat prepares
// every segment, then launch_rows_together), in strided layouts too; and on one thread.
TEST(KernelConcat, LargeRotaryOneLaunchOnThreads) {
  RandomGraph rg;
  rg.graph = parse_graph(with_dtype(kRotary, "f32"));
  rg.exact.assign(rg.graph.outputs().size(), false);
  rg.tol.assign(rg.graph.outputs().size(), -1.0);
  auto rng = seeded_rng();
  const int before = get_num_threads();
  for (int threads : {1, 2, 4}) {
    set_num_threads(threads);
    for (const Bindings& b : {Bindings{{"s0", 4}, {"s1", 128}, {"s2", 32}}, Bindings{{"s0", 3}, {"s1", 257}, {"s2", 5}},
                              Bindings{{"s0", 1}, {"s1", 2048}, {"s2", 64}}}) {
      const std::string err = run_case(rg, b, rng);
      EXPECT_EQ(err, "") << "threads " << threads << " s0 " << b.at("s0") << " s1 " << b.at("s1");
    }
  }
  set_num_threads(before);
}

TEST(KernelConcat, RejectsMismatchedOperands) {
  auto k = Kernel::compile(parse_graph(with_dtype(kUnequal, "f32")));
  HostTensor a = HostTensor::empty(DType::Float32, {2, 3}), b = HostTensor::empty(DType::Float32, {2, 4}),
             c = HostTensor::empty(DType::Float32, {2, 4}), x = HostTensor::empty(DType::Float32, {2, 6}),
             w = HostTensor::empty(DType::Float32, {2, 1});
  HostTensor z = HostTensor::empty(DType::Float32, {2, 7}), y = HostTensor::empty(DType::Float32, {2, 7});
  // x is 6 wide where the concat is 7: named, no out-of-bounds read.
  EXPECT_THROW(k->run({a, b, c, x, w}, {z, y}), IRError);
  HostTensor x7 = HostTensor::empty(DType::Float32, {2, 7}), z6 = HostTensor::empty(DType::Float32, {2, 6});
  EXPECT_THROW(k->run({a, b, c, x7, w}, {z6, y}), IRError);
  EXPECT_EQ(k->output_sizes({a, b, c, x7, w}), (std::vector<std::vector<int64_t>>{{2, 7}, {2, 7}}));
}

/// A random graph with one concat: K sources (each an elementwise chain over an input of its own width, constant or
/// symbolic, maybe with an operand broadcast along the axis), the concat along a random axis, then an elementwise
/// chain with full-width and broadcast operands; the concat itself is sometimes also an output.
Graph random_concat_graph(std::mt19937_64& rng) {
  const DType dt = coin(rng, 0.5) ? DType::Float32 : DType::BFloat16;
  const int rank = uni(rng, 1, 3), axis = uni(rng, 0, rank - 1), K = uni(rng, 2, 3);
  Graph g("rcat");
  Shape base;
  for (int d = 0; d < rank; ++d)
    base.push_back(coin(rng, 0.3) ? Expr(uni(rng, 1, 5)) : Expr::sym("s" + std::to_string(d)));
  int names = 0;
  auto input = [&](Shape shape) { return g.add_input("in" + std::to_string(names++), dt, std::move(shape)); };
  auto unary = [&](ValueId x) {
    switch (uni(rng, 0, 3)) {
      case 0:
        return g.add(OpKind::Neg, {x});
      case 1:
        return g.add(OpKind::Abs, {x});
      case 2:
        return g.add(OpKind::Tanh, {x});
      default:
        return g.add(OpKind::Mul, {x, g.constant(Scalar::of_float(0.5), dt)});
    }
  };
  auto binary = [&](ValueId x, ValueId y) {
    const OpKind ops[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Maximum};
    return coin(rng, 0.5) ? g.add(ops[uni(rng, 0, 3)], {x, y}) : g.add(ops[uni(rng, 0, 3)], {y, x});
  };
  auto chain = [&](ValueId x, Shape shape) {
    for (int steps = uni(rng, 0, 2); steps > 0; --steps) {
      const int kind = uni(rng, 0, 2);
      if (kind == 0) {
        x = unary(x);
      } else {
        Shape other = shape;
        if (kind == 2) other[static_cast<size_t>(axis)] = Expr(1);  // broadcast along the concat axis
        x = binary(x, input(other));
      }
    }
    return x;
  };
  std::vector<ValueId> sources;
  for (int j = 0; j < K; ++j) {
    Shape shape = base;
    shape[static_cast<size_t>(axis)] =
        coin(rng, 0.5) ? Expr::sym("w" + std::to_string(j)) : Expr(pick(std::vector<int>{1, 3, 16}, rng));
    sources.push_back(chain(input(shape), shape));
  }
  Attrs attrs;
  attrs["axis"] = AttrValue(static_cast<int64_t>(coin(rng, 0.5) ? axis : axis - rank));
  const ValueId cat = g.add(OpKind::Concat, sources, attrs);
  const Shape full = g.node(cat).shape;
  ValueId y = chain(cat, full);
  if (y == cat || coin(rng, 0.5)) y = binary(y, input(full));
  std::vector<ValueId> outs = {y};
  if (coin(rng, 0.3)) outs.push_back(cat);
  g.set_outputs(outs);
  return g;
}

TEST(KernelConcat, RandomGraphsMatchInterpreter) {
  // 12 graphs (each compiles its own segment kernels); AUTOFUSE_CONCAT_FUZZ_GRAPHS=N for a longer run.
  const char* env = std::getenv("AUTOFUSE_CONCAT_FUZZ_GRAPHS");
  const int graphs = env ? std::atoi(env) : 12;
  auto rng = seeded_rng();
  for (int i = 0; i < graphs; ++i) {
    RandomGraph rg;
    rg.graph = random_concat_graph(rng);
    SCOPED_TRACE("graph " + std::to_string(i) + ":\n" + rg.graph.str());
    ASSERT_EQ(kernel_unsupported_reason(rg.graph), std::nullopt);
    rg.exact.assign(rg.graph.outputs().size(), false);
    rg.tol.assign(rg.graph.outputs().size(), -1.0);
    for (int c = 0; c < 3; ++c) ASSERT_EQ(run_case(rg, random_bindings(rg.graph, rng), rng), "") << "case " << c;
  }
}

// The backend's rotary pattern through fusion: slices stay host views, neg + concat + mul + add become one kernel.
TEST(KernelConcat, FusionMakesOneRotaryKernel) {
  const std::string text = R"(
graph rot(%q: f32[4, s0, 2*s1], %cos: f32[s0, 2*s1], %sin: f32[s0, 2*s1]) {
  %q1 = slice(%q) {axis=2, start=0, stop=s1, step=1}
  %q2 = slice(%q) {axis=2, start=s1, stop=2*s1, step=1}
  %qc = mul(%q, %cos)
  %n = neg(%q2)
  %r = concat(%n, %q1) {axis=2}
  %rs = mul(%r, %sin)
  %o = add(%qc, %rs)
  return %o
})";
  Graph g = parse_graph(text);
  FusedGraph f = run_fusion_pipeline(g);
  int kernels = 0, concat_hosts = 0;
  for (const FusionGroup& grp : f.groups) {
    kernels += grp.kind == GroupKind::Kernel ? 1 : 0;
    for (ValueId v : grp.nodes) concat_hosts += grp.kind == GroupKind::Host && g.node(v).op == OpKind::Concat;
  }
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(concat_hosts, 0);
  // Off: the concat is a host step again.
  FusionOptions off = default_fusion_options();
  off.fuse_concat = false;
  FusedGraph f2 = run_fusion_pipeline(g, off);
  int hosts = 0;
  for (const FusionGroup& grp : f2.groups)
    for (ValueId v : grp.nodes) hosts += grp.kind == GroupKind::Host && g.node(v).op == OpKind::Concat;
  EXPECT_EQ(hosts, 1);
  // Compiled end to end against the interpreter, sizes 0, 1, odd.
  CompiledGraph cg = CompiledGraph::compile(g);
  auto rng = seeded_rng();
  for (int64_t s0 : {0, 1, 3}) {
    for (int64_t s1 : {1, 5, 16}) {
      HostTensor q = HostTensor::empty(DType::Float32, {4, s0, 2 * s1});
      HostTensor c = HostTensor::empty(DType::Float32, {s0, 2 * s1}),
                 s = HostTensor::empty(DType::Float32, {s0, 2 * s1});
      fill_random(q, rng, false);
      fill_random(c, rng, false);
      fill_random(s, rng, false);
      auto got = cg.run({q, c, s});
      auto want = interpret(g, {q, c, s});
      ASSERT_EQ(compare(got[0], want[0], default_tolerance(DType::Float32)), "") << "s0=" << s0 << " s1=" << s1;
    }
  }
}

}  // namespace
}  // namespace autofuse
