// The row loop's unrolled one-chain passes (emitter.h emit_pass_loops, session 23): a pass that computes a
// transcendental function (softmax's exp) or prefetches the next row without accumulator chains (layer norm's last
// pass) runs whole pairs of vectors (kPairCopies) before its single-vector loop and tail, in the one copy of each
// pass (rows past the stack stash stash into a heap block since session 24); the pair's second vector prefetches only
// where a vector is a whole cache line (emit_prefetches); softmax's division pass takes the row flag; and the pipelined
// row loop is compiled by default only with 16 lanes. Bit-identity of the unrolled and rolled forms (the same order of
// additions) is KernelPipeline.BitIdenticalToTheRowLoop's; values against the interpreter are the fuzzers'. Here: the
// emitted structure, which a regression to the rolled loop or to a prefetch per vector would fail.
#include <gtest/gtest.h>

#include <string>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/parser.h"
#include "autofuse/runtime/isa.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using kernel_testing::with_dtype;

/// The kernel function's text of graph `ir` with dtype `dt` (the source after the helper header).
std::string kernel_body(const char* ir, const std::string& dt) {
  const std::string src = Kernel::compile(parse_graph(with_dtype(ir, dt)))->source();
  return src.substr(src.find("extern \"C\" int64_t af_"));
}

/// The text of `pass` ("// pass 2") of the row loop (after the pipelined loop, if any) up to the next pass or the end.
std::string row_loop_pass(const std::string& body, const std::string& pass) {
  const size_t row_loop = body.find("for (int64_t row = row_begin;");
  const size_t b = body.find(pass, row_loop);
  if (row_loop == std::string::npos || b == std::string::npos) return "";
  const size_t e = body.find("// pass ", b + pass.size());
  return body.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

/// Occurrences of `needle` in `hay`.
int count(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

/// Lanes of the host ISA's vectors (AF_W).
int host_lanes() {
  const std::string isa = host_isa();
  return isa == "avx512" ? 16 : isa == "avx2" ? 8 : 1;
}

/// Next-row prefetches of input x per unrolled pair: one where two vectors fit a 64-byte line, else two.
int pair_prefetches(int bytes) { return host_lanes() * bytes < 64 ? 1 : 2; }

TEST(KernelRowUnroll, SoftmaxExpPassRunsPairsWithOnePrefetchPerLine) {
  for (const auto& [dt, bytes] : {std::pair<std::string, int>{"bf16", 2}, {"f32", 4}}) {
    const std::string body = kernel_body(kernel_testing::kSoftmaxRowsIR, dt);
    const std::string pass2 = row_loop_pass(body, "// pass 2");
    ASSERT_FALSE(pass2.empty()) << dt << body;
    // One copy of the pass: rows past the stack buffer stash into a heap block (no copy recomputing from memory).
    EXPECT_EQ(pass2.find("af_use_stash"), std::string::npos) << dt << pass2;
    EXPECT_EQ(count(pass2, "// exp e"), 4) << dt << ": the pair, the single-vector loop and the tail\n" << pass2;
    const size_t pair = pass2.find("+ 2 * AF_W <= be;)");
    ASSERT_NE(pair, std::string::npos) << dt << ": no pair loop in the exp pass\n" << pass2;
    const size_t single = pass2.find("+ AF_W <= be;", pair);
    ASSERT_NE(single, std::string::npos) << dt << pass2;
    const std::string pair_text = pass2.substr(pair, single - pair);
    EXPECT_EQ(count(pair_text, "// exp e"), 2) << dt << pair_text;
    EXPECT_EQ(count(pair_text, "__builtin_prefetch(p0 + pn0"), pair_prefetches(bytes)) << dt << pair_text;
    EXPECT_EQ(count(pair_text, "ba4 = af_add<float>(ba4, x3);"), 2) << dt << ": one chain\n" << pair_text;
  }
}

TEST(KernelRowUnroll, LayerNormOutputPassRunsPairs) {
  for (const auto& [dt, bytes] : {std::pair<std::string, int>{"bf16", 2}, {"f32", 4}}) {
    const std::string body = kernel_body(kernel_testing::kLayerNormRowsIR, dt);
    const std::string pass3 = row_loop_pass(body, "// pass 3");
    const size_t pair = pass3.find("+ 2 * AF_W <= be;)");
    ASSERT_NE(pair, std::string::npos) << dt << ": no pair loop in the output pass\n" << pass3;
    const std::string pair_text = pass3.substr(pair, pass3.find("+ AF_W <= be;", pair) - pair);
    EXPECT_EQ(count(pair_text, "__builtin_prefetch(p0 + pn0"), pair_prefetches(bytes)) << dt << pair_text;
    EXPECT_EQ(count(pair_text, "// mul s"), 2) << dt << pair_text;
  }
}

// Softmax's row flag in the row loop (session 23; the pipelined loop's since session 13): the exp pass folds its
// arguments into rf<s>, and the division pass runs as a generic lambda of af_fast, called with af_true_t on rows whose
// flag is set. That the flagged row loop gives the same bits as the tested path is
// KernelPipeline.SoftmaxRowFlagKeepsTheRangeTestWhereNeeded's (its row-loop kernel is the reference).
TEST(KernelRowUnroll, SoftmaxDivisionPassTakesTheRowFlag) {
  if (host_lanes() == 1) GTEST_SKIP() << "scalar helpers: no row flag (af_exp_nonpos_m is AVX-512 / AVX2 code)";
  for (const std::string dt : {"bf16", "f32"}) {
    const std::string body = kernel_body(kernel_testing::kSoftmaxRowsIR, dt);
    const std::string pass2 = row_loop_pass(body, "// pass 2"), pass3 = row_loop_pass(body, "// pass 3");
    EXPECT_NE(pass2.find("vec<uint32_t> rf"), std::string::npos) << dt << pass2;
    EXPECT_NE(pass2.find("af_exp_nonpos_m("), std::string::npos) << dt << pass2;
    EXPECT_NE(pass3.find("auto af_pass = [&](auto af_fast)"), std::string::npos) << dt << pass3;
    EXPECT_NE(pass3.find("af_pass(af_true_t{}); else af_pass(false);"), std::string::npos) << dt << pass3;
    EXPECT_NE(pass3.find("af_div_rcp_row("), std::string::npos) << dt << pass3;
  }
}

// The helper header turns the pipelined loop off by default below 16 lanes; -DAF_PIPELINE_ROWS keeps forcing it.
TEST(KernelRowUnroll, PipelinedLoopOnByDefaultOnlyWith16Lanes) {
  const std::string src = Kernel::compile(parse_graph(with_dtype(kernel_testing::kSoftmaxRowsIR, "bf16")))->source();
  EXPECT_NE(src.find("#if AF_W != 16 && !defined(AF_PIPELINE_ROWS) && !defined(AF_NO_PIPELINE_ROWS)\n"
                     "#define AF_NO_PIPELINE_ROWS 1\n#endif"),
            std::string::npos);
  const size_t def = src.find("#define AF_NO_PIPELINE_ROWS"), use = src.find("#ifndef AF_NO_PIPELINE_ROWS");
  ASSERT_NE(use, std::string::npos);  // bf16 softmax plans the pipelined loop
  EXPECT_LT(def, use);                // and the default is set before the kernel tests it
}

}  // namespace
}  // namespace autofuse
