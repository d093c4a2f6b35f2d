// The software-pipelined row loop of multi-pass row kernels (codegen/cpu/emit_pipeline.cpp; on by default for
// softmax-like kernels, else with -DAF_PIPELINE_ROWS): it must give the same bits as the row-by-row loop (the same
// source built with -DAF_NO_PIPELINE_ROWS) for
// every row length around the vector, chain-group and cascade-block boundaries, 1, 2, 3, 7 and 9 rows (rows split over
// the threads, so each thread's pipeline has its own prologue and epilogue), NaN / +inf / -inf / all -inf rows, rows
// whose exp(x - max) falls below 2^-60 (softmax's row flag off) or stays above it,
// f32 / bf16 / f16, rows with a gap between them, 0-size tensors, and graphs with per-row outputs and
// two or three passes. AF_PIPE_MIN=1 and AF_PIPE_MIN_ROWS=1 make every row take the pipelined loop.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
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
using kernel_testing::float_dtype_of;
using kernel_testing::Layout;
using kernel_testing::make_tensor;
using kernel_testing::run_kernel;
using kernel_testing::with_dtype;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// Sets AUTOFUSE_EXTRA_CXXFLAGS for the kernels compiled in its scope (part of the cache key), restoring it after.
struct ScopedCxxFlags {
  explicit ScopedCxxFlags(const char* flags) {
    if (const char* old = std::getenv("AUTOFUSE_EXTRA_CXXFLAGS")) saved = old, had = true;
    ::setenv("AUTOFUSE_EXTRA_CXXFLAGS", flags, 1);
  }
  ~ScopedCxxFlags() {
    if (had)
      ::setenv("AUTOFUSE_EXTRA_CXXFLAGS", saved.c_str(), 1);
    else
      ::unsetenv("AUTOFUSE_EXTRA_CXXFLAGS");
  }
  std::string saved;
  bool had = false;
};

struct PipeGraph {
  const char* name;
  const char* text;
  int extra_inputs;  ///< per-column inputs [s1] after x
};

const PipeGraph kGraphs[] = {
    {"softmax", kernel_testing::kSoftmaxRowsIR, 0},
    {"softmax_and_max", R"(graph softmax_and_max(%x: DT[s0, s1]) {
  %xf = cast(%x) {dtype=f32}
  %m = amax(%xf) {axes=[1], keepdim=true}
  %d = sub(%xf, %m)
  %e = exp(%d)
  %s = sum(%e) {axes=[1], keepdim=true}
  %y = div(%e, %s)
  %yt = cast(%y) {dtype=DT}
  return %yt, %m
})",
     0},
    {"log_softmax", R"(graph log_softmax(%x: DT[s0, s1]) {
  %m = amax(%x) {axes=[1], keepdim=true}
  %d = sub(%x, %m)
  %e = exp(%d)
  %s = sum(%e) {axes=[1], keepdim=true}
  %l = log(%s)
  %y = sub(%d, %l)
  return %y
})",
     0},
    {"layer_norm", kernel_testing::kLayerNormRowsIR, 2},
    {"rms_norm", R"(graph rms_norm(%x: DT[s0, s1], %w: DT[s1]) {
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
})",
     1},
};

/// Whether a kernel's source has a pipelined row loop (on by default or on request).
bool pipelined(const Kernel& k) {
  return k.source().find("#ifndef AF_NO_PIPELINE_ROWS") != std::string::npos ||
         k.source().find("#ifdef AF_PIPELINE_ROWS") != std::string::npos;
}

/// Bitwise equality of two tensors of the same dtype and sizes (contiguous outputs of run_kernel).
std::string bit_difference(const HostTensor& a, const HostTensor& b) {
  if (a.sizes != b.sizes || a.dtype != b.dtype) return "sizes or dtype differ";
  const size_t n = static_cast<size_t>(a.numel()) * static_cast<size_t>(dtype_size(a.dtype));
  const auto* pa = static_cast<const unsigned char*>(a.data);
  const auto* pb = static_cast<const unsigned char*>(b.data);
  for (size_t i = 0; i < n; ++i)
    if (pa[i] != pb[i]) return "byte " + std::to_string(i) + " differs";
  return "";
}

// Row lengths: around one vector (16), a chain group (64), a cascade block (64 vectors = 1024) and the default
// AF_PIPE_MIN, plus an odd length past 4096.
const std::vector<int64_t> kLengths = {1, 15, 16, 17, 63, 64, 65, 127, 1023, 1024, 1025, 1089, 4099};

TEST(KernelPipeline, BitIdenticalToTheRowLoop) {
  for (const PipeGraph& pg : kGraphs) {
    for (const std::string dt : {"f32", "bf16", "f16"}) {
      const Graph g = parse_graph(with_dtype(pg.text, dt));
      std::shared_ptr<Kernel> plain;
      {
        ScopedCxxFlags flags("-DAF_NO_PIPELINE_ROWS");
        plain = Kernel::compile(g);
      }
      ASSERT_TRUE(pipelined(*plain)) << pg.name << " " << dt << ": no pipelined loop planned";
      std::shared_ptr<Kernel> piped;
      {
        ScopedCxxFlags flags("-DAF_PIPELINE_ROWS -DAF_PIPE_MIN=1 -DAF_PIPE_MIN_ROWS=1");
        piped = Kernel::compile(g);
      }
      for (int64_t d : kLengths)
        for (int64_t rows : {1, 2, 3, 7, 9})
          for (Layout l : {Layout::Contiguous, Layout::Gapped}) {
            std::mt19937_64 rng(static_cast<uint64_t>(d * 131 + rows * 7 + static_cast<int>(l)));
            std::vector<HostTensor> in;
            in.push_back(make_tensor(float_dtype_of(dt), {rows, d}, l, rng));
            kernel_testing::fill_random(in[0], rng, false);
            if (rows >= 7) {  // special rows, each special at a different column
              in[0].set_double({1, (d * 5 + 3) % d}, kNaN);
              in[0].set_double({2, (d * 3 + 1) % d}, kInf);
              in[0].set_double({3, (d * 7 + 2) % d}, -kInf);
              for (int64_t c = 0; c < d; ++c) in[0].set_double({4, c}, -kInf);
              in[0].set_double({5, d - 1}, kNaN);
            }
            if (rows == 9) {  // softmax's row flag (row_flag_sums): one row below -41.5 of its max, one just above
              in[0].set_double({0, (d * 2 + 5) % d}, -60.0);
              in[0].set_double({0, (d * 6 + 1) % d}, -95.0);  // a subnormal numerator
              in[0].set_double({6, (d * 4 + 3) % d}, -36.0);
            }
            for (int e = 0; e < pg.extra_inputs; ++e) {
              in.push_back(make_tensor(float_dtype_of(dt), {d}, Layout::Contiguous, rng));
              kernel_testing::fill_random(in.back(), rng, false);
            }
            const std::string what = std::string(pg.name) + " " + dt + " rows=" + std::to_string(rows) +
                                     " d=" + std::to_string(d) + " layout=" + std::to_string(static_cast<int>(l));
            auto want = run_kernel(*plain, in);
            auto got = run_kernel(*piped, in);
            ASSERT_EQ(got.size(), want.size()) << what;
            for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(bit_difference(got[i], want[i]), "") << what;
            if (rows == 2 && l == Layout::Contiguous) {  // and against the interpreter
              auto ref = interpret(g, in);
              for (size_t i = 0; i < got.size(); ++i)
                EXPECT_EQ(compare(got[i], ref[i], default_tolerance(got[i].dtype)), "") << what;
            }
          }
      // 0 rows, and rows of 0 elements
      for (std::vector<int64_t> sz : std::vector<std::vector<int64_t>>{{0, 64}, {3, 0}}) {
        std::mt19937_64 rng(5);
        std::vector<HostTensor> in{make_tensor(float_dtype_of(dt), sz, Layout::Contiguous, rng)};
        kernel_testing::fill_random(in[0], rng, false);
        for (int e = 0; e < pg.extra_inputs; ++e) {
          in.push_back(make_tensor(float_dtype_of(dt), {sz[1]}, Layout::Contiguous, rng));
          kernel_testing::fill_random(in.back(), rng, false);
        }
        auto want = run_kernel(*plain, in);
        auto got = run_kernel(*piped, in);
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_EQ(bit_difference(got[i], want[i]), "") << pg.name << " " << dt << " empty " << sz[0] << "x" << sz[1];
      }
    }
  }
}

// Softmax's row flag (row_flag_sums, session 13): the pipelined loop's steady steps on flagged rows drop the
// division's per-vector range test where exp(x - max) is 0 or >= 2^-60. Rows whose quotients are subnormal (where the
// reciprocal form is not the IEEE quotient: ~0.2% of such pairs differ) must take the tested path; rows with -inf (a
// causal mask: exp gives 0) may take the fast one. The pipelined loop with and without flags (-DAF_NO_ROW_FLAG)
// against the row loop (which has the flag too since session 23), bit for bit; f32 shows every bit of the quotient.
// Checked to fail with the flag's bound (af_row_unit_ok) at -128 instead of -41.5.
TEST(KernelPipeline, SoftmaxRowFlagKeepsTheRangeTestWhereNeeded) {
  for (const std::string dt : {"f32", "bf16"}) {
    const Graph g = parse_graph(with_dtype(kernel_testing::kSoftmaxRowsIR, dt));
    std::shared_ptr<Kernel> plain, piped, unflagged;
    {
      ScopedCxxFlags flags("-DAF_NO_PIPELINE_ROWS");
      plain = Kernel::compile(g);
    }
    {
      ScopedCxxFlags flags("-DAF_PIPELINE_ROWS -DAF_PIPE_MIN=1 -DAF_PIPE_MIN_ROWS=1");
      piped = Kernel::compile(g);
    }
    {
      ScopedCxxFlags flags("-DAF_PIPELINE_ROWS -DAF_PIPE_MIN=1 -DAF_PIPE_MIN_ROWS=1 -DAF_NO_ROW_FLAG");
      unflagged = Kernel::compile(g);
    }
    if (piped->source().find("af_div_rcp_row(") == std::string::npos) GTEST_SKIP() << "no AVX-512: no row flag";
    for (int64_t d : {1025, 4099}) {
      const int64_t nrows = 9;
      std::mt19937_64 rng(41 + static_cast<uint64_t>(d));
      std::vector<HostTensor> in{make_tensor(float_dtype_of(dt), {nrows, d}, Layout::Contiguous, rng)};
      kernel_testing::fill_random(in[0], rng, false);
      std::uniform_real_distribution<double> top(-1.0, 0.0), low(-90.0, -80.0);
      for (int64_t r = 1; r < nrows; r += 3)  // rows 1, 4, 7: a max of 0, 49 values near it, the rest 80-90 below
        for (int64_t c = 0; c < d; ++c) in[0].set_double({r, c}, c == 0 ? 0.0 : c < 50 ? top(rng) : low(rng));
      for (int64_t r = 2; r < nrows; r += 3)  // rows 2, 5, 8: causal-mask-like, -inf after column 100 * r
        for (int64_t c = 100 * r; c < d; ++c) in[0].set_double({r, c}, -kInf);
      const std::string what = dt + " d=" + std::to_string(d);
      auto want = run_kernel(*plain, in);
      EXPECT_EQ(bit_difference(run_kernel(*piped, in)[0], want[0]), "") << what << " with row flags";
      EXPECT_EQ(bit_difference(run_kernel(*unflagged, in)[0], want[0]), "") << what << " without";
    }
  }
}

TEST(KernelPipeline, NotPlannedWhereItCannotCarryTheState) {
  // A var (two-pass: its mean is carried as mu<id> between passes) keeps the row loop only.
  const std::string text = R"(graph v(%x: f32[s0, s1]) {
  %v = var(%x) {axes=[1], keepdim=true, correction=1}
  %d = sub(%x, %v)
  return %d
})";
  auto k = Kernel::compile(parse_graph(text));
  EXPECT_FALSE(pipelined(*k));
  // One-pass row reductions have nothing to pipeline.
  auto s = Kernel::compile(parse_graph(R"(graph s(%x: f32[s0, s1]) {
  %s = sum(%x) {axes=[1], keepdim=false}
  return %s
})"));
  EXPECT_FALSE(pipelined(*s));
}

TEST(KernelPipeline, OnByDefaultOnlyWhereALaterPassComputesATranscendental) {
  // bf16 softmax and log-softmax (exp in pass 2, the input stashed widened, pass 3 reads only the stash) take the
  // pipelined loop by default; f32 softmax (slower pipelined with session 9's exp), f32 log-softmax (pass 3 re-reads
  // x for x - max), layer norm and rms norm (cheap per-element passes) only with -DAF_PIPELINE_ROWS.
  for (const PipeGraph& pg : kGraphs)
    for (const std::string dt : {"f32", "bf16"}) {
      auto k = Kernel::compile(parse_graph(with_dtype(pg.text, dt)));
      const std::string src = k->source();
      const std::string name = pg.name;
      const bool on_by_default = name.find("softmax") != std::string::npos && dt == "bf16";
      EXPECT_EQ(src.find("#ifndef AF_NO_PIPELINE_ROWS") != std::string::npos, on_by_default) << pg.name << " " << dt;
      EXPECT_EQ(src.find("#ifdef AF_PIPELINE_ROWS") != std::string::npos, !on_by_default) << pg.name << " " << dt;
    }
}

}  // namespace
}  // namespace autofuse
