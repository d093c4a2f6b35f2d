// The inline f32 tanh and erf of af_kernel_math.inc, checked through compiled kernels against the double-precision
// functions: the error in ulps on a dense sweep of the f32 bit patterns (every 256th: 16.8M inputs each), and the
// special values bit for bit (signed zeros, infinities, NaN, subnormals, the saturation points and the branch
// boundaries of each function). The full 2^32 sweep is run by hand: AUTOFUSE_MATH_SWEEP_STEP=1 (docs/codegen.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/parser.h"
#include "float_bits_util.h"

namespace autofuse {
namespace {

using testing_float::bits_to_float;
using testing_float::ulp_at;

/// Compiles `op(%x)` over f32[s0] once and runs it on `xs`.
class UnaryKernel {
 public:
  explicit UnaryKernel(const std::string& op)
      : k_(Kernel::compile(parse_graph("graph unary(%x: f32[s0]) {\n  %y = " + op + "(%x)\n  return %y\n}"))) {}
  std::vector<float> operator()(std::vector<float> xs) const {
    std::vector<float> out(xs.size());
    const int64_t n = static_cast<int64_t>(xs.size());
    k_->run({HostTensor::view(DType::Float32, xs.data(), {n}, {1})},
            {HostTensor::view(DType::Float32, out.data(), {n}, {1})});
    return out;
  }

 private:
  std::shared_ptr<Kernel> k_;
};

/// Max error in ulps of `op` against `ref` over every step-th bit pattern (AUTOFUSE_MATH_SWEEP_STEP overrides 256);
/// a NaN input must give NaN, and no finite input may give inf or NaN.
double sweep_max_ulp(const std::string& op, double (*ref)(double)) {
  const uint64_t step = testing_float::sweep_step("AUTOFUSE_MATH_SWEEP_STEP");
  const UnaryKernel k(op);
  double max_err = 0;
  float worst = 0;
  uint64_t checked = 0;
  testing_float::for_each_pattern_chunk(step, [&](const std::vector<float>& xs) {
    const std::vector<float> ys = k(xs);
    for (size_t i = 0; i < xs.size(); ++i) {
      const float x = xs[i], y = ys[i];
      if (std::isnan(x)) {
        EXPECT_TRUE(std::isnan(y)) << op << "(NaN)";
        continue;
      }
      if (!std::isfinite(y)) {
        ADD_FAILURE() << op << "(" << x << ") = " << y;
        continue;
      }
      const double r = ref(static_cast<double>(x));
      const double err = std::fabs(static_cast<double>(y) - r) / ulp_at(r);
      ++checked;
      if (err > max_err) {
        max_err = err;
        worst = x;
      }
    }
  });
  std::printf("%s: %llu inputs (step %llu), max error %.4f ulp at %a\n", op.c_str(),
              static_cast<unsigned long long>(checked), static_cast<unsigned long long>(step), max_err,
              static_cast<double>(worst));
  EXPECT_GT(checked, (1ull << 32) / step / 2);
  return max_err;
}

/// Special values: the result must be the correctly rounded one (these are all easy cases: exact, saturated, or
/// far from a rounding boundary) except `loose` ones, which must be within 1 ulp; the sign of zero is checked.
void check_specials(const std::string& op, double (*ref)(double), const std::vector<float>& exact,
                    const std::vector<float>& loose) {
  const UnaryKernel k(op);
  const std::vector<float> ye = k(exact), yl = k(loose);
  for (size_t i = 0; i < exact.size(); ++i) {
    const float want = static_cast<float>(ref(static_cast<double>(exact[i])));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(ye[i])) << op << "(" << exact[i] << ")";
      continue;
    }
    EXPECT_EQ(ye[i], want) << op << "(" << exact[i] << ")";
    EXPECT_EQ(std::signbit(ye[i]), std::signbit(want)) << op << "(" << exact[i] << ") sign";
  }
  for (size_t i = 0; i < loose.size(); ++i) {
    const double r = ref(static_cast<double>(loose[i]));
    EXPECT_LE(std::fabs(static_cast<double>(yl[i]) - r) / ulp_at(r), 1.0) << op << "(" << loose[i] << ")";
    EXPECT_EQ(std::signbit(yl[i]), std::signbit(loose[i])) << op << "(" << loose[i] << ") sign";
  }
}

double ref_tanh(double x) { return std::tanh(x); }
double ref_erf(double x) { return std::erf(x); }

/// x and its neighbours one float below and above, both signs.
std::vector<float> around(std::initializer_list<float> xs) {
  std::vector<float> out;
  for (float x : xs) {
    for (float v : {std::nextafter(x, 0.0f), x, std::nextafter(x, 100.0f)}) {
      out.push_back(v);
      out.push_back(-v);
    }
  }
  return out;
}

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kDen = std::numeric_limits<float>::denorm_min();

// sqrt is correctly rounded (IEEE; the kernels use the instruction): bit for bit against std::sqrt on the sweep's
// patterns and on inputs where SLEEF's sqrt u05, used before, was one ulp off (review, session 14).
TEST(KernelSqrt, CorrectlyRounded) {
  const UnaryKernel k("sqrt");
  const uint64_t step = testing_float::sweep_step("AUTOFUSE_MATH_SWEEP_STEP");
  uint64_t bad = 0;
  auto check = [&](const std::vector<float>& xs) {
    const std::vector<float> ys = k(xs);
    for (size_t i = 0; i < xs.size(); ++i) {
      const float want = std::sqrt(xs[i]);
      if (std::isnan(want) ? !std::isnan(ys[i]) : std::memcmp(&want, &ys[i], 4) != 0)
        if (bad++ < 5) ADD_FAILURE() << "sqrt(" << xs[i] << ") = " << ys[i] << ", want " << want;
    }
  };
  testing_float::for_each_pattern_chunk(step, check);
  check({bits_to_float(0x065ae03bu), -0.0f, 0.0f, -1.0f, std::numeric_limits<float>::infinity(),
         std::numeric_limits<float>::denorm_min()});
  EXPECT_EQ(bad, 0u);
}

TEST(KernelTanh, DenseSweepWithinOneUlp) {
  EXPECT_LE(sweep_max_ulp("tanh", ref_tanh), 1.0);  // docs/codegen.md: 0.81 ulp measured over all inputs
}

TEST(KernelTanh, SpecialValues) {
  // saturation: tanh(x) rounds to +-1 above 9.01; tiny and subnormal x: tanh(x) = x. tanh(9) = 1 - 3.05e-8 lies
  // 0.03 ulp from the midpoint 1 - 2^-25: every ISA's form rounds it correctly (SLEEF's tanhf, used on AVX2 before
  // session 21, gave 1).
  check_specials("tanh", ref_tanh,
                 {0.0f, -0.0f, kInf, -kInf, kNaN, 9.0f, -9.0f, 9.5f, 1e30f, -1e30f, 1e-30f, -1e-30f, kDen, -kDen,
                  1e-39f, -1e-39f, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()},
                 around({8.9f, 9.0f, 0.5625f, 9.5f, 1.0f, 0.25f, 0.69360125f, 2.0f, 4.0f}));
}

TEST(KernelErf, DenseSweepWithinOneUlp) {
  EXPECT_LE(sweep_max_ulp("erf", ref_erf), 1.0);  // docs/codegen.md: measured over all inputs
}

TEST(KernelErf, SpecialValues) {
  // saturation: erf(x) rounds to +-1 above 3.92; the branch points 1.0 and the clamp 3.9375.
  check_specials("erf", ref_erf,
                 {0.0f, -0.0f, kInf, -kInf, kNaN, 3.9375f, -3.9375f, 4.0f, 9.0f, -9.0f, 1e30f, -1e30f,
                  std::numeric_limits<float>::max()},
                 around({1.0f, 3.92f, 3.9375f, 0.5f, 2.0f, 1e-30f, 1e-39f, kDen, 0.99917531f}));
}

}  // namespace
}  // namespace autofuse
