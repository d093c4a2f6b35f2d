// The mixed-precision policy (ir/precision.h, docs/precision.md): f16/bf16 stay in float32 inside a kernel and are
// rounded at stores, casts and sources by default; AUTOFUSE_EMULATE_PRECISION_CASTS=1 rounds after every op. The
// interpreter models both, kernels and interpreter agree bit for bit under each, and the two policies never share a
// kernel source. Also the row stash of multi-pass row reductions (codegen/cpu/emit_kernel.cpp), on both sides of
// its size limit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "autofuse/ir/precision.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using kernel_testing::compare;
using kernel_testing::Layout;
using kernel_testing::make_tensor;
using kernel_testing::run_kernel;

/// Sets AUTOFUSE_EMULATE_PRECISION_CASTS for the scope (nullopt: unset), restoring the previous value.
class PolicyEnv {
 public:
  explicit PolicyEnv(std::optional<std::string> v) {
    const char* old = std::getenv(kVar);
    if (old) old_ = old;
    if (v)
      ::setenv(kVar, v->c_str(), 1);
    else
      ::unsetenv(kVar);
  }
  ~PolicyEnv() {
    if (old_)
      ::setenv(kVar, old_->c_str(), 1);
    else
      ::unsetenv(kVar);
  }

 private:
  static constexpr const char* kVar = "AUTOFUSE_EMULATE_PRECISION_CASTS";
  std::optional<std::string> old_;
};

HostTensor vector_of(DType t, const std::vector<double>& v) {
  HostTensor h = HostTensor::empty(t, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) h.set_double({static_cast<int64_t>(i)}, v[i]);
  return h;
}

TEST(PrecisionPolicy, EnvironmentVariable) {
  {
    PolicyEnv e(std::nullopt);
    EXPECT_EQ(precision_policy_from_env(), PrecisionPolicy::Float32Inside);
  }
  {
    PolicyEnv e("0");
    EXPECT_EQ(precision_policy_from_env(), PrecisionPolicy::Float32Inside);
  }
  {
    PolicyEnv e("1");
    EXPECT_EQ(precision_policy_from_env(), PrecisionPolicy::EmulateCasts);
    EXPECT_EQ(InterpretOptions{}.precision, PrecisionPolicy::EmulateCasts);
  }
  {
    PolicyEnv e("yes");  // a boolean (support/env.h)
    EXPECT_EQ(precision_policy_from_env(), PrecisionPolicy::EmulateCasts);
  }
  {
    PolicyEnv e("2");  // not a boolean: warns once (tests/python/test_env_vars.py checks the text) and the default
    EXPECT_EQ(precision_policy_from_env(), PrecisionPolicy::Float32Inside);
  }
}

// (1 + 2^-9) - 1 in bf16: per-op rounding turns 1 + 2^-9 into 1 (bf16 has 8 significant bits), float32 keeps it.
const char* kBf16Chain = R"(graph chain(%x: bf16[s0]) {
  %c = constant() {value=0.001953125, dtype=bf16}
  %y = add(%x, %c)
  %z = sub(%y, %x)
  %h = cast(%y) {dtype=bf16}
  return %z, %y
})";

TEST(PrecisionPolicy, InterpreterRoundsPerOpOnlyWhenEmulating) {
  Graph g = parse_graph(kBf16Chain);
  HostTensor x = vector_of(DType::BFloat16, {1.0, 65536.0});
  auto f32 = interpret(g, {x}, InterpretOptions{PrecisionPolicy::Float32Inside});
  auto emu = interpret(g, {x}, InterpretOptions{PrecisionPolicy::EmulateCasts});
  EXPECT_EQ(f32[0].get_double({0}), std::ldexp(1.0, -9));  // kept in float32 between add and sub
  EXPECT_EQ(emu[0].get_double({0}), 0.0);                  // rounded after add, as eager does
  // The output %y itself is rounded to bf16 under both policies (outputs are stored in their dtype).
  EXPECT_EQ(f32[1].get_double({0}), 1.0);
  EXPECT_EQ(emu[1].get_double({0}), 1.0);
  EXPECT_EQ(f32[0].get_double({1}), 0.0);  // 2^16 + 2^-9 is 2^16 in float32 too
}

TEST(PrecisionPolicy, ExplicitCastRoundsUnderBothPolicies) {
  Graph g = parse_graph(R"(graph c(%a: f32[s0]) {
    %b = cast(%a) {dtype=bf16}
    %one = constant() {value=1.0, dtype=bf16}
    %d = sub(%b, %one)
    %h = cast(%a) {dtype=f16}
    %k = constant() {value=1.0, dtype=f16}
    %e = sub(%h, %k)
    return %d, %e
  })");
  HostTensor a = vector_of(DType::Float32, {1 + std::ldexp(1.0, -9), 1 + std::ldexp(1.0, -12)});
  for (PrecisionPolicy p : {PrecisionPolicy::Float32Inside, PrecisionPolicy::EmulateCasts}) {
    auto want = interpret(g, {a}, InterpretOptions{p});
    EXPECT_EQ(want[0].get_double({0}), 0.0) << precision_policy_name(p);  // the cast rounded 1 + 2^-9 to 1
    EXPECT_EQ(want[1].get_double({1}), 0.0) << precision_policy_name(p);  // f16: 1 + 2^-12 rounds to 1
    PolicyEnv e(p == PrecisionPolicy::EmulateCasts ? "1" : "0");
    auto got = run_kernel(*Kernel::compile(g), {a});
    EXPECT_EQ(compare(got[0], want[0], 0.0), "") << precision_policy_name(p);
    EXPECT_EQ(compare(got[1], want[1], 0.0), "") << precision_policy_name(p);
  }
}

TEST(PrecisionPolicy, KernelFollowsTheEnvironmentAtCompileTime) {
  Graph g = parse_graph(kBf16Chain);
  HostTensor x = vector_of(DType::BFloat16, {1.0, 256.0, -3.0});
  std::shared_ptr<Kernel> f32, emu;
  {
    PolicyEnv e(std::nullopt);
    f32 = Kernel::compile(g);
  }
  {
    PolicyEnv e("1");
    emu = Kernel::compile(g);
  }
  EXPECT_EQ(f32->precision(), PrecisionPolicy::Float32Inside);
  EXPECT_EQ(emu->precision(), PrecisionPolicy::EmulateCasts);
  EXPECT_NE(f32->source().find("// precision policy: f32-inside"), std::string::npos);
  EXPECT_NE(emu->source().find("// precision policy: emulate-casts"), std::string::npos);
  EXPECT_EQ(f32->source().find("af_rnd_bf16(af_add"), std::string::npos) << "no rounding after add by default";
  EXPECT_NE(emu->source().find("af_rnd_bf16(af_add"), std::string::npos) << "per-op rounding when emulating";
  // The policy is fixed when the kernel is compiled, whatever the environment says when it runs.
  PolicyEnv e("1");
  auto got_f32 = run_kernel(*f32, {x});
  auto got_emu = run_kernel(*emu, {x});
  EXPECT_EQ(got_f32[0].get_double({0}), std::ldexp(1.0, -9));
  EXPECT_EQ(got_emu[0].get_double({0}), 0.0);
  EXPECT_EQ(compare(got_f32[0], interpret(g, {x}, InterpretOptions{PrecisionPolicy::Float32Inside})[0], 0.0), "");
  EXPECT_EQ(compare(got_emu[0], interpret(g, {x}, InterpretOptions{PrecisionPolicy::EmulateCasts})[0], 0.0), "");
}

/// A random chain of correctly rounded ops (add, sub, mul, div by 1 + |b|, maximum, minimum, where(a < b)) on f16
/// or bf16 inputs, with a sum over the last axis as a second output: kernel and interpreter agree bit for bit under
/// either policy (f64 -> f32 rounding of these ops equals the f32 op).
TEST(PrecisionPolicy, RandomLowPrecisionChainsMatchInterpreterBitwise) {
  // A fixed default seed keeps make test reproducible; AUTOFUSE_TEST_SEED explores others.
  const char* env = std::getenv("AUTOFUSE_TEST_SEED");
  const uint64_t seed = env ? std::strtoull(env, nullptr, 10) : 20261129;
  std::printf(
      "PrecisionPolicy.RandomLowPrecisionChainsMatchInterpreterBitwise seed %llu (replay with "
      "AUTOFUSE_TEST_SEED)\n",
      static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 12; ++trial) {
    const DType t = trial % 2 ? DType::BFloat16 : DType::Float16;
    Graph g("lowp");
    std::vector<ValueId> pool = {g.add_input("a", t, {Expr::sym("s0"), Expr::sym("s1")}),
                                 g.add_input("b", t, {Expr::sym("s0"), Expr::sym("s1")})};
    auto pick = [&] { return pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)]; };
    for (int i = 0; i < 6; ++i) {
      ValueId a = pick(), b = pick();
      switch (std::uniform_int_distribution<int>(0, 6)(rng)) {
        case 0:
          pool.push_back(g.add(OpKind::Add, {a, b}));
          break;
        case 1:
          pool.push_back(g.add(OpKind::Sub, {a, b}));
          break;
        case 2:
          pool.push_back(g.add(OpKind::Mul, {a, b}));
          break;
        case 3: {
          ValueId one = g.constant(Scalar::of_float(1.0), t);
          pool.push_back(g.add(OpKind::Div, {a, g.add(OpKind::Add, {g.add(OpKind::Abs, {b}), one})}));
          break;
        }
        case 4:
          pool.push_back(g.add(OpKind::Maximum, {a, b}));
          break;
        case 5:
          pool.push_back(g.add(OpKind::Minimum, {a, b}));
          break;
        default:
          pool.push_back(g.add(OpKind::Where, {g.add(OpKind::Lt, {a, b}), a, b}));
          break;
      }
    }
    Attrs ax;
    ax["axes"] = std::vector<int64_t>{1};
    ax["keepdim"] = false;
    ValueId last = pool.back();
    g.set_outputs({last, g.add(OpKind::Sum, {last}, ax)});
    std::vector<HostTensor> in;
    for (int k = 0; k < 2; ++k) {
      in.push_back(make_tensor(t, {5, 37}, Layout::Contiguous, rng));
      kernel_testing::fill_random(in.back(), rng, false);
    }
    for (const char* env : {"0", "1"}) {
      PolicyEnv e(env);
      auto got = run_kernel(*Kernel::compile(g), in);
      auto want = interpret(g, in);
      EXPECT_EQ(compare(got[0], want[0], 0.0), "") << "policy " << env << " seed " << seed << "\n" << g.str();
      // The sum's order differs (vector lanes vs compensated f64), so it is compared with a tolerance.
      EXPECT_EQ(compare(got[1], want[1], kernel_testing::default_tolerance(t)), "")
          << "policy " << env << " seed " << seed << "\n"
          << g.str();
    }
  }
}

// A softmax whose exp is needed by a later pass (stashed on the stack for short rows, in a heap block for long ones),
// with a second transcendental after the stashed value and the stashed value itself as an output.
const char* kStashed = R"(graph st(%x: f32[s0, s1]) {
  %m = amax(%x) {axes=[1], keepdim=true}
  %d = sub(%x, %m)
  %e = exp(%d)
  %s = sum(%e) {axes=[1], keepdim=true}
  %y = div(%e, %s)
  %t = tanh(%e)
  %z = mul(%t, %s)
  return %y, %z, %e
})";

TEST(RowStash, ShortAndLongRowsMatchInterpreter) {
  Graph g = parse_graph(kStashed);
  auto k = Kernel::compile(g);
  ASSERT_NE(k->source().find("row stash"), std::string::npos) << "exp(x - max) is reloaded by the output pass";
  // 16384 f32 fill the 64 KiB stack stash exactly; 16385 do not (a heap block); 37 has a tail; 1 is one lane.
  for (int64_t d : {1, 37, 4096, 16384, 16385, 40000}) {
    std::mt19937_64 rng(static_cast<uint64_t>(d));
    HostTensor x = make_tensor(DType::Float32, {3, d}, Layout::Contiguous, rng);
    kernel_testing::fill_random(x, rng, false);
    auto got = run_kernel(*k, {x});
    auto want = interpret(g, {x});
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(compare(got[i], want[i], 1e-5), "") << "output " << i << " d " << d;
  }
}

TEST(RowStash, Bf16SoftmaxUsesTheStash) {
  Graph g = parse_graph(kernel_testing::with_dtype(kernel_testing::kSoftmaxRowsIR, "bf16"));
  auto k = Kernel::compile(g);
  EXPECT_NE(k->source().find("row stash"), std::string::npos);
  EXPECT_NE(k->source().find("__builtin_prefetch"), std::string::npos) << "the next row is prefetched";
  for (int64_t d : {5, 1000, 20000}) {
    std::mt19937_64 rng(static_cast<uint64_t>(d) + 99);
    HostTensor x = make_tensor(DType::BFloat16, {4, d}, Layout::Contiguous, rng);
    kernel_testing::fill_random(x, rng, false);
    EXPECT_EQ(compare(run_kernel(*k, {x})[0], interpret(g, {x})[0], kernel_testing::default_tolerance(DType::BFloat16)),
              "")
        << "d " << d;
  }
}

}  // namespace
}  // namespace autofuse
