#include "autofuse/fusion/partition.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "autofuse/fusion/cost.h"
#include "autofuse/ir/printer.h"

namespace autofuse {

int64_t read_bytes(const Graph& g, ValueId v, const Bindings& b) {
  const Node& n = g.node(v);
  if (n.op == OpKind::BroadcastTo) return read_bytes(g, n.inputs[0], b);
  if (n.op == OpKind::Constant) return 0;
  return value_bytes(g, v, b);
}

GroupIO group_io(const Graph& g, const std::vector<ValueId>& members, const std::vector<ValueId>& primary,
                 const std::vector<bool>& is_inline, const std::vector<bool>& live, const std::vector<bool>& own_step,
                 const std::vector<std::vector<ValueId>>& users, const std::vector<std::vector<int>>& containing,
                 const std::vector<int>& self) {
  std::unordered_set<ValueId> in_set(members.begin(), members.end());
  std::set<ValueId> inputs, outputs;
  std::unordered_set<ValueId> graph_outs(g.outputs().begin(), g.outputs().end());
  auto is_self = [&](int gid) { return std::find(self.begin(), self.end(), gid) != self.end(); };
  for (ValueId v : members) {
    for (ValueId u : g.node(v).inputs)
      if (!in_set.count(u)) inputs.insert(u);
    bool needed = graph_outs.count(v) > 0;
    if (is_inline[v]) {
      // Readers in kernels recompute an inline value; only its home (a primary node here) writes it, for a graph
      // output or an extern / host step.
      if (!std::binary_search(primary.begin(), primary.end(), v)) continue;
      for (ValueId u : users[v]) needed |= live[u] && own_step[u];
    } else {
      for (ValueId u : users[v])
        if (live[u])
          for (int gid : containing[u]) needed |= !is_self(gid);
    }
    if (needed) outputs.insert(v);
  }
  return {{inputs.begin(), inputs.end()}, {outputs.begin(), outputs.end()}};
}

Graph build_subgraph(const Graph& g, const std::string& name, const std::vector<ValueId>& members,
                     const std::vector<ValueId>& inputs, const std::vector<ValueId>& outputs) {
  Graph sub(name);
  std::unordered_map<ValueId, ValueId> map;
  for (ValueId v : inputs) {
    const Node& n = g.node(v);
    std::optional<std::vector<Expr>> strides;
    if (n.op == OpKind::Input && has_attr(n.attrs, "strides")) strides = attr_shape(n.attrs, "strides");
    map[v] = sub.add_input(n.name, n.dtype, n.shape, strides);
  }
  for (ValueId v : members) {
    const Node& n = g.node(v);
    std::vector<ValueId> ins;
    for (ValueId u : n.inputs) {
      auto it = map.find(u);
      if (it == map.end())
        throw IRError("fusion: group " + name + " computes " + print_node(g, n) + " but does not read %" +
                      g.node(u).name);
      ins.push_back(it->second);
    }
    map[v] = sub.add(n.op, ins, n.attrs, n.name);
  }
  std::vector<ValueId> outs;
  for (ValueId v : outputs) outs.push_back(map.at(v));
  sub.set_outputs(outs);
  return sub;
}

namespace {

/// The partitioner's working state; one instance per partition_graph call.
class Partitioner {
 public:
  Partitioner(const Graph& g, const FusionOptions& o, const Bindings& b) : g_(g), o_(o), b_(b) {}

  Partition run() {
    classify();
    greedy();
    return finish();
  }

 private:
  struct Cand {
    int a, b;
    bool vertical;  ///< joined by a producer -> consumer edge
    int64_t benefit;
    int64_t distance;
  };

  std::string vname(ValueId v) const { return "%" + g_.node(v).name; }

  /// A concat that starts as a kernel group of its own (and can then fuse with its producers and consumers): when
  /// FusionOptions::fuse_concat is on and the code generator accepts it alone (kernel_check; without one, concats
  /// stay host steps).
  bool kernel_concat(ValueId v) const {
    const Node& nd = g_.node(v);
    if (nd.op != OpKind::Concat || !o_.fuse_concat || !o_.kernel_check) return false;
    std::vector<ValueId> ins;
    for (ValueId u : nd.inputs)
      if (std::find(ins.begin(), ins.end(), u) == ins.end()) ins.push_back(u);
    std::sort(ins.begin(), ins.end());
    return !o_.kernel_check(build_subgraph(g_, "concat", {v}, ins, {v}));
  }
  std::string gname(int gid) const {
    const PartGroup& gr = groups_[gid];
    std::string s = "{";
    size_t shown = 0;
    for (ValueId v : gr.primary) {
      if (shown++ == 3) {
        s += ", ...";
        break;
      }
      s += (shown > 1 ? ", " : "") + vname(v);
    }
    return s + "}";
  }

  void classify() {
    const size_t n = g_.size();
    live_.assign(n, false);
    is_inline_.assign(n, false);
    containing_.assign(n, {});
    users_ = g_.users();
    own_step_.assign(n, false);
    for (size_t i = 0; i < n; ++i) {
      const Node& nd = g_.node(static_cast<ValueId>(i));
      const OpCategory c = nd.info().category;
      own_step_[i] = c == OpCategory::Extern || (c == OpCategory::Layout && !kernel_concat(static_cast<ValueId>(i)));
    }
    for (ValueId v : g_.outputs()) live_[v] = true;
    for (size_t i = n; i-- > 0;)
      if (live_[i])
        for (ValueId u : g_.node(static_cast<ValueId>(i)).inputs) live_[u] = true;
    std::unordered_set<ValueId> graph_outs(g_.outputs().begin(), g_.outputs().end());
    // Pass 1: which values are inline (recomputed by their readers).
    std::vector<int> chain_weight(n, 0);
    std::vector<int64_t> chain_leaves(n, 0);  // bytes the chain reads from materialized values
    auto live_users = [&](ValueId v) {
      int k = 0;
      for (ValueId u : users_[v]) k += live_[u] ? 1 : 0;
      return k;
    };
    // A single-use cheap elementwise value feeding a recomputed one is recomputed along with it.
    auto absorbable = [&](ValueId u) {
      return g_.node(u).info().category == OpCategory::Elementwise && live_users(u) == 1 && !graph_outs.count(u);
    };
    for (size_t i = 0; i < n; ++i) {
      ValueId v = static_cast<ValueId>(i);
      const Node& nd = g_.node(v);
      if (!live_[v] || nd.op == OpKind::Input) continue;
      OpCategory cat = nd.info().category;
      if (cat == OpCategory::Source || cat == OpCategory::Broadcast) {
        is_inline_[v] = true;
        for (ValueId u : nd.inputs) chain_leaves[v] += is_inline_[u] ? chain_leaves[u] : read_bytes(g_, u, b_);
        continue;
      }
      if (cat != OpCategory::Elementwise) continue;
      int w = op_compute_weight(nd.op);
      int64_t leaves = 0;
      for (ValueId u : nd.inputs) {
        if (is_inline_[u] || absorbable(u)) {
          w += chain_weight[u];
          leaves += chain_leaves[u];
        } else {
          leaves += read_bytes(g_, u, b_);
        }
      }
      chain_weight[v] = w;
      chain_leaves[v] = leaves;
      // Recompute a value with several readers when it is cheap and reading its chain's inputs costs about what
      // reading the value itself would (at most 1/8 more: small broadcast operands such as a row's mean).
      int64_t own = value_bytes(g_, v, b_);
      if (live_users(v) > 1 && w <= o_.recompute_max_weight && leaves <= own + own / 8) {
        std::vector<ValueId> stack = {v};
        while (!stack.empty()) {
          ValueId x = stack.back();
          stack.pop_back();
          is_inline_[x] = true;
          for (ValueId u : g_.node(x).inputs)
            if (!is_inline_[u] && absorbable(u)) stack.push_back(u);
        }
      }
    }
    // Pass 2: groups. Extern and layout ops are steps of their own; every value not inline starts a kernel group; an
    // inline value needed by a graph output or an extern / host step also gets one (its home) that writes it.
    for (size_t i = 0; i < n; ++i) {
      ValueId v = static_cast<ValueId>(i);
      const Node& nd = g_.node(v);
      if (!live_[v] || nd.op == OpKind::Input) continue;
      OpCategory cat = nd.info().category;
      if (own_step_[v]) {
        new_group(cat == OpCategory::Extern ? GroupKind::Extern : GroupKind::Host, {v});
        std::string what = cat == OpCategory::Extern ? "an extern call (\"" + attr_str(nd.attrs, "name") + "\")"
                                                     : "a layout op (" + std::string(nd.info().name) + ")";
        refusals_.push_back({cat == OpCategory::Extern ? nf::kExtern : nf::kLayout,
                             vname(v) + " is " + what + ": it runs as its own " +
                                 (cat == OpCategory::Extern ? "extern" : "host") +
                                 " step, kernels are formed around it",
                             vname(v), "", 0});
        continue;
      }
      bool needs_home = graph_outs.count(v) > 0;
      for (ValueId u : users_[v]) needs_home |= live_[u] && own_step_[u];
      if (!is_inline_[v] || needs_home) new_group(GroupKind::Kernel, {v});
    }
  }

  /// The inline nodes a set of primary nodes reads, transitively, merged with the primaries (ascending).
  std::vector<ValueId> pull(const std::vector<ValueId>& primary) const {
    std::set<ValueId> s(primary.begin(), primary.end());
    std::vector<ValueId> stack(primary.begin(), primary.end());
    while (!stack.empty()) {
      ValueId v = stack.back();
      stack.pop_back();
      for (ValueId u : g_.node(v).inputs)
        if (is_inline_[u] && s.insert(u).second) stack.push_back(u);
    }
    return {s.begin(), s.end()};
  }

  int new_group(GroupKind k, std::vector<ValueId> primary) {
    int id = static_cast<int>(groups_.size());
    PartGroup gr{k, primary, {}};
    gr.members = k == GroupKind::Kernel ? pull(primary) : primary;
    for (ValueId v : gr.members) containing_[v].push_back(id);
    groups_.push_back(std::move(gr));
    alive_.push_back(true);
    return id;
  }

  GroupIO io(const std::vector<ValueId>& members, const std::vector<ValueId>& primary,
             const std::vector<int>& self) const {
    return group_io(g_, members, primary, is_inline_, live_, own_step_, users_, containing_, self);
  }
  /// A group's inputs and outputs, computed once per group id: a live group's members never change, and merging two
  /// other groups only renames the group a reader belongs to, never whether it is this one (group_io's test).
  const GroupIO& io(int gid) const {
    auto it = io_memo_.find(gid);
    if (it == io_memo_.end()) it = io_memo_.emplace(gid, io(groups_[gid].members, groups_[gid].primary, {gid})).first;
    return it->second;
  }

  int64_t traffic(const GroupIO& x) const {
    int64_t t = 0;
    for (ValueId v : x.inputs) t += read_bytes(g_, v, b_);
    for (ValueId v : x.outputs) t += value_bytes(g_, v, b_);
    return t;
  }

  std::vector<ValueId> union_of(const std::vector<ValueId>& a, const std::vector<ValueId>& b) const {
    std::vector<ValueId> r;
    std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(r));
    return r;
  }

  /// Successor groups of a group in the group graph: the groups reading a value it writes. An inline value is
  /// recomputed by its kernel readers, so it only makes edges from its home group to extern / host readers.
  std::set<int> successors(int gid) const {
    const PartGroup& gr = groups_[gid];
    std::set<int> s;
    for (ValueId v : gr.members) {
      bool home = std::binary_search(gr.primary.begin(), gr.primary.end(), v);
      if (is_inline_[v] && !home) continue;
      for (ValueId u : users_[v]) {
        if (!live_[u]) continue;
        if (is_inline_[v] && !own_step_[u]) continue;
        for (int h : containing_[u])
          if (h != gid && alive_[h]) s.insert(h);
      }
    }
    return s;
  }

  /// A path from `from` to `to` through at least one other group.
  std::optional<int> indirect_path(int from, int to) const {
    std::vector<int> stack;
    std::map<int, int> first_hop;
    for (int s : successors(from))
      if (s != to) {
        stack.push_back(s);
        first_hop[s] = s;
      }
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      for (int s : successors(x)) {
        if (s == to) return first_hop[x];
        if (s != from && !first_hop.count(s)) {
          first_hop[s] = first_hop[x];
          stack.push_back(s);
        }
      }
    }
    return std::nullopt;
  }

  std::optional<FusionDecision> check(int a, int b, const std::vector<ValueId>& members, const GroupIO& x) const {
    auto refuse = [&](const char* code, std::string msg) {
      return FusionDecision{code, std::move(msg), gname(a), gname(b), 0};
    };
    if (static_cast<int>(members.size()) > o_.max_group_nodes)
      return refuse(nf::kSize, "merging " + gname(a) + " and " + gname(b) + " gives " + std::to_string(members.size()) +
                                   " ops, over the cap of " + std::to_string(o_.max_group_nodes));
    if (static_cast<int>(x.inputs.size()) > o_.max_group_inputs)
      return refuse(nf::kInputs, "merging " + gname(a) + " and " + gname(b) + " gives a kernel reading " +
                                     std::to_string(x.inputs.size()) + " values, over the cap of " +
                                     std::to_string(o_.max_group_inputs));
    for (auto [p, q] : {std::pair{a, b}, std::pair{b, a}})
      if (auto via = indirect_path(p, q))
        return refuse(nf::kCycle, "merging " + gname(a) + " and " + gname(b) + " would create a cycle: " + gname(p) +
                                      " reaches " + gname(q) + " through " + gname(*via));
    if (auto r = check_space(g_, members, x.outputs))
      return refuse(r->code.c_str(), "cannot merge " + gname(a) + " and " + gname(b) + ": " + r->message);
    if (o_.kernel_check) {
      Graph sub = build_subgraph(g_, "candidate", members, x.inputs, x.outputs);
      if (auto why = o_.kernel_check(sub))
        return refuse(nf::kCodegen, "the code generator refuses " + gname(a) + " + " + gname(b) + ": " + *why);
    }
    return std::nullopt;
  }

  std::vector<Cand> candidates() const {
    // Pairs joined by an edge or by a common input value.
    std::set<std::pair<int, int>> pairs, edges;
    std::map<ValueId, std::set<int>> readers;
    for (size_t gid = 0; gid < groups_.size(); ++gid) {
      if (!alive_[gid] || groups_[gid].kind != GroupKind::Kernel) continue;
      for (ValueId v : io(static_cast<int>(gid)).inputs) readers[v].insert(static_cast<int>(gid));
    }
    for (const auto& [v, rs] : readers) {
      std::vector<int> r(rs.begin(), rs.end());
      if (o_.horizontal)
        for (size_t i = 0; i < r.size(); ++i)
          for (size_t j = i + 1; j < r.size(); ++j) pairs.insert({r[i], r[j]});
      if (o_.vertical)
        for (int p : containing_[v])
          if (alive_[p] && groups_[p].kind == GroupKind::Kernel)
            for (int c : r)
              if (c != p) {
                pairs.insert({std::min(p, c), std::max(p, c)});
                edges.insert({std::min(p, c), std::max(p, c)});
              }
    }
    std::vector<Cand> out;
    for (auto [a, b] : pairs) {
      // Bytes saved by merging a and b: fixed while both are alive (see io(int)), so computed once per pair. Without
      // the two memos the greedy loop took 3.3 s for a 2000-op chain (every pass recomputed every group's IO).
      auto memo = benefit_memo_.find({a, b});
      if (memo == benefit_memo_.end()) {
        auto members = union_of(groups_[a].members, groups_[b].members);
        auto primary = union_of(groups_[a].primary, groups_[b].primary);
        int64_t saved = traffic(io(a)) + traffic(io(b)) - traffic(io(members, primary, {a, b}));
        memo = benefit_memo_.emplace(std::pair{a, b}, saved).first;
      }
      const int64_t benefit = memo->second;
      bool vertical = edges.count({a, b}) > 0;
      // A producer-consumer merge saves the intermediate's write and read; when that value holds no element (a 0-size
      // dim at this binding) it saves 0 bytes but still a kernel launch: it is kept, ranked after the merges that save
      // bytes.
      if (benefit < 0 || (benefit == 0 && !vertical)) continue;
      int64_t dist = std::abs(static_cast<int64_t>(groups_[a].primary.front()) - groups_[b].primary.front());
      out.push_back({a, b, vertical, benefit, dist});
    }
    // Vertical merges first (they remove a write and a read), then horizontal ones (they share reads); within a
    // class by bytes saved. Priority classes before bytes, as the original Autofuse's fusion solver ranks pairs.
    std::sort(out.begin(), out.end(), [](const Cand& x, const Cand& y) {
      if (x.vertical != y.vertical) return x.vertical;
      if (x.benefit != y.benefit) return x.benefit > y.benefit;
      if (x.distance != y.distance) return x.distance < y.distance;
      return std::pair{x.a, x.b} < std::pair{y.a, y.b};
    });
    return out;
  }

  void merge(int a, int b) {
    alive_[a] = alive_[b] = false;
    int id = new_group(GroupKind::Kernel, union_of(groups_[a].primary, groups_[b].primary));
    for (auto& c : containing_)
      c.erase(std::remove_if(c.begin(), c.end(), [&](int x) { return x == a || x == b; }), c.end());
    (void)id;
  }

  void greedy() {
    std::set<std::pair<int, int>> refused;
    for (;;) {
      bool merged = false;
      for (const Cand& c : candidates()) {
        if (refused.count({c.a, c.b})) continue;
        auto members = union_of(groups_[c.a].members, groups_[c.b].members);
        GroupIO x = io(members, union_of(groups_[c.a].primary, groups_[c.b].primary), {c.a, c.b});
        if (auto r = check(c.a, c.b, members, x)) {
          r->benefit_bytes = c.benefit;
          refused.insert({c.a, c.b});
          pending_refusals_.push_back({*r, groups_[c.a].primary.front(), groups_[c.b].primary.front()});
          continue;
        }
        merges_.push_back({nf::kFused, "", gname(c.a), gname(c.b), c.benefit});
        merge(c.a, c.b);
        merged = true;
        break;
      }
      if (!merged) break;
    }
  }

  Partition finish() {
    Partition p;
    std::vector<int> remap(groups_.size(), -1);
    for (size_t gid = 0; gid < groups_.size(); ++gid)
      if (alive_[gid]) {
        remap[gid] = static_cast<int>(p.groups.size());
        p.groups.push_back(groups_[gid]);
      }
    p.containing.assign(g_.size(), {});
    for (size_t v = 0; v < g_.size(); ++v)
      for (int gid : containing_[v])
        if (remap[gid] >= 0) p.containing[v].push_back(remap[gid]);
    // Keep a refusal only if its two sides still ended up in different groups.
    for (const auto& pr : pending_refusals_) {
      if (p.containing[pr.node_a] == p.containing[pr.node_b]) continue;
      bool dup = std::any_of(refusals_.begin(), refusals_.end(),
                             [&](const FusionDecision& d) { return d.message == pr.d.message; });
      if (!dup) refusals_.push_back(pr.d);
    }
    p.is_inline = is_inline_;
    p.live = live_;
    p.own_step = own_step_;
    p.merges = merges_;
    p.refusals = refusals_;
    return p;
  }

  struct PendingRefusal {
    FusionDecision d;
    ValueId node_a, node_b;
  };

  const Graph& g_;
  const FusionOptions& o_;
  const Bindings& b_;
  std::vector<bool> live_, is_inline_;
  /// Per node: runs as its own extern / host step (extern calls, layout ops other than kernel concats).
  std::vector<bool> own_step_;
  std::vector<std::vector<ValueId>> users_;
  std::vector<PartGroup> groups_;
  std::vector<bool> alive_;
  std::vector<std::vector<int>> containing_;
  std::vector<FusionDecision> merges_, refusals_;
  std::vector<PendingRefusal> pending_refusals_;
  mutable std::unordered_map<int, GroupIO> io_memo_;             ///< io(gid), per group id
  mutable std::map<std::pair<int, int>, int64_t> benefit_memo_;  ///< bytes saved by merging a pair, a < b
};

}  // namespace

Partition partition_graph(const Graph& g, const FusionOptions& o, const Bindings& binding) {
  return Partitioner(g, o, binding).run();
}

}  // namespace autofuse
