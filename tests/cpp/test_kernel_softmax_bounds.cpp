// What the emitter proves about softmax's values, and the helpers that use it (session 7, perf7):
// softmax_value_bounds (x - amax(x) is <= 0 or NaN, its exp in [0, 1] or NaN), af_exp_nonpos (exp without the
// clamp, bit-identical to af_exp on those inputs), af_div_rcp_unit (the reciprocal division with a one-compare
// range check, bit-identical to IEEE division), and the row stash of f16/bf16 inputs (widened once in pass 1,
// reloaded by later passes) at the stack stash's capacity boundary, and a failed heap stash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "autofuse/codegen/cpu/emit.h"
#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "float_bits_util.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using testing_float::bits_to_float;
using testing_float::float_to_bits;

constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr float kNaNF = std::numeric_limits<float>::quiet_NaN();

bool same_bits(float a, float b) { return (std::isnan(a) && std::isnan(b)) || float_to_bits(a) == float_to_bits(b); }

TEST(SoftmaxBounds, ProvesOnlyTheRowMaxDifferenceAndItsExp) {
  auto g = parse_graph(
      "graph s(%x: f32[4, 4], %z: f32[4, 4]) {\n  %m = amax(%x) {axes=[1], keepdim=true}\n"
      "  %d = sub(%x, %m)\n  %e = exp(%d)\n  %w = sub(%z, %m)\n  %ew = exp(%w)\n"
      "  %m2 = amax(%x) {axes=[1], keepdim=false}\n  %d2 = sub(%x, %m2)\n  %r = sub(%m, %x)\n"
      "  return %e, %ew, %d2, %r\n}");
  const std::vector<ValueBound> b = softmax_value_bounds(g);
  auto at = [&](const std::string& name) {
    for (size_t i = 0; i < g.size(); ++i)
      if (g.node(static_cast<ValueId>(i)).name == name) return b[i];
    ADD_FAILURE() << "no value " << name;
    return ValueBound::None;
  };
  EXPECT_EQ(at("d"), ValueBound::NonPositive);
  EXPECT_EQ(at("e"), ValueBound::Unit);
  EXPECT_EQ(at("w"), ValueBound::None) << "z - amax(x): another tensor";
  EXPECT_EQ(at("ew"), ValueBound::None);
  EXPECT_EQ(at("d2"), ValueBound::None) << "without keepdim the max broadcasts along the wrong axis";
  EXPECT_EQ(at("r"), ValueBound::None) << "m - x is >= 0";
  auto gi = parse_graph(
      "graph s(%x: i32[s0, s1]) {\n  %m = amax(%x) {axes=[1], keepdim=true}\n  %d = sub(%x, %m)\n  return %d\n}");
  for (ValueBound v : softmax_value_bounds(gi)) EXPECT_EQ(v, ValueBound::None) << "integers are not handled";
}

TEST(SoftmaxBounds, ExpOfRowMaxDifferenceMatchesExp) {
  // Row r holds 0 (its max) and a stride of the non-positive bit patterns, so x - max = x covers the domain of
  // af_exp_nonpos densely (-0 .. -inf, subnormals, the underflow edge near -104); plus rows with NaN, +inf (x - max
  // is NaN or -inf), and all -inf (NaN). Compared bit for bit with af_exp on the same differences.
  const char* sm =
      "graph s(%x: f32[s0, s1]) {\n  %m = amax(%x) {axes=[1], keepdim=true}\n  %d = sub(%x, %m)\n"
      "  %e = exp(%d)\n  return %e\n}";
  const char* ex = "graph e(%d: f32[s0, s1]) {\n  %e = exp(%d)\n  return %e\n}";
  auto ks = Kernel::compile(parse_graph(sm));
  auto ke = Kernel::compile(parse_graph(ex));
  ASSERT_NE(ks->source().find("= af_exp_nonpos(x"), std::string::npos);
  ASSERT_EQ(ke->source().find("= af_exp_nonpos(x"), std::string::npos);
  const int64_t cols = 1027, rows = 520;
  std::vector<float> xs(static_cast<size_t>(rows * cols));
  uint64_t pat = 0x80000000u;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float v = c == 0 ? 0.0f : bits_to_float(static_cast<uint32_t>(pat));
      if (c != 0) pat = pat + 4099 > 0xff800000u ? 0x80000000u + (pat & 0xfff) : pat + 4099;
      if (r == rows - 1) v = c == 3 ? kNaNF : v;
      if (r == rows - 2) v = c == 5 ? kInfF : -v;
      if (r == rows - 3) v = -kInfF;
      if (r == rows - 4 && c % 7 == 0) v = -kInfF;
      xs[static_cast<size_t>(r * cols + c)] = v;
    }
  std::vector<float> ds(xs.size());
  for (int64_t r = 0; r < rows; ++r) {
    float m = -kInfF;
    for (int64_t c = 0; c < cols; ++c) {
      const float v = xs[static_cast<size_t>(r * cols + c)];
      m = (std::isnan(v) || std::isnan(m)) ? kNaNF : std::max(m, v);
    }
    for (int64_t c = 0; c < cols; ++c)
      ds[static_cast<size_t>(r * cols + c)] = xs[static_cast<size_t>(r * cols + c)] - m;
  }
  HostTensor x = HostTensor::view(DType::Float32, xs.data(), {rows, cols}, {cols, 1});
  HostTensor d = HostTensor::view(DType::Float32, ds.data(), {rows, cols}, {cols, 1});
  HostTensor ys = HostTensor::empty(DType::Float32, {rows, cols}), ye = HostTensor::empty(DType::Float32, {rows, cols});
  ks->run({x}, {ys});
  ke->run({d}, {ye});
  int64_t bad = 0;
  for (int64_t i = 0; i < rows * cols; ++i) {
    const float a = static_cast<const float*>(ys.data)[i], e = static_cast<const float*>(ye.data)[i];
    if (!same_bits(a, e) && ++bad < 10)
      ADD_FAILURE() << "exp(" << ds[static_cast<size_t>(i)] << "): nonpos " << a << ", af_exp " << e;
  }
  EXPECT_EQ(bad, 0);
}

TEST(SoftmaxBounds, UnitNumeratorDivisionIsIeeeDivision) {
  // softmax returning e and s as well: y must be e / s bit for bit. Rows span up to 200 in range, so many e fall
  // below 2^-60 (the divider path), into subnormals and to 0; NaN, +inf, -inf and all -inf rows; row lengths across
  // a vector tail.
  const char* text =
      "graph s(%x: f32[s0, s1]) {\n  %m = amax(%x) {axes=[1], keepdim=true}\n  %d = sub(%x, %m)\n"
      "  %e = exp(%d)\n  %s = sum(%e) {axes=[1], keepdim=true}\n  %y = div(%e, %s)\n"
      "  return %y, %e, %s\n}";
  auto k = Kernel::compile(parse_graph(text));
  // The reciprocal form: af_div_rcp_unit, or af_div_rcp_row where the row loop keeps softmax's row flag (AVX-512 and
  // AVX2 since session 23: rows spanning less than 41.5 then skip the range test, the others keep it).
  ASSERT_TRUE(k->source().find("= af_div_rcp_unit(x") != std::string::npos ||
              k->source().find("= af_div_rcp_row(x") != std::string::npos);
  std::mt19937_64 rng(20261130);
  for (int64_t cols : {1, 17, 301}) {
    const int64_t rows = 40;
    std::vector<float> xs(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
      const float span = static_cast<float>(r % 10) * 20.0f + 1.0f;
      std::uniform_real_distribution<float> u(-span, 0.0f);
      for (int64_t c = 0; c < cols; ++c) {
        float v = u(rng);
        if (r == 1 && c == cols / 2) v = kNaNF;
        if (r == 2 && c == cols - 1) v = kInfF;
        if (r == 3 && c % 3 == 0) v = -kInfF;
        if (r == 4) v = -kInfF;
        xs[static_cast<size_t>(r * cols + c)] = v;
      }
    }
    HostTensor x = HostTensor::view(DType::Float32, xs.data(), {rows, cols}, {cols, 1});
    HostTensor y = HostTensor::empty(DType::Float32, {rows, cols}), e = HostTensor::empty(DType::Float32, {rows, cols});
    HostTensor s = HostTensor::empty(DType::Float32, {rows, 1});
    k->run({x}, {y, e, s});
    int64_t bad = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const float want = static_cast<float>(e.get_double({r, c})) / static_cast<float>(s.get_double({r, 0}));
        const float got = static_cast<float>(y.get_double({r, c}));
        if (!same_bits(want, got) && ++bad < 10)
          ADD_FAILURE() << "cols " << cols << " row " << r << " col " << c << ": want " << want << ", got " << got;
      }
    EXPECT_EQ(bad, 0) << "cols " << cols;
  }
}

TEST(SoftmaxBounds, Bf16QuotientStoresRoundLikeEager) {
  // bf16 softmax's quotient carries a flag from af_div_rcp_unit's fast path (2^-60 <= e, the quotient a normal
  // float), with which its bf16 store converts by vcvtneps2bf16 alone; the divider path (e below 2^-60) clears it, and
  // the store then checks for subnormals (vcvtneps2bf16 would flush them to 0). Rows [0, d, d, ...] with d from -25
  // to -103: the row sum rounds to exactly 1, so y = exp(d), from normal values through f32 subnormals to 0; each
  // compared bit for bit with eager's rounding of exp(d) (integer round to nearest even on the f32 bits), skipping the
  // few d whose f32 exp lies within 2 ulp of a bf16 rounding boundary (the kernel's exp is within 1 ulp).
  auto k = Kernel::compile(
      parse_graph("graph s(%x: bf16[s0, s1]) {\n  %m = amax(%x) {axes=[1], keepdim=true}\n  %d = sub(%x, %m)\n"
                  "  %e = exp(%d)\n  %s = sum(%e) {axes=[1], keepdim=true}\n  %y = div(%e, %s)\n  return %y\n}"));
  if (k->lanes() == 16) {
    EXPECT_NE(k->source().find("_nrm);"), std::string::npos) << "the flagged store is used";
  }
  auto bf16_rne = [](float f) {
    const uint32_t u = float_to_bits(f);
    return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  };
  // One thread: each call holds every row, so rows of 1030 take the pipelined loop (rows of at least AF_PIPE_MIN = 64
  // elements in calls of at least AF_PIPE_MIN_ROWS = 8 rows) whatever the machine's thread count.
  kernel_testing::TilingRestore restore;
  set_num_threads(1);
  for (int64_t cols : {37, 1030}) {  // a masked tail (the row loop); the pipelined row loop
    const int64_t per_row = cols - 1, count = 78 * 8 + 1, rows = std::max<int64_t>((count + per_row - 1) / per_row, 8);
    HostTensor x = HostTensor::empty(DType::BFloat16, {rows, cols});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t j = std::min(r * per_row + c - 1, count - 1);
        x.set_double({r, c}, c == 0 ? 0.0 : -25.0 - 0.125 * static_cast<double>(j));
      }
    HostTensor y = HostTensor::empty(DType::BFloat16, {rows, cols});
    k->run({x}, {y});
    int64_t bad = 0, checked = 0, subnormal = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const double e = c == 0 ? 1.0 : std::exp(x.get_double({r, c}));
        float lo = static_cast<float>(e), hi = lo;
        for (int i = 0; i < 2; ++i) {
          lo = std::nextafter(lo, 0.0f);
          hi = std::nextafter(hi, kInfF);
        }
        const uint16_t want = bf16_rne(static_cast<float>(e));
        if (bf16_rne(lo) != want || bf16_rne(hi) != want) continue;
        ++checked;
        subnormal += (e > 0 && e < 0x1p-126) ? 1 : 0;
        const uint16_t got = static_cast<uint16_t>(float_to_bits(static_cast<float>(y.get_double({r, c}))) >> 16);
        if (got != want && ++bad < 10)
          ADD_FAILURE() << "cols " << cols << " x " << x.get_double({r, c}) << ": want 0x" << std::hex << want
                        << ", got 0x" << got << std::dec;
      }
    EXPECT_EQ(bad, 0) << "cols " << cols;
    EXPECT_GT(checked, count * 9 / 10) << "cols " << cols;
    EXPECT_GT(subnormal, 50) << "cols " << cols << ": outputs in the f32 subnormal range are covered";
  }
}

TEST(SoftmaxBounds, HalfInputStashAtItsCapacity) {
  // bf16 / f16 softmax over the input directly stashes the widened input (pass 1) and exp (pass 2) in one shared
  // slot (plan_stash_slots): 4 bytes per element of a 64 KiB stack stash, so rows up to 16384 use it and longer rows
  // a heap block of their size. Both sides of the boundary, with NaN / +inf / all -inf rows, against the interpreter;
  // layer_norm (the input stashed in pass 1, x - mean in pass 2 in the same slot: 4 bytes per element too) likewise.
  const char* sm =
      "graph s(%x: DT[s0, s1]) {\n  %m = amax(%x) {axes=[1], keepdim=true}\n  %d = sub(%x, %m)\n"
      "  %e = exp(%d)\n  %s = sum(%e) {axes=[1], keepdim=true}\n  %y = div(%e, %s)\n  return %y\n}";
  const char* ln =
      "graph l(%x: DT[s0, s1]) {\n  %mu = mean(%x) {axes=[1], keepdim=true}\n  %c = sub(%x, %mu)\n"
      "  %q = mul(%c, %c)\n  %v = mean(%q) {axes=[1], keepdim=true}\n  %y = mul(%c, %v)\n  return %y\n}";
  for (const std::string dt : {"bf16", "f16"}) {
    for (const auto& [text, lens] : std::vector<std::pair<const char*, std::vector<int64_t>>>{
             {sm, {16383, 16384, 16385, 16400}}, {ln, {16383, 16384, 16385}}}) {
      auto k = Kernel::compile(parse_graph(kernel_testing::with_dtype(text, dt)));
      EXPECT_NE(k->source().find("af_st<float, float>(st0 "), std::string::npos) << dt << ": the input is stashed";
      EXPECT_NE(k->source().find("shares the slot"), std::string::npos) << dt << ": a later value reuses the slot";
      for (int64_t cols : lens) {
        std::mt19937_64 rng(static_cast<uint64_t>(cols));
        HostTensor x = kernel_testing::make_tensor(dt == "f16" ? DType::Float16 : DType::BFloat16, {4, cols},
                                                   kernel_testing::Layout::Contiguous, rng);
        kernel_testing::fill_random(x, rng, false);
        x.set_double({1, cols / 3}, std::nan(""));
        x.set_double({2, cols - 1}, std::numeric_limits<double>::infinity());
        if (text == sm)
          for (int64_t c = 0; c < cols; ++c) x.set_double({3, c}, -std::numeric_limits<double>::infinity());
        auto got = kernel_testing::run_kernel(*k, {x});
        auto want = interpret(k->graph(), {x});
        EXPECT_EQ(kernel_testing::compare(got[0], want[0], kernel_testing::default_tolerance(got[0].dtype)), "")
            << dt << " cols " << cols;
      }
    }
  }
}

TEST(SoftmaxBounds, FailedHeapStashIsBadAllocAndWritesNothing) {
  // Rows past the 64 KiB stack stash take a heap block (af_heap_stash). -DAF_TEST_NO_HEAP_STASH makes that allocation
  // fail: the kernel returns AF_STATUS_NO_MEMORY before any row and the launch throws std::bad_alloc, leaving the
  // output as it was; rows within the stack stash still run.
  ::setenv("AUTOFUSE_EXTRA_CXXFLAGS", "-DAF_TEST_NO_HEAP_STASH", 1);  // for every variant the runs below compile
  auto k = Kernel::compile(parse_graph(kernel_testing::with_dtype(kernel_testing::kSoftmaxRowsIR, "f32")));
  for (int64_t cols : {int64_t{100}, int64_t{16384}, int64_t{16385}, int64_t{70000}}) {
    std::mt19937_64 rng(static_cast<uint64_t>(cols));
    HostTensor x = kernel_testing::make_tensor(DType::Float32, {3, cols}, kernel_testing::Layout::Contiguous, rng);
    kernel_testing::fill_random(x, rng, false);
    HostTensor y = HostTensor::empty(DType::Float32, {3, cols});
    for (int64_t c = 0; c < cols; ++c) y.set_double({1, c}, 7.0);  // poison: must stay when the launch fails
    if (cols <= 16384) {
      k->run({x}, {y});
      EXPECT_EQ(kernel_testing::compare(y, interpret(k->graph(), {x})[0], kernel_testing::default_tolerance(y.dtype)),
                "")
          << "cols " << cols;
    } else {
      EXPECT_THROW(k->run({x}, {y}), std::bad_alloc) << "cols " << cols;
      for (int64_t c = 0; c < cols; c += 997) EXPECT_EQ(y.get_double({1, c}), 7.0) << "cols " << cols << " col " << c;
    }
  }
  ::unsetenv("AUTOFUSE_EXTRA_CXXFLAGS");
}

}  // namespace
}  // namespace autofuse
