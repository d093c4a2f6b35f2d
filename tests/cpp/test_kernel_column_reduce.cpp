// Reductions whose vector axis is kept (sum(x, 0), "column reductions"; codegen/cpu/emit_rows.cpp, session 17):
// - one walk over the reduced axis reduces column_reduce_vectors(lanes) adjacent vectors (fewer when the kernel has
//   several accumulators), their statements interleaved with renamed copies, each with its own accumulator, and the
//   default schedule's vblock holds such groups; the walk prefetches its input AF_CPF_ROWS rows ahead;
// - checked at widths around the group, single-vector and tail boundaries, in f32 / bf16 / f16, for sum, mean, amax,
//   amin, var and a product of two inputs, with NaN / inf inputs and permuted and gapped layouts, against the
//   interpreter; argmax (its mask is not a renamed name) keeps one vector per walk;
// - a float sum keeps its summation order bit for bit: per column, f32 partial sums over blocks of `blk` rows folded
//   into f64 in row order, rounded to f32 and then to the output dtype, whatever the group a column falls in and the
//   thread count.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/parser.h"
#include "autofuse/runtime/thread_pool.h"
#include "autofuse/schedule/schedule.h"
#include "autofuse/tiling/tiling_function.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

using kernel_testing::expect_matches_interpreter;
using kernel_testing::fill_random;
using kernel_testing::float_dtype_of;
using kernel_testing::Layout;
using kernel_testing::make_tensor;
using kernel_testing::run_kernel;
using kernel_testing::TilingRestore;
using kernel_testing::with_dtype;

std::string column_reduce_ir(const std::string& op, const std::string& dt) {
  const std::string attrs = op == "var" ? "{axes=[0], keepdim=false, correction=1}" : "{axes=[0], keepdim=false}";
  const std::string out_t = op == "argmax" ? "i64" : "DT";
  return with_dtype(
      "graph colred(%x: DT[s0, s1]) {\n  %r = " + op + "(%x) " + attrs + " : " + out_t + "[s1]\n  return %r\n}", dt);
}

TEST(KernelColumnReduce, GroupedWalksAtEveryWidthMatchTheInterpreter) {
  TilingRestore restore;
  force_tiling_kind(TilingKind::Rows);  // vblock of whole groups (narrow rows would leave one vector per row)
  const char* kProduct = R"(graph prod(%x: DT[s0, s1], %y: DT[s0, s1]) {
    %p = mul(%x, %y)
    %s = sum(%p) {axes=[0], keepdim=false}
    %m = amax(%x) {axes=[0], keepdim=false}
    return %s, %m
  })";
  for (const std::string dt : {"f32", "bf16", "f16"}) {
    for (const std::string op : {"sum", "mean", "amax", "amin", "var", "argmax", "product"}) {
      auto k = Kernel::compile(parse_graph(op == "product" ? with_dtype(kProduct, dt) : column_reduce_ir(op, dt)));
      const std::string what = dt + " " + op;
      // The grouped walk (several vectors per step, renamed copies) and its prefetch; not for argmax.
      const int most = kColumnReduceVectors;
      const int copies = op == "product" || op == "var" ? most / 2 : most;  // two accumulators: half as many
      const std::string group = std::to_string(copies) + " * AF_W <= vend";
      EXPECT_EQ(k->source().find(group) != std::string::npos, op != "argmax") << what;
      EXPECT_EQ(k->source().find("ba1_3 = ") != std::string::npos, op == "sum" || op == "mean" || op == "var") << what;
      EXPECT_NE(k->source().find("AF_CPF_ROWS * s0_0"), std::string::npos) << what;
      for (int64_t rows : {int64_t{1000}, int64_t{100000}}) {  // 16384 / rows rounds to 0 vectors for the latter
        const Schedule s = choose_schedule(k->loop_nest(), {rows, 1024}, k->lanes());
        EXPECT_GT(s.vblock, 0) << what;
        EXPECT_EQ(s.vblock % (int64_t{most} * k->lanes()), 0) << what << ": vblock " << s.vblock;
      }
      for (int64_t d : {1, 17, 255, 256, 257, 529}) {
        for (int64_t rows : {1, 130}) {
          for (Layout l : {Layout::Contiguous, Layout::Permuted, Layout::Gapped}) {
            std::mt19937_64 rng(static_cast<uint64_t>(d * 1000 + rows) * 31 + static_cast<uint64_t>(l) + dt.size());
            std::vector<HostTensor> in;
            for (int j = 0; j < (op == "product" ? 2 : 1); ++j) {
              in.push_back(make_tensor(float_dtype_of(dt), {rows, d}, l, rng));
              fill_random(in.back(), rng, /*specials=*/d % 2 == 1);
            }
            expect_matches_interpreter(*k, in,
                                       what + " [" + std::to_string(rows) + ", " + std::to_string(d) + "] layout " +
                                           std::to_string(static_cast<int>(l)));
          }
        }
      }
    }
  }
}

/// The kernel's summation order for one column (see the file comment), as the output dtype's bits.
uint16_t column_sum_bits16(const std::vector<float>& col, int64_t blk, DType t) {
  double a = 0;
  for (size_t bb = 0; bb < col.size(); bb += static_cast<size_t>(blk)) {
    float ba = 0;
    for (size_t i = bb; i < col.size() && i < bb + static_cast<size_t>(blk); ++i) ba += col[i];
    a += static_cast<double>(ba);
  }
  const float r = static_cast<float>(a);
  return t == DType::BFloat16 ? float_to_bf16_bits(r) : float_to_half_bits(r);
}

float column_sum_f32(const std::vector<float>& col, int64_t blk) {
  double a = 0;
  for (size_t bb = 0; bb < col.size(); bb += static_cast<size_t>(blk)) {
    float ba = 0;
    for (size_t i = bb; i < col.size() && i < bb + static_cast<size_t>(blk); ++i) ba += col[i];
    a += static_cast<double>(ba);
  }
  return static_cast<float>(a);
}

TEST(KernelColumnReduce, SumKeepsTheCascadeOrderBitForBit) {
  TilingRestore restore;
  force_tiling_kind(TilingKind::Rows);
  const int64_t rows = 1000, cols = 16 * 37 + 5;  // groups, single vectors and a tail
  for (const std::string dt : {"f32", "bf16", "f16"}) {
    const DType t = float_dtype_of(dt);
    auto k = Kernel::compile(parse_graph(column_reduce_ir("sum", dt)));
    const int64_t blk = choose_schedule(k->loop_nest(), {rows, cols}, k->lanes()).blk;
    std::mt19937_64 rng(17 + dt.size());
    HostTensor x = make_tensor(t, {rows, cols}, Layout::Contiguous, rng);
    fill_random(x, rng, /*specials=*/false);
    std::vector<std::vector<float>> col(static_cast<size_t>(cols), std::vector<float>(static_cast<size_t>(rows)));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const char* p = static_cast<const char*>(x.data) + (i * cols + j) * dtype_size(t);
        float v;
        if (t == DType::Float32) {
          std::memcpy(&v, p, 4);
        } else {
          uint16_t b;
          std::memcpy(&b, p, 2);
          v = t == DType::BFloat16 ? bf16_bits_to_float(b) : half_bits_to_float(b);
        }
        col[static_cast<size_t>(j)][static_cast<size_t>(i)] = v;
      }
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      const HostTensor out = run_kernel(*k, {x})[0];
      for (int64_t j = 0; j < cols; ++j) {
        const char* p = static_cast<const char*>(out.data) + j * dtype_size(t);
        const std::string what = dt + " column " + std::to_string(j) + ", " + std::to_string(threads) + " threads";
        if (t == DType::Float32) {
          float got;
          std::memcpy(&got, p, 4);
          const float want = column_sum_f32(col[static_cast<size_t>(j)], blk);
          EXPECT_EQ(std::memcmp(&got, &want, 4), 0) << what << ": " << got << " vs " << want;
        } else {
          uint16_t got;
          std::memcpy(&got, p, 2);
          EXPECT_EQ(got, column_sum_bits16(col[static_cast<size_t>(j)], blk, t)) << what;
        }
      }
    }
  }
}

}  // namespace
}  // namespace autofuse
