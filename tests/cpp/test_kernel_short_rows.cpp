// Row kernels over short rows (attention softmax over 32 columns, norms over a few vectors): every row length around
// the vector boundaries, NaN / +inf / -inf / all -inf rows, f32 / f16 / bf16, strided rows, outputs written into a
// padded buffer (a masked tail store must not touch the padding), and empty tensors. The kernels' per-row work
// (masked tail loads/stores, the horizontal folds as shuffle trees, row-index decomposition without the divider,
// the per-row reciprocal) is what these exercise; each result is checked against the reference interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using kernel_testing::compare;
using kernel_testing::default_tolerance;
using kernel_testing::expect_matches_interpreter;
using kernel_testing::float_dtype_of;
using kernel_testing::Layout;
using kernel_testing::make_tensor;
using kernel_testing::run_kernel;
using kernel_testing::with_dtype;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const char* kSoftmax = R"(graph softmax(%x: DT[s0, s1]) {
  %xf = cast(%x) {dtype=f32}
  %m = amax(%xf) {axes=[1], keepdim=true}
  %d = sub(%xf, %m)
  %e = exp(%d)
  %s = sum(%e) {axes=[1], keepdim=true}
  %y = div(%e, %s)
  %yt = cast(%y) {dtype=DT}
  return %yt, %m
})";

const char* kLayerNorm = R"(graph layer_norm(%x: DT[s0, s1], %w: DT[s1], %b: DT[s1]) {
  %xf = cast(%x) {dtype=f32}
  %mu = mean(%xf) {axes=[1], keepdim=true}
  %v = var(%xf) {axes=[1], keepdim=true, correction=0}
  %eps = constant() {value=1e-5, dtype=f32}
  %ve = add(%v, %eps)
  %r = rsqrt(%ve)
  %c = sub(%xf, %mu)
  %n = mul(%c, %r)
  %wf = cast(%w) {dtype=f32}
  %bf = cast(%b) {dtype=f32}
  %s = mul(%n, %wf)
  %y = add(%s, %bf)
  %yt = cast(%y) {dtype=DT}
  return %yt, %r
})";

const char* kRmsNorm = R"(graph rms_norm(%x: DT[s0, s1], %w: DT[s1]) {
  %xf = cast(%x) {dtype=f32}
  %q = mul(%xf, %xf)
  %ms = mean(%q) {axes=[1], keepdim=true}
  %eps = constant() {value=1e-6, dtype=f32}
  %me = add(%ms, %eps)
  %r = rsqrt(%me)
  %n = mul(%xf, %r)
  %wf = cast(%w) {dtype=f32}
  %y = mul(%n, %wf)
  %yt = cast(%y) {dtype=DT}
  return %yt
})";

/// Random N(0, 1) values in `h` (any layout), rounded to its dtype by set_double.
void fill(HostTensor& h, std::mt19937_64& rng) { kernel_testing::fill_random(h, rng, false); }

const std::vector<int64_t> kShortLengths = {1, 2, 7, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 96, 127, 128, 129};

TEST(KernelShortRows, SoftmaxAtEveryShortLengthWithSpecialRows) {
  // Rows: random; a NaN at a moving column; +inf at a moving column; -inf at a moving column; all -inf (NaN out: the
  // max is -inf and -inf - -inf is NaN, as in eager). Each special lands in every vector position over the lengths.
  for (const std::string dt : {"f32", "bf16", "f16"}) {
    auto k = Kernel::compile(parse_graph(with_dtype(kSoftmax, dt)));
    for (int64_t d : kShortLengths) {
      std::mt19937_64 rng(static_cast<uint64_t>(d) * 31 + dt.size());
      const int64_t rows = 12;
      HostTensor x = make_tensor(float_dtype_of(dt), {rows, d}, Layout::Contiguous, rng);
      fill(x, rng);
      x.set_double({1, (d * 5 + 3) % d}, kNaN);
      x.set_double({2, (d * 3 + 1) % d}, kInf);
      x.set_double({3, (d * 7 + 2) % d}, -kInf);
      for (int64_t c = 0; c < d; ++c) x.set_double({4, c}, -kInf);
      x.set_double({5, d - 1}, kNaN);  // in the tail vector
      expect_matches_interpreter(*k, {x}, dt + " d=" + std::to_string(d));
      auto got = run_kernel(*k, {x});
      for (int64_t c = 0; c < d; ++c) {
        EXPECT_TRUE(std::isnan(got[0].get_double({1, c}))) << dt << " d=" << d << " NaN row, column " << c;
        EXPECT_TRUE(std::isnan(got[0].get_double({5, c}))) << dt << " d=" << d << " tail NaN row, column " << c;
        EXPECT_TRUE(std::isnan(got[0].get_double({4, c}))) << dt << " d=" << d << " all -inf row, column " << c;
      }
      EXPECT_TRUE(std::isnan(got[1].get_double({1, 0}))) << "amax of a row with NaN";
      EXPECT_EQ(got[1].get_double({2, 0}), kInf) << "amax of a row with +inf";
      EXPECT_EQ(got[1].get_double({4, 0}), -kInf) << "amax of an all -inf row";
    }
  }
}

TEST(KernelShortRows, RowMaxWithoutNaNSelectsKeepsEagerNaNs) {
  // softmax and log-softmax whose max is not an output accumulate it with af_max_nonan (row_max_without_nan_select):
  // a NaN anywhere in the row must still make the whole row NaN, through the row sum; +inf / -inf rows keep the
  // exact max. Graphs where the difference x - max reaches an output without a sum keep the NaN-propagating max.
  const std::string sm = R"(graph sm(%x: DT[s0, s1]) {
    %xf = cast(%x) {dtype=f32}
    %m = amax(%xf) {axes=[1], keepdim=true}
    %d = sub(%xf, %m)
    %e = exp(%d)
    %s = sum(%e) {axes=[1], keepdim=true}
    %y = div(%e, %s)
    %yt = cast(%y) {dtype=DT}
    return %yt
  })";
  const std::string lsm = R"(graph lsm(%x: DT[s0, s1]) {
    %xf = cast(%x) {dtype=f32}
    %m = amax(%xf) {axes=[1], keepdim=true}
    %d = sub(%xf, %m)
    %e = exp(%d)
    %s = sum(%e) {axes=[1], keepdim=true}
    %l = log(%s)
    %y = sub(%d, %l)
    %yt = cast(%y) {dtype=DT}
    return %yt
  })";
  const std::string centred = R"(graph centred(%x: DT[s0, s1]) {
    %m = amax(%x) {axes=[1], keepdim=true}
    %d = sub(%x, %m)
    return %d
  })";
  for (const std::string dt : {"f32", "bf16"}) {
    const std::vector<std::string> graphs = {sm, lsm, centred};
    for (size_t gi = 0; gi < graphs.size(); ++gi) {
      const bool is_centred = gi == 2;
      auto k = Kernel::compile(parse_graph(with_dtype(graphs[gi], dt)));
      const bool fast = k->source().find("af_max_nonan<") != std::string::npos;
      EXPECT_EQ(fast, !is_centred) << dt << ": which graphs may skip the NaN selects\n";
      for (int64_t d : {1, 3, 16, 32, 33, 64, 100, 4096 + 5}) {
        std::mt19937_64 rng(static_cast<uint64_t>(d) * 13 + dt.size());
        const int64_t rows = 8;
        HostTensor x = make_tensor(float_dtype_of(dt), {rows, d}, Layout::Contiguous, rng);
        fill(x, rng);
        x.set_double({0, d - 1}, kNaN);  // last column (the tail)
        x.set_double({1, 0}, kNaN);      // first column
        x.set_double({2, d / 2}, kInf);  // +inf: the max is +inf, others exp(-inf) = 0, inf - inf = NaN
        x.set_double({3, (d * 3) / 4}, -kInf);
        for (int64_t c = 0; c < d; ++c) x.set_double({4, c}, -kInf);  // all -inf: NaN row
        for (int64_t c = 0; c < d; ++c) x.set_double({5, c}, kNaN);   // all NaN
        x.set_double({6, d / 3}, kInf);
        x.set_double({6, (2 * d) / 3}, kNaN);  // +inf and NaN (the same cell when d = 1)
        expect_matches_interpreter(*k, {x}, dt + " d=" + std::to_string(d));
        auto got = run_kernel(*k, {x});
        for (int64_t r : {0, 1, 4, 5, 6})  // rows with a NaN, or all -inf (-inf - -inf is NaN), are NaN throughout
          for (int64_t c = 0; c < d; ++c) {
            EXPECT_TRUE(std::isnan(got[0].get_double({r, c}))) << dt << " d=" << d << " row " << r << " col " << c;
          }
      }
    }
  }
}

TEST(KernelShortRows, NormsAtEveryShortLength) {
  for (const std::string dt : {"f32", "bf16", "f16"}) {
    auto ln = Kernel::compile(parse_graph(with_dtype(kLayerNorm, dt)));
    auto rms = Kernel::compile(parse_graph(with_dtype(kRmsNorm, dt)));
    for (int64_t d : kShortLengths) {
      std::mt19937_64 rng(static_cast<uint64_t>(d) * 17 + dt.size());
      HostTensor x = make_tensor(float_dtype_of(dt), {9, d}, Layout::Contiguous, rng);
      HostTensor w = make_tensor(float_dtype_of(dt), {d}, Layout::Contiguous, rng);
      HostTensor b = make_tensor(float_dtype_of(dt), {d}, Layout::Contiguous, rng);
      fill(x, rng);
      fill(w, rng);
      fill(b, rng);
      x.set_double({3, d / 2}, kNaN);
      expect_matches_interpreter(*ln, {x, w, b}, "layer_norm " + dt + " d=" + std::to_string(d));
      expect_matches_interpreter(*rms, {x, w}, "rms_norm " + dt + " d=" + std::to_string(d));
    }
  }
}

TEST(KernelShortRows, StridedAndBroadcastRows) {
  // Permuted (rows read lane by lane), gapped (every stride doubled) and expanded inputs of short rows; the row
  // index decomposition runs over 3 kept axes of which some have size 1 after merging.
  const std::string text = R"(graph sm4(%x: f32[s0, s1, s2, s3]) {
    %m = amax(%x) {axes=[3], keepdim=true}
    %d = sub(%x, %m)
    %e = exp(%d)
    %s = sum(%e) {axes=[3], keepdim=true}
    %y = div(%e, %s)
    return %y
  })";
  auto k = Kernel::compile(parse_graph(text));
  for (Layout l : {Layout::Contiguous, Layout::Permuted, Layout::Gapped, Layout::Expanded})
    for (std::vector<int64_t> sz : std::vector<std::vector<int64_t>>{
             {1, 12, 32, 32}, {2, 3, 5, 17}, {1, 1, 7, 64}, {3, 1, 1, 33}, {2, 4, 3, 1}}) {
      std::mt19937_64 rng(sz[3] * 101 + static_cast<int>(l));
      HostTensor x = make_tensor(DType::Float32, sz, l, rng);
      fill(x, rng);
      expect_matches_interpreter(*k, {x},
                                 "layout " + std::to_string(static_cast<int>(l)) + " d=" + std::to_string(sz[3]));
    }
}

TEST(KernelShortRows, TailStoresLeaveThePaddingAlone) {
  // The output rows are views into a wider buffer (row stride d + 16, padded with a sentinel): the masked tail
  // store must write exactly d elements of each row, in f32 and bf16.
  for (const std::string dt : {"f32", "bf16"}) {
    auto k = Kernel::compile(parse_graph(with_dtype(kSoftmax, dt)));
    const DType t = float_dtype_of(dt);
    for (int64_t d : {1, 5, 17, 33, 63}) {
      std::mt19937_64 rng(static_cast<uint64_t>(d) + 7);
      const int64_t rows = 6, pitch = d + 16;
      HostTensor x = make_tensor(t, {rows, d}, Layout::Contiguous, rng);
      fill(x, rng);
      HostTensor buf = HostTensor::empty(t, {rows, pitch});
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < pitch; ++c) buf.set_double({r, c}, 1024.0);
      HostTensor y = HostTensor::view(t, buf.data, {rows, d}, {pitch, 1});
      HostTensor m = HostTensor::empty(DType::Float32, {rows, 1});
      k->run({x}, {y, m});
      auto want = interpret(k->graph(), {x});
      EXPECT_EQ(compare(y, want[0], default_tolerance(t)), "") << dt << " d=" << d;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = d; c < pitch; ++c)
          ASSERT_EQ(buf.get_double({r, c}), 1024.0) << dt << " d=" << d << ": padding at row " << r << ", column " << c;
    }
  }
}

TEST(KernelShortRows, EmptyTensors) {
  auto k = Kernel::compile(parse_graph(with_dtype(kSoftmax, "f32")));
  for (std::vector<int64_t> sz : std::vector<std::vector<int64_t>>{{0, 32}, {0, 1}, {0, 100}}) {
    std::mt19937_64 rng(5);
    HostTensor x = make_tensor(DType::Float32, sz, Layout::Contiguous, rng);
    fill(x, rng);
    expect_matches_interpreter(*k, {x}, "sizes " + std::to_string(sz[0]) + "x" + std::to_string(sz[1]));
  }
}

}  // namespace
}  // namespace autofuse
