// A cast to f16 / bf16 whose only use is its store (casts_rounded_by_store, session 11, perf13): the kernel keeps the
// cast's value in f32 and the store rounds it once (the same bits as rounding in registers and again at the store),
// and a bf16 cast of af_div_rcp_unit's quotient carries the quotient's normal flag to the store (vcvtneps2bf16
// alone). This is torch.compile's bf16 softmax: AOTAutograd upcasts, computes in f32 and casts the quotient back.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "float_bits_util.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using kernel_testing::expect_matches_interpreter;
using kernel_testing::run_kernel;
using kernel_testing::seeded_rng;
using testing_float::float_to_bits;

constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr float kNaNF = std::numeric_limits<float>::quiet_NaN();

/// torch.compile's softmax of a DT input in the output dtype OT: cast up, f32 softmax, cast the quotient down. The
/// f32 quotient %q is returned too, so the test can check the store's rounding of it bit for bit. With `clone`, the
/// cast is copied by `* 1` before its store (the lowering's clone, as in the LLaMA demo's attention softmax).
std::string torch_softmax(const std::string& dt, const std::string& ot, bool with_q, bool clone = false) {
  if (clone)
    return "graph s(%x: " + dt +
           "[s0, s1]) {\n  %xf = cast(%x) {dtype=f32}\n  %m = amax(%xf) {axes=[1], keepdim=true}\n"
           "  %d = sub(%xf, %m)\n  %e = exp(%d)\n  %s = sum(%e) {axes=[1], keepdim=true}\n  %q = div(%e, %s)\n"
           "  %y = cast(%q) {dtype=" +
           ot + "}\n  %one = constant() {value=1.0, dtype=" + ot +
           "}\n"
           "  %z = mul(%y, %one)\n  return %z" +
           (with_q ? ", %q" : "") + "\n}";
  return "graph s(%x: " + dt +
         "[s0, s1]) {\n  %xf = cast(%x) {dtype=f32}\n  %m = amax(%xf) {axes=[1], keepdim=true}\n"
         "  %d = sub(%xf, %m)\n  %e = exp(%d)\n  %s = sum(%e) {axes=[1], keepdim=true}\n  %q = div(%e, %s)\n"
         "  %y = cast(%q) {dtype=" +
         ot + "}\n  return %y" + (with_q ? ", %q" : "") + "\n}";
}

/// Sets an environment variable for a scope (unset at exit; the tests below only set variables that are unset).
struct ScopedEnv {
  const char* name;
  ScopedEnv(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
  ~ScopedEnv() { ::unsetenv(name); }
};

/// Rows of a softmax input: rows [0, d, d, ...] with d from -25 down to -103 in steps of 1/8 (each row's sum rounds
/// to 1, so q = exp(d): normal values, then f32 subnormals, then 0), then rows with a NaN, a +inf, some -inf, all
/// -inf, and random rows.
HostTensor softmax_input(DType t, int64_t cols, std::mt19937_64& rng) {
  const int64_t per_row = std::max<int64_t>(cols - 1, 1), count = 78 * 8 + 1;
  const int64_t ramp_rows = (count + per_row - 1) / per_row, rows = ramp_rows + 8;
  HostTensor x = HostTensor::empty(t, {rows, cols});
  std::normal_distribution<double> nd(0.0, 3.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double v = nd(rng);
      if (r < ramp_rows)
        v = c == 0 ? 0.0 : -25.0 - 0.125 * static_cast<double>(std::min(r * per_row + c - 1, count - 1));
      const int64_t k = r - ramp_rows;
      if (k == 0 && c == cols / 2) v = kNaNF;
      if (k == 1 && c == cols - 1) v = kInfF;
      if (k == 2 && c % 3 == 0) v = -kInfF;
      if (k == 3) v = -kInfF;
      x.set_double({r, c}, v);
    }
  return x;
}

uint16_t bf16_rne_bits(float f) {  // eager's c10::BFloat16 rounding of f32 bits (NaN: quiet bit set, truncated)
  const uint32_t u = float_to_bits(f);
  if (std::isnan(f)) return static_cast<uint16_t>((u | 0x00400000u) >> 16);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
uint16_t stored_bits(const HostTensor& t, int64_t r, int64_t c) {
  return *reinterpret_cast<const uint16_t*>(static_cast<const char*>(t.data) + t.offset_bytes({r, c}));
}

TEST(CastStore, TorchBf16SoftmaxRoundsOnceAtTheStore) {
  auto k = Kernel::compile(parse_graph(torch_softmax("bf16", "bf16", true)));
  const std::string& src = k->source();
  EXPECT_EQ(src.find("= af_rnd_bf16(x"), std::string::npos) << "the store rounds the cast";
  if (k->lanes() == 16) {
    EXPECT_NE(src.find("_nrm = x"), std::string::npos) << "the quotient's flag reaches the cast";
  }
  auto only_y = Kernel::compile(parse_graph(torch_softmax("bf16", "bf16", false)));       // as torch.compile emits it
  auto cloned = Kernel::compile(parse_graph(torch_softmax("bf16", "bf16", true, true)));  // y * 1 stored
  for (const auto* kk : {only_y.get(), cloned.get()}) {
    EXPECT_EQ(kk->source().find("= af_rnd_bf16(x"), std::string::npos) << "the store rounds the cast";
    if (kk->lanes() == 16) {
      EXPECT_NE(kk->source().find("_nrm);"), std::string::npos) << "the flagged store";
    }
  }
  std::mt19937_64 rng = seeded_rng();
  // One thread: each call holds every row (at least 9), so rows of 1030 take the pipelined loop (rows of at least
  // AF_PIPE_MIN = 64 elements in calls of at least AF_PIPE_MIN_ROWS = 8 rows) whatever the machine's thread count.
  kernel_testing::TilingRestore restore;
  set_num_threads(1);
  for (int64_t cols : {1, 16, 37, 1030}) {  // one element; one whole vector; a masked tail; the pipelined loop
    for (bool gapped : {false, true}) {     // y contiguous (af_sto / af_stu) or every other element (af_stn)
      HostTensor x = softmax_input(DType::BFloat16, cols, rng);
      const int64_t rows = x.sizes[0];
      HostTensor yg = HostTensor::empty(DType::BFloat16, {rows, 2 * cols});
      HostTensor y = gapped ? HostTensor::view(DType::BFloat16, yg.data, {rows, cols}, {2 * cols, 2})
                            : HostTensor::empty(DType::BFloat16, {rows, cols});
      HostTensor q = HostTensor::empty(DType::Float32, {rows, cols}),
                 y2 = HostTensor::empty(DType::BFloat16, {rows, cols});
      HostTensor y3 = HostTensor::empty(DType::BFloat16, {rows, cols}),
                 q3 = HostTensor::empty(DType::Float32, {rows, cols});
      k->run({x}, {y, q});
      only_y->run({x}, {y2});
      cloned->run({x}, {y3, q3});
      const std::vector<HostTensor> ref = interpret(k->graph(), {x});
      int64_t bad = 0, subnormal = 0, zero = 0, checked = 0, nan = 0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          const float qk = static_cast<float>(q.get_double({r, c}));
          const uint16_t got = stored_bits(y, r, c), want = bf16_rne_bits(qk);
          subnormal += (qk > 0 && qk < 0x1p-126f) ? 1 : 0;
          zero += qk == 0.0f ? 1 : 0;
          nan += std::isnan(qk) ? 1 : 0;
          if ((got != want || stored_bits(y2, r, c) != got || stored_bits(y3, r, c) != got) && ++bad < 10)
            ADD_FAILURE() << "cols " << cols << " row " << r << " col " << c << ": q " << qk << " want 0x" << std::hex
                          << want << ", got 0x" << got << " (y only: 0x" << stored_bits(y2, r, c) << ", cloned: 0x"
                          << stored_bits(y3, r, c) << ")" << std::dec;
          // The interpreter (exp in double): the same bits wherever its f32 quotient is 2 ulp from a bf16 boundary.
          const float qi = static_cast<float>(ref[1].get_double({r, c}));
          float lo = qi, hi = qi;
          for (int i = 0; i < 2; ++i) lo = std::nextafter(lo, -kInfF), hi = std::nextafter(hi, kInfF);
          if (std::isnan(qi) || std::isnan(qk)) {
            if (std::isnan(qi) != std::isnan(qk) && ++bad < 10)
              ADD_FAILURE() << "cols " << cols << " row " << r << " col " << c << ": NaN mismatch";
            ++checked;
          } else if (!std::isnan(qi) && bf16_rne_bits(lo) == bf16_rne_bits(qi) &&
                     bf16_rne_bits(hi) == bf16_rne_bits(qi)) {
            ++checked;
            if (got != stored_bits(ref[0], r, c) && ++bad < 10)
              ADD_FAILURE() << "cols " << cols << " row " << r << " col " << c << ": interpreter 0x" << std::hex
                            << stored_bits(ref[0], r, c) << ", kernel 0x" << got << std::dec;
          }
        }
      EXPECT_EQ(bad, 0) << "cols " << cols << " gapped " << gapped;
      EXPECT_GT(checked, rows * cols * 8 / 10) << "cols " << cols;
      EXPECT_GT(nan, 0) << "cols " << cols << ": NaN rows are covered";
      if (cols > 1) {
        EXPECT_GT(subnormal, 50) << "cols " << cols << ": quotients in the f32 subnormal range are covered";
        EXPECT_GT(zero, 0) << "cols " << cols << ": quotients that underflow to 0 are covered";
      }
    }
  }
}

TEST(CastStore, F16CastRoundsOnceAtTheStore) {
  auto k = Kernel::compile(parse_graph(torch_softmax("f32", "f16", true)));
  EXPECT_EQ(k->source().find("= af_rnd_f16(x"), std::string::npos) << "the store rounds the cast";
  std::mt19937_64 rng = seeded_rng();
  for (int64_t cols : {1, 16, 37, 1030}) {
    HostTensor x = softmax_input(DType::Float32, cols, rng);
    const int64_t rows = x.sizes[0];
    HostTensor y = HostTensor::empty(DType::Float16, {rows, cols}), q = HostTensor::empty(DType::Float32, {rows, cols});
    k->run({x}, {y, q});
    int64_t bad = 0, f16_subnormal = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const float qk = static_cast<float>(q.get_double({r, c}));
        const uint16_t got = stored_bits(y, r, c), want = float_to_half_bits(qk);
        f16_subnormal += (qk > 0 && qk < 0x1p-14f) ? 1 : 0;
        const bool same = std::isnan(qk) ? std::isnan(y.get_double({r, c})) : got == want;
        if (!same && ++bad < 10)
          ADD_FAILURE() << "cols " << cols << " q " << qk << ": want 0x" << std::hex << want << ", got 0x" << got;
      }
    EXPECT_EQ(bad, 0) << "cols " << cols;
    if (cols > 1) {
      EXPECT_GT(f16_subnormal, 50) << "cols " << cols << ": f16 subnormal and underflowing results";
    }
  }
}

TEST(CastStore, CastsWithOtherUsesOrPoliciesStillRound) {
  // A cast read by another node, or under EmulateCasts, or with AUTOFUSE_ROUND_AT_STORE=0, rounds in registers.
  const std::string two_uses =
      "graph u(%x: f32[s0]) {\n  %y = cast(%x) {dtype=bf16}\n  %yf = cast(%y) {dtype=f32}\n"
      "  %z = sub(%yf, %x)\n  return %y, %z\n}";
  auto k = Kernel::compile(parse_graph(two_uses));
  EXPECT_NE(k->source().find("= af_rnd_bf16(x"), std::string::npos);
  // z = y - x must see the rounded y: x = 1 + 2^-8 + 2^-10 rounds to 1 + 2^-7 in bf16, so z = 3 * 2^-10 (0 unrounded).
  HostTensor x = HostTensor::empty(DType::Float32, {37});
  for (int64_t i = 0; i < 37; ++i) x.set_double({i}, 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -10));
  const std::vector<HostTensor> out = run_kernel(*k, {x});
  for (int64_t i = 0; i < 37; ++i) ASSERT_EQ(out[1].get_double({i}), 3.0 * std::ldexp(1.0, -10)) << "element " << i;
  expect_matches_interpreter(*k, {x}, "cast with two uses");
  const std::string sm = torch_softmax("bf16", "bf16", false);
  {
    ScopedEnv e("AUTOFUSE_EMULATE_PRECISION_CASTS", "1");
    EXPECT_NE(Kernel::compile(parse_graph(sm))->source().find("af_rnd_bf16(x"), std::string::npos);
  }
  {
    ScopedEnv e("AUTOFUSE_ROUND_AT_STORE", "0");
    const std::string src = Kernel::compile(parse_graph(sm))->source();
    EXPECT_NE(src.find("= af_rnd_bf16(x"), std::string::npos);
    EXPECT_EQ(src.find("_nrm);"), std::string::npos) << "no flag without the carried cast";
  }
}

TEST(CastStore, OuterReductionOfACastSumsRoundedValues) {
  // A column sum of cast(x) to bf16 next to a row sum: one kernel whose cross-row partials accumulate the cast's
  // value, which must be the rounded one (the partials are a use, not a store). Every x = 1 + 3 * 2^-9 rounds to
  // 1 + 2^-7; three rows sum to 3 + 3 * 2^-7, a tie in bf16 that rounds to 3 + 2^-5 (unrounded: 3 + 9 * 2^-9, which
  // would round to 3 + 2^-6).
  auto k = Kernel::compile(
      parse_graph("graph o(%x: f32[s0, s1]) {\n  %rows = sum(%x) {axes=[1], keepdim=false}\n"
                  "  %y = cast(%x) {dtype=bf16}\n  %s = sum(%y) {axes=[0], keepdim=false}\n  return %rows, %s\n}"));
  ASSERT_NE(k->outer_plan(), nullptr);
  EXPECT_NE(k->source().find("= af_rnd_bf16(x"), std::string::npos);
  HostTensor x = HostTensor::empty(DType::Float32, {3, 37});
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 37; ++c) x.set_double({r, c}, 1.0 + 3.0 * std::ldexp(1.0, -9));
  const std::vector<HostTensor> out = run_kernel(*k, {x});
  for (int64_t c = 0; c < 37; ++c) ASSERT_EQ(out[1].get_double({c}), 3.0 + std::ldexp(1.0, -5)) << "col " << c;
  expect_matches_interpreter(*k, {x}, "outer sum of a cast");
}

}  // namespace
}  // namespace autofuse
