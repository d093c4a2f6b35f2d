// var / std and the mean a layer_norm centres with (codegen/cpu/emit_reduce.cpp: the corrected two-pass formula,
// and a mean of the same input taken from the var's accumulators, ValuePlacement::var_of_mean):
// - rows and columns whose values are all equal have var exactly 0 and mean exactly that value (eager's Welford
//   gives both; the plain two-pass gave ~1e-14 and a mean off by a few f32 ulps: make fuzz-kernels seed 1796094210);
// - a layer_norm of such rows is exactly 0 before its affine; also in the VectorRows tiling (short rows);
// - data that is constant up to a few ulps has the var of its deviations (the plain two-pass was off by factors
//   there), never below 0 (std never NaN);
// - the pairing is made only where it adds no pass (no reduction depends on the mean), and a paired kernel matches
//   the interpreter on random data with NaN / inf in every float dtype.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/parser.h"
#include "autofuse/schedule/loop_nest.h"
#include "autofuse/tiling/tiling_function.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using kernel_testing::expect_matches_interpreter;
using kernel_testing::fill_random;
using kernel_testing::float_dtype_of;
using kernel_testing::Layout;
using kernel_testing::make_tensor;
using kernel_testing::with_dtype;

/// var (correction 1), its std and a mean over axis `axis` of x[s0, s1], all three outputs.
std::string var_mean_ir(int axis, const std::string& dt) {
  const std::string a = "{axes=[" + std::to_string(axis) + "], keepdim=false";
  const std::string r = axis == 1 ? "s0" : "s1";
  return with_dtype("graph vm(%x: DT[s0, s1]) {\n  %v = var(%x) " + a + ", correction=1} : DT[" + r +
                        "]\n  %s = sqrt(%v)\n  %m = mean(%x) " + a + "} : DT[" + r + "]\n  return %v, %s, %m\n}",
                    dt);
}

constexpr const char* kLayerNormIR = R"(graph ln(%x: DT[s0, s1]) {
  %v = var(%x) {axes=[1], keepdim=true, correction=0}
  %m = mean(%x) {axes=[1], keepdim=true}
  %e = constant() {value=1e-05, dtype=DT}
  %a = add(%v, %e)
  %r = rsqrt(%a)
  %c = sub(%x, %m)
  %y = mul(%c, %r)
  return %y
})";

/// Runs k on `in` into outputs filled with NaN first (a value the kernel does not write stays NaN).
std::vector<HostTensor> run_poisoned(const Kernel& k, const std::vector<HostTensor>& in) {
  std::vector<HostTensor> outs;
  for (auto& s : k.output_sizes(in)) {
    outs.push_back(HostTensor::empty(k.graph().node(k.graph().outputs()[outs.size()]).dtype, s));
    for_each_multi_index(
        s, [&](const std::vector<int64_t>& i) { outs.back().set_double(i, std::numeric_limits<double>::quiet_NaN()); });
  }
  k.run(in, outs);
  return outs;
}

HostTensor constant_tensor(DType t, int64_t rows, int64_t cols, double value) {
  HostTensor x = HostTensor::empty(t, {rows, cols});
  for_each_multi_index(x.sizes, [&](const std::vector<int64_t>& i) { x.set_double(i, value); });
  return x;
}

TEST(KernelVarExact, ConstantRowsAndColumnsHaveVarZeroAndTheirMean) {
  for (const std::string dt : {"f32", "bf16", "f16", "f64"}) {
    for (int axis : {1, 0}) {
      auto k = Kernel::compile(parse_graph(var_mean_ir(axis, dt)));
      for (double value : {-0.40513, 3.14159, 1e-3, -7.0, 0.1}) {
        for (int64_t len : {int64_t{1000}, int64_t{3}, int64_t{4097}, int64_t{2}}) {
          const int64_t rows = axis == 1 ? 5 : len, cols = axis == 1 ? len : 37;
          HostTensor x = constant_tensor(float_dtype_of(dt), rows, cols, value);
          const double stored = x.get_double({0, 0});  // the value in x's dtype
          auto out = run_poisoned(*k, {x});
          const std::string what = dt + " axis " + std::to_string(axis) + " value " + std::to_string(value) + " [" +
                                   std::to_string(rows) + ", " + std::to_string(cols) + "]";
          for_each_multi_index(out[0].sizes, [&](const std::vector<int64_t>& i) {
            ASSERT_EQ(out[0].get_double(i), 0.0) << what << ": var";
            ASSERT_EQ(out[1].get_double(i), 0.0) << what << ": std";
            ASSERT_EQ(out[2].get_double(i), stored) << what << ": mean";
          });
        }
      }
    }
  }
}

TEST(KernelVarExact, ShortRowsAcrossLanesToo) {
  // The VectorRows tiling (short rows, one row per lane: the permuted nest's column form) of var / std / mean and of
  // layer_norm over constant rows of 3..33 elements.
  kernel_testing::TilingRestore restore;
  force_tiling_kind(TilingKind::VectorRows);
  for (const std::string dt : {"f32", "bf16"}) {
    auto vm = Kernel::compile(parse_graph(var_mean_ir(1, dt)));
    auto ln = Kernel::compile(parse_graph(with_dtype(kLayerNormIR, dt)));
    for (int64_t len : {int64_t{3}, int64_t{8}, int64_t{33}}) {
      HostTensor x = constant_tensor(float_dtype_of(dt), 40, len, -0.40513);
      const double stored = x.get_double({0, 0});
      auto out = run_poisoned(*vm, {x});
      auto y = run_poisoned(*ln, {x});
      for (int64_t r = 0; r < 40; ++r) {
        ASSERT_EQ(out[0].get_double({r}), 0.0) << dt << " length " << len;
        ASSERT_EQ(out[2].get_double({r}), stored) << dt << " length " << len;
        for (int64_t c = 0; c < len; ++c) ASSERT_EQ(y[0].get_double({r, c}), 0.0) << dt << " length " << len;
      }
    }
  }
}

TEST(KernelVarExact, LayerNormOfConstantRowsIsZero) {
  for (const std::string dt : {"f32", "bf16", "f16"}) {
    auto k = Kernel::compile(parse_graph(with_dtype(kLayerNormIR, dt)));
    for (double value : {-0.40513, 2.5e3, 0.7}) {
      for (int64_t len : {int64_t{1000}, int64_t{4096}, int64_t{7}}) {
        auto out = run_poisoned(*k, {constant_tensor(float_dtype_of(dt), 3, len, value)});
        for_each_multi_index(out[0].sizes, [&](const std::vector<int64_t>& i) {
          ASSERT_EQ(out[0].get_double(i), 0.0) << dt << " value " << value << " length " << len;
        });
      }
    }
  }
}

TEST(KernelVarExact, NearlyConstantDataHasTheVarOfItsDeviations) {
  // Rows of one value with a few elements 1-3 ulps up or down: the var is of the order of the mean's own rounding
  // error, where the plain two-pass (no correction term) was off by factors for f32 / f64; never below 0, std never
  // NaN. 16-bit values have no correction term and are checked the same way.
  std::mt19937_64 rng = kernel_testing::seeded_rng();
  for (const std::string dt : {"f32", "f64", "bf16", "f16"}) {
    auto k = Kernel::compile(parse_graph(var_mean_ir(1, dt)));
    // 16-bit values have no deviation sum (needs_deviation_sum): their mean pass is exact enough.
    EXPECT_EQ(k->source().find("ad1 = ") != std::string::npos, dt == "f32" || dt == "f64") << dt;
    const int bits = dt == "f32" ? 24 : dt == "f64" ? 53 : dt == "bf16" ? 8 : 11;
    for (int round = 0; round < 200; ++round) {
      const int64_t len = 2 + static_cast<int64_t>(rng() % 3000);
      double value = std::ldexp(static_cast<double>(rng() % 100000) - 50000.0, -static_cast<int>(rng() % 20));
      HostTensor x = constant_tensor(float_dtype_of(dt), 2, len, value);
      value = x.get_double({0, 0});  // rounded to dt
      for (int j = 0; j < 4; ++j) {
        const std::vector<int64_t> i = {static_cast<int64_t>(rng() % 2), static_cast<int64_t>(rng() % len)};
        const double v = x.get_double(i);
        int e = 0;
        std::frexp(v, &e);
        const double ulp = std::ldexp(1.0, e - bits);  // of v's binade; set_double rounds what is not representable
        x.set_double(i, v + (rng() % 2 ? 1 : -1) * static_cast<double>(1 + rng() % 3) * ulp);
      }
      auto out = run_poisoned(*k, {x});
      for (int64_t r = 0; r < 2; ++r) {
        // The reference: the corrected two-pass in long double (its own mean's rounding cancels too).
        long double sum = 0, sq = 0, dev = 0;
        for (int64_t c = 0; c < len; ++c) sum += x.get_double({r, c});
        const long double mean = sum / len;
        for (int64_t c = 0; c < len; ++c) {
          const long double d = x.get_double({r, c}) - mean;
          sq += d * d;
          dev += d;
        }
        const double want = static_cast<double>((sq - dev * dev / len) / (len - 1)), got = out[0].get_double({r});
        const std::string what = dt + " value " + std::to_string(value) + " length " + std::to_string(len);
        ASSERT_GE(got, 0.0) << what;
        ASSERT_FALSE(std::isnan(out[1].get_double({r}))) << what;
        // 16-bit outputs: one ulp of the output (its rounding after the f32 result's; the subnormal spacing below
        // the normals).
        const double tol =
            bits > 16 ? 1e-3 * want : std::max(std::ldexp(want, 1 - bits), std::ldexp(1.0, dt == "f16" ? -24 : -133));
        ASSERT_LE(std::fabs(got - want), tol) << what << ": var " << got << ", want " << want;
      }
    }
  }
}

TEST(KernelVarExact, MeansPairWithAVarOnlyWithoutAnExtraPass) {
  // layer_norm: the mean takes the var's stage (3 passes either way) and accumulates nothing of its own.
  auto ln = Kernel::compile(parse_graph(with_dtype(kLayerNormIR, "f32")));
  const LoopNest& n1 = ln->loop_nest();
  EXPECT_EQ(n1.values[2].var_of_mean, 1);
  EXPECT_EQ(n1.values[2].stage, n1.values[1].stage);
  EXPECT_EQ(n1.num_stages, 2);
  EXPECT_EQ(ln->source().find("a2 = "), std::string::npos);  // no accumulator of the mean's own
  // A sum of (x - mean) depends on the mean: pairing would put it one pass later, so the mean stays its own.
  auto dep = Kernel::compile(parse_graph(R"(graph dep(%x: f32[s0, s1]) {
    %m = mean(%x) {axes=[1], keepdim=true}
    %v = var(%x) {axes=[1], keepdim=true, correction=1}
    %c = sub(%x, %m)
    %s = sum(%c) {axes=[1], keepdim=true}
    %o = add(%s, %v)
    return %o
  })"));
  EXPECT_EQ(dep->loop_nest().values[1].var_of_mean, -1);
  EXPECT_EQ(dep->loop_nest().num_stages, 2);
  // Not over the same input: no pairing.
  auto other = Kernel::compile(parse_graph(R"(graph other(%x: f32[s0, s1], %y: f32[s0, s1]) {
    %m = mean(%y) {axes=[1], keepdim=false}
    %v = var(%x) {axes=[1], keepdim=false, correction=1}
    return %m, %v
  })"));
  EXPECT_EQ(other->loop_nest().values[2].var_of_mean, -1);
  // Each matches the interpreter on random data (NaN / inf in odd widths).
  std::mt19937_64 rng(7);
  for (const Kernel* k : {ln.get(), dep.get(), other.get()})
    for (int64_t d : {1, 16, 33, 1000}) {
      std::vector<HostTensor> in;
      for (size_t j = 0; j < k->graph().inputs().size(); ++j) {
        in.push_back(make_tensor(DType::Float32, {9, d}, Layout::Permuted, rng));
        fill_random(in.back(), rng, /*specials=*/d % 2 == 1);
      }
      expect_matches_interpreter(*k, in, k->graph().name() + " width " + std::to_string(d));
    }
}

TEST(KernelVarExact, PairedKernelsMatchTheInterpreterInEveryFloatDtype) {
  for (const std::string dt : {"f32", "bf16", "f16", "f64"})
    for (int axis : {1, 0}) {
      auto k = Kernel::compile(parse_graph(var_mean_ir(axis, dt)));
      EXPECT_EQ(k->loop_nest().values[3].var_of_mean, 1) << dt;
      std::mt19937_64 rng(static_cast<uint64_t>(axis) * 100 + dt.size());
      for (int64_t d : {1, 2, 17, 256, 529})
        for (Layout l : {Layout::Contiguous, Layout::Permuted, Layout::Gapped}) {
          HostTensor x = make_tensor(float_dtype_of(dt), {axis == 1 ? 6 : d, axis == 1 ? d : 40}, l, rng);
          fill_random(x, rng, /*specials=*/d % 2 == 1);
          expect_matches_interpreter(*k, {x}, dt + " axis " + std::to_string(axis) + " d " + std::to_string(d));
        }
    }
}

}  // namespace
}  // namespace autofuse
