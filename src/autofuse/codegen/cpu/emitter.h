// The CPU emitter's class (emit_kernel.cpp runs it; emit_pipeline.cpp adds the software-pipelined row loop of
// multi-pass row kernels). Private to codegen/cpu: include only from its .cpp files.
// GCC 12 reports a false -Wrestrict inside std::string concatenation at -O3 (GCC PR 105651).
#pragma once
#pragma GCC diagnostic ignored "-Wrestrict"
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "autofuse/codegen/cpu/emit.h"

namespace autofuse {
namespace cpu_emit {

inline bool is_cascade(OpKind k, DType in) { return is_cascade_sum(k, in); }

// ---- row loop pieces (emit_rows.cpp) ----
/// The row odometer's digits: (variable, limit) pairs, the fastest-changing first; the last (outermost) never wraps.
using RowDigits = std::vector<std::pair<std::string, std::string>>;
/// Lines declaring the digits of row number `first` (divisions, once per call) through the scratch variable `rest`.
std::vector<std::string> odometer_start_lines(const RowDigits& digits, const std::string& first,
                                              const std::string& rest);
/// The line advancing the digits to the next row number (at the end of a row's body).
std::string odometer_advance_line(const RowDigits& digits);
/// The body of one vector step of an elementwise loop (`body`: the lines emitted for the vector at index `iv`,
/// declaring `n`, the offsets oc<k> and the values x<id>) as `copies` interleaved copies for the vectors at iv,
/// iv + AF_W, ...: statement j of every copy, then statement j + 1 (each copy's names suffixed _1, _2, ...; its
/// index iv_c = iv + c * AF_W declared first). Empty when the body has control flow or declares other names.
std::string interleaved_vector_body(const std::string& body, const std::string& iv, int copies,
                                    const std::string& indent);
/// The same for the vector step of a reduction whose vector axis is kept (sum(x, 0)): loop headers, braces and
/// other lines without per-vector names (the loop indices, block bounds) appear once, each per-vector statement
/// (values, offsets, accumulators, stores) in `copies` renamed copies, so one pass over the reduced axis reduces
/// `copies` adjacent vectors with independent accumulators. Empty when a per-vector line is not one whole statement
/// or declares / assigns a name that is not renamed (argmax's mask), or a shared line assigns.
std::string interleaved_reduction_body(const std::string& body, const std::string& iv, int copies,
                                       const std::string& indent);

/// Emits the C++ source of one kernel variant (emit_cpu_kernel). Loop structure: rows over the kept axes, one pass
/// over the reduction axes per reduction stage, vector lanes along the innermost domain axis (across rows when it is
/// kept, along the row when it is reduced).
class Emitter {
 public:
  Emitter(const Graph& g, const LoopNest& nest, const EmitOptions& o)
      : g_(g), nest_(nest), o_(o), r_(nest.rank), v_(nest.rank - 1), inner_(nest.inner_reduction) {
    operand_of_input_.assign(g.size(), -1);
    outputs_of_.assign(g.size(), {});
    for (int k = 0; k < static_cast<int>(nest.operands.size()); ++k) {
      if (k < nest.num_inputs)
        operand_of_input_[nest.operands[k]] = k;
      else
        outputs_of_[nest.operands[k]].push_back(k);
    }
    for (ValueId out : g.outputs())
      if (std::find(stored_.begin(), stored_.end(), out) == stored_.end()) stored_.push_back(out);
    cur_.assign(nest.operands.size(), "0");
    in_scope_.assign(static_cast<size_t>(r_), false);
    num_passes_ = nest.num_stages;
    for (ValueId out : g.outputs())
      if (!val(out).kept) num_passes_ = std::max(num_passes_, val(out).stage + 1);
    if (nest.reduce_axes().empty()) num_passes_ = std::max(num_passes_, 1);
    plan_stash();
    plan_prefetch();
    if (inner_) rcp_ = divisors_with_reciprocal(g, nest);
    nonan_max_ = row_max_without_nan_select(g, nest);
    store_rounds_ = casts_rounded_by_store(g, nest, o);
    bounds_ = softmax_value_bounds(g);
    plan_pipeline();
    if (inner_ && (o.lanes == 16 || o.lanes == 8)) flag_sum_ = row_flag_sums(g, rcp_, bounds_);  // AVX-512, AVX2
    flag_of_sum_.assign(g.size(), false);
    for (ValueId sv : flag_sum_)
      if (sv >= 0) flag_of_sum_[static_cast<size_t>(sv)] = true;
  }

  std::string run() {
    out_ << "// precision policy: " << precision_policy_name(o_.precision) << "\n";
    out_ << "#define AF_W " << o_.lanes << "\n" << af_kernel_header_text() << "\n";
    if (o_.outer) out_ << outer_helpers_text() << "\n";
    out_ << "// Kernel " << g_.name() << ": domain rank " << r_ << ", reduce axes {";
    for (int a : nest_.reduce_axes()) out_ << " " << a;
    out_ << " }, " << (inner_ ? "inner" : "outer/no") << " reduction, " << nest_.num_stages << " stage(s), "
         << num_passes_ << " pass(es) per row\n";
    out_ << "extern \"C\" int64_t " << o_.func_name
         << "(const int64_t* __restrict sz, const int64_t* __restrict st, void* const* data, int64_t row_begin, "
            "int64_t row_end, int64_t vblock, int64_t blk, int64_t lflags) {\n";
    ind_ = 1;
    for (int a = 0; a < r_; ++a) line("const int64_t n" + s(a) + " = sz[" + s(a) + "];");
    for (size_t k = 0; k < nest_.operands.size(); ++k) {
      const Node& nd = g_.node(nest_.operands[k]);
      const bool is_in = static_cast<int>(k) < nest_.num_inputs;
      if (const OuterReduction* r = outer_of(k))
        line(outer_operand_decl(*r, k));
      else
        line(std::string(is_in ? "const " : "") + storage_ctype(nd.dtype) + "* __restrict p" + s(k) + " = (" +
             (is_in ? "const " : "") + storage_ctype(nd.dtype) + "*)data[" + s(k) + "];");
      for (int a = 0; a < r_; ++a) {
        if (!op_varies(k, a)) continue;
        // A unit-stride operand of this variant (EmitOptions::unit_inner: stride 1 along the vector axis, or that
        // axis has size <= 1 and only index 0) gets the constant 1, so offsets along the vector axis need no
        // multiply and the row setup no per-row stride products (short rows: a 64-wide rotary segment 25-30 % faster).
        if (a == v_ && unit_stride(k))
          line("const int64_t s" + s(k) + "_" + s(a) + " = 1;  // unit stride (this variant's stride class)");
        else
          line("const int64_t s" + s(k) + "_" + s(a) + " = st[" + s(k * r_ + a) + "];");
      }
    }
    std::string rn = "1";
    for (int a : nest_.reduce_axes()) rn += " * n" + s(a);
    line("const int64_t rn = " + rn + ";  // elements reduced per output");
    line("(void)rn; (void)vblock; (void)blk;");
    line("const bool af_nt = (lflags & AF_LF_STREAM) != 0;  // non-temporal output stores (af_sto)");
    line("(void)af_nt;");
    emit_stash_decls();
    if (!inner_)
      emit_rows_vec_kept();
    else
      emit_rows_vec_reduced();
    line("if (af_nt) af_sfence();");
    if (has_stash()) line("if (af_stash_heap != nullptr) __builtin_free(af_stash_heap);");
    line("return AF_STATUS_OK;");
    out_ << "}\n";
    return out_.str();
  }

 private:
  template <class I>
  static std::string s(I x) {
    return std::to_string(x);
  }
  const ValuePlacement& val(ValueId id) const { return nest_.values[static_cast<size_t>(id)]; }
  /// The outer (cross-row) reduction whose partials operand k is, or null (emit_outer.cpp).
  const OuterReduction* outer_of(size_t k) const {
    if (!o_.outer) return nullptr;
    const size_t first = nest_.operands.size() - o_.outer->reductions.size();
    return k >= first ? &o_.outer->reductions[k - first] : nullptr;
  }
  bool op_varies(size_t k, int a) const { return val(nest_.operands[k]).varies[static_cast<size_t>(a)]; }
  /// Whether operand k is read or written with unit stride along the vector axis in this variant (not the partials of
  /// an outer reduction, whose layout the launcher chooses).
  bool unit_stride(size_t k) const { return k < o_.unit_inner.size() && o_.unit_inner[k] && !outer_of(k); }
  void line(const std::string& l) { out_ << std::string(static_cast<size_t>(ind_) * 2, ' ') << l << "\n"; }
  void open(const std::string& l) {
    line(l + " {");
    ++ind_;
  }
  void close() {
    --ind_;
    line("}");
  }
  /// A group of `copies` unrolled vectors (the row loops' and the pipelined loop's chain groups, kRowChains; a
  /// one-chain pass's unrolled pair, kPairCopies): while a whole group remains before `be`, `body(c)` emits vector c
  /// of the group (a chained pass accumulates it into chain c), then `ia` advances one vector.
  template <class Body>
  void emit_chain_group(const std::string& ia, Body&& body, int copies = kRowChains) {
    open("for (; " + ia + " + " + s(copies) + " * AF_W <= be;)");
    for (int c = 0; c < copies; ++c) {
      open("");
      body(c);
      line(ia + " += AF_W;");
      close();
    }
    close();
  }

  /// Declare, for every operand, the offset after adding index i<a> along axis a (if the operand varies there).
  void advance_offsets(int a, const std::string& prefix) {
    for (size_t k = 0; k < cur_.size(); ++k) {
      if (!op_varies(k, a)) continue;
      std::string name = prefix + s(k) + "_" + s(a);
      line("const int64_t " + name + " = " + cur_[k] + " + i" + s(a) + " * s" + s(k) + "_" + s(a) + ";");
      cur_[k] = name;
    }
    in_scope_[static_cast<size_t>(a)] = true;
  }

  /// Set the row offsets from the row's indices i<a> over `axes` (the row odometer's digits, below).
  void decompose_row(const std::vector<int>& axes) {
    for (int a : axes) advance_offsets(a, "ob");
  }

  // The row odometer (emit_rows.cpp): the row's kept-axis indices are digits advanced with carries per row.
  void emit_odometer_start(const RowDigits& digits, const std::string& first, const std::string& rest) {
    for (const std::string& l : odometer_start_lines(digits, first, rest)) line(l);
  }
  void emit_odometer_advance(const RowDigits& digits) {
    if (!digits.empty()) line(odometer_advance_line(digits));
  }
  /// The kept axes `axes` (innermost last) as digits <prefix><a> / n<a>, fastest first.
  RowDigits axis_digits(const std::vector<int>& axes, const std::string& prefix = "i") const {
    RowDigits d;
    for (size_t j = axes.size(); j-- > 0;) d.emplace_back(prefix + s(axes[j]), "n" + s(axes[j]));
    return d;
  }

  // Case (a): the vectorized axis is kept (elementwise kernels, outer reductions). A row is a kept outer index and a
  // block of vblock elements of the vector axis; lanes run across the vector axis (emit_rows.cpp).
  void emit_rows_vec_kept();
  /// One vector step of emit_rows_vec_kept at index `iv` (`tail`: the masked last one): n, the offsets, the passes.
  void emit_vector_step(const std::string& iv, const std::vector<std::string>& row_offsets, bool tail);
  /// Vectors per interleaved step of a reduction whose vector axis is kept (interleaved_reduction_body).
  int column_reduce_copies() const;
  /// emit_rows_vec_kept with EmitOptions::tile_axis: rows are tiles of tile_height() indices along that axis
  /// (emit_tiles.cpp).
  void emit_rows_tiled();

  // Case (b): the vectorized axis is reduced (softmax, layer norm, sum(-1)). A row is one kept index; lanes run
  // along the row, combined horizontally at the end of each pass.
  void emit_rows_vec_reduced() {
    if (pipelined_) {  // on by default only where it is faster (pipe_by_default, emit_pipeline.cpp)
      line(pipe_by_default() ? "#ifndef AF_NO_PIPELINE_ROWS" : "#ifdef AF_PIPELINE_ROWS");
      emit_pipelined_rows();
      line("else");
      line("#endif");
      open("");
    }
    const RowDigits digits = axis_digits(nest_.kept_axes());
    emit_odometer_start(digits, "row_begin", "rest");
    const bool pf = prefetch_next_row();
    const RowDigits next = axis_digits(nest_.kept_axes(), "j"), far = axis_digits(nest_.kept_axes(), "h");
    if (pf) emit_lookahead_start(next, far);
    open("for (int64_t row = row_begin; row < row_end; ++row)");
    decompose_row(nest_.kept_axes());
    if (pf) emit_next_row_offsets();
    emit_passes();
    emit_odometer_advance(digits);
    if (pf) emit_lookahead_advance(next, far);
    close();
    if (pipelined_) close();
  }

  // The software-pipelined row loop (emit_pipeline.cpp): one loop over the columns computes pass P of row t - P + 1,
  // ..., pass 1 of row t, so DRAM sees one continuous stream of reads and writes.
  void plan_pipeline();
  bool pipe_by_default() const;
  void emit_pipelined_rows();
  void emit_pipe_step_loop(const std::vector<std::vector<std::string>>& pass_cur);
  void emit_pipe_pass_part(int p, const std::vector<std::string>& cur, bool tail, int chain, bool blocked);
  void emit_pipe_carried_loads(int p);
  bool pass_chained(int p) const;
  bool pass_costly(int p) const;

  // The row stash. A multi-pass row reduction recomputes every full value a later pass needs (softmax: exp(x - max)
  // in the sum pass and again in the output pass). Values whose computation includes a transcendental function are
  // instead stored, in the pass that first computes them, into a per-call buffer indexed by the position in
  // the row, and loaded from it by later passes (bit-identical: the same vector is stored and loaded). Only when the
  // vector axis is the only reduce axis. Rows whose stashed values do not fit the buffer take a heap block of the
  // call's row size instead (session 24: the copy of every pass that recomputed them cost a third of g++'s time for
  // bf16 softmax); a failed allocation returns AF_STATUS_NO_MEMORY before any row is written.
  static constexpr int64_t kStashBytes = 64 * 1024;

  bool is_stashed(size_t i) const { return stash_pass_[i] > 0; }

  std::vector<bool> needed_in_pass(int p, bool stash) const {
    return full_values_needed(g_, nest_, p, stash ? &stash_pass_ : nullptr);
  }

  void plan_stash() { stash_pass_ = plan_row_stash(g_, nest_, num_passes_); }

  /// The stash (stack buffer or heap block, stash_declarations) and one pointer `st<id>` per stashed value.
  void emit_stash_decls() {
    for (const std::string& l : stash_declarations(g_, nest_, stash_pass_, num_passes_, kStashBytes)) line(l);
  }
  /// Whether any value is stashed (stash_declarations then declares the stash, af_stash_heap included).
  bool has_stash() const {
    for (size_t i = 0; i < g_.size(); ++i)
      if (is_stashed(i)) return true;
    return false;
  }

  // Prefetching rows ahead (emit_prefetch.cpp): the next row (`pn<k>`, prefetched into L1 by one later pass), the
  // row after it (`pq<k>`, into L2, 16-bit inputs only, when the launch flag AF_LF_FAR is set), outputs with prefetchw,
  // and AF_PF_DIST ahead along the row for one-pass row reductions.
  bool prefetch_next_row() const;
  std::vector<size_t> prefetched_operands() const;
  void plan_prefetch();
  bool prefetches_far(size_t k) const;  // operand k is prefetched two rows ahead (16-bit inputs)
  bool any_far() const;
  void emit_lookahead_start(const RowDigits& next, const RowDigits& far);
  void emit_lookahead_advance(const RowDigits& next, const RowDigits& far);
  void emit_next_row_offsets();
  /// The next-row prefetches of one vector; `copy` is its position in an unrolled group (0 in a rolled loop): an
  /// operand whose vector is narrower than a cache line is prefetched only in the copies that start a new line.
  void emit_prefetches(int copy = 0);
  /// Whole vectors of operand k per 64-byte cache line (at least 1): 4 for bf16 on AVX2, 1 for f32 on AVX-512.
  int vectors_per_line(size_t k) const;
  // Whether operand k's unit-stride whole-vector stores follow the launch flag AF_LF_STREAM (af_sto). Not inside
  // the pipelined row loop for 16-bit outputs: there the bf16 softmax (the kernels pipelined by default) measured
  // 1.06-1.19x the time with streaming stores on Zen 5 (docs/codegen.md, session 10), its half-line (32-byte) stores
  // separated by a pass of exp; f32 outputs and the row loops gain.
  bool streams_output(size_t k) const { return !(in_pipeline_ && dtype_size(g_.node(nest_.operands[k]).dtype) == 2); }
  bool prefetch_ahead() const;
  void emit_prefetches_ahead(int chain);
  void emit_column_prefetches(const std::vector<bool>& need);  // AF_CPF_ROWS ahead along the reduced axis

  void emit_passes() {
    emit_kept(0);
    for (int p = 1; p <= num_passes_; ++p) {
      line("// pass " + s(static_cast<int64_t>(p)));
      emit_pass(p);
    }
  }

  std::vector<std::pair<ValueId, bool>> accumulating(int p) const { return pass_reductions(g_, nest_, p); }

  std::string acc_type(const Node& nd) const { return reduction_acc_ctype(g_, nd); }
  std::string main_type(const Node& nd) const { return reduction_main_ctype(g_, nd); }

  std::string acc_init(const Node& nd) const { return reduction_init(g_, nd); }

  void emit_pass(int p) {
    auto accs = accumulating(p);
    bool cascade = false;
    for (auto& [id, mean_pass] : accs) {
      const Node& nd = g_.node(id);
      const std::string mt = main_type(nd);
      for (const std::string& nm : acc_names(id, mean_pass))
        line("vec<" + mt + "> " + nm + " = " + (mt == acc_type(nd) ? acc_init(nd) : "vec<" + mt + ">{}") + ";");
      if (nd.op == OpKind::Argmax || nd.op == OpKind::Argmin)
        line("vec<int64_t> ai" + s(static_cast<int64_t>(id)) + " = vec<int64_t>{};");
      if (!mean_pass && flag_of_sum_[static_cast<size_t>(id)])  // the row flag's running maximum (row_flag_sums)
        line("vec<uint32_t> rf" + s(static_cast<int64_t>(id)) + " = {};");
      cascade = cascade || is_cascade(nd.op, g_.node(nd.inputs[0]).dtype);
    }
    // Full values needed in this pass; with the row stash, stashed values of earlier passes are loaded instead.
    const std::vector<bool> need = needed_in_pass(p, false);
    const std::vector<bool> need_st = needed_in_pass(p, true);
    bool uses_stash = false;
    for (size_t i = 0; i < g_.size(); ++i) uses_stash = uses_stash || (need_st[i] && is_stashed(i));
    auto saved = cur_;
    auto saved_scope = in_scope_;
    // A pass dividing by flagged row sums (row_flag_sums) runs as a generic lambda of `af_fast`: with
    // af_true_t on rows whose flags are set (the divisions skip their range test, af_div_rcp_row), else with false.
    const std::string fast = row_flag_condition(uses_stash ? need_st : need);
    auto main_copy = [&](bool stash_mode, const std::vector<bool>& nd) {
      if (fast.empty()) return emit_pass_loops(p, accs, nd, cascade, stash_mode);
      open("");
      open("auto af_pass = [&](auto af_fast)");
      emit_pass_loops(p, accs, nd, cascade, stash_mode);
      --ind_;
      line("};");
      line("if (" + fast + ") af_pass(af_true_t{}); else af_pass(false);");
      close();
    };
    main_copy(uses_stash, uses_stash ? need_st : need);
    cur_ = saved;
    in_scope_ = saved_scope;
    finalize(p, accs);
    emit_kept(p);
  }

  /// The row flags (x<s>_ok, joined by &&) of the flagged sums s that a division e / s among the values `need`
  /// divides by (use_row_flags rewrites it to af_div_rcp_row), or "" if none.
  std::string row_flag_condition(const std::vector<bool>& need) const;  // emit_pipeline.cpp

  /// The loops of pass p (one block): reduction loops, the blocked innermost loop and its tail. `stash_mode`: the pass
  /// stores and loads the stashed values of `need` (the kernel has a stash and the pass uses it).
  void emit_pass_loops(int p, const std::vector<std::pair<ValueId, bool>>& accs, const std::vector<bool>& need,
                       bool cascade, bool stash_mode) {
    std::vector<int> ra = nest_.reduce_axes();
    open("");
    int open_loops = 0;
    std::string rl = "0";
    const size_t n_scalar = ra.empty() ? 0 : (inner_ ? ra.size() - 1 : ra.size());
    const size_t n_open = (!inner_ && cascade && n_scalar > 0) ? n_scalar - 1 : n_scalar;
    for (size_t j = 0; j < n_open; ++j) {
      int a = ra[j];
      open("for (int64_t i" + s(a) + " = 0; i" + s(a) + " < n" + s(a) + "; ++i" + s(a) + ")");
      ++open_loops;
      line("const int64_t rl" + s(a) + " = " + rl + " * n" + s(a) + " + i" + s(a) + "; (void)rl" + s(a) + ";");
      rl = "rl" + s(a);
      advance_offsets(a, "o");
    }
    // The innermost reduction loop, blocked for cascade summation when the pass has float sums. Along the row, the
    // loop is unrolled by kRowChains vectors, vector u of each step accumulating into chain u (independent
    // dependency chains: a sum or max otherwise waits for the previous add or compare-and-select), then a loop of
    // single vectors (chain 0) and the masked tail (chain 0). The chains are folded in order 0, 1, 2, 3.
    // Passes computing a transcendental function keep one chain: the function's throughput hides the add latency,
    // and four copies of its inline code doubled a softmax's compile time (0.19 -> 0.40 s). They, and the pass that
    // prefetches the next row when it has no chains (layer norm's output pass), are unrolled by kPairCopies vectors
    // into one chain (the same order of operations as a rolled loop, so the same bits as the pipelined loop), and
    // only the group's first copy prefetches a vector narrower than a line. Zen 3 (AVX2), one thread, against the
    // rolled loop (session 23, docs/codegen.md): bf16 softmax's exp pass [32, 4096] 0.90x the time; bf16 layer_norm
    // 0.95x in cache, 0.93-0.94x at DRAM size. Unrolling softmax's division pass as well measured no faster (0.93-0.97
    // against 0.95) and took 0.16 s more to compile (its row-flag lambda has two copies).
    bool costly = false;
    for (size_t i = 0; i < g_.size(); ++i)
      costly = costly || (need[i] && !(stash_mode && is_stashed(i) && stash_pass_[i] < p) &&
                          is_transcendental(g_.node(static_cast<ValueId>(i)).op));
    const bool chains = chained(accs) && !costly;
    for (auto& [id, mp] : accs) {
      const Node& nd = g_.node(id);
      if (!chains || !has_row_chains(nd.op, g_.node(nd.inputs[0]).dtype) ||
          is_cascade(nd.op, g_.node(nd.inputs[0]).dtype))
        continue;
      for (const std::string& nm : acc_names(id, mp)) line("vec<" + acc_type(nd) + "> " + chain_decls(nm, nm) + ";");
    }
    const bool has_inner = ra.size() > 0 && (inner_ || cascade);
    if (has_inner) {
      int a = inner_ ? v_ : ra[n_scalar - 1];
      const std::string ia = "i" + s(a), na = "n" + s(a);
      const std::string step = inner_ ? "AF_W" : "1";
      if (cascade) {
        open("for (int64_t bb = 0; bb < " + na + "; bb += blk * " + step + ")");
        line("const int64_t be = af_imin<int64_t>(" + na + ", bb + blk * " + step + ");");
        for (auto& [id, mp] : accs)
          if (is_cascade(g_.node(id).op, g_.node(g_.node(id).inputs[0]).dtype))
            for (const std::string& nm : acc_names(id, mp))
              line("vec<" + acc_type(g_.node(id)) + "> b" + nm + " = {}" +
                   (chains ? ", " + chain_decls("b" + nm, "{}") : "") + ";");
      } else {
        line("const int64_t bb = 0, be = " + na + ";");
      }
      line("int64_t " + ia + " = bb;");
      auto before = cur_;
      auto body = [&](bool tail, int chain, int copy) {
        if (inner_) line(std::string("const int64_t n = ") + (tail ? "be - " + ia : "AF_W") + ";");
        line("const int64_t rl" + s(a) + " = " + rl + " * n" + s(a) + " + " + ia + "; (void)rl" + s(a) + ";");
        cur_ = before;
        advance_offsets(a, "o");
        emit_pass_body(p, accs, need, cascade, tail, "rl" + s(a), stash_mode, chain, copy);
      };
      if (chains)
        emit_chain_group(ia, [&](int c) { body(false, c, c); });
      else if (inner_ && (costly || p == prefetch_pass_))
        emit_chain_group(
            ia, [&](int c) { body(false, 0, c); }, kPairCopies);
      for (int tail = 0; tail < (inner_ ? 2 : 1); ++tail) {
        if (!tail)
          open("for (; " + ia + " + " + step + " <= be; " + ia + " += " + step + ")");
        else
          open("if (" + ia + " < be)");
        body(tail == 1, 0, 0);
        close();
      }
      if (cascade) {
        for (auto& [id, mp] : accs)
          if (is_cascade(g_.node(id).op, g_.node(g_.node(id).inputs[0]).dtype))
            for (const std::string& nm : acc_names(id, mp)) {
              const std::string mt = main_type(g_.node(id));
              auto wide = [&](const std::string& b) {
                return mt == acc_type(g_.node(id)) ? b : "__builtin_convertvector(" + b + ", vec<" + mt + ">)";
              };
              std::string e = nm + " + " + wide("b" + nm);
              for (int c = 1; chains && c < kRowChains; ++c) e += " + " + wide(chain_name("b" + nm, c));
              line(nm + " = " + e + ";");
            }
        close();
      }
    } else {
      emit_pass_body(p, accs, need, false, false, rl, stash_mode, 0);
    }
    for (auto& [id, mp] : accs) {  // fold the chains of amax / amin
      const Node& nd = g_.node(id);
      if (!chains || !has_row_chains(nd.op, g_.node(nd.inputs[0]).dtype) ||
          is_cascade(nd.op, g_.node(nd.inputs[0]).dtype))
        continue;
      const std::string nm = (mp ? "am" : "a") + s(static_cast<int64_t>(id));
      const std::string f = nd.op == OpKind::Amax ? "af_max<" + acc_type(nd) + ">" : "af_min<" + acc_type(nd) + ">";
      line(nm + " = " + f + "(" + f + "(" + nm + ", " + chain_name(nm, 1) + "), " + f + "(" + chain_name(nm, 2) + ", " +
           chain_name(nm, 3) + "));");
      static_assert(kRowChains == 4, "the amax/amin fold above names four chains");
    }
    for (int l = 0; l < open_loops; ++l) close();
    close();
  }

  /// One vector of pass p's row loop: its values, accumulations and stores. `chain`: the accumulator chain it adds
  /// to; `copy`: its position in an unrolled group (emit_prefetches), 0 in a rolled loop or the tail.
  void emit_pass_body(int p, const std::vector<std::pair<ValueId, bool>>& accs, const std::vector<bool>& need,
                      bool cascade, bool tail, const std::string& rl, bool stash_mode, int chain, int copy = 0) {
    nrm_.clear();  // a flag x<id>_nrm exists only in the body that computes x<id>
    body_pass_ = p;
    if (!tail && p == prefetch_pass_ && !in_pipeline_) emit_prefetches(copy);
    if (!tail && p == 1 && prefetch_ahead()) emit_prefetches_ahead(chain);
    if (!tail && !inner_) emit_column_prefetches(need);
    for (size_t i = 0; i < g_.size(); ++i) {
      if (!need[i]) continue;
      const std::string var = "x" + s(i), sp = "st" + s(i) + " + " + rl,
                        ct = compute_ctype(g_.node(static_cast<ValueId>(i)).dtype);
      if (stash_mode && is_stashed(i) && stash_pass_[i] < p) {
        line("const vec<" + ct + "> " + var + " = af_ld<" + ct + ", " + ct + ">(" + sp + ");  // from the row stash");
        continue;
      }
      emit_value(static_cast<ValueId>(i));
      if (stash_mode && is_stashed(i) && stash_pass_[i] == p)
        line("af_st<" + ct + ", " + ct + ">(" + sp + ", " + var + ");");
    }
    for (auto& [id, mp] : accs) emit_accumulate(id, mp, cascade, tail, rl, chain);
    for (ValueId outv : stored_)
      if (!val(outv).kept && val(outv).stage + 1 == p) emit_stores(outv);
    nrm_.clear();
    body_pass_ = 0;
  }

  /// Accumulate reduction id's input into its accumulators (acc_names): `chain` (0 .. kRowChains - 1) picks one of
  /// the independent accumulators of a chained row reduction (has_row_chains) in the unrolled row loop; others use 0.
  void emit_accumulate(ValueId id, bool mean_pass, bool cascade, bool tail, const std::string& rl, int chain);
  /// The name of accumulator `acc`'s chain c (c = 0: `acc` itself, else acc_2 .. acc_<kRowChains>).
  static std::string chain_name(const std::string& acc, int c) { return c ? acc + "_" + s(c + 1) : acc; }
  /// Whether the row loop of a pass accumulating `accs` is unrolled into kRowChains chains.
  bool chained(const std::vector<std::pair<ValueId, bool>>& accs) const {
    if (!inner_) return false;
    for (auto& [id, mp] : accs)
      if (has_row_chains(g_.node(id).op, g_.node(g_.node(id).inputs[0]).dtype)) return true;
    return false;
  }
  /// "acc_2 = init, ..., acc_<kRowChains> = init" for the extra chains of accumulator `acc`.
  static std::string chain_decls(const std::string& acc, const std::string& init) {
    std::string d;
    for (int c = 1; c < kRowChains; ++c) d += (c > 1 ? ", " : "") + chain_name(acc, c) + " = " + init;
    return d;
  }

  /// After pass p: reduce results of stage p (and var means for pass p + 1), as kept values; a var also gives the
  /// value of the means paired with it (ValuePlacement::var_of_mean).
  void finalize(int p, const std::vector<std::pair<ValueId, bool>>& accs);
  /// The accumulators of reduction id in the pass that accumulates it (mp: a var's mean pass): a<id> (am<id>); a
  /// var's pass of squared deviations d = x - mu also sums d in ad<id> (corrected two-pass, finalize) unless its
  /// values are 16-bit floats (needs_deviation_sum).
  std::vector<std::string> acc_names(ValueId id, bool mp) const {
    const std::string sid = s(static_cast<int64_t>(id));
    if (mp) return {"am" + sid};
    if (g_.node(id).op == OpKind::Var && needs_deviation_sum(g_, id)) return {"a" + sid, "ad" + sid};
    return {"a" + sid};
  }

  /// Kept values of stage p (computed once per row, or per lane group when the vector axis is kept) and the kept
  /// outputs among them.
  void emit_kept(int p) {
    for (size_t i = 0; i < g_.size(); ++i) {
      const ValuePlacement& vp = val(static_cast<ValueId>(i));
      if (!vp.kept || vp.stage != p) continue;
      emit_value(static_cast<ValueId>(i));
    }
    for (ValueId outv : stored_)
      if (val(outv).kept && val(outv).stage == p) emit_stores(outv);
  }

  void emit_value(ValueId id) {
    const Node& nd = g_.node(id);
    const std::string ct = compute_ctype(nd.dtype);
    const std::string var = "x" + s(static_cast<int64_t>(id));
    std::string e;
    if (nd.op == OpKind::Input) {
      int k = operand_of_input_[static_cast<size_t>(id)];
      const std::string st = storage_ctype(nd.dtype);
      const std::string ptr = "p" + s(static_cast<int64_t>(k)) + " + " + cur_[static_cast<size_t>(k)];
      if (!val(id).varies[static_cast<size_t>(v_)])
        e = "af_ld1<" + ct + ", " + st + ">(" + ptr + ")";
      else if (tile_transposed_operand(nest_, o_, static_cast<size_t>(k)))
        e = "af_ld<" + ct + ", " + ct + ">(af_s" + s(static_cast<int64_t>(k)) + " + j * af_tw" +
            s(static_cast<int64_t>(k)) + " + (i" + s(v_) + " - cb))";  // the transposed chunk's row (emit_tiles.cpp)
      else if (o_.unit_inner[static_cast<size_t>(k)])
        e = "af_ldu<" + ct + ", " + st + ">(" + ptr + ", n)";
      else
        e = "af_ldn<" + ct + ", " + st + ">(" + ptr + ", s" + s(static_cast<int64_t>(k)) + "_" + s(v_) + ", n)";
      // A bool byte other than 0 / 1 (a uint8 tensor viewed as bool) is true, as in eager: loaded as 0 / 1.
      if (nd.dtype == DType::Bool) e = "af_bool(" + e + " != af_splat<uint8_t>(0))";
    } else if (nd.info().category == OpCategory::Reduce) {
      e = red_value_.at(id);
    } else if (nd.op == OpKind::Iota) {
      const ValuePlacement& vp = val(id);
      std::string idx = "vec<int64_t>{}";
      if (!vp.axis_of_dim.empty() && vp.varies[static_cast<size_t>(vp.axis_of_dim[0])]) {
        int a = vp.axis_of_dim[0];
        idx = a == v_ ? "(af_splat<int64_t>(i" + s(a) + ") + af_iota<int64_t>())" : "af_splat<int64_t>(i" + s(a) + ")";
      }
      e = "(af_splat<int64_t>(" + s(attr_int(nd.attrs, "start")) + ") + af_splat<int64_t>(" +
          s(attr_int(nd.attrs, "step")) + ") * " + idx + ")";
      if (ct != "int64_t") e = "__builtin_convertvector(" + e + ", vec<" + ct + ">)";
      e = rounded_to(nd.dtype, e);  // a source: its values are values of its dtype
    } else if (store_rounds_[static_cast<size_t>(id)] ==
               StoreRounds::Cast) {  // its store rounds: the f32 vector, unrounded
      const ValueId in = nd.inputs[0];
      const std::string xin = "x" + s(static_cast<int64_t>(in)), ict = compute_ctype(g_.node(in).dtype);
      e = ict == ct ? xin : "__builtin_convertvector(" + xin + ", vec<" + ct + ">)";
      if (ict == ct && nrm_.count(in)) {  // the same vector: the input's flag holds for it (a bf16 store reads it)
        line("const bool " + var + "_nrm = " + xin + "_nrm;");
        nrm_.insert(id);
      }
    } else {
      std::vector<std::string> args;
      for (ValueId in : nd.inputs) args.push_back("x" + s(static_cast<int64_t>(in)));
      const bool rcp = nd.op == OpKind::Div && !rcp_.empty() && rcp_[static_cast<size_t>(nd.inputs[1])];
      const ValueBound b0 = nd.inputs.empty() ? ValueBound::None : bounds_[static_cast<size_t>(nd.inputs[0])];
      e = op_expression(g_, nd, args, o_.precision, rcp ? args[1] + "_r" : "", b0);
      use_row_flags(id, nd, args, e);
      if (store_rounds_[static_cast<size_t>(id)] == StoreRounds::Copy && nrm_.count(nd.inputs[0])) {  // x * 1 == x
        line("const bool " + var + "_nrm = " + args[0] + "_nrm;");
        nrm_.insert(id);
      }
      // Flags a normal quotient for a bf16 store (af_sto): its own, or that of a cast its store rounds.
      if ((e.rfind("af_div_rcp_unit(", 0) == 0 || e.rfind("af_div_rcp_row(", 0) == 0) &&
          (nd.dtype == DType::BFloat16 || feeds_bf16_store(id))) {
        line("bool " + var + "_nrm;");
        e.insert(e.size() - 1, ", " + var + "_nrm");
        nrm_.insert(id);
      }
    }
    line("const vec<" + ct + "> " + var + " = " + e + ";  // " + std::string(nd.info().name) + " " + nd.name);
    // A per-row divisor's lanes are all equal: one scalar division (vdivps on a splat was ~10% of a short softmax).
    if (!rcp_.empty() && rcp_[static_cast<size_t>(id)])
      line("const vec<float> " + var + "_r = af_splat<float>(1.0f / " + var + "[0]);");
    // The row flag (row_flag_sums): false unless every exp of this pass folded its argument into rf<id> (rf starts
    // at 0, which would pass).
    if (flag_of_sum_[static_cast<size_t>(id)])
      line("const bool " + var + "_ok = " +
           (wired_.count(id) ? "af_row_unit_ok(rf" + s(static_cast<int64_t>(id)) + ") && af_rcp_row_ok(" + var + "[0])"
                             : std::string("false")) +
           ";");
  }

  /// Rewrites expression `e` of node nd = value id (inputs named by args) for the row flags of row_flag_sums: an exp
  /// e computed in the pass accumulating its sum s folds its argument into rf<s> (af_exp_nonpos_m); a division e / s
  /// becomes af_div_rcp_row with `af_fast` (the pipelined loop's column loop, emit_pipeline.cpp; the row loop's
  /// emit_pass).
  /// Throws std::logic_error if the expected call is not in `e`.
  void use_row_flags(ValueId id, const Node& nd, const std::vector<std::string>& args, std::string& e) {
    if (flag_sum_.empty()) return;
    auto replace = [&](const std::string& from, const std::string& to) {
      const size_t at = e.find(from);
      if (at == std::string::npos) throw std::logic_error("emitter: row flag: no " + from + " in " + e);
      e.replace(at, from.size(), to);
    };
    if (nd.op == OpKind::Exp) {
      const ValueId sv = flag_sum_[static_cast<size_t>(id)];
      if (sv < 0 || body_pass_ == 0) return;
      for (auto& [acc, mp] : accumulating(body_pass_))
        if (acc == sv && !mp) {
          replace("af_exp_nonpos(" + args[0] + ")",
                  "af_exp_nonpos_m(" + args[0] + ", rf" + s(static_cast<int64_t>(sv)) + ")");
          wired_.insert(sv);
          return;
        }
    } else if (nd.op == OpKind::Div && nd.inputs.size() == 2 &&
               flag_sum_[static_cast<size_t>(nd.inputs[0])] == nd.inputs[1]) {
      replace("af_div_rcp_unit(" + args[0] + ", " + args[1] + ", " + args[1] + "_r)",
              "af_div_rcp_row(" + args[0] + ", " + args[1] + ", " + args[1] + "_r, af_fast)");
    }
  }

  void emit_stores(ValueId id);  // emit_rows.cpp
  /// Whether a bf16 cast that its store rounds (store_rounds_) reads value id (the flag x<id>_nrm carries to it).
  bool feeds_bf16_store(ValueId id) const;  // emit_rows.cpp

  const Graph& g_;
  const LoopNest& nest_;
  const EmitOptions& o_;
  const int r_, v_;
  const bool inner_;
  int num_passes_ = 1;
  std::vector<int> operand_of_input_;
  std::vector<std::vector<int>> outputs_of_;
  std::vector<ValueId> stored_;  // the graph's output values, each once (emit_stores writes every output holding one)
  std::vector<std::string> cur_;
  std::vector<bool> in_scope_;
  std::map<ValueId, std::string> red_value_;
  int prefetch_pass_ = 0;        // the pass that prefetches the next row (0: none)
  std::vector<int> stash_pass_;  // per value: the pass that stores it into the row stash (0: not stashed)
  std::set<ValueId> nrm_;        // values with a flag x<id>_nrm: this vector's lanes are normal floats
  std::vector<bool> rcp_;        // per value: a per-row divisor whose reciprocal is computed with it (af_div_rcp)
  std::vector<bool> nonan_max_;  // per value: a row amax whose accumulator may ignore NaN (af_max_nonan)
  std::vector<StoreRounds> store_rounds_;  // per value: casts_rounded_by_store's finding
  std::vector<ValueBound> bounds_;         // per value: its proven sign or range (softmax_value_bounds)
  std::vector<ValueId> flag_sum_;          // per exp value: the sum whose row flag it feeds (row_flag_sums), or -1;
                                           // empty unless row reductions with AVX-512 or AVX2
  std::vector<bool> flag_of_sum_;          // per value: a sum with a row flag (running maximum rf<id>, flag x<id>_ok)
  int body_pass_ = 0;                      // the pass whose per-vector body is being emitted (0: none)
  std::set<ValueId> wired_;                // flagged sums whose exp updates rf<id> in the pass summing it
  bool pipelined_ = false;                 // a pipelined row loop is emitted (plan_pipeline)
  bool in_pipeline_ = false;               // emitting it now (the passes' own next-row prefetches are off)
  std::vector<int> carry_until_;           // per kept value of stage >= 1: the last pass that reads it (0: not carried)
  std::ostringstream out_;
  int ind_ = 0;
};

}  // namespace cpu_emit
}  // namespace autofuse
