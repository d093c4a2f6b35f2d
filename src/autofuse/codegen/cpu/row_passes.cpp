// Which reductions and which full values each pass over a row needs (the CPU emitter's pass plan, emit.h).
#include <string>
#include <utility>
#include <vector>

#include "autofuse/codegen/cpu/emit.h"

namespace autofuse {

std::vector<std::pair<ValueId, bool>> pass_reductions(const Graph& g, const LoopNest& nest, int p) {
  std::vector<std::pair<ValueId, bool>> out;
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& nd = g.node(static_cast<ValueId>(i));
    // A mean taken from a var's accumulators (ValuePlacement::var_of_mean) accumulates nothing itself.
    if (nd.info().category != OpCategory::Reduce || nest.values[i].var_of_mean >= 0) continue;
    const int st = nest.values[i].stage;
    if (st == p) out.push_back({static_cast<ValueId>(i), false});
    if (nd.op == OpKind::Var && st - 1 == p) out.push_back({static_cast<ValueId>(i), true});
  }
  return out;
}

std::vector<bool> full_values_needed(const Graph& g, const LoopNest& nest, int p, const std::vector<int>* stash_pass) {
  auto kept = [&](ValueId v) { return nest.values[static_cast<size_t>(v)].kept; };
  std::vector<bool> need(g.size(), false);
  for (auto& [id, mp] : pass_reductions(g, nest, p)) {
    const ValueId in = g.node(id).inputs[0];
    if (!kept(in)) need[static_cast<size_t>(in)] = true;
  }
  for (ValueId outv : g.outputs())
    if (!kept(outv) && nest.values[static_cast<size_t>(outv)].stage + 1 == p) need[static_cast<size_t>(outv)] = true;
  for (size_t i = g.size(); i-- > 0;) {
    if (!need[i] || (stash_pass && (*stash_pass)[i] > 0 && (*stash_pass)[i] < p)) continue;
    for (ValueId in : g.node(static_cast<ValueId>(i)).inputs)
      if (!kept(in)) need[static_cast<size_t>(in)] = true;
  }
  return need;
}

std::vector<int> plan_row_stash(const Graph& g, const LoopNest& nest, int num_passes) {
  std::vector<int> stash_pass(g.size(), 0);
  const std::vector<int> ra = nest.reduce_axes();
  if (!(nest.inner_reduction && num_passes >= 2 && ra.size() == 1 && ra[0] == nest.vec_axis())) return stash_pass;
  auto kept = [&](ValueId v) { return nest.values[static_cast<size_t>(v)].kept; };
  std::vector<int> first(g.size(), 0);
  std::vector<bool> costly(g.size(), false);
  for (int p = 1; p <= num_passes; ++p) {
    const std::vector<bool> need = full_values_needed(g, nest, p, nullptr);
    for (size_t i = 0; i < g.size(); ++i)
      if (need[i] && first[i] == 0) first[i] = p;
  }
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& nd = g.node(static_cast<ValueId>(i));
    // An f16/bf16 input is widened to f32 at every load (two uops per vector for bf16): a later pass reloads the
    // widened values from the stash instead (bf16 softmax: pass 2 reads pass 1's values; session 7, perf7).
    if (nd.op == OpKind::Input && (nd.dtype == DType::BFloat16 || nd.dtype == DType::Float16))
      costly[i] = !kept(static_cast<ValueId>(i));
    if (kept(static_cast<ValueId>(i)) || nd.info().category != OpCategory::Elementwise) continue;
    costly[i] = is_transcendental(nd.op);
    for (ValueId in : nd.inputs) costly[i] = costly[i] || costly[static_cast<size_t>(in)];
  }
  // Pass by pass, a costly float value first computed in an earlier pass becomes a stashed leaf.
  for (int p = 2; p <= num_passes; ++p) {
    std::vector<bool> need(g.size(), false);
    for (auto& [id, mp] : pass_reductions(g, nest, p))
      if (!kept(g.node(id).inputs[0])) need[static_cast<size_t>(g.node(id).inputs[0])] = true;
    for (ValueId outv : g.outputs())
      if (!kept(outv) && nest.values[static_cast<size_t>(outv)].stage + 1 == p) need[static_cast<size_t>(outv)] = true;
    for (size_t i = g.size(); i-- > 0;) {
      if (!need[i]) continue;
      const std::string ct = compute_ctype(g.node(static_cast<ValueId>(i)).dtype);
      if (costly[i] && first[i] < p && (ct == "float" || ct == "double")) {
        stash_pass[i] = first[i];
        continue;
      }
      for (ValueId in : g.node(static_cast<ValueId>(i)).inputs)
        if (!kept(in)) need[static_cast<size_t>(in)] = true;
    }
  }
  return stash_pass;
}

std::vector<int> plan_stash_slots(const Graph& g, const LoopNest& nest, const std::vector<int>& stash_pass,
                                  int num_passes) {
  std::vector<int> last(g.size(), 0);  // the last pass reloading each stashed value
  for (int p = 2; p <= num_passes; ++p) {
    const std::vector<bool> need = full_values_needed(g, nest, p, &stash_pass);
    for (size_t i = 0; i < g.size(); ++i)
      if (need[i] && stash_pass[i] > 0 && stash_pass[i] < p) last[i] = p;
  }
  std::vector<int> slot(g.size(), -1);
  std::vector<size_t> owner;  // per slot: the value stored in it last
  for (size_t i = 0; i < g.size(); ++i) {
    if (stash_pass[i] == 0) continue;
    const std::string ct = compute_ctype(g.node(static_cast<ValueId>(i)).dtype);
    for (size_t k = 0; k < owner.size() && slot[i] < 0; ++k)
      if (compute_ctype(g.node(static_cast<ValueId>(owner[k])).dtype) == ct && last[owner[k]] <= stash_pass[i])
        slot[i] = static_cast<int>(k);
    if (slot[i] < 0) {
      slot[i] = static_cast<int>(owner.size());
      owner.push_back(i);
    }
    owner[static_cast<size_t>(slot[i])] = i;
  }
  return slot;
}

std::vector<std::string> stash_declarations(const Graph& g, const LoopNest& nest, const std::vector<int>& stash_pass,
                                            int num_passes, int64_t stash_bytes) {
  std::vector<std::string> out;
  const std::vector<int> slot = plan_stash_slots(g, nest, stash_pass, num_passes);
  std::string per = "0", off = "0";
  std::vector<std::string> ptrs;
  std::vector<size_t> first;  // per slot: its first value, whose pointer later values of the slot copy
  for (size_t i = 0; i < g.size(); ++i) {
    if (stash_pass[i] == 0) continue;
    const std::string ct = compute_ctype(g.node(static_cast<ValueId>(i)).dtype), id = std::to_string(i);
    const size_t k = static_cast<size_t>(slot[i]);
    if (k < first.size()) {  // a copy of a restrict pointer: accesses through it are based on that pointer
      ptrs.push_back(ct + "* st" + id + " = st" + std::to_string(first[k]) + ";  // shares the slot");
      continue;
    }
    first.push_back(i);
    ptrs.push_back(ct + "* __restrict st" + id + " = (" + ct + "*)(af_stash + rn_pad * (" + off + "));");
    off += " + sizeof(" + ct + ")";
    per += " + sizeof(" + ct + ")";
  }
  if (ptrs.empty()) return out;
  out.push_back("alignas(64) char af_stash_buf[" + std::to_string(stash_bytes) +
                "];  // the row stash: values later passes reload");
  out.push_back("const int64_t rn_pad = (rn + AF_W - 1) / AF_W * AF_W;");
  out.push_back("const int64_t af_stash_need = rn_pad * (int64_t)(" + per + ");");
  out.push_back("const bool af_stash_big = af_stash_need > (int64_t)sizeof af_stash_buf;  // rows past the buffer");
  out.push_back("char* const af_stash_heap = af_stash_big ? af_heap_stash(af_stash_need) : nullptr;");
  out.push_back("if (af_stash_big && af_stash_heap == nullptr) return AF_STATUS_NO_MEMORY;  // before any row");
  out.push_back("char* const af_stash = af_stash_big ? af_align64(af_stash_heap) : af_stash_buf;");
  out.push_back("const int64_t af_stash_cap = af_stash_big ? af_stash_need : (int64_t)sizeof af_stash_buf;");
  out.push_back("(void)af_stash_cap;");
  out.insert(out.end(), ptrs.begin(), ptrs.end());
  return out;
}

std::vector<bool> row_max_without_nan_select(const Graph& g, const LoopNest& nest) {
  std::vector<bool> out(g.size(), false);
  if (!nest.inner_reduction) return out;
  std::vector<std::vector<ValueId>> users(g.size());
  for (size_t i = 0; i < g.size(); ++i)
    for (ValueId in : g.node(static_cast<ValueId>(i)).inputs)
      users[static_cast<size_t>(in)].push_back(static_cast<ValueId>(i));
  std::vector<bool> is_output(g.size(), false);
  for (ValueId o : g.outputs()) is_output[static_cast<size_t>(o)] = true;
  auto propagates_nan = [&](const Node& n) {  // NaN in any input gives NaN, elementwise or through a row sum
    switch (n.op) {
      case OpKind::Sub:
      case OpKind::Add:
      case OpKind::Mul:
      case OpKind::Div:
      case OpKind::Neg:
      case OpKind::Exp:
      case OpKind::Log:
      case OpKind::Sum:
        return compute_ctype(n.dtype) == "float";
      case OpKind::Cast:
        return compute_ctype(n.dtype) == "float" && compute_ctype(g.node(n.inputs[0]).dtype) == "float";
      default:
        return false;
    }
  };
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& m = g.node(static_cast<ValueId>(i));
    if (m.op != OpKind::Amax || is_output[i] || compute_ctype(g.node(m.inputs[0]).dtype) != "float") continue;
    const ValueId x = m.inputs[0];
    bool ok = !users[i].empty();
    std::vector<bool> in_p(g.size(), false);  // values computed from some x - m
    for (ValueId u : users[i]) {
      const Node& d = g.node(u);
      ok = ok && d.op == OpKind::Sub && d.inputs[0] == x && d.inputs[1] == static_cast<ValueId>(i);
      in_p[static_cast<size_t>(u)] = true;
    }
    // has_sum[v]: v is computed (within P) from a row sum of a value of P, so a NaN anywhere in the row reaches it.
    std::vector<bool> has_sum(g.size(), false);
    for (size_t j = i + 1; ok && j < g.size(); ++j) {
      const Node& n = g.node(static_cast<ValueId>(j));
      bool from_p = in_p[j];
      for (ValueId in : n.inputs) {
        from_p = from_p || in_p[static_cast<size_t>(in)];
        has_sum[j] = has_sum[j] || (in_p[static_cast<size_t>(in)] && has_sum[static_cast<size_t>(in)]);
      }
      if (!from_p) continue;
      in_p[j] = true;
      if (!propagates_nan(n)) ok = false;
      if (n.op == OpKind::Sum) has_sum[j] = true;
      if (is_output[j] && !has_sum[j]) ok = false;
    }
    out[i] = ok;
  }
  return out;
}

std::vector<ValueBound> softmax_value_bounds(const Graph& g) {
  std::vector<ValueBound> out(g.size(), ValueBound::None);
  auto flt = [&](ValueId v) { return compute_ctype(g.node(v).dtype) == "float"; };
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.node(static_cast<ValueId>(i));
    if (!flt(static_cast<ValueId>(i)) || n.inputs.empty() || !flt(n.inputs[0])) continue;
    if (n.op == OpKind::Sub) {
      // x - m, m = amax(x) with its reduced axes kept (same rank), so each x meets the max of a set holding it.
      const Node& m = g.node(n.inputs[1]);
      if (m.op == OpKind::Amax && m.inputs[0] == n.inputs[0] && flt(n.inputs[1]) &&
          m.shape.size() == g.node(n.inputs[0]).shape.size() && n.shape == g.node(n.inputs[0]).shape)
        out[i] = ValueBound::NonPositive;
    } else if (n.op == OpKind::Exp && out[static_cast<size_t>(n.inputs[0])] == ValueBound::NonPositive) {
      out[i] = ValueBound::Unit;
    }
  }
  return out;
}

std::vector<ValueId> row_flag_sums(const Graph& g, const std::vector<bool>& rcp,
                                   const std::vector<ValueBound>& bounds) {
  std::vector<ValueId> out(g.size(), -1);
  if (rcp.empty()) return out;
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.node(static_cast<ValueId>(i));
    if (n.op != OpKind::Div || n.inputs.size() != 2) continue;
    const ValueId e = n.inputs[0], sv = n.inputs[1];
    if (bounds[static_cast<size_t>(e)] != ValueBound::Unit || !rcp[static_cast<size_t>(sv)]) continue;
    const Node& sn = g.node(sv);
    if (sn.op == OpKind::Sum && sn.inputs.size() == 1 && sn.inputs[0] == e && out[static_cast<size_t>(e)] < 0)
      out[static_cast<size_t>(e)] = sv;
  }
  return out;
}

}  // namespace autofuse
