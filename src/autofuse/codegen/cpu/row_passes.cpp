// Which reductions and which full values each pass over a row needs (the CPU emitter's pass plan, emit.h).
#include <utility>
#include <vector>

#include "autofuse/codegen/cpu/emit.h"

namespace autofuse {

std::vector<std::pair<ValueId, bool>> pass_reductions(const Graph& g, const LoopNest& nest, int p) {
  std::vector<std::pair<ValueId, bool>> out;
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& nd = g.node(static_cast<ValueId>(i));
    if (nd.info().category != OpCategory::Reduce) continue;
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

}  // namespace autofuse
