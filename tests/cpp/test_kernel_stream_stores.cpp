// Non-temporal ("streaming") output stores (af_sto in af_kernel.inc, launch flag kLaunchStreamStores): the tiling
// function turns them on when a call's full outputs exceed the last-level cache; force_stream_stores(true) takes the
// same path on small tensors here. The outputs must be bit-identical to the ordinary stores for elementwise,
// broadcast and multi-pass row kernels (row loop and pipelined loop), f32 / bf16 / f16 / f64 / i32, row lengths
// around the vector and cache-line boundaries, outputs whose rows or base are not aligned to a vector (those vectors
// take the ordinary store), and 0-size tensors; and the rule must stream exactly the calls whose outputs exceed L3.
// The same forcing turns on the far prefetch of multi-pass row loops (FarPrefetchRuleAndPlacement).
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "autofuse/tiling/machine.h"
#include "autofuse/tiling/tiling_function.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using kernel_testing::compare;
using kernel_testing::default_tolerance;
using kernel_testing::Layout;
using kernel_testing::make_tensor;
using kernel_testing::with_dtype;

/// Restores the thread's streaming setting on scope exit.
struct ForcedStream {
  explicit ForcedStream(std::optional<bool> on) : prev(force_stream_stores(on)) {}
  ~ForcedStream() { force_stream_stores(prev); }
  std::optional<bool> prev;
};

struct StreamGraph {
  const char* name;
  const char* text;
  int row_inputs;  ///< inputs after x: 1 = [s1] per column, 2 = [s0, 1] per row
};

const StreamGraph kGraphs[] = {
    {"add_mul", R"(graph add_mul(%x: DT[s0, s1], %r: DT[s1]) {
  %y = add(%x, %r)
  %z = mul(%y, %x)
  return %z, %y
})",
     1},
    {"mul_col", R"(graph mul_col(%x: DT[s0, s1], %c: DT[s0, 1]) {
  %y = mul(%x, %c)
  return %y
})",
     2},
    {"softmax", kernel_testing::kSoftmaxRowsIR, 0},
    {"layer_norm", R"(graph layer_norm(%x: DT[s0, s1], %w: DT[s1]) {
  %m = mean(%x) {axes=[1], keepdim=true}
  %d = sub(%x, %m)
  %q = mul(%d, %d)
  %v = mean(%q) {axes=[1], keepdim=true}
  %e = constant() {value=1e-5, dtype=DT}
  %ve = add(%v, %e)
  %r = rsqrt(%ve)
  %n = mul(%d, %r)
  %y = mul(%n, %w)
  return %y, %m
})",
     1},
};

/// Bitwise equality of two tensors of the same dtype and sizes (any strides).
std::string bit_difference(const HostTensor& a, const HostTensor& b) {
  if (a.sizes != b.sizes || a.dtype != b.dtype) return "sizes or dtype differ";
  std::string diff;
  const size_t es = static_cast<size_t>(dtype_size(a.dtype));
  for_each_multi_index(a.sizes, [&](const std::vector<int64_t>& i) {
    if (!diff.empty()) return;
    const auto* pa = static_cast<const unsigned char*>(a.data) + a.offset_bytes(i);
    const auto* pb = static_cast<const unsigned char*>(b.data) + b.offset_bytes(i);
    if (std::memcmp(pa, pb, es) != 0) diff = "element " + std::to_string(i[0]) + "," + std::to_string(i.back());
  });
  return diff;
}

/// Outputs of k for `in`, each a view `shift` elements past a 64-byte aligned base with rows padded by `pad`
/// elements (so with shift or pad != 0 some or all whole vectors are not aligned), the padding filled with a
/// sentinel that must survive. Storage is kept in `keep`.
std::vector<HostTensor> run_shifted(const Kernel& k, const std::vector<HostTensor>& in, int64_t shift, int64_t pad,
                                    std::vector<HostTensor>& keep) {
  std::vector<HostTensor> outs;
  const auto sizes = k.output_sizes(in);
  for (size_t j = 0; j < sizes.size(); ++j) {
    const DType t = k.graph().node(k.graph().outputs()[j]).dtype;
    const std::vector<int64_t>& s = sizes[j];
    const int64_t rows = s.empty() ? 1 : s[0], cols = s.size() > 1 ? s[1] : 1;
    const int64_t ld = cols + pad;
    HostTensor store = HostTensor::empty(t, {rows * ld + shift + 1});
    std::memset(store.data, 0x5a, static_cast<size_t>(store.numel() * dtype_size(t)));
    void* base = static_cast<unsigned char*>(store.data) + shift * dtype_size(t);
    std::vector<int64_t> st = s.size() > 1 ? std::vector<int64_t>{ld, 1} : std::vector<int64_t>{1};
    outs.push_back(HostTensor::view(t, base, s, st));
    keep.push_back(store);
  }
  k.run(in, outs);
  return outs;
}

/// Whether every byte of `store` outside the view `v` still holds the sentinel 0x5a.
bool padding_intact(const HostTensor& store, const HostTensor& v) {
  const auto* p0 = static_cast<const unsigned char*>(store.data);
  const int64_t es = dtype_size(v.dtype), n = store.numel() * es;
  std::vector<bool> in_view(static_cast<size_t>(n), false);
  for_each_multi_index(v.sizes, [&](const std::vector<int64_t>& i) {
    const int64_t off = static_cast<const unsigned char*>(v.data) - p0 + v.offset_bytes(i);
    for (int64_t b = 0; b < es; ++b) in_view[static_cast<size_t>(off + b)] = true;
  });
  for (int64_t b = 0; b < n; ++b)
    if (!in_view[static_cast<size_t>(b)] && p0[b] != 0x5a) return false;
  return true;
}

TEST(KernelStreamStores, BitIdenticalToOrdinaryStores) {
  for (const StreamGraph& sg : kGraphs) {
    for (const std::string dt : {"f32", "bf16", "f16", "f64"}) {
      const Graph g = parse_graph(with_dtype(sg.text, dt));
      const auto k = Kernel::compile(g);
      const DType t = g.node(g.inputs()[0]).dtype;
      for (int64_t d : {1, 15, 16, 17, 32, 33, 64, 1024, 1089, 4099})
        for (int64_t rows : {1, 3, 7})
          for (auto [shift, pad] : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {1, 0}, {0, 3}}) {
            std::mt19937_64 rng(static_cast<uint64_t>(d * 131 + rows * 7 + shift * 3 + pad));
            std::vector<HostTensor> in;
            in.push_back(make_tensor(t, {rows, d}, Layout::Contiguous, rng));
            kernel_testing::fill_random(in[0], rng, d % 2 == 1);  // NaN / inf / -0 in odd lengths
            if (sg.row_inputs == 1) in.push_back(make_tensor(t, {d}, Layout::Contiguous, rng));
            if (sg.row_inputs == 2) in.push_back(make_tensor(t, {rows, 1}, Layout::Contiguous, rng));
            for (size_t i = 1; i < in.size(); ++i) kernel_testing::fill_random(in[i], rng, false);
            const std::string what = std::string(sg.name) + " " + dt + " rows=" + std::to_string(rows) +
                                     " d=" + std::to_string(d) + " shift=" + std::to_string(shift) +
                                     " pad=" + std::to_string(pad);
            std::vector<HostTensor> keep_a, keep_b;
            std::vector<HostTensor> want, got;
            {
              ForcedStream off(false);
              want = run_shifted(*k, in, shift, pad, keep_a);
            }
            {
              ForcedStream on(true);
              got = run_shifted(*k, in, shift, pad, keep_b);
            }
            ASSERT_EQ(got.size(), want.size()) << what;
            for (size_t i = 0; i < got.size(); ++i) {
              EXPECT_EQ(bit_difference(got[i], want[i]), "") << what << " output " << i;
              EXPECT_TRUE(padding_intact(keep_b[i], got[i])) << what << " output " << i;
            }
            if (rows == 3 && shift == 0 && pad == 0 && d % 2 == 0) {  // and against the interpreter
              const auto ref = interpret(g, in);
              for (size_t i = 0; i < got.size(); ++i)
                EXPECT_EQ(compare(got[i], ref[i], default_tolerance(got[i].dtype)), "") << what << " output " << i;
            }
          }
      // 0 rows and rows of 0 elements
      for (std::vector<int64_t> sz : std::vector<std::vector<int64_t>>{{0, 64}, {3, 0}}) {
        std::mt19937_64 rng(5);
        std::vector<HostTensor> in{make_tensor(t, sz, Layout::Contiguous, rng)};
        kernel_testing::fill_random(in[0], rng, false);
        if (sg.row_inputs == 1) in.push_back(make_tensor(t, {sz[1]}, Layout::Contiguous, rng));
        if (sg.row_inputs == 2) in.push_back(make_tensor(t, {sz[0], 1}, Layout::Contiguous, rng));
        for (size_t i = 1; i < in.size(); ++i) kernel_testing::fill_random(in[i], rng, false);
        ForcedStream on(true);
        std::vector<HostTensor> keep;
        EXPECT_NO_THROW(run_shifted(*k, in, 0, 0, keep)) << sg.name << " " << dt;
      }
    }
  }
}

TEST(KernelStreamStores, IntegerOutputs) {
  const Graph g = parse_graph(R"(graph iadd(%x: i32[s0, s1], %y: i32[s0, s1]) {
  %z = add(%x, %y)
  return %z
})");
  const auto k = Kernel::compile(g);
  for (int64_t d : {5, 16, 48, 1000}) {
    std::mt19937_64 rng(static_cast<uint64_t>(d));
    std::vector<HostTensor> in{make_tensor(DType::Int32, {4, d}, Layout::Contiguous, rng),
                               make_tensor(DType::Int32, {4, d}, Layout::Gapped, rng)};
    for (auto& t : in) kernel_testing::fill_random(t, rng, false);
    std::vector<HostTensor> keep_a, keep_b, want, got;
    {
      ForcedStream off(false);
      want = run_shifted(*k, in, 0, 0, keep_a);
    }
    {
      ForcedStream on(true);
      got = run_shifted(*k, in, 0, 0, keep_b);
    }
    EXPECT_EQ(bit_difference(got[0], want[0]), "") << "d=" << d;
    EXPECT_EQ(compare(got[0], interpret(g, in)[0], 0), "") << "d=" << d;
  }
}

TEST(KernelStreamStores, RuleStreamsOutputsLargerThanTheLastLevelCache) {
  const Graph g = parse_graph(with_dtype(kGraphs[2].text, "bf16"));  // softmax: one bf16 output per element
  const auto k = Kernel::compile(g);
  const int64_t l3 = k->tiling().params().l3_bytes;
  ASSERT_GT(l3, 0);
  const int64_t cols = 4096, fit_rows = l3 / (2 * cols);  // 2 bytes per output element
  ForcedStream rule(std::nullopt);
  for (const TilingCandidate& c : k->tiling().decide({fit_rows, cols}).candidates)
    EXPECT_FALSE(c.schedule.stream_stores) << "outputs of " << fit_rows * cols * 2 << " bytes, L3 " << l3;
  for (const TilingCandidate& c : k->tiling().decide({fit_rows + 1, cols}).candidates)
    EXPECT_EQ(c.schedule.stream_stores, c.kind != TilingKind::Split) << "L3 " << l3;
  {
    ForcedStream on(true);
    EXPECT_TRUE(k->tiling().decide({2, cols}).pick().schedule.stream_stores);
  }
  {
    ForcedStream off(false);
    EXPECT_FALSE(k->tiling().decide({fit_rows + 1, cols}).pick().schedule.stream_stores);
  }
}

// The L2 prefetch two rows ahead (emit_prefetch.cpp, launch flag kLaunchPrefetchFar): on exactly when the call's full
// inputs exceed the last-level cache, emitted for 16-bit inputs in the row loop of multi-pass row kernels (not in the
// pipelined loop), forced with the streaming stores (so BitIdenticalToOrdinaryStores runs it on small tensors too).
TEST(KernelStreamStores, FarPrefetchRuleAndPlacement) {
  const Graph g = parse_graph(with_dtype(kGraphs[2].text, "bf16"));  // softmax: one bf16 input per element
  const auto k = Kernel::compile(g);
  const int64_t l3 = k->tiling().params().l3_bytes;
  const int64_t cols = 4096, fit_rows = l3 / (2 * cols);
  {
    ForcedStream rule(std::nullopt);
    EXPECT_FALSE(k->tiling().decide({fit_rows, cols}).pick().schedule.prefetch_far);
    const Schedule s = k->tiling().decide({fit_rows + 1, cols}).pick().schedule;
    EXPECT_TRUE(s.prefetch_far);
    EXPECT_EQ(s.launch_flags(), kLaunchStreamStores | kLaunchPrefetchFar);
  }
  {
    ForcedStream on(true);
    EXPECT_TRUE(k->tiling().decide({2, cols}).pick().schedule.prefetch_far);
  }
  {
    ForcedStream off(false);
    EXPECT_EQ(k->tiling().decide({fit_rows + 1, cols}).pick().schedule.launch_flags(), 0);
  }
  // Placement: the layer norm's row loop prefetches x two rows ahead in one pass; bf16 softmax's pipelined loop
  // (on by default) does not, its row loop (the fallback for short rows) does; an elementwise kernel never.
  const std::string ln = Kernel::compile(parse_graph(with_dtype(kGraphs[3].text, "bf16")))->source();
  EXPECT_NE(ln.find("if (af_far) __builtin_prefetch(p0 + pq0 + i1, 0, 1);"), std::string::npos) << ln;
  EXPECT_NE(ln.find("const bool af_far = AF_PF_FAR > 0 && (lflags & AF_LF_FAR) != 0 && rn <= AF_PF_FAR_ROW;"),
            std::string::npos);
  const std::string sm = k->source();  // the helper header, then the kernel function
  const size_t pipe_begin = sm.find("#ifndef AF_NO_PIPELINE_ROWS", sm.find("extern \"C\" int64_t af_"));
  ASSERT_NE(pipe_begin, std::string::npos);
  const size_t pipe_end = sm.find("#endif", pipe_begin);
  ASSERT_NE(pipe_end, std::string::npos);
  const std::string pipelined = sm.substr(pipe_begin, pipe_end - pipe_begin);
  EXPECT_NE(pipelined.find("af_cols"), std::string::npos);  // the pipelined loop's step body
  EXPECT_EQ(pipelined.find("pq0"), std::string::npos);
  EXPECT_NE(sm.find("if (af_far) __builtin_prefetch(p0 + pq0", pipe_end), std::string::npos);
  const std::string add = Kernel::compile(parse_graph(with_dtype(kGraphs[0].text, "bf16")))->source();
  EXPECT_EQ(add.find("af_far"), std::string::npos);
  // 16-bit inputs only: an f32 layer norm keeps the one-row-ahead prefetch alone.
  const std::string ln32 = Kernel::compile(parse_graph(with_dtype(kGraphs[3].text, "f32")))->source();
  EXPECT_EQ(ln32.find("af_far"), std::string::npos);
  EXPECT_NE(ln32.find("__builtin_prefetch(p0 + pn0 + i1, 0, 3);"), std::string::npos);
}

// The next-row prefetch of an output is dropped in streaming calls only where the output's vectors stream: an f32
// output always (AVX-512 and AVX2), a bf16 one only where AF_STREAMS_BF16 is set (AVX-512; AVX2's 16-byte bf16
// vectors take ordinary stores, session 22), so the bf16 layer norm keeps its write prefetch on AVX2.
TEST(KernelStreamStores, OutputPrefetchIsDroppedOnlyWhereTheOutputStreams) {
  const std::string ln = Kernel::compile(parse_graph(with_dtype(kGraphs[3].text, "bf16")))->source();
  const std::string body = ln.substr(ln.find("extern \"C\" int64_t af_"));
  EXPECT_NE(body.find("if (!(af_nt && AF_STREAMS_BF16)) __builtin_prefetch(p"), std::string::npos) << body;
  EXPECT_EQ(body.find("if (!af_nt) __builtin_prefetch("), std::string::npos) << body;
  const std::string ln32 = Kernel::compile(parse_graph(with_dtype(kGraphs[3].text, "f32")))->source();
  const std::string body32 = ln32.substr(ln32.find("extern \"C\" int64_t af_"));
  EXPECT_NE(body32.find("if (!af_nt) __builtin_prefetch(p"), std::string::npos) << body32;
  EXPECT_EQ(body32.find("AF_STREAMS_BF16"), std::string::npos);
  // The helper header agrees with the emitter: bf16 streams exactly where the vector is 32 bytes (AVX-512).
  EXPECT_NE(ln.find("#ifdef AF_X86_512\n#define AF_STREAMS_BF16 1\n#else\n#define AF_STREAMS_BF16 0"),
            std::string::npos);
}

}  // namespace
}  // namespace autofuse
