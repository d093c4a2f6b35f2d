#include "autofuse/fusion/space.h"

#include <algorithm>
#include <unordered_set>

#include "autofuse/fusion/partition.h"
#include "autofuse/fusion/report.h"
#include "autofuse/schedule/concat_split.h"
#include "autofuse/schedule/outer_reduce.h"

namespace autofuse {

std::string axes_str(const std::vector<int64_t>& axes) {
  std::string s = "[";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + std::to_string(axes[i]);
  return s + "]";
}

bool shapes_equal(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (sym_eq(a[i], b[i]) != Tri::True) return false;
  return true;
}

namespace {

std::string vname(const Graph& g, ValueId v) { return "%" + g.node(v).name; }

Shape left_pad(const Shape& s, size_t rank) {
  Shape r(rank - s.size(), Expr(1));
  r.insert(r.end(), s.begin(), s.end());
  return r;
}

bool is_reduce(const Node& n) { return n.info().category == OpCategory::Reduce; }

}  // namespace

namespace {

std::optional<SpaceRefusal> check_one_nest(const Graph& g, const std::vector<ValueId>& members,
                                           const std::vector<ValueId>& outputs, IterSpace* out);

/// The node set as a stand-alone graph named "candidate": its inputs are the values members read from outside the
/// set, in id order. Throws IRError as build_subgraph does.
Graph candidate_subgraph(const Graph& g, const std::vector<ValueId>& members, const std::vector<ValueId>& outputs) {
  std::unordered_set<ValueId> in_group(members.begin(), members.end());
  std::vector<ValueId> inputs;
  for (ValueId v : members)
    for (ValueId u : g.node(v).inputs)
      if (!in_group.count(u) && std::find(inputs.begin(), inputs.end(), u) == inputs.end()) inputs.push_back(u);
  std::sort(inputs.begin(), inputs.end());
  return build_subgraph(g, "candidate", members, inputs, outputs);
}

/// The cross-row form of a node set, if the code generator accepts it (fills `out`).
bool accepts_outer(const Graph& g, const std::vector<ValueId>& members, const std::vector<ValueId>& outputs,
                   IterSpace* out) {
  std::optional<OuterPlan> plan;
  try {
    plan = plan_outer_reductions(candidate_subgraph(g, members, outputs));
  } catch (const IRError&) {
    return false;
  }
  if (!plan) return false;
  if (out) {
    out->domain = plan->nest.domain;
    out->reduce_axes.assign(plan->reduce_axes.begin(), plan->reduce_axes.end());
    out->outer_axes.assign(plan->kept_axes.begin(), plan->kept_axes.end());
    out->has_reduce = true;
  }
  return true;
}

/// The rules for a node set with concats: the code generator's split along the concat axis
/// (schedule/concat_split.h); the domain is the full-width one (that of the outputs).
std::optional<SpaceRefusal> check_concat(const Graph& g, const std::vector<ValueId>& members,
                                         const std::vector<ValueId>& outputs, IterSpace* out) {
  std::string why;
  try {
    if (!plan_concat_split(candidate_subgraph(g, members, outputs), &why)) return SpaceRefusal{nf::kDomain, why};
  } catch (const IRError& e) {
    return SpaceRefusal{nf::kDomain, e.what()};
  }
  if (out) {
    *out = IterSpace{};
    out->domain = g.node(outputs.front()).shape;
  }
  return std::nullopt;
}

}  // namespace

std::optional<SpaceRefusal> check_space(const Graph& g, const std::vector<ValueId>& members,
                                        const std::vector<ValueId>& outputs, IterSpace* out) {
  if (std::any_of(members.begin(), members.end(), [&](ValueId v) { return g.node(v).op == OpKind::Concat; }))
    return check_concat(g, members, outputs, out);
  auto r = check_one_nest(g, members, outputs, out);
  if (r && accepts_outer(g, members, outputs, out)) return std::nullopt;
  return r;
}

namespace {

std::optional<SpaceRefusal> check_one_nest(const Graph& g, const std::vector<ValueId>& members,
                                           const std::vector<ValueId>& outputs, IterSpace* out) {
  std::unordered_set<ValueId> in_group(members.begin(), members.end());
  // 1. Values in the dropped kept form: results of keepdim=false reductions (not 0-d) and what is computed from them.
  std::unordered_set<ValueId> dropped;
  for (ValueId v : members) {
    const Node& n = g.node(v);
    if (is_reduce(n)) {
      for (ValueId u : n.inputs)
        if (dropped.count(u))
          return SpaceRefusal{nf::kReduceAxes, vname(g, v) + " reduces " + vname(g, u) +
                                                   ", a value already reduced with keepdim=false; a kernel reduces "
                                                   "one axis set of one domain"};
      if (!attr_bool(n.attrs, "keepdim") && !n.shape.empty()) dropped.insert(v);
      continue;
    }
    bool any_dropped = false;
    for (ValueId u : n.inputs) any_dropped |= dropped.count(u) > 0;
    if (!any_dropped) continue;
    for (ValueId u : n.inputs)
      if (!dropped.count(u) && !g.node(u).shape.empty())
        return SpaceRefusal{nf::kKeptMix, vname(g, v) + " combines a keepdim=false reduction result with " +
                                              vname(g, u) + " of shape " + shape_str(g.node(u).shape) +
                                              "; broadcasting would pair their axes wrongly inside one kernel"};
    dropped.insert(v);
  }
  // 2. The full domain: the broadcast of every full-domain value (reduction inputs, other ops' outputs).
  size_t rank = 0;
  std::vector<std::pair<ValueId, Shape>> full;
  for (ValueId v : members) {
    const Node& n = g.node(v);
    if (dropped.count(v) && !is_reduce(n)) continue;  // a reduction itself iterates over its input
    const Shape& s = is_reduce(n) ? g.node(n.inputs[0]).shape : n.shape;
    full.emplace_back(v, s);
    rank = std::max(rank, s.size());
  }
  Shape domain(rank, Expr(1));
  for (const auto& [v, s] : full) {
    try {
      domain = broadcast_shapes(domain, left_pad(s, rank));
    } catch (const IRError&) {
      return SpaceRefusal{nf::kDomain, vname(g, v) + " iterates over " + shape_str(s) +
                                           ", which does not broadcast with the group's domain " + shape_str(domain)};
    }
  }
  // 3. Reductions: each reads exactly D and reduces the same axis set.
  IterSpace sp;
  std::optional<ValueId> first_reduce;
  for (ValueId v : members) {
    const Node& n = g.node(v);
    if (!is_reduce(n)) continue;
    const Shape& in = g.node(n.inputs[0]).shape;
    if (!shapes_equal(in, domain))
      return SpaceRefusal{nf::kDomain, vname(g, v) + " reduces " + vname(g, n.inputs[0]) + " of shape " +
                                           shape_str(in) + " but the group iterates over " + shape_str(domain)};
    std::vector<int64_t> axes = normalize_axes(attr_ints(n.attrs, "axes"), in.size());
    if (axes.empty())
      for (size_t i = 0; i < in.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (!first_reduce) {
      first_reduce = v;
      sp.reduce_axes = axes;
      sp.has_reduce = true;
    } else if (axes != sp.reduce_axes) {
      return SpaceRefusal{nf::kReduceAxes, vname(g, v) + " reduces over axes " + axes_str(axes) + " but " +
                                               vname(g, *first_reduce) + " in the same group reduces over " +
                                               axes_str(sp.reduce_axes)};
    }
  }
  // 4. What the kernel writes has the shape of D or of K.
  Shape kept_keep = domain, kept_drop;
  for (size_t i = 0; i < domain.size(); ++i) {
    bool reduced =
        std::find(sp.reduce_axes.begin(), sp.reduce_axes.end(), static_cast<int64_t>(i)) != sp.reduce_axes.end();
    if (reduced)
      kept_keep[i] = Expr(1);
    else
      kept_drop.push_back(domain[i]);
  }
  for (ValueId v : outputs) {
    const Shape& s = g.node(v).shape;
    bool ok = shapes_equal(s, domain) || (sp.has_reduce && (shapes_equal(s, kept_keep) || shapes_equal(s, kept_drop)));
    if (!ok)
      return SpaceRefusal{nf::kDomain, "output " + vname(g, v) + " of shape " + shape_str(s) +
                                           " is neither the group's domain " + shape_str(domain) +
                                           (sp.has_reduce ? " nor its reduced domain " + shape_str(kept_keep) : "")};
  }
  sp.domain = domain;
  if (out) *out = sp;
  return std::nullopt;
}

}  // namespace

}  // namespace autofuse
