// The software-pipelined row loop of multi-pass row kernels (softmax, layer norm, log-softmax; session 8, perf8).
//
// Without it, a P-pass row kernel reads its row from DRAM in pass 1 and then computes from cache: memory idles
// during the later passes, and the compute idles while pass 1 waits (docs/codegen.md, per-pass profile). Here step t
// of one loop over the columns runs pass P of row t - P + 1, ..., pass 2 of row t - 1 and pass 1 of row t, position
// by position, so reads (pass 1) and writes (pass P) form one continuous stream like a copy's, with the compute of
// every pass spread evenly over it. Results are bit-identical to the row-by-row loop (but for the sign of a zero max or
// min where three or more max / min chains are not rotated, below):
// - each pass's accumulators see the same vectors in the same chains and cascade blocks (the fused loop has the
//   blocks of the cascade sums, blk * AF_W elements; a whole-row chained reduction (amax) gets the same chain per
//   vector because blk is a multiple of kRowChains, checked at run time);
// - a value stashed in pass a is reloaded only in pass a + 1 (checked by plan_pipeline), so one slot per stashed
//   value suffices: at each position the reader (pass a + 1, the older row) runs before the writer (pass a);
// - a per-row (kept) value of stage s read by pass q > s + 1 is carried through a delay line kx<id>_<s+1> ..
//   kx<id>_<q>, shifted once per step, so pass q sees its own row's value.
// On by default only where it measured faster (pipe_by_default); -DAF_NO_PIPELINE_ROWS turns it off,
// -DAF_PIPELINE_ROWS on for every eligible kernel. Used when the row is at least AF_PIPE_MIN elements long and the call
// has at least AF_PIPE_MIN_ROWS rows (shorter rows and fewer rows keep the row loop: per-row costs and the prologue
// and epilogue steps dominate there; figures in af_kernel.inc) and the stashed values fit the stash buffer without
// sharing slots.
#include <algorithm>

#include "autofuse/codegen/cpu/emitter.h"

namespace autofuse {
namespace cpu_emit {

bool Emitter::pass_costly(int p) const {
  const std::vector<bool> need = needed_in_pass(p, true);
  for (size_t i = 0; i < g_.size(); ++i)
    if (need[i] && !(is_stashed(i) && stash_pass_[i] < p) && is_transcendental(g_.node(static_cast<ValueId>(i)).op))
      return true;
  return false;
}

std::string Emitter::row_flag_condition(const std::vector<bool>& need) const {
  std::set<ValueId> sums;
  for (size_t i = 0; i < g_.size() && !flag_sum_.empty(); ++i) {
    const Node& nd = g_.node(static_cast<ValueId>(i));
    if (need[i] && nd.op == OpKind::Div && nd.inputs.size() == 2 &&
        flag_sum_[static_cast<size_t>(nd.inputs[0])] == nd.inputs[1])
      sums.insert(nd.inputs[1]);
  }
  std::string c;
  for (ValueId sv : sums) c += (c.empty() ? "x" : " && x") + s(static_cast<int64_t>(sv)) + "_ok";
  return c;
}

bool Emitter::pass_chained(int p) const { return chained(accumulating(p)) && !pass_costly(p); }

// The pipelined loop is compiled by default (`#ifndef AF_NO_PIPELINE_ROWS`) only when a pass after the first computes
// a transcendental from the row (softmax's exp), an input is f16 / bf16 (stashed widened), and the last pass (the
// one writing the outputs) reads no row of an input from memory, only the stash: bf16 softmax and log-softmax, 8-10 %
// faster at DRAM size (session 8, perf9, docs/codegen.md). Where the last pass re-reads an older input row (f32
// log-softmax, f32 layer norm) it was 5-15 % slower, and with only cheap passes (layer norm, rms norm) no faster.
// f32 softmax gained 4-5 % with the session 8 exp, but with session 9's cheaper exp the row loop is 3-11 % faster
// at DRAM size (perf10, three windows, docs/codegen.md). Those keep the row loop unless compiled with
// -DAF_PIPELINE_ROWS. The measurements above are AVX-512 (Zen 4 / Zen 5): with fewer lanes the helper header
// defines AF_NO_PIPELINE_ROWS (af_kernel.inc; on Zen 3 AVX2 the row loop, with session 23's pairs and row flags,
// was 0.86-0.92x the pipelined loop's time, and the kernel compiled in about half the time).
bool Emitter::pipe_by_default() const {
  const int P = num_passes_;
  bool costly = false;
  for (int p = 2; p <= P; ++p) costly = costly || pass_costly(p);
  if (!costly) return false;
  bool narrow = false;
  for (int k = 0; k < nest_.num_inputs; ++k) {
    const DType t = g_.node(nest_.operands[static_cast<size_t>(k)]).dtype;
    narrow = narrow || t == DType::Float16 || t == DType::BFloat16;
  }
  if (!narrow) return false;
  const std::vector<bool> need = needed_in_pass(P, true);
  for (int k = 0; k < nest_.num_inputs; ++k) {
    const ValueId v = nest_.operands[static_cast<size_t>(k)];
    if (!need[static_cast<size_t>(v)] ||
        (is_stashed(static_cast<size_t>(v)) && stash_pass_[static_cast<size_t>(v)] < P))
      continue;
    for (int a : nest_.kept_axes())
      if (op_varies(static_cast<size_t>(k), a)) return false;  // an input row read again in the last pass
  }
  return true;
}

void Emitter::plan_pipeline() {
  pipelined_ = false;
  carry_until_.assign(g_.size(), 0);
  if (!prefetch_next_row() || o_.outer) return;
  const int P = num_passes_;
  for (int p = 1; p <= P; ++p)
    for (auto& [id, mp] : accumulating(p))
      if (mp) return;  // a var's mean pass carries mu<id> between passes: not handled
  for (ValueId outv : g_.outputs())
    if (val(outv).kept && val(outv).stage == 0) return;
  std::vector<int> carry(g_.size(), 0);
  // A kept value v read in pass (or kept stage) q: stage 0 must not depend on the row (computed once); stage s >= 1
  // is carried to pass q.
  auto use = [&](ValueId v, int q) {
    const ValuePlacement& vp = val(v);
    if (vp.stage == 0) {
      for (int a : nest_.kept_axes())
        if (vp.varies[static_cast<size_t>(a)]) return false;
      return true;
    }
    if (vp.stage < q) carry[static_cast<size_t>(v)] = std::max(carry[static_cast<size_t>(v)], q);
    return vp.stage <= q;
  };
  for (int p = 1; p <= P; ++p) {
    const std::vector<bool> need = needed_in_pass(p, true);
    for (size_t i = 0; i < g_.size(); ++i) {
      if (!need[i]) continue;
      if (is_stashed(i) && stash_pass_[i] < p) {
        if (stash_pass_[i] != p - 1) return;  // reloaded two or more passes after its store
        continue;
      }
      for (ValueId in : g_.node(static_cast<ValueId>(i)).inputs)
        if (val(in).kept && !use(in, p)) return;
    }
  }
  for (size_t i = 0; i < g_.size(); ++i) {
    const ValuePlacement& vp = val(static_cast<ValueId>(i));
    if (!vp.kept || vp.stage == 0) continue;
    for (ValueId in : g_.node(static_cast<ValueId>(i)).inputs)
      if (val(in).kept && !use(in, vp.stage)) return;
  }
  carry_until_ = carry;
  pipelined_ = true;
}

void Emitter::emit_pipe_carried_loads(int p) {
  for (size_t v = 0; v < g_.size(); ++v) {
    const int s0 = val(static_cast<ValueId>(v)).stage;
    if (carry_until_[v] == 0 || p <= s0 || p > carry_until_[v]) continue;
    const std::string id = s(v), ct = compute_ctype(g_.node(static_cast<ValueId>(v)).dtype);
    line("const vec<" + ct + "> x" + id + " = kx" + id + "_" + s(p) + ";");
    if (!rcp_.empty() && rcp_[v]) line("const vec<float> x" + id + "_r = kx" + id + "_r_" + s(p) + ";");
  }
}

void Emitter::emit_pipe_pass_part(int p, const std::vector<std::string>& cur, bool tail, int chain, bool blocked) {
  open("if (af_all || act" + s(p) + ")");
  for (int a : nest_.kept_axes())
    line("const int64_t i" + s(a) + " = q" + s(p) + "i" + s(a) + "; (void)i" + s(a) + ";");
  emit_pipe_carried_loads(p);
  cur_ = cur;
  advance_offsets(v_, "o");
  emit_pass_body(p, accumulating(p), needed_in_pass(p, true), blocked, tail, "rl" + s(v_), true,
                 pass_chained(p) ? chain : 0);
  close();
}

void Emitter::emit_pipelined_rows() {
  const int P = num_passes_;
  in_pipeline_ = true;
  // One stash slot per stashed value (no sharing: a slot holds the value of one row between its store in pass a and
  // its reload in pass a + 1 at the next step).
  std::string per = "0", off = "0";
  std::vector<std::string> ptrs;
  for (size_t i = 0; i < g_.size(); ++i) {
    if (!is_stashed(i)) continue;
    const std::string ct = compute_ctype(g_.node(static_cast<ValueId>(i)).dtype);
    ptrs.push_back(ct + "* __restrict st" + s(i) + " = (" + ct + "*)(af_stash + rn_pad * (" + off + "));");
    off += " + sizeof(" + ct + ")";
    per += " + sizeof(" + ct + ")";
  }
  std::string cond = "rn >= AF_PIPE_MIN && row_end - row_begin >= AF_PIPE_MIN_ROWS && blk % " + s(kRowChains) + " == 0";
  if (!ptrs.empty()) cond += " && rn_pad * (int64_t)(" + per + ") <= af_stash_cap";
  open("if (" + cond + ")");
  for (const std::string& l : ptrs) line(l);
  const std::vector<int> ko = nest_.kept_axes();
  for (int a : ko) in_scope_[static_cast<size_t>(a)] = true;
  emit_kept(0);  // row-invariant (plan_pipeline)
  for (size_t v = 0; v < g_.size(); ++v) {
    const int s0 = val(static_cast<ValueId>(v)).stage;
    const std::string ct = compute_ctype(g_.node(static_cast<ValueId>(v)).dtype), id = s(v);
    for (int q = s0 + 1; q <= carry_until_[v]; ++q) {
      line("vec<" + ct + "> kx" + id + "_" + s(q) + " = {};");
      if (!rcp_.empty() && rcp_[v]) line("vec<float> kx" + id + "_r_" + s(q) + " = {};");
      if (flag_of_sum_[v]) line("bool kx" + id + "_ok_" + s(q) + " = false;");
    }
  }
  open("for (int64_t t = row_begin; t < row_end + " + s(P - 1) + "; ++t)");
  const std::vector<std::string> base = cur_;
  std::vector<std::vector<std::string>> pass_cur(static_cast<size_t>(P) + 1, base);
  for (int p = 1; p <= P; ++p) {
    const std::string ps = s(p), r = "t - " + s(p - 1);
    line("const bool act" + ps + " = " + r + " >= row_begin && " + r + " < row_end;");
    line("int64_t rest" + ps + " = act" + ps + " ? " + r + " : row_begin;");
    for (size_t j = ko.size(); j-- > 0;)
      line("const int64_t q" + ps + "i" + s(ko[j]) + " = rest" + ps + " % n" + s(ko[j]) + "; rest" + ps + " /= n" +
           s(ko[j]) + ";");
    line("(void)rest" + ps + ";");
    for (size_t k = 0; k < base.size(); ++k) {
      std::string e = "0";
      bool any = false;
      for (int a : ko)
        if (op_varies(k, a)) e += " + q" + ps + "i" + s(a) + " * s" + s(k) + "_" + s(a), any = true;
      if (!any) continue;
      line("const int64_t q" + ps + "b" + s(k) + " = " + e + ";");
      pass_cur[static_cast<size_t>(p)][k] = "q" + ps + "b" + s(k);
    }
  }
  // Prefetch, for each streamed operand, the row that the pass first touching it processes at the next step.
  for (size_t k : prefetched_operands()) {
    int first = P;
    if (static_cast<int>(k) < nest_.num_inputs) {
      for (int p = P; p >= 1; --p)
        if (needed_in_pass(p, true)[static_cast<size_t>(nest_.operands[k])]) first = p;
    } else {
      first = val(nest_.operands[k]).stage + 1;
    }
    const std::string ks = s(k);
    line("int64_t prest" + ks + " = t + " + s(2 - first) + " < row_begin ? row_begin : t + " + s(2 - first) +
         " >= row_end ? row_end - 1 : t + " + s(2 - first) + ";");
    std::string e = "0";
    for (size_t j = ko.size(); j-- > 0;) {
      const std::string a = s(ko[j]);
      line("const int64_t pj" + ks + "_" + a + " = prest" + ks + " % n" + a + "; prest" + ks + " /= n" + a + ";");
      if (op_varies(k, ko[j])) e += " + pj" + ks + "_" + a + " * s" + ks + "_" + a;
    }
    line("const int64_t pn" + ks + " = " + e + ";");
  }
  emit_pipe_step_loop(pass_cur);
  // Per-row results: passes P .. 1 (each reads the carried values of the stages before it, then the fresh values
  // of its own stage are shifted into the delay lines).
  for (size_t v = 0; v < g_.size(); ++v)
    if (carry_until_[v] > 0) {
      line("vec<" + compute_ctype(g_.node(static_cast<ValueId>(v)).dtype) + "> kn" + s(v) + " = {};");
      if (!rcp_.empty() && rcp_[v]) line("vec<float> kn" + s(v) + "_r = {};");
      if (flag_of_sum_[v]) line("bool kn" + s(v) + "_ok = false;");
    }
  for (int p = P; p >= 1; --p) {
    open("if (act" + s(p) + ")");
    for (int a : ko) line("const int64_t i" + s(a) + " = q" + s(p) + "i" + s(a) + "; (void)i" + s(a) + ";");
    emit_pipe_carried_loads(p);
    cur_ = pass_cur[static_cast<size_t>(p)];
    in_scope_[static_cast<size_t>(v_)] = false;
    finalize(p, accumulating(p));
    emit_kept(p);
    for (size_t v = 0; v < g_.size(); ++v)
      if (carry_until_[v] > 0 && val(static_cast<ValueId>(v)).stage == p) {
        line("kn" + s(v) + " = x" + s(v) + ";");
        if (!rcp_.empty() && rcp_[v]) line("kn" + s(v) + "_r = x" + s(v) + "_r;");
        if (flag_of_sum_[v]) line("kn" + s(v) + "_ok = x" + s(v) + "_ok;");
      }
    close();
  }
  for (size_t v = 0; v < g_.size(); ++v) {
    const int s0 = val(static_cast<ValueId>(v)).stage;
    const bool r = !rcp_.empty() && rcp_[v];
    for (int q = carry_until_[v]; q >= s0 + 1 && carry_until_[v] > 0; --q) {
      const std::string from = q == s0 + 1 ? "kn" + s(v) : "kx" + s(v) + "_" + s(q - 1);
      line("kx" + s(v) + "_" + s(q) + " = " + from + ";");
      if (r)
        line("kx" + s(v) + "_r_" + s(q) + " = " + (q == s0 + 1 ? "kn" + s(v) + "_r" : "kx" + s(v) + "_r_" + s(q - 1)) +
             ";");
      if (flag_of_sum_[v])
        line("kx" + s(v) + "_ok_" + s(q) + " = " +
             (q == s0 + 1 ? "kn" + s(v) + "_ok" : "kx" + s(v) + "_ok_" + s(q - 1)) + ";");
    }
  }
  close();  // the step loop
  close();  // if (cond)
  cur_ = base;
  for (int a : ko) in_scope_[static_cast<size_t>(a)] = false;
  in_pipeline_ = false;
}

void Emitter::emit_pipe_step_loop(const std::vector<std::vector<std::string>>& pass_cur) {
  const int P = num_passes_;
  bool blocked = false, any_chain = false, costly = false;
  for (int p = 1; p <= P; ++p) {
    for (auto& [id, mp] : accumulating(p))
      blocked = blocked || is_cascade(g_.node(id).op, g_.node(g_.node(id).inputs[0]).dtype);
    any_chain = any_chain || pass_chained(p);
    costly = costly || pass_costly(p);
  }
  // Accumulators of every pass (as emit_pass declares them), then their extra chains.
  for (int p = 1; p <= P; ++p)
    for (auto& [id, mp] : accumulating(p)) {
      const Node& nd = g_.node(id);
      const std::string mt = main_type(nd), nm = "a" + s(static_cast<int64_t>(id));
      line("vec<" + mt + "> " + nm + " = " + (mt == acc_type(nd) ? acc_init(nd) : "vec<" + mt + ">{}") + ";");
      if (nd.op == OpKind::Argmax || nd.op == OpKind::Argmin)
        line("vec<int64_t> ai" + s(static_cast<int64_t>(id)) + " = vec<int64_t>{};");
      if (!mp && flag_of_sum_[static_cast<size_t>(id)])  // the row flag's running maximum (row_flag_sums)
        line("vec<uint32_t> rf" + s(static_cast<int64_t>(id)) + " = {};");
      if (pass_chained(p) && has_row_chains(nd.op, g_.node(nd.inputs[0]).dtype) &&
          !is_cascade(nd.op, g_.node(nd.inputs[0]).dtype))
        line("vec<" + acc_type(nd) + "> " + chain_decls(nm, nm) + ";");
    }
  const std::string ia = "i" + s(v_), na = "n" + s(v_);
  // The chained accumulators' current names (the block partial for cascade sums).
  std::vector<std::string> rot;
  std::vector<bool> rot_minmax;  // per entry of rot: a max / min chain (order-free up to the sign of a zero)
  for (int p = 1; p <= P; ++p) {
    if (!pass_chained(p)) continue;
    for (auto& [id, mp] : accumulating(p)) {
      const Node& nd = g_.node(id);
      if (!has_row_chains(nd.op, g_.node(nd.inputs[0]).dtype)) continue;
      const bool c = blocked && is_cascade(nd.op, g_.node(nd.inputs[0]).dtype);
      rot.push_back((c ? "ba" : "a") + s(static_cast<int64_t>(id)));
      rot_minmax.push_back(nd.op == OpKind::Amax || nd.op == OpKind::Amin);
    }
  }
  // GCC 12 -O2 (tree PRE and code hoisting) ran for more than 20 minutes on a rolled loop rotating four max chains (a
  // bf16 softmax whose output feeds three amax: review 29; three compiled in 0.5 s). The rotation only hides the
  // max's latency, which the costly pass's work per vector covers anyway (Zen 4: the same time without it, session
  // 27), so from three max / min chains on they accumulate in chain 0 and are not rotated; sums keep rotating (their
  // order matches the row loop's).
  if (std::count(rot_minmax.begin(), rot_minmax.end(), true) >= 3) {
    std::vector<std::string> kept;
    for (size_t i = 0; i < rot.size(); ++i)
      if (!rot_minmax[i]) kept.push_back(rot[i]);
    rot = kept;
  }
  open("");
  if (blocked) {
    open("for (int64_t bb = 0; bb < " + na + "; bb += blk * AF_W)");
    line("const int64_t be = af_imin<int64_t>(" + na + ", bb + blk * AF_W);");
    for (int p = 1; p <= P; ++p)
      for (auto& [id, mp] : accumulating(p))
        if (is_cascade(g_.node(id).op, g_.node(g_.node(id).inputs[0]).dtype)) {
          const std::string b = "ba" + s(static_cast<int64_t>(id));
          line("vec<" + acc_type(g_.node(id)) + "> " + b + " = {}" +
               (pass_chained(p) ? ", " + chain_decls(b, "{}") : "") + ";");
        }
  } else {
    line("const int64_t bb = 0, be = " + na + ";");
  }
  line("int64_t " + ia + " = bb;");
  // `tail`: the vector may be partial (masked reductions, prefetches left out); `rest`: n is computed per vector, in
  // the loop over the vectors after the unrolled groups (a partial one last).
  auto body = [&](bool tail, int chain, bool rest = false) {
    line(std::string("const int64_t n = ") +
         (rest   ? "af_imin<int64_t>(AF_W, be - " + ia + ")"
          : tail ? "be - " + ia
                 : "AF_W") +
         ";");
    line("const int64_t rl" + s(v_) + " = " + ia + "; (void)rl" + s(v_) + ";");
    if (!tail) emit_prefetches();
    for (int p = P; p >= 1; --p) emit_pipe_pass_part(p, pass_cur[static_cast<size_t>(p)], tail, chain, blocked);
  };
  // The main column loop is a generic lambda instantiated twice: for steady steps (every pass active: af_all is
  // af_true_t, so each pass's `af_all || act<p>` folds away and GCC compiles one straight-line body whose
  // row-invariant work -- the division's range check of the row sum -- it can hoist: a branch per pass per vector
  // kept it inside the loop, 0.335 against 0.315 ns per bf16 softmax element in cache, session 8 perf9) and for
  // the P - 1 prologue and epilogue steps (af_all false: the runtime flags). The few vectors after it (the last
  // group's rest and the row's tail) are compiled once, with the runtime flags, as one loop of masked vectors (less
  // code to compile: with chains, a loop of whole vectors and a partial one took another copy of every pass; Zen 4,
  // AVX-512, g++ 12 -O2, bf16 softmax, session 26: cc1plus 1.98 -> 1.88 G instructions; run time, alternating
  // one-thread runs in cache, 0.99-1.01x at rows of 1087, 2111, 4096 and 4150 elements once af_nlanes compares in the
  // mask's lane width, 1.06-1.11x at 1087 and 2111 before that).
  std::string all = "act1";
  for (int p = 2; p <= P; ++p) all += " && act" + s(p);
  // With row flags (row_flag_sums), a third copy for steady steps whose divided rows all have their flag set: there
  // af_fast is af_true_t and the divisions skip their per-vector range test (bf16 softmax in cache, with the table
  // exp: 0.150 -> 0.141 ns per element, session 13). The flags of every carried copy of a flagged sum are required
  // (softmax: one).
  std::string fast;
  for (size_t v = 0; v < g_.size(); ++v)
    if (flag_of_sum_[v])
      for (int q = val(static_cast<ValueId>(v)).stage + 1; q <= carry_until_[v]; ++q)
        fast += (fast.empty() ? "" : " && ") + std::string("kx") + s(v) + "_ok_" + s(q);
  const std::string call = fast.empty() ? "if (" + all + ") af_cols(af_true_t{}); else af_cols(false);"
                                        : "if (" + all + ") { if (" + fast +
                                              ") af_cols(af_true_t{}, af_true_t{}); else af_cols(af_true_t{}, false); "
                                              "} else af_cols(false, false);";
  const std::string after = fast.empty() ? "const bool af_all = false;" : "const bool af_all = false, af_fast = false;";
  open(fast.empty() ? "auto af_cols = [&](auto af_all)" : "auto af_cols = [&](auto af_all, auto af_fast)");
  if (any_chain && !costly) {  // unrolled: vector u of a group into chain u, as emit_pass_loops does
    emit_chain_group(ia, [&](int c) { body(false, c); });
  } else if (any_chain) {  // rolled (one copy of the costly code): the chains rotate after each vector instead
    open("for (; " + ia + " + " + s(kRowChains) + " * AF_W <= be;)");
    line("#pragma GCC unroll 1");
    open("for (int u = 0; u < " + s(kRowChains) + "; ++u, " + ia + " += AF_W)");
    body(false, 0);
    for (const std::string& a : rot) {
      static_assert(kRowChains == 4, "the rotation below names four chains");
      line("{ const auto r0 = " + a + "; " + a + " = " + chain_name(a, 1) + "; " + chain_name(a, 1) + " = " +
           chain_name(a, 2) + "; " + chain_name(a, 2) + " = " + chain_name(a, 3) + "; " + chain_name(a, 3) +
           " = r0; }");
    }
    close();
    close();
  }
  if (any_chain) {  // the groups' rest and the tail: one loop of masked vectors
    --ind_;
    line("};");
    line(call);
    line(after);
    open("for (; " + ia + " < be; " + ia + " += AF_W)");
    body(true, 0, true);
    close();
  } else {  // the lambda's loop is the main loop of whole vectors; then the tail
    open("for (; " + ia + " + AF_W <= be; " + ia + " += AF_W)");
    body(false, 0);
    close();
    --ind_;
    line("};");
    line(call);
    line(after);
    open("if (" + ia + " < be)");
    body(true, 0);
    close();
  }
  if (blocked) {
    for (int p = 1; p <= P; ++p)
      for (auto& [id, mp] : accumulating(p))
        if (is_cascade(g_.node(id).op, g_.node(g_.node(id).inputs[0]).dtype)) {
          const std::string nm = "a" + s(static_cast<int64_t>(id)), mt = main_type(g_.node(id));
          auto wide = [&](const std::string& b) {
            return mt == acc_type(g_.node(id)) ? b : "__builtin_convertvector(" + b + ", vec<" + mt + ">)";
          };
          std::string e = nm + " + " + wide("b" + nm);
          for (int c = 1; pass_chained(p) && c < kRowChains; ++c) e += " + " + wide(chain_name("b" + nm, c));
          line(nm + " = " + e + ";");
        }
    close();
  }
  for (int p = 1; p <= P; ++p) {  // fold the chains of amax / amin
    if (!pass_chained(p)) continue;
    for (auto& [id, mp] : accumulating(p)) {
      const Node& nd = g_.node(id);
      if (!has_row_chains(nd.op, g_.node(nd.inputs[0]).dtype) || is_cascade(nd.op, g_.node(nd.inputs[0]).dtype))
        continue;
      const std::string nm = "a" + s(static_cast<int64_t>(id));
      const std::string f = nd.op == OpKind::Amax ? "af_max<" + acc_type(nd) + ">" : "af_min<" + acc_type(nd) + ">";
      line(nm + " = " + f + "(" + f + "(" + nm + ", " + chain_name(nm, 1) + "), " + f + "(" + chain_name(nm, 2) + ", " +
           chain_name(nm, 3) + "));");
    }
  }
  close();
}

}  // namespace cpu_emit
}  // namespace autofuse
