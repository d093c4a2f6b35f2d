// Software prefetching of the CPU emitter's row loops (emitter.h declares these members).
//
// Prefetching the next row. A multi-pass row reduction (softmax, layer norm) reads its row from DRAM in pass 1
// and from cache afterwards, so DRAM idles while the later passes compute. When the only reduce axis is the
// vector axis, one later pass prefetches the next row's inputs (one prefetch per vector of each unit-stride input
// that varies along the row and from row to row), overlapping that row's DRAM reads with this row's computation.
// The pass is the one computing the most transcendental functions (the longest), else the last one; measured on
// the bench's softmax and layer_norm (2026-11-29, docs/codegen.md), prefetching in every later pass was slower for
// layer_norm and no better for softmax.
//
// Prefetching the row after it (session 12). The same pass also prefetches the inputs of the row AF_PF_FAR rows
// ahead (default 2) into L2 only (prefetcht2, one per vector), so that the next row's L1 prefetch finds its lines
// in L2 and the fetch from DRAM runs during the whole row, not only during the prefetching pass. Zen 5, bf16
// layer_norm [16384, 4096], two threads, interleaved with the one-row form (docs/codegen.md, session 12): 0.80-0.84x
// the time in the fast-memory regime; in hand-edited sources, the same prefetch into L1 (prefetcht0) gained less
// (0.90-0.98x), a third row ahead as well lost (0.91-0.94x), and next-row prefetches in passes 1 and 2 instead of the
// last gave nothing. Not in the
// pipelined row loop (emit_pipeline.cpp): there bf16 softmax, compute bound, was 1.01-1.03x slower with it. Only in
// calls whose inputs exceed the last-level cache (launch flag AF_LF_FAR, schedule.h kLaunchPrefetchFar, set by the
// tiling function): in cache the prefetch only costs, 0.114 -> 0.129 ns per element for bf16 layer_norm on one
// thread. Only for inputs of at most 2 bytes per element: f32 layer_norm [8192, 4096] was 1.02-1.04x slower with it
// (three windows in the ~45 GB/s regime, where bf16 was 0.96-1.02x). Only for rows of at most AF_PF_FAR_ROW (8192)
// elements: with rows of 100000 bf16 (200 KB, beyond the stash) it was 1.02-1.05x slower, and the rows it was
// measured to pay for are 4096 long. -DAF_PF_FAR=0 (AUTOFUSE_EXTRA_CXXFLAGS) turns it off for A/B runs.
#include "autofuse/codegen/cpu/emitter.h"

namespace autofuse {
namespace cpu_emit {

bool Emitter::prefetch_next_row() const {
  const std::vector<int> ra = nest_.reduce_axes();
  return inner_ && num_passes_ >= 2 && ra.size() == 1 && ra[0] == v_ && !prefetched_operands().empty();
}

// Outputs written along the row are prefetched for writing too (prefetchw: the next row's lines are owned before
// the stores, whose read-for-ownership misses otherwise serialise after the reads): softmax bf16 +5-9 points of
// copy bandwidth in interleaved runs at load 10 (docs/codegen.md).
std::vector<size_t> Emitter::prefetched_operands() const {
  std::vector<size_t> ks;
  for (size_t k = 0; k < nest_.operands.size(); ++k) {
    if (outer_of(k)) continue;
    bool per_row = false;
    for (int a : nest_.kept_axes()) per_row = per_row || op_varies(k, a);
    if (op_varies(k, v_) && per_row && o_.unit_inner[k]) ks.push_back(k);
  }
  return ks;
}

void Emitter::plan_prefetch() {
  prefetch_pass_ = 0;
  if (!prefetch_next_row()) return;
  int best = 0;
  prefetch_pass_ = num_passes_;
  for (int p = 2; p <= num_passes_; ++p) {  // the first pass with the most transcendental functions, else the last
    const std::vector<bool> need = needed_in_pass(p, true);
    int t = 0;
    for (size_t i = 0; i < g_.size(); ++i)
      if (need[i] && !(is_stashed(i) && stash_pass_[i] < p) && is_transcendental(g_.node(static_cast<ValueId>(i)).op))
        ++t;
    if (t > best) best = t, prefetch_pass_ = p;
  }
}

// Whether operand k (one of prefetched_operands) is also prefetched AF_PF_FAR rows ahead: inputs of 16-bit types.
bool Emitter::prefetches_far(size_t k) const {
  return static_cast<int>(k) < nest_.num_inputs && dtype_size(g_.node(nest_.operands[k]).dtype) <= 2;
}

bool Emitter::any_far() const {
  for (size_t k : prefetched_operands())
    if (prefetches_far(k)) return true;
  return false;
}

// Two more row odometers beside the row's own (emit_rows_vec_reduced): digits j<a> for the row `nrow` =
// min(row_begin + AF_PF_AHEAD, row_end - 1) and, when some operand prefetches far, h<a> for `frow` =
// min(row_begin + AF_PF_FAR, row_end - 1), each advanced with the rows while it is before the call's last row.
void Emitter::emit_lookahead_start(const RowDigits& next, const RowDigits& far) {
  line("int64_t nrow = row_begin + AF_PF_AHEAD < row_end ? row_begin + AF_PF_AHEAD : row_end - 1;");
  emit_odometer_start(next, "nrow", "nrest");
  if (!any_far()) return;
  line("const bool af_far = AF_PF_FAR > 0 && (lflags & AF_LF_FAR) != 0 && rn <= AF_PF_FAR_ROW;  // two rows ahead");
  line("int64_t frow = row_begin + AF_PF_FAR < row_end ? row_begin + AF_PF_FAR : row_end - 1;");
  emit_odometer_start(far, "frow", "frest");
}

void Emitter::emit_lookahead_advance(const RowDigits& next, const RowDigits& far) {
  auto advance = [&](const std::string& row, const RowDigits& digits) {
    open("if (" + row + " + 1 < row_end)");
    line("++" + row + ";");
    emit_odometer_advance(digits);
    close();
  };
  advance("nrow", next);
  if (any_far()) advance("frow", far);
}

/// `pn<k>` / `pq<k>`: operand k's offset in the row nrow / frow (emit_lookahead_start).
void Emitter::emit_next_row_offsets() {
  const std::vector<int> ko = nest_.kept_axes();
  for (size_t k : prefetched_operands()) {
    std::string e = "0", f = "0";
    for (int a : ko)
      if (op_varies(k, a)) {
        e += " + j" + s(a) + " * s" + s(k) + "_" + s(a);
        f += " + h" + s(a) + " * s" + s(k) + "_" + s(a);
      }
    line("const int64_t pn" + s(k) + " = " + e + ";");
    if (prefetches_far(k)) line("const int64_t pq" + s(k) + " = " + f + ";");
  }
}

// In an unrolled group, copy c of an operand whose vector is narrower than a cache line prefetches only when c is a
// multiple of the vectors per line (bf16 on AVX2: 16 bytes, copy 0 of a pair; f32 on AVX2: 32 bytes, copies 0 and
// 2 of four): copies 0 of consecutive groups are at most a line apart, so every line of the row is still prefetched,
// with fewer load-port uops (session 23, Zen 3: the rest of the 0.90x in emitter.h's costly passes).
int Emitter::vectors_per_line(size_t k) const {
  return std::max(1, 64 / std::max(1, o_.lanes * dtype_size(g_.node(nest_.operands[k]).dtype)));
}

void Emitter::emit_prefetches(int copy) {
  for (size_t k : prefetched_operands()) {
    const int every = vectors_per_line(k);
    if (copy % every != 0) continue;
    const std::string pf = "p" + s(k) + " + pn" + s(k) + " + i" + s(v_);
    if (static_cast<int>(k) < nest_.num_inputs) {
      line("__builtin_prefetch(" + pf + ", 0, 3);");
      if (!in_pipeline_ && prefetches_far(k))
        line("if (af_far) __builtin_prefetch(p" + s(k) + " + pq" + s(k) + " + i" + s(v_) + ", 0, 1);");
    } else if (streams_output(k)) {  // a streamed output's lines are not read for ownership: nothing to prefetch
      // AVX2 does not stream bf16 (AF_STREAMS_BF16 0, af_kernel.inc): its output lines are prefetched as in cache
      const bool bf16 = g_.node(nest_.operands[k]).dtype == DType::BFloat16;
      line(std::string(bf16 ? "if (!(af_nt && AF_STREAMS_BF16))" : "if (!af_nt)") + " __builtin_prefetch(" + pf +
           ", 1, 3);");
    } else {
      line("__builtin_prefetch(" + pf + ", 1, 3);");
    }
  }
}

// Prefetching ahead along the row. A one-pass row reduction (sum over the last axis) reads each row once, as one
// stream; its compute per byte is small but not zero (bf16: a widening load and an add per 32 bytes), and the
// hardware prefetcher alone left bf16 sum_last at 72-87% of copy where prefetching AF_PF_DIST (1 KiB) ahead of each
// vector gave 80-99% (interleaved runs, 2026-11-29 session 4, docs/codegen.md). Session 11 (Zen 5, fast-memory
// regime): AF_PF_DIST 4 KiB instead of 1 KiB, and for inputs of at most 2 bytes a prefetch only in the even
// vectors of the unrolled group (chain 0 and 2: at most 64 bytes apart, so every line of the stream is still
// prefetched; a bf16 vector is half a line): bf16 sum_last at DRAM size 0.85x the time.
// `chain`: the vector's position in emit_chain_group's group (0 in the single-vector loop: every vector prefetches).
bool Emitter::prefetch_ahead() const {
  const std::vector<int> ra = nest_.reduce_axes();
  return inner_ && num_passes_ == 1 && ra.size() == 1 && ra[0] == v_;
}

void Emitter::emit_prefetches_ahead(int chain) {
  for (size_t k : prefetched_operands())
    if (static_cast<int>(k) < nest_.num_inputs) {
      if (chain % 2 == 1 && dtype_size(g_.node(nest_.operands[k]).dtype) <= 2) continue;
      line("__builtin_prefetch((const char*)(p" + s(k) + " + " + cur_[k] + ") + AF_PF_DIST, 0, 3);");
    }
}

// Prefetching ahead in a column walk. A reduction whose vector axis is kept (sum(x, 0)) walks the reduced axis with
// column_reduce_vectors adjacent vectors per step (emit_rows.cpp): a few cache lines per row, one row apart (2 KiB for
// bf16 [*, 1024]), so a 4 KiB page holds at most a row or two of the walk and the hardware prefetchers, which stay
// within a page, cannot run ahead. Each vector's input lines are prefetched AF_CPF_ROWS rows ahead (software
// prefetches cross pages; past the last row they prefetch unused lines, which is harmless).
void Emitter::emit_column_prefetches(const std::vector<bool>& need) {
  const std::vector<int> ra = nest_.reduce_axes();
  if (ra.empty()) return;
  const int a = ra.back();  // the innermost loop of the pass (emit_pass_loops)
  bool any = false;
  for (size_t k = 0; k < static_cast<size_t>(nest_.num_inputs); ++k) {
    if (!need[static_cast<size_t>(nest_.operands[k])] || !op_varies(k, a) || !op_varies(k, v_) || !o_.unit_inner[k])
      continue;
    if (!any) line("#if AF_CPF_ROWS");
    any = true;
    // A vector of 16-bit inputs is half a line: only every second copy of an interleaved step prefetches.
    const int every = vectors_per_line(k);
    line("__builtin_prefetch(p" + s(k) + " + " + cur_[k] + " + AF_CPF_ROWS * s" + s(k) + "_" + s(a) + ", 0, 3);" +
         (every > 1 ? "  // every " + s(every) + " vectors" : ""));
  }
  if (any) line("#endif");
}

}  // namespace cpu_emit
}  // namespace autofuse
