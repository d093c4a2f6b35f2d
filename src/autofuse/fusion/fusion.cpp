#include "autofuse/fusion/fusion.h"

#include <algorithm>
#include <queue>
#include <set>
#include <unordered_set>

#include "autofuse/fusion/cost.h"
#include "autofuse/fusion/partition.h"
#include "autofuse/ir/printer.h"

namespace autofuse {

std::string_view group_kind_name(GroupKind k) {
  switch (k) {
    case GroupKind::Kernel:
      return "kernel";
    case GroupKind::Extern:
      return "extern";
    case GroupKind::Host:
      return "host";
  }
  return "?";
}

namespace {

/// Topological order of the partition's groups (Kahn; ties by lowest primary node id, so the order is stable).
std::vector<int> topo_order(const Graph& g, const Partition& p, const std::vector<GroupIO>& ios) {
  size_t n = p.groups.size();
  std::vector<std::set<int>> succ(n);
  std::vector<int> indeg(n, 0);
  std::vector<int> writer(g.size(), -1);
  for (size_t i = 0; i < n; ++i)
    for (ValueId v : ios[i].outputs) writer[v] = static_cast<int>(i);
  for (size_t i = 0; i < n; ++i)
    for (ValueId v : ios[i].inputs)
      if (writer[v] >= 0 && writer[v] != static_cast<int>(i) && succ[writer[v]].insert(static_cast<int>(i)).second)
        ++indeg[i];
  using Item = std::pair<ValueId, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
  for (size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push({p.groups[i].primary.front(), static_cast<int>(i)});
  std::vector<int> order;
  while (!ready.empty()) {
    int i = ready.top().second;
    ready.pop();
    order.push_back(i);
    for (int s : succ[i])
      if (--indeg[s] == 0) ready.push({p.groups[s].primary.front(), s});
  }
  if (order.size() != n) throw IRError("fusion: internal error: the group graph has a cycle");
  return order;
}

int64_t node_unfused_bytes(const Graph& g, ValueId v, const Bindings& b) {
  const Node& n = g.node(v);
  if (n.op == OpKind::BroadcastTo || n.op == OpKind::Constant) return 0;  // a view / a scalar: no traffic
  int64_t t = value_bytes(g, v, b);
  for (ValueId u : n.inputs) t += read_bytes(g, u, b);
  return t;
}

/// A kernel learns its sizes from its inputs' shapes. When its sub-graph uses a size symbol that none of its inputs'
/// shapes carries (a broadcast of a bias to [s0, s1], a `full` source), add a graph input whose shape has the symbol,
/// read for its sizes only (FusionGroup::size_inputs).
void add_size_inputs(const Graph& g, FusionGroup& fg) {
  std::set<std::string> bound, used;
  for (ValueId v : fg.inputs)
    for (const Expr& d : g.node(v).shape) d.collect_symbols(bound);
  for (ValueId v : fg.nodes) {
    const Node& n = g.node(v);
    for (const Expr& d : n.shape) d.collect_symbols(used);
    for (const auto& [k, a] : n.attrs) {
      if (auto* e = std::get_if<Expr>(&a)) e->collect_symbols(used);
      if (auto* es = std::get_if<std::vector<Expr>>(&a))
        for (const Expr& e : *es) e.collect_symbols(used);
    }
  }
  for (const std::string& sym : used) {
    if (bound.count(sym)) continue;
    for (ValueId in : g.inputs()) {
      std::set<std::string> syms;
      for (const Expr& d : g.node(in).shape) d.collect_symbols(syms);
      if (!syms.count(sym)) continue;
      fg.size_inputs.push_back(in);
      fg.inputs.push_back(in);
      bound.insert(syms.begin(), syms.end());
      break;
    }
  }
  std::sort(fg.inputs.begin(), fg.inputs.end());
  fg.inputs.erase(std::unique(fg.inputs.begin(), fg.inputs.end()), fg.inputs.end());
  std::sort(fg.size_inputs.begin(), fg.size_inputs.end());
}

}  // namespace

FusedGraph fuse(const Graph& g, const FusionOptions& o) {
  if (g.outputs().empty()) throw IRError("fuse: graph '" + g.name() + "' has no outputs");
  FusedGraph f{g, {}, {}, {}};
  f.report.binding = representative_binding(g, o.representative_size);
  const Bindings& b = f.report.binding;
  Partition p = partition_graph(g, o, b);
  auto users = g.users();
  std::vector<GroupIO> ios;
  for (size_t i = 0; i < p.groups.size(); ++i)
    ios.push_back(group_io(g, p.groups[i].members, p.groups[i].primary, p.is_inline, p.live, p.own_step, users,
                           p.containing, {static_cast<int>(i)}));
  std::vector<int> order = topo_order(g, p, ios);

  int nk = 0, ne = 0, nh = 0;
  std::vector<bool> counted(g.size(), false);  // each op's unfused traffic is counted once
  f.producer.assign(g.size(), -1);
  for (int gi : order) {
    const PartGroup& pg = p.groups[gi];
    FusionGroup fg;
    fg.kind = pg.kind;
    fg.name = pg.kind == GroupKind::Kernel   ? "k" + std::to_string(nk++)
              : pg.kind == GroupKind::Extern ? "e" + std::to_string(ne++)
                                             : "h" + std::to_string(nh++);
    fg.nodes = pg.members;
    fg.inputs = ios[gi].inputs;
    fg.outputs = ios[gi].outputs;
    for (ValueId v : pg.members)
      if (p.containing[v].size() > 1) fg.recomputed.push_back(v);
    add_size_inputs(g, fg);
    fg.subgraph = build_subgraph(g, fg.name, fg.nodes, fg.inputs, fg.outputs);
    if (fg.kind == GroupKind::Kernel) {
      if (auto r = check_space(g, fg.nodes, fg.outputs, &fg.space))
        throw IRError("fusion: internal error: group " + fg.name + " breaks a kernel rule: " + r->message);
    }
    for (ValueId v : fg.inputs)
      if (!std::binary_search(fg.size_inputs.begin(), fg.size_inputs.end(), v)) fg.bytes_fused += read_bytes(g, v, b);
    for (ValueId v : fg.outputs) fg.bytes_fused += value_bytes(g, v, b);
    for (ValueId v : fg.nodes)
      if (!counted[v]) {
        counted[v] = true;
        fg.bytes_unfused += node_unfused_bytes(g, v, b);
      }
    if (fg.kind != GroupKind::Kernel) fg.bytes_unfused = fg.bytes_fused;
    for (ValueId v : fg.outputs) f.producer[v] = static_cast<int>(f.groups.size());
    f.groups.push_back(std::move(fg));
  }

  // Values written by one kernel and read by another: say why they were not recomputed in the reader.
  for (const FusionGroup& fg : f.groups) {
    if (fg.kind != GroupKind::Kernel) continue;
    for (ValueId v : fg.inputs) {
      int w = f.producer[v];
      if (w < 0 || f.groups[w].kind != GroupKind::Kernel) continue;
      const Node& n = g.node(v);
      std::string why;
      if (n.info().category == OpCategory::Reduce) {
        why = "it is a reduction result, which is never recomputed";
      } else {
        int weight = op_compute_weight(n.op);
        int64_t in_bytes = 0, own = value_bytes(g, v, b);
        for (ValueId u : n.inputs) in_bytes += p.is_inline[u] ? 0 : read_bytes(g, u, b);
        if (weight > o.recompute_max_weight)
          why = "recomputing " + std::string(n.info().name) + " costs weight " + std::to_string(weight) +
                " per element, over the bound of " + std::to_string(o.recompute_max_weight);
        else if (in_bytes > own + own / 8)
          why = "recomputing it would read " + format_bytes(in_bytes) + " instead of " + format_bytes(own);
        else
          why = "its producer group could not absorb the reader";
      }
      f.report.refusals.push_back(
          {nf::kRecompute, "%" + n.name + " is written by " + f.groups[w].name + " and read by " + fg.name + ": " + why,
           f.groups[w].name, fg.name, 0});
    }
  }

  FusionReport& r = f.report;
  r.merges = std::move(p.merges);
  r.refusals.insert(r.refusals.begin(), p.refusals.begin(), p.refusals.end());
  r.num_kernels = nk;
  r.num_externs = ne;
  r.num_host = nh;
  for (const FusionGroup& fg : f.groups) {
    r.steps.push_back({fg.name, std::string(group_kind_name(fg.kind)), static_cast<int>(fg.nodes.size()),
                       fg.bytes_fused, fg.bytes_unfused});
    r.total_bytes_fused += fg.bytes_fused;
    r.total_bytes_unfused += fg.bytes_unfused;
  }
  return f;
}

std::string FusedGraph::str() const {
  std::string s;
  auto names = [&](const std::vector<ValueId>& vs) {
    std::string t;
    for (size_t i = 0; i < vs.size(); ++i) t += (i ? ", %" : "%") + graph.node(vs[i]).name;
    return t.empty() ? "nothing" : t;
  };
  for (const FusionGroup& fg : groups) {
    s += "# " + fg.name + ": " + std::string(group_kind_name(fg.kind)) + ", " + std::to_string(fg.nodes.size()) +
         " op(s), reads " + names(fg.inputs) + ", writes " + names(fg.outputs);
    if (fg.kind == GroupKind::Kernel) {
      s += "; domain " + shape_str(fg.space.domain);
      if (fg.space.has_reduce) s += ", reduces " + axes_str(fg.space.reduce_axes);
      if (!fg.space.outer_axes.empty()) s += " per row and " + axes_str(fg.space.outer_axes) + " across rows";
      if (!fg.recomputed.empty()) s += "; recomputes " + names(fg.recomputed);
      if (!fg.size_inputs.empty()) s += "; sizes only from " + names(fg.size_inputs);
    }
    s += "\n" + print_graph(fg.subgraph);
  }
  return s + report.str();
}

}  // namespace autofuse
