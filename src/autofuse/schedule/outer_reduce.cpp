// Splitting a kernel graph into a row part and outer (cross-row) reductions with their epilogue (outer_reduce.h).
#include "autofuse/schedule/outer_reduce.h"

#include <algorithm>
#include <map>
#include <set>

#include "autofuse/ir/printer.h"

namespace autofuse {
namespace {

std::string where(const Graph& g, ValueId v) { return print_node(g, g.node(v)); }

bool is_reduce(const Node& n) { return n.info().category == OpCategory::Reduce; }

/// The reduced dims of a reduction, normalized against its input's rank (axes=[] means all).
std::vector<int64_t> reduced_dims(const Graph& g, const Node& n) {
  const size_t rank = g.node(n.inputs[0]).shape.size();
  std::vector<int64_t> axes = normalize_axes(attr_ints(n.attrs, "axes"), rank);
  if (axes.empty())
    for (size_t a = 0; a < rank; ++a) axes.push_back(static_cast<int64_t>(a));
  return axes;
}

/// A copy of node `v` of g whose inputs are renamed through `map`.
Node remapped(const Graph& g, ValueId v, const std::vector<ValueId>& map) {
  Node c = g.node(v);
  for (ValueId& u : c.inputs) u = map[static_cast<size_t>(u)];
  return c;
}

/// Try the split whose outer reductions are exactly `outer` (terminal reductions of g). Fills `pl` or returns why not.
std::optional<std::string> try_split(const Graph& g, const std::vector<ValueId>& outer, OuterPlan& pl) {
  const size_t n = g.size();
  std::vector<bool> is_outer(n, false), in_o(n, false);
  for (ValueId t : outer) is_outer[static_cast<size_t>(t)] = in_o[static_cast<size_t>(t)] = true;
  for (size_t i = 0; i < n; ++i)
    for (ValueId u : g.node(static_cast<ValueId>(i)).inputs) in_o[i] = in_o[i] || in_o[static_cast<size_t>(u)];

  // 1. The epilogue: elementwise ops on outer results, constants and 0-d graph inputs.
  for (size_t i = 0; i < n; ++i) {
    if (!in_o[i] || is_outer[i]) continue;
    const Node& nd = g.node(static_cast<ValueId>(i));
    if (nd.info().category != OpCategory::Elementwise)
      return where(g, static_cast<ValueId>(i)) + ": only elementwise ops may follow a cross-row reduction";
    for (ValueId u : nd.inputs) {
      const Node& un = g.node(u);
      if (in_o[static_cast<size_t>(u)] || un.op == OpKind::Constant || (un.op == OpKind::Input && un.shape.empty()))
        continue;
      return where(g, static_cast<ValueId>(i)) + ": combines a cross-row reduction result with %" + un.name +
             ", a value computed per row";
    }
  }

  // 2. The main (row) graph: every input, and what its outputs and the outer reductions' inputs need.
  std::vector<bool> need(n, false);
  for (ValueId o : g.outputs())
    if (!in_o[static_cast<size_t>(o)]) need[static_cast<size_t>(o)] = true;
  for (ValueId t : outer) need[static_cast<size_t>(g.node(t).inputs[0])] = true;
  for (size_t i = n; i-- > 0;)
    if (need[i])
      for (ValueId u : g.node(static_cast<ValueId>(i)).inputs) need[static_cast<size_t>(u)] = true;
  pl.main = Graph(g.name());
  std::vector<ValueId> main_of(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = g.node(static_cast<ValueId>(i));
    if (nd.op != OpKind::Input && !need[i]) continue;
    main_of[i] = pl.main.add_unchecked(remapped(g, static_cast<ValueId>(i), main_of));
  }
  std::vector<ValueId> real, main_outs;
  for (ValueId o : g.outputs())
    if (!in_o[static_cast<size_t>(o)]) real.push_back(main_of[static_cast<size_t>(o)]);
  for (ValueId v : real)
    if (std::find(main_outs.begin(), main_outs.end(), v) == main_outs.end()) main_outs.push_back(v);
  for (ValueId t : outer) {
    ValueId u = main_of[static_cast<size_t>(g.node(t).inputs[0])];
    if (std::find(main_outs.begin(), main_outs.end(), u) == main_outs.end()) main_outs.push_back(u);
  }
  pl.main.set_outputs(main_outs);
  if (auto why = loop_nest_unsupported_reason(pl.main)) return "its row part is not one loop nest: " + *why;
  pl.nest = build_loop_nest(pl.main);
  const LoopNest& nest = pl.nest;
  pl.reduce_axes = nest.reduce_axes();
  pl.kept_axes = nest.kept_axes();
  if (pl.reduce_axes.empty())
    return where(g, outer.front()) + ": the rest of the kernel has no per-row reduction to carry the cross-row one";
  if (!nest.inner_reduction)
    return where(g, outer.front()) +
           ": the per-row reductions do not reduce the innermost axis (cross-row "
           "reductions need rows whose innermost axis is reduced)";

  // 3. Each outer reduction reduces exactly the row axes K of a value that varies along all of them.
  pl.reductions.clear();
  for (ValueId t : outer) {
    const Node& nd = g.node(t);
    const DType in_t = g.node(nd.inputs[0]).dtype;
    OuterReduction r;
    r.node = t;
    r.op = nd.op;
    r.input = main_of[static_cast<size_t>(nd.inputs[0])];
    r.integer = !is_float(in_t);
    if (nd.op != OpKind::Sum && nd.op != OpKind::Mean && nd.op != OpKind::Amax && nd.op != OpKind::Amin)
      return where(g, t) + ": " + std::string(nd.info().name) +
             " is not supported across rows (sum, mean, amax and amin are)";
    if (in_t == DType::Bool && nd.op != OpKind::Sum) return where(g, t) + ": only sum reduces bool values across rows";
    if (nd.op == OpKind::Mean && r.integer) return where(g, t) + ": mean of integers is not supported across rows";
    const ValuePlacement& vp = nest.values[static_cast<size_t>(r.input)];
    r.full = !vp.kept;
    std::set<int> mapped;
    for (int64_t d : reduced_dims(g, nd)) mapped.insert(vp.axis_of_dim[static_cast<size_t>(d)]);
    for (int a = 0; a < nest.rank; ++a) {
      const auto ua = static_cast<size_t>(a);
      if (nest.domain[ua].as_const() == std::optional<int64_t>(1)) continue;
      const std::string ax = "domain axis " + std::to_string(a);
      if (!nest.is_reduce[ua]) {
        if (!vp.varies[ua])
          return where(g, t) + ": its input does not vary along row " + ax + " (it would be counted once per row)";
        if (!mapped.count(a))
          return where(g, t) + ": does not reduce row " + ax + " (a cross-row reduction reduces every row axis)";
      } else if (r.full) {
        if (!vp.varies[ua])
          return where(g, t) + ": its input varies along only some of the per-row reduced axes (not along " + ax + ")";
        if (mapped.count(a)) return where(g, t) + ": reduces " + ax + ", which the per-row reductions reduce as well";
      }
    }
    pl.reductions.push_back(r);
  }

  // 4. Operands: inputs, the real outputs (in g's order, duplicates kept), one per outer reduction.
  pl.nest.operands.resize(static_cast<size_t>(pl.nest.num_inputs));
  for (ValueId v : real) pl.nest.operands.push_back(v);
  pl.num_real_outputs = static_cast<int>(real.size());
  for (const OuterReduction& r : pl.reductions) pl.nest.operands.push_back(r.input);

  // 5. The epilogue graph and where each output comes from.
  pl.epilogue = Graph(g.name() + "_epilogue");
  pl.epilogue_graph_inputs.clear();
  std::vector<ValueId> epi_of(n, -1);
  for (size_t i = 0; i < pl.reductions.size(); ++i) {
    const Node& nd = g.node(pl.reductions[i].node);
    epi_of[static_cast<size_t>(pl.reductions[i].node)] = pl.epilogue.add_input(nd.name, nd.dtype, nd.shape);
    pl.reductions[i].epilogue_input = static_cast<int>(i);
  }
  const std::vector<ValueId> gin = g.inputs();
  for (size_t i = 0; i < n; ++i) {
    if (!in_o[i] || is_outer[i]) continue;
    for (ValueId u : g.node(static_cast<ValueId>(i)).inputs) {
      if (epi_of[static_cast<size_t>(u)] >= 0) continue;
      const Node& un = g.node(u);
      if (un.op == OpKind::Input)
        pl.epilogue_graph_inputs.push_back(static_cast<int>(std::find(gin.begin(), gin.end(), u) - gin.begin()));
      epi_of[static_cast<size_t>(u)] = pl.epilogue.add_unchecked(un);
    }
    epi_of[i] = pl.epilogue.add_unchecked(remapped(g, static_cast<ValueId>(i), epi_of));
  }
  pl.output_sources.clear();
  std::vector<ValueId> epi_outs;
  int real_index = 0;
  for (ValueId o : g.outputs()) {
    OuterOutputSource src;
    if (!in_o[static_cast<size_t>(o)]) {
      src = {OuterOutputSource::Main, real_index++};
    } else if (is_outer[static_cast<size_t>(o)]) {
      src.kind = OuterOutputSource::Reduction;
      src.index = static_cast<int>(std::find(outer.begin(), outer.end(), o) - outer.begin());
    } else {
      src = {OuterOutputSource::Epilogue, static_cast<int>(epi_outs.size())};
      epi_outs.push_back(epi_of[static_cast<size_t>(o)]);
    }
    pl.output_sources.push_back(src);
  }
  pl.epilogue.set_outputs(epi_outs);
  return std::nullopt;
}

/// The largest subset of `terminal` whose dependents are all epilogue ops (elementwise, reading only results of the
/// subset, constants and 0-d inputs): candidates are removed while some dependent breaks that rule.
std::vector<ValueId> epilogue_closed(const Graph& g, std::vector<ValueId> cand) {
  const size_t n = g.size();
  for (;;) {
    std::vector<bool> is_cand(n, false), in_o(n, false);
    for (ValueId t : cand) is_cand[static_cast<size_t>(t)] = in_o[static_cast<size_t>(t)] = true;
    for (size_t i = 0; i < n; ++i)
      for (ValueId u : g.node(static_cast<ValueId>(i)).inputs) in_o[i] = in_o[i] || in_o[static_cast<size_t>(u)];
    std::vector<bool> drop(n, false);
    bool any = false;
    for (size_t i = 0; i < n; ++i) {
      if (!in_o[i] || is_cand[i]) continue;
      const Node& nd = g.node(static_cast<ValueId>(i));
      bool ok = nd.info().category == OpCategory::Elementwise;
      for (ValueId u : nd.inputs) {
        const Node& un = g.node(u);
        ok = ok && (in_o[static_cast<size_t>(u)] || un.op == OpKind::Constant ||
                    (un.op == OpKind::Input && un.shape.empty()));
      }
      if (ok) continue;
      // Drop every candidate this node depends on.
      std::vector<ValueId> stack = {static_cast<ValueId>(i)};
      std::vector<bool> seen(n, false);
      while (!stack.empty()) {
        ValueId v = stack.back();
        stack.pop_back();
        if (seen[static_cast<size_t>(v)] || !in_o[static_cast<size_t>(v)]) continue;
        seen[static_cast<size_t>(v)] = true;
        if (is_cand[static_cast<size_t>(v)]) {
          drop[static_cast<size_t>(v)] = true;
          any = true;
          continue;
        }
        for (ValueId u : g.node(v).inputs) stack.push_back(u);
      }
    }
    if (!any) return cand;
    cand.erase(std::remove_if(cand.begin(), cand.end(), [&](ValueId t) { return drop[static_cast<size_t>(t)]; }),
               cand.end());
  }
}

}  // namespace

std::optional<OuterPlan> plan_outer_reductions(const Graph& g, std::string* why) {
  const size_t n = g.size();
  // Terminal reductions: no reduction depends on them.
  std::vector<bool> feeds_reduce(n, false);
  auto users = g.users();
  for (size_t i = n; i-- > 0;)
    for (ValueId u : users[i])
      feeds_reduce[i] = feeds_reduce[i] || is_reduce(g.node(u)) || feeds_reduce[static_cast<size_t>(u)];
  std::vector<ValueId> terminal;
  std::map<std::pair<std::vector<int64_t>, size_t>, std::vector<ValueId>> by_axes;
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = g.node(static_cast<ValueId>(i));
    if (!is_reduce(nd) || feeds_reduce[i]) continue;
    terminal.push_back(static_cast<ValueId>(i));
    by_axes[{reduced_dims(g, nd), g.node(nd.inputs[0]).shape.size()}].push_back(static_cast<ValueId>(i));
  }
  auto fail = [&](std::string msg) -> std::optional<OuterPlan> {
    if (why) *why = std::move(msg);
    return std::nullopt;
  };
  if (terminal.empty()) return fail("graph " + g.name() + " has no reduction to run across rows");
  // First every terminal reduction across rows (cross-entropy's mean, layer norm's weight and bias gradients), then
  // each group of terminal reductions of one axis set (sum(x, 0) next to sum(x, 1)).
  OuterPlan pl;
  std::optional<std::string> first = try_split(g, terminal, pl);
  if (!first) return pl;
  // Terminal reductions whose results are combined with per-row values again (a per-row sum feeding a full output)
  // are per-row reductions: drop them from the candidates until every dependent of a candidate is an epilogue op.
  std::vector<ValueId> cand = epilogue_closed(g, terminal);
  if (!cand.empty() && cand.size() < terminal.size() && !try_split(g, cand, pl)) return pl;
  by_axes.clear();
  for (ValueId t : cand) by_axes[{reduced_dims(g, g.node(t)), g.node(g.node(t).inputs[0]).shape.size()}].push_back(t);
  if (by_axes.size() > 1)
    for (const auto& [key, group] : by_axes)
      if (!try_split(g, group, pl)) return pl;
  return fail(*first);
}

std::optional<std::string> outer_plan_unsupported_reason(const Graph& g) {
  std::string why;
  if (plan_outer_reductions(g, &why)) return std::nullopt;
  return why;
}

}  // namespace autofuse
