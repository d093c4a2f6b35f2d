// The inline AVX-512 f32 exp (af_kernel_exp.inc) on EVERY float of [-104, 89], the range where its result is
// neither exactly 0 nor inf (softmax's inputs are in [-104, 0]; below -104 and above 88.73 the results are checked
// bit-exactly by test_kernel_exp.cpp's special values and strided sweep). The reference is exp in double (SLEEF's
// u10 exp through the same kernel, error ~1e-16 relative, far below the 2^-24 scale of the check). The release build
// checks all ~2.25e9 floats in a few seconds; an ASan build (__SANITIZE_ADDRESS__) checks every 61st pattern.
#include <gtest/gtest.h>
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*, which -Wuninitialized reports (a false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/parser.h"
#include "autofuse/runtime/isa.h"
#include "float_bits_util.h"

namespace autofuse {
namespace {

using testing_float::bits_to_float;
using testing_float::float_to_bits;

/// 1 / ulp_at(r) for r >= 0 without frexp or branches (the loop below runs 2.25e9 times): with E the exponent field
/// of float(r), float(r) lies in [2^(E-127), 2^(E-126)) and its spacing is 2^(E-150) (E = 0, subnormal or 0:
/// 2^-149). Returned as the double 2^(150 - max(E, 1)) built from its bits.
inline double inv_ulp(double r) {
  const uint32_t e = float_to_bits(static_cast<float>(r)) >> 23;  // r >= 0: no sign bit
  const uint64_t bits = static_cast<uint64_t>(1023 + 150 - std::max<uint32_t>(e, 1)) << 52;
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

/// The error of y against the reference r in ulps of the float at r; 0 where both y and float(r) are inf (exp
/// overflows in float above 88.7228: only inf is right there), inf where only float(r) is.
inline double ulp_error(float y, double r) {
  const bool both_inf = y == HUGE_VALF && static_cast<float>(r) == HUGE_VALF;
  return both_inf ? 0.0 : std::fabs(static_cast<double>(y) - r) * inv_ulp(r);
}

/// Largest ulp_error over [begin, end) and where it is (a NaN y counts as an infinite error). The maximum runs 8
/// doubles wide in AVX-512 or 4 in AVX2, whichever the CPU has (the scalar loop took ~4 ns per float; the AVX-512
/// form alone raised SIGILL on an AVX2-only Zen 3, session 22), the scalar ulp_error only for the tail and to find
/// the position in a block of 4096 that raises the maximum.
struct MaxErr {
  double err = 0;
  size_t at = 0;
};
__attribute__((target("avx512f,avx512dq,avx512vl"))) double block_max(const float* y, const double* r, size_t n) {
  const __m512d inf = _mm512_set1_pd(HUGE_VAL);
  const __m512d sign = _mm512_set1_pd(-0.0);
  const __m256i one = _mm256_set1_epi32(1);
  const __m512i bias = _mm512_set1_epi64(1023 + 150);
  __m512d acc = _mm512_setzero_pd();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m512d yv = _mm512_cvtps_pd(_mm256_loadu_ps(y + i));
    const __m512d rv = _mm512_loadu_pd(r + i);
    const __m256 rf = _mm512_cvtpd_ps(rv);
    const __m256i e = _mm256_max_epu32(_mm256_srli_epi32(_mm256_castps_si256(rf), 23), one);
    const __m512d iu = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_sub_epi64(bias, _mm512_cvtepu32_epi64(e)), 52));
    __m512d d = _mm512_mul_pd(_mm512_andnot_pd(sign, _mm512_sub_pd(yv, rv)), iu);
    const __mmask8 both_inf =
        _mm512_cmp_pd_mask(yv, inf, _CMP_EQ_OQ) & _mm512_cmp_pd_mask(_mm512_cvtps_pd(rf), inf, _CMP_EQ_OQ);
    d = _mm512_mask_mov_pd(d, both_inf, _mm512_setzero_pd());
    d = _mm512_mask_mov_pd(d, _mm512_cmp_pd_mask(d, d, _CMP_UNORD_Q), inf);
    acc = _mm512_max_pd(acc, d);
  }
  double m = _mm512_reduce_max_pd(acc);
  for (; i < n; ++i) m = std::max(m, std::isnan(y[i]) ? HUGE_VAL : ulp_error(y[i], r[i]));
  return m;
}
/// block_max four doubles wide in AVX2: the same steps, a compare mask and blend in place of the k-masks.
__attribute__((target("avx2"))) double block_max_avx2(const float* y, const double* r, size_t n) {
  const __m256d inf = _mm256_set1_pd(HUGE_VAL);
  const __m256d sign = _mm256_set1_pd(-0.0);
  const __m128i one = _mm_set1_epi32(1);
  const __m256i bias = _mm256_set1_epi64x(1023 + 150);
  __m256d acc = _mm256_setzero_pd();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d yv = _mm256_cvtps_pd(_mm_loadu_ps(y + i));
    const __m256d rv = _mm256_loadu_pd(r + i);
    const __m128 rf = _mm256_cvtpd_ps(rv);
    const __m128i e = _mm_max_epu32(_mm_srli_epi32(_mm_castps_si128(rf), 23), one);
    const __m256d iu = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_sub_epi64(bias, _mm256_cvtepu32_epi64(e)), 52));
    __m256d d = _mm256_mul_pd(_mm256_andnot_pd(sign, _mm256_sub_pd(yv, rv)), iu);
    const __m256d both_inf =
        _mm256_and_pd(_mm256_cmp_pd(yv, inf, _CMP_EQ_OQ), _mm256_cmp_pd(_mm256_cvtps_pd(rf), inf, _CMP_EQ_OQ));
    d = _mm256_andnot_pd(both_inf, d);
    d = _mm256_blendv_pd(d, inf, _mm256_cmp_pd(d, d, _CMP_UNORD_Q));
    acc = _mm256_max_pd(acc, d);
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, acc);
  double m = std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3]));
  for (; i < n; ++i) m = std::max(m, std::isnan(y[i]) ? HUGE_VAL : ulp_error(y[i], r[i]));
  return m;
}
MaxErr max_error(const float* y, const double* r, size_t begin, size_t end) {
  static const bool has512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  MaxErr m;
  for (size_t b = begin; b < end; b += 4096) {
    const size_t n = std::min<size_t>(end - b, 4096);
    const double bm = has512 ? block_max(y + b, r + b, n) : block_max_avx2(y + b, r + b, n);
    if (!(bm > m.err)) continue;
    m = {bm, b};
    for (size_t i = b; i < b + n; ++i) {
      if (std::isnan(y[i]) || ulp_error(y[i], r[i]) == bm) {
        m.at = i;
        break;
      }
    }
  }
  return m;
}

TEST(KernelExpExhaustive, EveryFloatFromMinus104To89WithinOneUlp) {
  if (host_isa() == "scalar") GTEST_SKIP() << "the inline exp is the AVX-512 and AVX2 path; host ISA is scalar";
#if defined(__SANITIZE_ADDRESS__)
  const uint32_t step = 61;  // ASan: a strided subset (every 61st pattern, ~37M floats)
#else
  const uint32_t step = 1;
#endif
  auto k = Kernel::compile(parse_graph(
      "graph e(%x: f32[s0]) {\n  %y = exp(%x)\n  %xd = cast(%x) {dtype=f64}\n  %r = exp(%xd)\n  return %y, %r\n}"));
  // Bit ranges: -0 .. -104 (0x80000000 .. 0xc2d00000) and the smallest positive subnormal .. 89 (.. 0x42b20000).
  const struct { uint32_t lo, hi; } ranges[] = {{0x80000000u, 0xc2d00000u}, {0x00000001u, 0x42b20000u}};
  const size_t chunk = size_t{1} << 22;
  std::vector<float> xs(chunk), ys(chunk);
  std::vector<double> rs(chunk);
  double worst_err = 0;
  float worst_x = 0;
  uint64_t checked = 0;
  for (const auto& rg : ranges) {
    for (uint64_t b = rg.lo; b <= rg.hi;) {
      const size_t n = std::min<uint64_t>(chunk, (rg.hi - b) / step + 1);
      for (size_t i = 0; i < n; ++i) xs[i] = bits_to_float(static_cast<uint32_t>(b + i * step));
      b += n * step;
      HostTensor x = HostTensor::view(DType::Float32, xs.data(), {static_cast<int64_t>(n)}, {1});
      HostTensor y = HostTensor::view(DType::Float32, ys.data(), {static_cast<int64_t>(n)}, {1});
      HostTensor r = HostTensor::view(DType::Float64, rs.data(), {static_cast<int64_t>(n)}, {1});
      k->run({x}, {y, r});
      MaxErr half[2];
      std::thread t([&] { half[1] = max_error(ys.data(), rs.data(), n / 2, n); });
      half[0] = max_error(ys.data(), rs.data(), 0, n / 2);
      t.join();
      for (const MaxErr& m : half) {
        if (m.err > worst_err) {
          worst_err = m.err;
          worst_x = xs[m.at];
        }
      }
      checked += n;
    }
  }
  std::printf("exp: every %u-th float of [-104, 89]: %llu inputs, max error %.4f ulp at %a\n", step,
              static_cast<unsigned long long>(checked), worst_err, static_cast<double>(worst_x));
  EXPECT_EQ(checked, ((0xc2d00000ull - 0x80000000ull) / step + 1) + ((0x42b20000ull - 1) / step + 1));
  EXPECT_LE(worst_err, 1.0) << "at exp(" << worst_x << ")";  // documented: 0.7616 ulp (af_kernel_exp.inc)
}

}  // namespace
}  // namespace autofuse
