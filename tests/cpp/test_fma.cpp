// The IR's fma op (a * b + c rounded once; eager's addcmul is fma(v * t1, t2, x)): its type rule and text form, the
// reference interpreter on hand-picked values (each one chosen so that the unfused a * b + c gives another answer),
// and compiled kernels bit for bit against std::fma on random data with NaN / inf / signed zeros, sizes 0, 1 and odd
// tails, strided, permuted and expanded inputs, broadcasts, all four float dtypes, and every kernel ISA this CPU runs
// (AVX-512, AVX2: the FMA instruction; scalar: libm's fma per lane).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/parser.h"
#include "autofuse/ir/printer.h"
#include "autofuse/runtime/isa.h"
#include "kernel_test_util.h"
#include "test_interpreter_util.h"

namespace autofuse {
namespace {

using testing::run_op;
using testing::same_bits;
using testing::tensor;
using testing::values;

constexpr double kNaN = testing::kNaN;
constexpr double kInf = testing::kInf;

void expect_bits(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k)
    EXPECT_TRUE(same_bits(got[k], want[k])) << "element " << k << ": got " << got[k] << ", want " << want[k];
}

std::string infer_error(const std::vector<TensorType>& in) {
  try {
    infer_type(OpKind::Fma, in, {});
  } catch (const IRError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Fma, TypeRuleFloatsOfOneDTypeBroadcast) {
  const Expr s0 = Expr::sym("s0");
  for (DType d : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    const TensorType t = infer_type(OpKind::Fma, {{d, {s0, Expr(1)}}, {d, {Expr(4)}}, {d, {}}}, {});
    EXPECT_EQ(t.dtype, d);
    EXPECT_EQ(t.shape, (Shape{s0, Expr(4)}));
  }
  EXPECT_EQ(infer_error({{DType::Int32, {}}, {DType::Int32, {}}, {DType::Int32, {}}}),
            "fma: expects floating-point inputs, got i32");
  EXPECT_EQ(infer_error({{DType::Float32, {}}, {DType::Float32, {}}, {DType::Float16, {}}}),
            "fma: input 2 has dtype f16, expected f32 like input 0");
  EXPECT_EQ(infer_error({{DType::Float32, {}}, {DType::Float32, {}}}), "fma: takes 3 inputs, got 2");
  EXPECT_NE(infer_error({{DType::Float32, {Expr(3)}}, {DType::Float32, {Expr(4)}}, {DType::Float32, {}}})
                .find("do not broadcast"),
            std::string::npos);
}

TEST(Fma, TextRoundTrip) {
  const std::string text =
      "graph g(%a: bf16[s0, 1], %b: bf16[4], %c: bf16[]) {\n  %y = fma(%a, %b, %c) : bf16[s0, 4]\n  return %y\n}\n";
  const Graph g = parse_graph(text);
  ASSERT_EQ(g.node(g.outputs()[0]).op, OpKind::Fma);
  EXPECT_EQ(print_graph(g), text);
  EXPECT_EQ(print_graph(parse_graph(print_graph(g))), text);
}

// Each case rounds differently when the product is rounded first (the unfused value in the comment).
TEST(FmaInterp, RoundsOnce) {
  const double e23 = std::ldexp(1.0, -23), e52 = std::ldexp(1.0, -52);
  // (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46: the 2^-46 survives (unfused: 0)
  auto a = tensor(DType::Float32, {1}, {1 + e23});
  expect_bits(values(run_op(OpKind::Fma, {a, a, tensor(DType::Float32, {1}, {-(1 + 2 * e23)})})),
              {std::ldexp(1.0, -46)});
  auto a64 = tensor(DType::Float64, {1}, {1 + e52});
  expect_bits(values(run_op(OpKind::Fma, {a64, a64, tensor(DType::Float64, {1}, {-(1 + 2 * e52)})})),
              {std::ldexp(1.0, -104)});
  // 2^64 * 2^64 overflows f32 (unfused: inf - FLT_MAX = inf); exactly, 2^128 - FLT_MAX = 2^104
  auto big = tensor(DType::Float32, {1}, {std::ldexp(1.0, 64)});
  expect_bits(values(run_op(OpKind::Fma, {big, big, tensor(DType::Float32, {1}, {-FLT_MAX})})), {std::ldexp(1.0, 104)});
  // -1e-30 * 1e-30 underflows to -0 (unfused: -0 + +0 = +0); the exact sum is negative: -0
  expect_bits(values(run_op(OpKind::Fma, {tensor(DType::Float32, {1}, {-1e-30}), tensor(DType::Float32, {1}, {1e-30}),
                                          tensor(DType::Float32, {1}, {0.0})})),
              {-0.0});
  // f16 / bf16: (1 + 2^-10)^2 - (1 + 2^-9) = 2^-20, exact in f32 and in f16 (unfused in f16: 0); bf16 likewise
  auto h = tensor(DType::Float16, {1}, {1 + std::ldexp(1.0, -10)});
  expect_bits(values(run_op(OpKind::Fma, {h, h, tensor(DType::Float16, {1}, {-(1 + std::ldexp(1.0, -9))})})),
              {std::ldexp(1.0, -20)});
  auto b = tensor(DType::BFloat16, {1}, {1 + std::ldexp(1.0, -7)});
  expect_bits(values(run_op(OpKind::Fma, {b, b, tensor(DType::BFloat16, {1}, {-(1 + std::ldexp(1.0, -6))})})),
              {std::ldexp(1.0, -14)});
}

TEST(FmaInterp, SpecialValuesAndSignedZeros) {
  for (DType d : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(d));
    auto a = tensor(d, {9}, {kNaN, 1, 1, kInf, kInf, 1, -0.0, 0.0, 1});
    auto b = tensor(d, {9}, {1, kNaN, 1, 0.0, 1, 1, 1, -1, -1});
    auto c = tensor(d, {9}, {1, 1, kNaN, 1, -kInf, kInf, -0.0, 0.0, 1});
    expect_bits(values(run_op(OpKind::Fma, {a, b, c})), {kNaN, kNaN, kNaN, kNaN, kNaN, kInf, -0.0, 0.0, 0.0});
  }
}

TEST(FmaInterp, Broadcasts) {
  auto a = tensor(DType::Float32, {2, 1}, {1, 2});
  auto b = tensor(DType::Float32, {3}, {1, 10, 100});
  auto c = tensor(DType::Float32, {}, {0.5});
  HostTensor y = run_op(OpKind::Fma, {a, b, c});
  EXPECT_EQ(y.sizes, (std::vector<int64_t>{2, 3}));
  expect_bits(values(y), {1.5, 10.5, 100.5, 2.5, 20.5, 200.5});
}

// ---- compiled kernels ----

/// Sets an environment variable for its lifetime (AUTOFUSE_ISA, AUTOFUSE_EMULATE_PRECISION_CASTS: kernels compiled
/// meanwhile follow it), then restores the old value.
struct EnvScope {
  EnvScope(const char* name, const std::string& value) : name(name) {
    if (const char* o = std::getenv(name)) old = o, had = true;
    ::setenv(name, value.c_str(), 1);
  }
  ~EnvScope() {
    if (had)
      ::setenv(name, old.c_str(), 1);
    else
      ::unsetenv(name);
  }
  const char* name;
  std::string old;
  bool had = false;
};

/// The kernel ISAs this CPU runs, widest first.
std::vector<std::string> runnable_isas() {
  const std::string p = probed_isa();
  if (p == "avx512") return {"avx512", "avx2", "scalar"};
  if (p == "avx2") return {"avx2", "scalar"};
  return {"scalar"};
}

/// fma of three values of dtype t as the IR defines it: in float for f16 / bf16 / f32, in double for f64, rounded
/// to t; and the unfused a * b + c (the product rounded first).
double fma_ref(DType t, double a, double b, double c) {
  if (t == DType::Float64) return std::fma(a, b, c);
  return round_to_dtype(std::fmaf(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)), t);
}
double unfused(DType t, double a, double b, double c) {
  if (t == DType::Float64) return a * b + c;
  const float p = static_cast<float>(a) * static_cast<float>(b);
  return round_to_dtype(p + static_cast<float>(c), t);
}

/// fma(a, b, c) over [s0] compiled for every runnable ISA, run on random N(0, 1) data (5 % NaN / inf / signed zeros)
/// of sizes 0, 1, tails and longer; every element against fma_ref. Returns how many elements the unfused formula gets
/// wrong (so the data is known to tell the two apart).
int64_t check_contiguous(DType t) {
  const std::string dt(dtype_name(t));
  const Graph g = parse_graph("graph g(%a: " + dt + "[s0], %b: " + dt + "[s0], %c: " + dt +
                              "[s0]) {\n  %y = fma(%a, %b, %c)\n  return %y\n}");
  std::mt19937_64 rng(20261129);
  int64_t unfused_wrong = 0;
  for (const std::string& isa : runnable_isas()) {
    EnvScope scope("AUTOFUSE_ISA", isa);
    const std::shared_ptr<Kernel> k = Kernel::compile(g);
    for (int64_t n : {0, 1, 7, 15, 16, 17, 31, 33, 63, 1000, 4099}) {
      std::vector<HostTensor> in;
      for (int i = 0; i < 3; ++i) {
        in.push_back(HostTensor::empty(t, {n}));
        kernel_testing::fill_random(in.back(), rng, true);
      }
      const HostTensor y = kernel_testing::run_kernel(*k, in).at(0);
      for (int64_t i = 0; i < n; ++i) {
        const double a = in[0].get_double({i}), b = in[1].get_double({i}), c = in[2].get_double({i});
        const double want = fma_ref(t, a, b, c), got = y.get_double({i});
        if (!same_bits(got, want)) {
          ADD_FAILURE() << isa << " " << dt << " n=" << n << " element " << i << ": fma(" << a << ", " << b << ", " << c
                        << ") = " << got << ", want " << want;
          return unfused_wrong;
        }
        unfused_wrong += !same_bits(unfused(t, a, b, c), want);
      }
    }
  }
  return unfused_wrong;
}

TEST(FmaKernel, F32AndF64MatchStdFmaOnEveryIsa) {
  // ~25 % of the random products are inexact: the unfused formula must fail on many of them
  EXPECT_GT(check_contiguous(DType::Float32), 1000);
  EXPECT_GT(check_contiguous(DType::Float64), 1000);
}

TEST(FmaKernel, F16AndBF16MatchStdFmaOnEveryIsa) {
  // a product of two 16-bit values is exact in f32, so here fused and unfused agree; FmaKernel.ChainsKeepF32 tells
  // them apart
  check_contiguous(DType::Float16);
  check_contiguous(DType::BFloat16);
}

/// Bitwise equality of every element of two tensors of one shape ("" when equal).
std::string bit_mismatch(const HostTensor& got, const HostTensor& want) {
  if (got.sizes != want.sizes) return "sizes differ";
  std::string err;
  for_each_multi_index(want.sizes, [&](const std::vector<int64_t>& i) {
    if (err.empty() && !same_bits(got.get_double(i), want.get_double(i)))
      err = "got " + std::to_string(got.get_double(i)) + ", want " + std::to_string(want.get_double(i));
  });
  return err;
}

TEST(FmaKernel, LayoutsAndBroadcastsMatchTheInterpreter) {
  using kernel_testing::Layout;
  std::mt19937_64 rng(777);
  for (const char* dt : {"f32", "f64", "f16", "bf16"}) {
    const Graph g = parse_graph(std::string("graph g(%a: ") + dt + "[s0, s1], %b: " + dt + "[s1], %c: " + dt +
                                "[s0, 1]) {\n  %y = fma(%a, %b, %c)\n  %z = fma(%c, %a, %b)\n  return %y, %z\n}");
    for (const std::string& isa : runnable_isas()) {
      EnvScope scope("AUTOFUSE_ISA", isa);
      const std::shared_ptr<Kernel> k = Kernel::compile(g);
      for (Layout l : {Layout::Contiguous, Layout::Permuted, Layout::Gapped, Layout::Expanded}) {
        for (auto [s0, s1] : {std::pair<int64_t, int64_t>{1, 1}, {3, 17}, {5, 33}, {2, 1000}, {0, 5}}) {
          std::vector<HostTensor> in = {kernel_testing::make_tensor(g.node(0).dtype, {s0, s1}, l, rng),
                                        kernel_testing::make_tensor(g.node(0).dtype, {s1}, Layout::Gapped, rng),
                                        kernel_testing::make_tensor(g.node(0).dtype, {s0, 1}, l, rng)};
          for (HostTensor& h : in) kernel_testing::fill_random(h, rng, true);
          const std::vector<HostTensor> got = kernel_testing::run_kernel(*k, in), want = interpret(g, in);
          for (size_t o = 0; o < 2; ++o)
            EXPECT_EQ(bit_mismatch(got[o], want[o]), "")
                << isa << " " << dt << " [" << s0 << ", " << s1 << "] layout " << static_cast<int>(l) << " out " << o;
        }
      }
    }
  }
}

// Under the default policy a f16 / bf16 chain stays in f32 inside a kernel: in fma(x / y, z, w) the quotient is a full
// f32 value, so its product with z is inexact in f32 and fused and unfused differ (as in eager's addcmul, whose v * t1
// is an f32 value); kernels equal the interpreter under both policies.
TEST(FmaKernel, ChainsKeepF32) {
  std::mt19937_64 rng(18);
  for (const char* dt : {"f16", "bf16"}) {
    const Graph g =
        parse_graph(std::string("graph g(%x: ") + dt + "[s0], %y: " + dt + "[s0], %z: " + dt + "[s0], %w: " + dt +
                    "[s0]) {\n  %p = div(%x, %y)\n  %r = fma(%p, %z, %w)\n  return %r\n}");
    const DType t = g.node(0).dtype;
    const int64_t n = 100000;
    std::vector<HostTensor> in;
    for (int i = 0; i < 4; ++i) {
      in.push_back(HostTensor::empty(t, {n}));
      kernel_testing::fill_random(in.back(), rng, false);
    }
    int64_t unfused_wrong = 0;
    for (const char* emulate : {"0", "1"}) {
      EnvScope policy("AUTOFUSE_EMULATE_PRECISION_CASTS", emulate);
      const HostTensor got = kernel_testing::run_kernel(*Kernel::compile(g), in).at(0);
      EXPECT_EQ(bit_mismatch(got, interpret(g, in).at(0)), "") << dt << " emulate " << emulate;
      for (int64_t i = 0; emulate[0] == '0' && i < n; ++i) {
        const float p = static_cast<float>(in[0].get_double({i})) / static_cast<float>(in[1].get_double({i}));
        const double z = in[2].get_double({i}), w = in[3].get_double({i});
        unfused_wrong += !same_bits(got.get_double({i}), unfused(t, p, z, w));
      }
    }
    EXPECT_GT(unfused_wrong, 0) << dt;
  }
}

}  // namespace
}  // namespace autofuse
