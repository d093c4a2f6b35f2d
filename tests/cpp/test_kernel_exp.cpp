// The kernel helpers that replace library calls and wide instructions (af_kernel.inc), checked through compiled
// kernels against exact references: the inline f32 exp (error in ulps on a dense sweep of the f32 bit patterns, and
// the special values), division by a per-row divisor through its reciprocal (bit-identical to IEEE division, hard
// numerators included), and the f32 -> bf16 store (bit-identical to round-to-nearest-even in integers on a sweep and
// on every subnormal, NaN kept quiet). The full 2^32 exp sweep is run by hand: AUTOFUSE_EXP_SWEEP_STEP=1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/parser.h"
#include "float_bits_util.h"

namespace autofuse {
namespace {

using testing_float::bits_to_float;
using testing_float::float_to_bits;
using testing_float::ulp_at;

/// Run the one-input f32 kernel `text` on `xs` (a [n] tensor) and return its output.
std::vector<float> run_f32(const std::string& text, const std::vector<float>& xs) {
  auto k = Kernel::compile(parse_graph(text));
  std::vector<float> in = xs;
  HostTensor x = HostTensor::view(DType::Float32, in.data(), {static_cast<int64_t>(in.size())}, {1});
  std::vector<float> out(xs.size());
  HostTensor y = HostTensor::view(DType::Float32, out.data(), {static_cast<int64_t>(out.size())}, {1});
  k->run({x}, {y});
  return out;
}

const char* kExp = "graph e(%x: f32[s0]) {\n  %y = exp(%x)\n  return %y\n}";

TEST(KernelExp, DenseSweepWithinOneUlp) {
  // Every step-th bit pattern (step 256: 16.8M inputs; AUTOFUSE_EXP_SWEEP_STEP=1 runs all 2^32 in chunks).
  const uint64_t step = testing_float::sweep_step("AUTOFUSE_EXP_SWEEP_STEP");
  double max_err = 0;
  uint32_t worst = 0;
  uint64_t checked = 0;
  testing_float::for_each_pattern_chunk(step, [&](const std::vector<float>& xs) {
    const std::vector<float> ys = run_f32(kExp, xs);
    for (size_t i = 0; i < xs.size(); ++i) {
      const float x = xs[i], y = ys[i];
      if (std::isnan(x)) {
        ASSERT_TRUE(std::isnan(y)) << "exp(NaN) at bits " << std::hex << float_to_bits(x);
        continue;
      }
      const double r = std::exp(static_cast<double>(x));
      if (static_cast<float>(r) == std::numeric_limits<float>::infinity()) {
        ASSERT_EQ(y, std::numeric_limits<float>::infinity()) << "exp(" << x << ") should overflow";
        continue;
      }
      ASSERT_FALSE(std::isinf(y)) << "exp(" << x << ") = inf, expected " << r;
      const double err = std::fabs(static_cast<double>(y) - r) / ulp_at(r);
      ++checked;
      if (err > max_err) {
        max_err = err;
        worst = float_to_bits(x);
      }
    }
  });
  std::printf("exp: %llu inputs (step %llu), max error %.4f ulp at %a\n", static_cast<unsigned long long>(checked),
              static_cast<unsigned long long>(step), max_err, static_cast<double>(bits_to_float(worst)));
  EXPECT_GT(checked, (1ull << 32) / step / 2);
  EXPECT_LE(max_err, 1.0);  // documented bound (docs/codegen.md: 0.7616 ulp measured over every float of [-104, 89])
}

TEST(KernelExp, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> xs = {-inf,
                                 inf,
                                 std::numeric_limits<float>::quiet_NaN(),
                                 -0.0f,
                                 0.0f,
                                 88.72283f,
                                 88.72284f,
                                 89.0f,
                                 1000.0f,
                                 -87.33655f,
                                 -103.97208f,
                                 -103.9721f,
                                 -104.0f,
                                 -1e30f,
                                 1e-30f,
                                 -1e-45f,
                                 std::numeric_limits<float>::denorm_min(),
                                 1.0f,
                                 -1.0f};
  const std::vector<float> ys = run_f32(kExp, xs);
  for (size_t i = 0; i < xs.size(); ++i) {
    const float x = xs[i], y = ys[i];
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(y));
      continue;
    }
    const double r = std::exp(static_cast<double>(x));
    const float rf = static_cast<float>(r);
    if (std::isinf(rf) || rf == 0.0f || r < std::ldexp(1.0, -140)) {
      // overflow to inf, underflow to exactly 0, and the last subnormals: the correctly rounded value
      EXPECT_EQ(float_to_bits(y), float_to_bits(rf)) << "exp(" << x << ")";
    } else {
      EXPECT_LE(std::fabs(static_cast<double>(y) - r) / ulp_at(r), 1.0) << "exp(" << x << ")";
    }
  }
  EXPECT_EQ(ys[0], 0.0f);
  EXPECT_FALSE(std::signbit(ys[0]));
  EXPECT_EQ(ys[3], 1.0f);
  EXPECT_EQ(ys[4], 1.0f);
}

TEST(KernelExp, BitsDoNotDependOnNeighbours) {
  // AVX2's exp has two forms (a table for lanes in [-86, 88], the wide form for the rest) chosen per lane: an
  // element's bits must not change when a neighbour in its vector is -inf (a causal mask), NaN, far below or above.
  std::mt19937_64 rng(20261202);
  std::uniform_real_distribution<float> u(-86.0f, 88.0f);
  std::vector<float> xs(4099);
  for (float& v : xs) v = u(rng);
  const std::vector<float> base = run_f32(kExp, xs);
  const float odd[] = {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), -95.0f, 89.0f,
                       -1e30f};
  for (size_t k = 0; k < 5; ++k) {
    std::vector<float> mixed = xs;
    for (size_t i = k; i < mixed.size(); i += 5) mixed[i] = odd[k];
    const std::vector<float> ys = run_f32(kExp, mixed);
    int64_t bad = 0;
    for (size_t i = 0; i < xs.size(); ++i)
      if ((i % 5) != k && float_to_bits(ys[i]) != float_to_bits(base[i]) && ++bad < 5)
        ADD_FAILURE() << "exp(" << xs[i] << ") next to " << odd[k] << ": " << ys[i] << " against " << base[i];
    EXPECT_EQ(bad, 0) << "neighbour " << odd[k];
  }
}

TEST(KernelDivByRowValue, BitIdenticalToIeeeDivision) {
  // y = x / sum(x) per row: the kernel divides by a kept divisor through its reciprocal (af_div_rcp); outputs s too,
  // so y can be checked bit for bit against x / s. Rows mix ordinary values with zeros, -0, subnormals, huge and tiny
  // magnitudes, inf and NaN (those vectors take the divider), and rows whose sum is 0, subnormal or inf.
  const char* text =
      "graph d(%x: f32[s0, s1]) {\n  %s = sum(%x) {axes=[1], keepdim=true}\n  %y = div(%x, %s)\n  return %y, %s\n}";
  auto k = Kernel::compile(parse_graph(text));
  std::mt19937_64 rng(20261129);
  const int64_t rows = 64, cols = 301;
  std::vector<float> xs(static_cast<size_t>(rows * cols));
  std::uniform_real_distribution<float> u(-2, 2);
  const float specials[] = {0.0f,
                            -0.0f,
                            1e-40f,
                            -1e-45f,
                            1e30f,
                            -3e-30f,
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            1.7e38f,
                            1e-20f};
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      float v = u(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
      if (r % 4 == 1 && rng() % 16 == 0) v = specials[rng() % 10];
      if (r == 2) v = 0.0f;                 // sum 0
      if (r == 3) v = c == 0 ? 1e-41f : 0;  // subnormal sum
      if (r == 5 && c == 7) v = 3e38f;      // the sum overflows
      if (r == 5 && c == 8) v = 3e38f;
      xs[static_cast<size_t>(r * cols + c)] = v;
    }
  }
  HostTensor x = HostTensor::view(DType::Float32, xs.data(), {rows, cols}, {cols, 1});
  HostTensor y = HostTensor::empty(DType::Float32, {rows, cols}), s = HostTensor::empty(DType::Float32, {rows, 1});
  k->run({x}, {y, s});
  int64_t mismatches = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float sv = static_cast<float>(s.get_double({r, 0}));
    for (int64_t c = 0; c < cols; ++c) {
      const float want = xs[static_cast<size_t>(r * cols + c)] / sv;
      const float got = static_cast<float>(y.get_double({r, c}));
      const bool same = (std::isnan(want) && std::isnan(got)) || float_to_bits(want) == float_to_bits(got);
      if (!same && ++mismatches < 10)
        ADD_FAILURE() << "row " << r << " col " << c << ": " << xs[static_cast<size_t>(r * cols + c)] << " / " << sv
                      << " = " << want << ", kernel " << got;
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_NE(k->source().find("af_div_rcp"), std::string::npos) << "the division should go through the reciprocal";
}

TEST(KernelBf16Store, RoundsToNearestEvenOnEveryPattern) {
  // cast f32 -> bf16 on every 64th bit pattern and on every subnormal and NaN-boundary pattern: the bits must equal
  // integer round-to-nearest-even (NaN: quiet, upper payload kept), the vector conversion instruction's subnormal
  // flush never showing.
  const char* text = "graph c(%x: f32[s0]) {\n  %y = cast(%x) {dtype=bf16}\n  return %y\n}";
  auto k = Kernel::compile(parse_graph(text));
  auto want = [](uint32_t u) -> uint16_t {
    if (std::isnan(bits_to_float(u))) return static_cast<uint16_t>((u | 0x00400000u) >> 16);
    return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  };
  std::vector<uint32_t> pats;
  for (uint64_t b = 0; b < (1ull << 32); b += 64) pats.push_back(static_cast<uint32_t>(b + (b >> 6) % 64));
  for (uint32_t m = 0; m < (1u << 23); m += 3) {
    pats.push_back(m);                // positive subnormals
    pats.push_back(0x80000000u | m);  // negative subnormals
  }
  for (uint32_t m = 0; m < 4096; ++m) pats.push_back(0x7f800000u | (m << 11) | m);  // inf and NaNs
  std::vector<float> xs(pats.size());
  for (size_t i = 0; i < pats.size(); ++i) xs[i] = bits_to_float(pats[i]);
  HostTensor x = HostTensor::view(DType::Float32, xs.data(), {static_cast<int64_t>(xs.size())}, {1});
  HostTensor y = HostTensor::empty(DType::BFloat16, {static_cast<int64_t>(xs.size())});
  k->run({x}, {y});
  const uint16_t* out = static_cast<const uint16_t*>(y.data);
  int64_t bad = 0;
  for (size_t i = 0; i < pats.size(); ++i) {
    if (out[i] != want(pats[i]) && ++bad < 10)
      ADD_FAILURE() << std::hex << "f32 bits " << pats[i] << " -> bf16 " << out[i] << ", expected " << want(pats[i]);
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace autofuse
