// Explicit kernel cases: softmax over many sizes from one compile, layer norm, outer reductions, accuracy of long
// sums, NaN/inf/-0.0, argmax ties and NaN, f16/bf16 rounding, integer semantics, strided/expanded/transposed inputs,
// strided outputs, 0-size and 0-d tensors, and the reasons a graph is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "autofuse/runtime/cache.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using kernel_testing::compare;
using kernel_testing::default_tolerance;
using kernel_testing::Layout;
using kernel_testing::make_tensor;
using kernel_testing::run_kernel;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

HostTensor filled(DType t, std::vector<int64_t> sizes, const std::vector<double>& vals) {
  HostTensor h = HostTensor::empty(t, sizes);
  std::vector<int64_t> idx(sizes.size(), 0);
  for (double v : vals) {
    if (is_float(t) || t == DType::Bool)
      h.set_double(idx, v);
    else
      h.set_int(idx, static_cast<int64_t>(v));
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  return h;
}

HostTensor random_tensor(DType t, std::vector<int64_t> sizes, uint64_t seed, Layout l = Layout::Contiguous) {
  std::mt19937_64 rng(seed);
  HostTensor h = make_tensor(t, sizes, l, rng);
  kernel_testing::fill_random(h, rng, false);
  return h;
}

/// Kernel vs interpreter on the given inputs; tolerance per output dtype unless `tol` >= 0.
void expect_matches_interpreter(const Graph& g, const std::vector<HostTensor>& in, double tol = -1) {
  auto k = Kernel::compile(g);
  auto got = run_kernel(*k, in);
  auto want = interpret(g, in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    double t = tol >= 0 ? tol : default_tolerance(got[i].dtype);
    EXPECT_EQ(compare(got[i], want[i], t), "") << "output " << i << " of\n" << g.str();
  }
}

const std::string kSoftmax = kernel_testing::with_dtype(kernel_testing::kSoftmaxRowsIR, "f32");

TEST(Kernel, SoftmaxServesEverySizeFromOneCompile) {
  auto k = Kernel::compile(parse_graph(kSoftmax));
  EXPECT_EQ(k->num_variants(), 1u);
  reset_cache_stats();
  for (auto [n, d] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {1000, 4096}, {64, 100000}}) {
    HostTensor x = random_tensor(DType::Float32, {n, d}, static_cast<uint64_t>(n * 7 + d));
    auto got = run_kernel(*k, {x});
    auto want = interpret(k->graph(), {x});
    EXPECT_EQ(compare(got[0], want[0], 1e-5), "") << n << "x" << d;
  }
  EXPECT_EQ(k->num_variants(), 1u) << "a new size must not compile a new variant";
  CacheStats cs = cache_stats();
  EXPECT_EQ(cs.compiles + cs.disk_hits + cs.memory_hits, 0) << "running new sizes must not touch the compiler or cache";
}

TEST(Kernel, SoftmaxWithInfinitiesAndNaN) {
  Graph g = parse_graph(kSoftmax);
  HostTensor x = filled(DType::Float32, {4, 3}, {-kInf, 0, 1, kNaN, 1, 2, -kInf, -kInf, -kInf, 5, -0.0, 0.0});
  expect_matches_interpreter(g, {x});
}

TEST(Kernel, LayerNormMatchesInterpreter) {
  Graph g = parse_graph(R"(graph layer_norm(%x: f32[s0, s1], %w: f32[s1], %b: f32[s1]) {
    %mu = mean(%x) {axes=[1], keepdim=true}
    %v = var(%x) {axes=[1], keepdim=true, correction=0}
    %eps = constant() {value=1e-5, dtype=f32}
    %ve = add(%v, %eps)
    %r = rsqrt(%ve)
    %c = sub(%x, %mu)
    %n = mul(%c, %r)
    %s = mul(%n, %w)
    %y = add(%s, %b)
    return %y, %mu, %r
  })");
  for (auto [n, d] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {5, 17}, {33, 768}}) {
    expect_matches_interpreter(g, {random_tensor(DType::Float32, {n, d}, 1), random_tensor(DType::Float32, {d}, 2),
                                   random_tensor(DType::Float32, {d}, 3)});
  }
}

TEST(Kernel, OuterAndMixedReductions) {
  Graph g0 = parse_graph(R"(graph colsum(%x: f32[s0, s1]) {
    %s = sum(%x) {axes=[0], keepdim=false}
    %m = amax(%x) {axes=[0], keepdim=true}
    return %s, %m
  })");
  expect_matches_interpreter(g0, {random_tensor(DType::Float32, {1000, 37}, 4)});
  expect_matches_interpreter(g0, {random_tensor(DType::Float32, {3, 1000}, 5, Layout::Permuted)});
  Graph g1 = parse_graph(R"(graph mixed(%x: f64[s0, s1, s2]) {
    %s = mean(%x) {axes=[0, 2], keepdim=true}
    %d = sub(%x, %s)
    return %d, %s
  })");
  expect_matches_interpreter(g1, {random_tensor(DType::Float64, {7, 5, 9}, 6)});
}

TEST(Kernel, LongSumsStayAccurate) {
  // 2^22 copies of 0.1f: naive f32 accumulation drifts by percents; the cascade keeps the relative error tiny.
  Graph g = parse_graph(R"(graph s(%x: f32[s0]) {
    %s = sum(%x) {axes=[0], keepdim=false}
    return %s
  })");
  const int64_t n = 1 << 22;
  HostTensor x = HostTensor::empty(DType::Float32, {n});
  for (int64_t i = 0; i < n; ++i) static_cast<float*>(x.data)[i] = 0.1f;
  auto got = run_kernel(*Kernel::compile(g), {x});
  const double exact = static_cast<double>(0.1f) * static_cast<double>(n);
  EXPECT_NEAR(got[0].get_double({}), exact, exact * 1e-5);
}

TEST(Kernel, RowReductionChainsAtEveryRemainder) {
  // Row reductions unroll the row by 4 vectors into 4 accumulator chains, then single vectors, then a masked tail
  // (emit_kernel.cpp): row lengths around each of those boundaries, with a NaN placed in row r at column r * 7 % d
  // (so each chain, the remainder loop and the tail meet one) in half of the rows. amax / amin must be exact.
  for (const char* dt : {"f32", "bf16"}) {
    std::string text = R"(graph rows(%x: T[s0, s1]) {
      %s = sum(%x) {axes=[1], keepdim=false}
      %m = mean(%x) {axes=[1], keepdim=false}
      %hi = amax(%x) {axes=[1], keepdim=false}
      %lo = amin(%x) {axes=[1], keepdim=false}
      %v = var(%x) {axes=[1], keepdim=false, correction=1}
      return %s, %m, %hi, %lo, %v
    })";
    for (size_t at; (at = text.find("T[")) != std::string::npos;) text.replace(at, 1, dt);
    Graph g = parse_graph(text);
    const DType t = std::string(dt) == "f32" ? DType::Float32 : DType::BFloat16;
    for (int64_t d : {1, 15, 16, 17, 48, 63, 64, 65, 80, 127, 128, 129, 1024 + 48 + 5, 4096 + 17}) {
      const int64_t rows = 40;
      HostTensor x = random_tensor(t, {rows, d}, static_cast<uint64_t>(100 + d));
      for (int64_t r = 0; r < rows; r += 2) x.set_double({r, r * 7 % d}, kNaN);
      auto k = Kernel::compile(g);
      auto got = run_kernel(*k, {x});
      auto want = interpret(g, {x});
      ASSERT_EQ(got.size(), 5u);
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(compare(got[i], want[i], i == 2 || i == 3 ? 0.0 : default_tolerance(t)), "")
            << dt << " d=" << d << " output " << i;
      for (int64_t r = 0; r < rows; ++r)
        EXPECT_EQ(std::isnan(got[2].get_double({r})), r % 2 == 0) << dt << " d=" << d << " row " << r;
    }
  }
}

TEST(Kernel, ArgmaxFirstIndexAndNaN) {
  Graph g = parse_graph(R"(graph a(%x: f32[s0, s1]) {
    %i = argmax(%x) {axes=[1], keepdim=false}
    %j = argmin(%x) {axes=[1], keepdim=false}
    %m = amax(%x) {axes=[1], keepdim=false}
    return %i, %j, %m
  })");
  std::vector<double> v(4 * 40, 1.0);
  v[0 * 40 + 3] = 5;
  v[0 * 40 + 30] = 5;  // row 0: tie -> first (3); min 1 -> first (0)
  v[1 * 40 + 17] = kNaN;
  v[1 * 40 + 20] = kNaN;
  v[1 * 40 + 2] = 9;                                   // row 1: first NaN wins (17) for both
  v[2 * 40 + 39] = -kInf;                              // row 2: argmin at the tail lane
  for (int j = 0; j < 40; ++j) v[3 * 40 + j] = -kInf;  // row 3: all -inf -> 0
  HostTensor x = filled(DType::Float32, {4, 40}, v);
  auto k = Kernel::compile(g);
  auto got = run_kernel(*k, {x});
  EXPECT_EQ(got[0].get_int({0}), 3);
  EXPECT_EQ(got[1].get_int({0}), 0);
  EXPECT_EQ(got[0].get_int({1}), 17);
  EXPECT_EQ(got[1].get_int({1}), 17);
  EXPECT_TRUE(std::isnan(got[2].get_double({1})));
  EXPECT_EQ(got[1].get_int({2}), 39);
  EXPECT_EQ(got[0].get_int({3}), 0);
  expect_matches_interpreter(g, {x});
  // Outer (vectorized across rows) variant.
  Graph g2 = parse_graph(R"(graph a0(%x: f32[s0, s1]) {
    %i = argmax(%x) {axes=[0], keepdim=true}
    return %i
  })");
  expect_matches_interpreter(g2, {filled(DType::Float32, {3, 2}, {1, kNaN, 7, 2, 7, kNaN})});
}

TEST(Kernel, HalfAndBFloat16RoundToNearestEven) {
  Graph g = parse_graph(R"(graph c(%x: f32[s0]) {
    %h = cast(%x) {dtype=f16}
    %b = cast(%x) {dtype=bf16}
    %hh = add(%h, %h)
    %bb = mul(%b, %b)
    return %h, %b, %hh, %bb
  })");
  // 1 + 2^-11 is a tie in f16 (rounds to 1), 1 + 3*2^-11 rounds up to 1 + 2^-9; 1 + 2^-8 a tie in bf16.
  HostTensor x = filled(DType::Float32, {8},
                        {1 + std::ldexp(1.0, -11), 1 + 3 * std::ldexp(1.0, -11), 1 + std::ldexp(1.0, -8), 65520.0, kNaN,
                         -0.0, kInf, 1e-8});
  auto got = run_kernel(*Kernel::compile(g), {x});
  EXPECT_EQ(got[0].get_double({0}), 1.0);
  EXPECT_EQ(got[0].get_double({1}), 1 + std::ldexp(1.0, -9));
  EXPECT_EQ(got[1].get_double({2}), 1.0);
  EXPECT_TRUE(std::isinf(got[0].get_double({3})));  // beyond f16's max rounds to inf
  EXPECT_TRUE(std::isnan(got[0].get_double({4})));
  EXPECT_TRUE(std::isnan(got[1].get_double({4})));
  EXPECT_TRUE(std::signbit(got[0].get_double({5})));
  expect_matches_interpreter(g, {x}, 0.0);
}

TEST(Kernel, IntegerSemantics) {
  Graph g = parse_graph(R"(graph i(%a: i32[s0], %b: i32[s0], %c: i8[s0], %d: i8[s0]) {
    %q = floordiv(%a, %b)
    %r = remainder(%a, %b)
    %f = fmod(%a, %b)
    %w = add(%c, %d)
    %m = mul(%c, %d)
    %s = shl(%a, %b)
    %t = shr(%a, %b)
    %p = pow(%a, %b)
    return %q, %r, %f, %w, %m, %s, %t, %p
  })");
  HostTensor a = filled(DType::Int32, {6}, {-7, 7, -7, 7, -2147483648.0, 5});
  HostTensor b = filled(DType::Int32, {6}, {2, -2, -2, 3, -1, 40});
  HostTensor c = filled(DType::Int8, {6}, {127, -128, 100, 1, 0, -1});
  HostTensor d = filled(DType::Int8, {6}, {1, -1, 100, 2, 0, -1});
  auto got = run_kernel(*Kernel::compile(g), {a, b, c, d});
  EXPECT_EQ(got[0].get_int({0}), -4);             // floordiv(-7, 2)
  EXPECT_EQ(got[1].get_int({0}), 1);              // remainder(-7, 2)
  EXPECT_EQ(got[2].get_int({0}), -1);             // fmod(-7, 2)
  EXPECT_EQ(got[1].get_int({1}), -1);             // remainder(7, -2)
  EXPECT_EQ(got[3].get_int({0}), -128);           // 127 + 1 wraps
  EXPECT_EQ(got[0].get_int({4}), -2147483648LL);  // INT_MIN // -1 wraps
  EXPECT_EQ(got[5].get_int({5}), 0);              // shift by >= 32
  expect_matches_interpreter(g, {a, b, c, d}, 0.0);
}

// floor / ceil / trunc / round on the values where they differ: ties (round: to even), -0.0, a negative value that
// rounds to -0.0, subnormals, values beyond 2^23 (already integral), +-inf, NaN; 37 elements (whole vectors and a
// tail). f32 takes one vrndscaleps / vroundps per vector (af_rnd_, af_kernel_ops.inc), bf16 the same after its
// widening, f64 the libm function per lane: every result must equal the libm function's, the sign of a zero included.
TEST(Kernel, RoundingOpsMatchLibmOnHardValues) {
  const std::vector<double> hard = {-2.5, -1.5, -0.5,      -0.3,       -0.0, 0.0,    0.3,   0.5,  1.5,   2.5,
                                    3.7,  -3.7, 8388607.5, -8388609.0, 1e30, -1e-40, 1e-40, kInf, -kInf, kNaN};
  std::vector<double> vals;
  for (int i = 0; i < 37; ++i) vals.push_back(hard[static_cast<size_t>(i) % hard.size()]);
  for (const char* dt : {"f32", "bf16", "f64"}) {
    Graph g = parse_graph(std::string("graph r(%a: ") + dt + "[s0]) {\n  %f = floor(%a)\n  %c = ceil(%a)\n" +
                          "  %t = trunc(%a)\n  %r = round(%a)\n  return %f, %c, %t, %r\n}");
    const DType t = g.node(g.inputs()[0]).dtype;
    HostTensor a = filled(t, {37}, vals);
    auto got = run_kernel(*Kernel::compile(g), {a});
    double (*const fns[4])(double) = {std::floor, std::ceil, std::trunc, std::nearbyint};
    for (size_t o = 0; o < 4; ++o)
      for (int64_t i = 0; i < 37; ++i) {
        const double x = a.get_double({i}), want = fns[o](x), v = got[o].get_double({i});
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(v)) << dt << " output " << o << " of " << x;
        } else {
          EXPECT_EQ(v, want) << dt << " output " << o << " of " << x;
          EXPECT_EQ(std::signbit(v), std::signbit(want)) << dt << " output " << o << " of " << x;
        }
      }
    expect_matches_interpreter(g, {a}, 0.0);
  }
}

// A NaN clamp bound makes every element NaN, in eager and in the interpreter; the kernel's compares alone would
// ignore it (found by review, session 14). Other bounds, -inf/+inf ones included, leave non-NaN elements finite.
TEST(Kernel, ClampWithANaNBoundIsNaNEverywhere) {
  for (const char* attrs : {"{min=nan}", "{max=nan}", "{min=nan, max=1.0}", "{min=-1.0, max=nan}"}) {
    for (const char* dt : {"f32", "bf16", "f64"}) {
      Graph g =
          parse_graph(std::string("graph c(%x: ") + dt + "[s0]) {\n  %y = clamp(%x) " + attrs + "\n  return %y\n}");
      HostTensor x = filled(dt == std::string("f32")    ? DType::Float32
                            : dt == std::string("bf16") ? DType::BFloat16
                                                        : DType::Float64,
                            {19}, {-3, -0.0, 0.0, 2.5, kInf, -kInf, kNaN, 1, 7, -7, 0.25, 3, 4, 5, 6, 8, 9, 10, 11});
      auto got = run_kernel(*Kernel::compile(g), {x});
      for (int64_t i = 0; i < 19; ++i)
        EXPECT_TRUE(std::isnan(got[0].get_double({i}))) << attrs << " " << dt << " " << i;
      expect_matches_interpreter(g, {x}, 0.0);
    }
  }
  Graph g = parse_graph("graph c(%x: f32[s0]) {\n  %y = clamp(%x) {min=-inf, max=inf}\n  return %y\n}");
  HostTensor x = filled(DType::Float32, {4}, {-3, kInf, -kInf, 1});
  auto got = run_kernel(*Kernel::compile(g), {x});
  EXPECT_EQ(got[0].get_double({1}), kInf);
  EXPECT_EQ(got[0].get_double({2}), -kInf);
  expect_matches_interpreter(g, {x}, 0.0);
}

// A value returned k times is stored once per output, not k times per output (found by review, session 14: the
// emitter stored every output holding the value once per occurrence in the return list; 30 copies took 36 s to
// compile). Elementwise, row-reduction and cross-row-reduction outputs; results against the interpreter.
TEST(Kernel, RepeatedOutputValuesAreStoredOncePerOutput) {
  auto graph = [](int k) {
    std::string outs;
    for (int i = 0; i < k; ++i) outs += "%a, ";
    return parse_graph("graph f(%x: f32[s0, s1]) {\n  %a = add(%x, %x)\n  return " + outs + "%a\n}");
  };
  auto stores = [](const std::string& src) {  // store statements in the kernel function (not the prelude)
    size_t n = 0;
    for (const char* op : {"af_sto<", "af_stu<", "af_stn<", "af_st<"})
      for (size_t at = src.find(op, src.find("extern \"C\"")); at != std::string::npos; at = src.find(op, at + 1)) ++n;
    return n;
  };
  const size_t one = stores(Kernel::compile(graph(0))->source());
  ASSERT_GT(one, 0u);
  EXPECT_EQ(stores(Kernel::compile(graph(3))->source()), 4 * one);
  const HostTensor x = random_tensor(DType::Float32, {37, 1029}, 5);
  expect_matches_interpreter(graph(3), {x}, 0.0);
  for (const char* red : {"sum(%x) {axes=[1], keepdim=true}", "amax(%x) {axes=[0], keepdim=false}"}) {
    Graph g = parse_graph(std::string("graph f(%x: f32[s0, s1]) {\n  %s = ") + red + "\n  return %s, %s, %s\n}");
    expect_matches_interpreter(g, {x});
  }
}

TEST(Kernel, StridedExpandedTransposedInputsAndStridedOutputs) {
  Graph g = parse_graph(R"(graph e(%x: f32[s0, s1], %y: f32[s0, s1], %z: f32[s1]) {
    %a = add(%x, %y)
    %b = mul(%a, %z)
    %s = sum(%b) {axes=[1], keepdim=true}
    %o = sub(%b, %s)
    return %o, %s
  })");
  auto k = Kernel::compile(g);
  std::mt19937_64 rng(7);
  for (Layout lx : {Layout::Contiguous, Layout::Permuted, Layout::Gapped, Layout::Expanded}) {
    for (Layout lo : {Layout::Contiguous, Layout::Permuted, Layout::Gapped}) {
      HostTensor x = random_tensor(DType::Float32, {19, 23}, 1, lx);
      HostTensor y = random_tensor(DType::Float32, {19, 23}, 2, Layout::Permuted);
      HostTensor z = random_tensor(DType::Float32, {23}, 3, Layout::Gapped);
      auto want = interpret(g, {x, y, z});
      HostTensor o0 = make_tensor(DType::Float32, {19, 23}, lo, rng);
      HostTensor o1 = make_tensor(DType::Float32, {19, 1}, lo, rng);
      k->run({x, y, z}, {o0, o1});
      EXPECT_EQ(compare(o0, want[0], 1e-5), "");
      EXPECT_EQ(compare(o1, want[1], 1e-5), "");
    }
  }
  EXPECT_GE(k->num_variants(), 2u) << "strided operands use their own stride class";
}

// Elementwise kernels and outer reductions with an operand read lane by lane (a transposed input or output) number
// their rows vector-block-major with vblock capped at 256 (column_block_schedule): rows, tails and outer axes must
// still cover every element exactly once, for vector extents below, at and across the cap, in 2-D and 3-D, f32 and
// bf16, with a transposed output too.
TEST(Kernel, TransposedOperandsInColumnBlockOrder) {
  for (DType t : {DType::Float32, DType::BFloat16}) {
    const std::string T(dtype_name(t));
    Graph gt = parse_graph("graph t(%x: " + T + "[s0, s1, s2], %y: " + T + "[s0, s1, s2], %b: " + T + R"([s2]) {
    %a = add(%x, %y)
    %m = mul(%a, %b)
    %s = sum(%m) {axes=[1], keepdim=false}
    return %m, %s
  })");
    auto k = Kernel::compile(gt);
    std::mt19937_64 rng(11);
    for (std::vector<int64_t> sz :
         {std::vector<int64_t>{1, 5, 7}, {2, 33, 255}, {3, 17, 256}, {1, 70, 257}, {2, 9, 600}, {1, 1, 1000}}) {
      for (Layout lo : {Layout::Contiguous, Layout::Permuted}) {
        HostTensor x = random_tensor(t, sz, 21, Layout::Permuted);
        HostTensor y = random_tensor(t, sz, 22, Layout::Contiguous);
        HostTensor b = random_tensor(t, {sz[2]}, 23, Layout::Contiguous);
        auto want = interpret(gt, {x, y, b});
        HostTensor o0 = make_tensor(t, sz, lo, rng);
        HostTensor o1 = make_tensor(t, {sz[0], sz[2]}, lo, rng);
        kernel_testing::fill_random(o0, rng, false);  // poisoned: every element must be overwritten
        kernel_testing::fill_random(o1, rng, false);
        k->run({x, y, b}, {o0, o1});
        const double tol = t == DType::Float32 ? 1e-5 : 2e-2;
        EXPECT_EQ(compare(o0, want[0], tol), "") << dtype_name(t) << " " << sz[0] << "x" << sz[1] << "x" << sz[2];
        EXPECT_EQ(compare(o1, want[1], tol), "") << dtype_name(t) << " " << sz[0] << "x" << sz[1] << "x" << sz[2];
      }
    }
    EXPECT_GE(k->num_variants(), 2u) << "the permuted operands run in a strided (column-block) variant";
  }
}

// An input whose size is a linear form of a symbol no other dim binds (a convolution's output: s1 - 2) determines
// that symbol (found through torch: Conv2d + BatchNorm2d in eval mode failed with "unbound size symbol 's1'").
TEST(Kernel, SolvesLinearInputSizes) {
  Graph g = parse_graph(R"(graph c(%x: f32[s0, s1 - 2], %w: f32[s1 - 2]) {
    %y = mul(%x, %w)
    %z = relu(%y)
    return %z
  })");
  for (int64_t n : {3, 4, 40}) {
    HostTensor x = random_tensor(DType::Float32, {5, n - 2}, 31);
    HostTensor w = random_tensor(DType::Float32, {n - 2}, 32);
    expect_matches_interpreter(g, {x, w});
  }
}

TEST(Kernel, ZeroSizeAndZeroDim) {
  Graph g = parse_graph(kSoftmax);
  auto k = Kernel::compile(g);
  for (auto sz : std::vector<std::vector<int64_t>>{{0, 5}, {3, 0}, {0, 0}}) {
    HostTensor x = HostTensor::empty(DType::Float32, sz);
    auto out = run_kernel(*k, {x});
    EXPECT_EQ(out[0].sizes, sz);
  }
  Graph s = parse_graph(R"(graph z(%x: f32[s0, s1]) {
    %s = sum(%x) {axes=[1], keepdim=false}
    %m = mean(%x) {axes=[1], keepdim=false}
    return %s, %m
  })");
  HostTensor x = HostTensor::empty(DType::Float32, {3, 0});
  auto out = run_kernel(*Kernel::compile(s), {x});
  EXPECT_EQ(out[0].get_double({1}), 0.0);
  EXPECT_TRUE(std::isnan(out[1].get_double({1})));
  // An empty kept axis must not suppress an output that does not vary along it.
  Graph e = parse_graph(R"(graph e(%x: i8[s0, s1], %y: i8[]) {
    %n = bitwise_not(%x)
    %s = sign(%y)
    return %n, %s
  })");
  HostTensor ex = HostTensor::empty(DType::Int8, {0, 3});
  auto eo = run_kernel(*Kernel::compile(e), {ex, filled(DType::Int8, {}, {-5})});
  EXPECT_EQ(eo[0].numel(), 0);
  EXPECT_EQ(eo[1].get_int({}), -1);
  Graph d = parse_graph(R"(graph d(%a: f32[], %b: f32[]) {
    %c = add(%a, %b)
    %e = exp(%c)
    return %e
  })");
  expect_matches_interpreter(d, {filled(DType::Float32, {}, {0.5}), filled(DType::Float32, {}, {0.25})});
}

TEST(Kernel, EmptyReducedAxisStillWritesFullOutputs) {
  // Regression (fuzz seeds 777461, 777567): sum over all axes with s0 = 0 empties the loops over R, but %f varies
  // only along the non-empty reduced axis s1 and has 1 x s1 elements; %g also depends on the (empty) reductions.
  Graph g = parse_graph(R"(graph er(%x: f32[s0, s1], %y: f32[1, s1]) {
    %s = sum(%x) {axes=[0, 1], keepdim=false}
    %m = mean(%x) {axes=[0, 1], keepdim=true}
    %f = neg(%y)
    %g = add(%y, %m)
    return %s, %f, %g
  })");
  auto k = Kernel::compile(g);
  HostTensor x = HostTensor::empty(DType::Float32, {0, 33});
  HostTensor y = random_tensor(DType::Float32, {1, 33}, 7);
  auto out = run_kernel(*k, {x, y});
  EXPECT_EQ(out[0].get_double({}), 0.0);
  for (int64_t j = 0; j < 33; ++j) {
    EXPECT_EQ(out[1].get_double({0, j}), -y.get_double({0, j})) << j;
    EXPECT_TRUE(std::isnan(out[2].get_double({0, j}))) << j;
  }
  expect_matches_interpreter(g, {x, y}, 0);
  // Non-empty sizes still run the generated kernel and agree.
  expect_matches_interpreter(g, {random_tensor(DType::Float32, {4, 33}, 8), y});
}

TEST(Kernel, FloatMulAddIsNotContractedToFma) {
  // Regression (fuzz seed 777574): eager rounds x*k and then +c; a fused multiply-add rounds once and differs by an
  // ulp. Kernels are compiled with -ffp-contract=off so the result is exact.
  Graph g = parse_graph(R"(graph fma(%x: f64[s0], %k: f64[s0], %c: f64[s0]) {
    %p = mul(%x, %k)
    %z = add(%p, %c)
    return %z
  })");
  std::vector<HostTensor> in = {random_tensor(DType::Float64, {1000}, 11), random_tensor(DType::Float64, {1000}, 12),
                                random_tensor(DType::Float64, {1000}, 13)};
  auto want = interpret(g, in);
  int64_t fma_differs = 0;
  for (int64_t i = 0; i < 1000; ++i)
    if (std::fma(in[0].get_double({i}), in[1].get_double({i}), in[2].get_double({i})) != want[0].get_double({i}))
      ++fma_differs;
  ASSERT_GT(fma_differs, 0) << "inputs do not distinguish a contracted FMA";
  expect_matches_interpreter(g, in, 0);
}

TEST(Kernel, IotaAndFullSources) {
  // iota indexes the domain directly: its axis must survive launch-time axis merging of contiguous operands.
  Graph g = parse_graph(R"(graph io(%x: f32[s0, s1]) {
    %i = iota() {length=s1, start=3, step=2, dtype=i64}
    %f = cast(%i) {dtype=f32}
    %h = full() {value=0.5, dtype=f32, shape=[s0, 1]}
    %a = add(%x, %f)
    %b = mul(%a, %h)
    %m = argmax(%b) {axes=[1], keepdim=true}
    return %b, %m
  })");
  for (auto [n, d] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {4, 33}, {9, 100}})
    expect_matches_interpreter(g, {random_tensor(DType::Float32, {n, d}, 11)}, 0.0);
}

TEST(Kernel, BoolAndAnyAll) {
  Graph g = parse_graph(R"(graph b(%x: f32[s0, s1]) {
    %p = gt(%x, %x)
    %n = isnan(%x)
    %a = any(%n) {axes=[1], keepdim=false}
    %l = all(%x) {axes=[1], keepdim=false}
    %c = logical_or(%p, %n)
    return %a, %l, %c
  })");
  expect_matches_interpreter(g, {filled(DType::Float32, {3, 3}, {1, kNaN, 0, 1, 2, 3, -0.0, 1, 1})}, 0.0);
}

TEST(Kernel, RefusesWhatIsNotOneKernel) {
  Graph perm = parse_graph(R"(graph p(%x: f32[s0, s1]) {
    %y = permute(%x) {dims=[1, 0]}
    return %y
  })");
  auto r = kernel_unsupported_reason(perm);
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->find("layout op permute"), std::string::npos) << *r;
  EXPECT_THROW(Kernel::compile(perm), IRError);
  Graph two = parse_graph(R"(graph t(%x: f32[s0, s1]) {
    %a = sum(%x) {axes=[0], keepdim=true}
    %b = sum(%x) {axes=[1], keepdim=true}
    %c = add(%a, %b)
    return %c
  })");
  r = kernel_unsupported_reason(two);
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->find("one axis set"), std::string::npos) << *r;
  EXPECT_FALSE(kernel_unsupported_reason(parse_graph(kSoftmax)).has_value());
}

// A symbol that only appears inside a non-linear size (the upper half of a dynamic last dim, review finding of
// session 7) cannot be bound from the input sizes: the kernel compiles with it as a given symbol, and a run without
// its value fails naming the symbol (the backend passes the graph's bindings; session 8).
TEST(Kernel, TakesSymbolsTheInputSizesDoNotDetermineFromTheCaller) {
  Graph half = parse_graph(R"(graph h(%x: f32[1, s0, s1 - floordiv(s1, 2)]) {
    %y = neg(%x)
    return %y
  })");
  auto kh = Kernel::compile(half);
  EXPECT_EQ(kh->given_symbols(), std::vector<std::string>{"s1"});
  HostTensor x = filled(DType::Float32, {1, 2, 3}, {1, -2, 3, -4, 5, -6});
  std::vector<float> out(6, 99.0f);
  HostTensor o = HostTensor::view(DType::Float32, out.data(), {1, 2, 3}, {6, 3, 1});
  try {
    kh->run({x}, {o});
    ADD_FAILURE() << "ran without the value of s1";
  } catch (const IRError& e) {
    EXPECT_NE(std::string(e.what()).find("size symbol s1 is not determined by the input sizes and its value was not "
                                         "given"),
              std::string::npos)
        << e.what();
  }
  const Bindings good{{"s1", 5}}, bad{{"s1", 8}};
  EXPECT_THROW(kh->run({x}, {o}, &bad), IRError);  // 8 - 4 = 4 != 3
  kh->run({x}, {o}, &good);
  EXPECT_EQ(out, (std::vector<float>{-1, 2, -3, 4, -5, 6}));
  // Linear forms still bind (2*s1 + 1 determines s1), as do bare symbols: nothing to give.
  auto k = Kernel::compile(parse_graph(R"(graph l(%x: f32[s0, 2*s1 + 1]) {
    %y = neg(%x)
    return %y
  })"));
  EXPECT_TRUE(k->given_symbols().empty());
  EXPECT_EQ(k->output_sizes({filled(DType::Float32, {2, 7}, std::vector<double>(14, 1.0))}),
            (std::vector<std::vector<int64_t>>{{2, 7}}));
}

TEST(Kernel, RejectsMismatchedInputs) {
  auto k = Kernel::compile(parse_graph(kSoftmax));
  EXPECT_THROW(k->output_sizes({HostTensor::empty(DType::Float64, {2, 2})}), IRError);
  EXPECT_THROW(k->output_sizes({HostTensor::empty(DType::Float32, {2})}), IRError);
  HostTensor x = HostTensor::empty(DType::Float32, {2, 3});
  HostTensor bad = HostTensor::empty(DType::Float32, {3, 2});
  EXPECT_THROW(k->run({x}, {bad}), IRError);
}

}  // namespace
}  // namespace autofuse
