// Loop-nest construction: axis mapping, reduction axis set, kept/full classification and reduction stages.
#include "autofuse/schedule/loop_nest.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "autofuse/ir/printer.h"

namespace autofuse {
namespace {

/// Rank space of a value: not yet known (sources and what depends only on them), the full domain's rank (D), or the
/// kept rank (K: below a reduction without keepdim).
enum class Space : uint8_t { Free, D, K };

std::string where(const Graph& g, ValueId v) { return print_node(g, g.node(v)); }

std::string axes_str(const std::set<int>& s) {
  std::ostringstream o;
  o << "{";
  bool first = true;
  for (int a : s) {
    o << (first ? "" : ", ") << a;
    first = false;
  }
  o << "}";
  return o.str();
}

/// Analysis result: a nest, or the reason it cannot be built.
struct Analysis {
  LoopNest nest;
  std::optional<std::string> error;
};

/// Per node: for a mean of a float input that a var of the graph also reduces, the first such var (every reduction
/// of a kernel has the same axes); -1 otherwise, and for a mean on which another reduction depends (taking the var's
/// stage would add a pass before that reduction).
std::vector<ValueId> means_of_vars(const Graph& g) {
  const size_t n = g.size();
  std::vector<ValueId> out(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const Node& m = g.node(static_cast<ValueId>(i));
    if (m.op != OpKind::Mean || !is_float(g.node(m.inputs[0]).dtype)) continue;
    for (size_t j = 0; j < n && out[i] < 0; ++j) {
      const Node& v = g.node(static_cast<ValueId>(j));
      if (v.op == OpKind::Var && v.inputs[0] == m.inputs[0]) out[i] = static_cast<ValueId>(j);
    }
    std::vector<bool> dep(n, false);
    dep[i] = true;
    for (size_t j = i + 1; j < n && out[i] >= 0; ++j) {
      const Node& d = g.node(static_cast<ValueId>(j));
      for (ValueId in : d.inputs) dep[j] = dep[j] || dep[static_cast<size_t>(in)];
      if (dep[j] && d.info().category == OpCategory::Reduce) out[i] = -1;
    }
  }
  return out;
}

Analysis analyze(const Graph& g) {
  Analysis an;
  auto fail = [&](std::string msg) {
    an.error = std::move(msg);
    return an;
  };
  const size_t n = g.size();
  if (g.outputs().empty()) return fail("graph " + g.name() + " has no outputs");

  // 1. Ops that cannot live in a kernel.
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = g.node(static_cast<ValueId>(i));
    OpCategory c = nd.info().category;
    if (c == OpCategory::Layout)
      return fail(where(g, static_cast<ValueId>(i)) + ": layout op " + std::string(nd.info().name) +
                  " is not supported inside a kernel (only broadcast_to is)");
    if (c == OpCategory::Extern) return fail(where(g, static_cast<ValueId>(i)) + ": extern op runs outside kernels");
    if (c == OpCategory::Reduce && g.node(nd.inputs[0]).shape.empty())
      return fail(where(g, static_cast<ValueId>(i)) + ": reduction of a 0-d value is not supported in a kernel");
  }

  // 2. Rank spaces, forward then backward (sources take the space of their users).
  std::vector<Space> space(n, Space::Free);
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = g.node(static_cast<ValueId>(i));
    OpCategory c = nd.info().category;
    if (c == OpCategory::Source) continue;
    if (c == OpCategory::Reduce) {
      if (space[nd.inputs[0]] == Space::K)
        return fail(
            where(g, static_cast<ValueId>(i)) +
            ": reduces a value that is already reduced without keepdim (two reduction levels of different rank)");
      space[i] = attr_bool(nd.attrs, "keepdim") ? Space::D : Space::K;
      continue;
    }
    Space s = Space::Free;
    for (ValueId in : nd.inputs) {
      if (space[in] == Space::Free) continue;
      if (s != Space::Free && s != space[in])
        return fail(where(g, static_cast<ValueId>(i)) +
                    ": mixes a value reduced without keepdim with a full-rank value (needs a reshape)");
      s = space[in];
    }
    space[i] = s;
  }
  auto users = g.users();
  std::vector<bool> is_output(n, false);
  for (ValueId o : g.outputs()) is_output[o] = true;
  for (size_t k = n; k-- > 0;) {
    if (space[k] != Space::Free) continue;
    bool any_d = is_output[k] && users[k].empty(), any_k = false;
    for (ValueId u : users[k]) {
      Space su = g.node(u).info().category == OpCategory::Reduce ? Space::D : space[u];
      if (su == Space::Free) su = Space::D;
      (su == Space::D ? any_d : any_k) = true;
    }
    if (any_d && any_k)
      return fail(where(g, static_cast<ValueId>(k)) +
                  ": used both by full-rank values and by values reduced without keepdim");
    space[k] = any_k ? Space::K : Space::D;
  }

  // 3. Domain rank and the common reduction axis set.
  int r = 0;
  for (size_t i = 0; i < n; ++i)
    if (space[i] == Space::D) r = std::max(r, static_cast<int>(g.node(static_cast<ValueId>(i)).shape.size()));
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = g.node(static_cast<ValueId>(i));
    if (nd.info().category == OpCategory::Reduce) r = std::max(r, static_cast<int>(g.node(nd.inputs[0]).shape.size()));
  }
  const bool padded = (r == 0);
  if (padded) r = 1;
  std::optional<std::set<int>> rset;
  ValueId rset_node = -1;
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = g.node(static_cast<ValueId>(i));
    if (nd.info().category != OpCategory::Reduce) continue;
    const size_t ri = g.node(nd.inputs[0]).shape.size();
    std::vector<int64_t> axes = normalize_axes(attr_ints(nd.attrs, "axes"), ri);
    if (axes.empty())
      for (size_t a = 0; a < ri; ++a) axes.push_back(static_cast<int64_t>(a));
    std::set<int> s;
    for (int64_t a : axes) s.insert(r - static_cast<int>(ri) + static_cast<int>(a));
    if (rset && *rset != s)
      return fail(where(g, static_cast<ValueId>(i)) + ": reduces domain axes " + axes_str(s) + " but " +
                  where(g, rset_node) + " reduces " + axes_str(*rset) + " (one kernel reduces one axis set)");
    rset = s;
    rset_node = static_cast<ValueId>(i);
  }
  LoopNest& nest = an.nest;
  nest.rank = r;
  nest.is_reduce.assign(static_cast<size_t>(r), false);
  if (rset)
    for (int a : *rset) nest.is_reduce[static_cast<size_t>(a)] = true;
  std::vector<int> kaxes = nest.kept_axes();
  const int rk = static_cast<int>(kaxes.size());

  // 4. Axis mapping and the domain sizes. An input no node reads and that is not an output is there for its sizes
  // only (fusion's size inputs: an `iota` of length s1 beside an input of shape [s0, s1, s2]); its dims name no
  // domain size, else the right-aligned mapping would give the iota's axis the size s2.
  std::vector<bool> read(n, false);
  for (size_t i = 0; i < n; ++i)
    for (ValueId in : g.node(static_cast<ValueId>(i)).inputs) read[static_cast<size_t>(in)] = true;
  for (ValueId o : g.outputs()) read[static_cast<size_t>(o)] = true;
  nest.values.resize(n);
  nest.domain.assign(static_cast<size_t>(r), Expr(1));
  std::vector<ValueId> size_from(static_cast<size_t>(r), -1);
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = g.node(static_cast<ValueId>(i));
    ValuePlacement& vp = nest.values[i];
    const int rv = static_cast<int>(nd.shape.size());
    vp.varies.assign(static_cast<size_t>(r), false);
    const int limit = space[i] == Space::K ? rk : r;
    if (rv > limit)
      return fail(where(g, static_cast<ValueId>(i)) + ": rank " + std::to_string(rv) +
                  " exceeds the kernel domain rank " + std::to_string(limit));
    for (int j = 0; j < rv; ++j) {
      int ax = space[i] == Space::K ? kaxes[static_cast<size_t>(rk - rv + j)] : r - rv + j;
      vp.axis_of_dim.push_back(ax);
      const Expr& sz = nd.shape[static_cast<size_t>(j)];
      if (sz.as_const() == std::optional<int64_t>(1) || (nd.op == OpKind::Input && !read[i])) continue;
      vp.varies[static_cast<size_t>(ax)] = true;
      ValueId& src = size_from[static_cast<size_t>(ax)];
      if (src < 0) {
        src = static_cast<ValueId>(i);
        nest.domain[static_cast<size_t>(ax)] = sz;
      } else if (sym_eq(nest.domain[static_cast<size_t>(ax)], sz) != Tri::True) {
        // Sizes not provably equal (two symbols, e.g. iotas of lengths s0 and s1) cannot share a loop: the loop
        // would run to one of them and write past the other's buffer.
        return fail(where(g, static_cast<ValueId>(i)) + ": size " + sz.str() + " on domain axis " + std::to_string(ax) +
                    " is not provably equal to size " + nest.domain[static_cast<size_t>(ax)].str() + " of " +
                    where(g, src));
      }
    }
  }
  (void)padded;

  // 5. Reductions must run over dims their input really has; stages and kept flags.
  const std::vector<ValueId> var_of_mean = means_of_vars(g);
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = g.node(static_cast<ValueId>(i));
    ValuePlacement& vp = nest.values[i];
    int st = 0;
    for (ValueId in : nd.inputs) st = std::max(st, nest.values[in].stage);
    if (nd.info().category == OpCategory::Reduce) {
      const ValuePlacement& ip = nest.values[nd.inputs[0]];
      for (int a = 0; a < r; ++a)
        if (nest.is_reduce[static_cast<size_t>(a)] && !ip.varies[static_cast<size_t>(a)] &&
            nest.domain[static_cast<size_t>(a)].as_const() != std::optional<int64_t>(1))
          return fail(where(g, static_cast<ValueId>(i)) + ": reduces over domain axis " + std::to_string(a) +
                      " along which its input is broadcast (size 1)");
      st += (nd.op == OpKind::Var || var_of_mean[i] >= 0) ? 2 : 1;
    }
    vp.stage = st;
    vp.var_of_mean = var_of_mean[i];
    bool along_r = false;
    for (int a = 0; a < r; ++a)
      along_r = along_r || (nest.is_reduce[static_cast<size_t>(a)] && vp.varies[static_cast<size_t>(a)]);
    vp.kept = rset.has_value() && !along_r;
    nest.num_stages = std::max(nest.num_stages, st);
    if (nd.op == OpKind::Iota) nest.iotas.push_back(static_cast<ValueId>(i));
  }
  nest.inner_reduction = nest.is_reduce[static_cast<size_t>(r - 1)];
  nest.operands = g.inputs();
  nest.num_inputs = static_cast<int>(nest.operands.size());
  for (ValueId o : g.outputs()) nest.operands.push_back(o);
  return an;
}

}  // namespace

std::vector<int> LoopNest::kept_axes() const {
  std::vector<int> out;
  for (int a = 0; a < rank; ++a)
    if (!is_reduce[static_cast<size_t>(a)]) out.push_back(a);
  return out;
}

std::vector<int> LoopNest::reduce_axes() const {
  std::vector<int> out;
  for (int a = 0; a < rank; ++a)
    if (is_reduce[static_cast<size_t>(a)]) out.push_back(a);
  return out;
}

std::optional<std::string> loop_nest_unsupported_reason(const Graph& g) { return analyze(g).error; }

LoopNest build_loop_nest(const Graph& g) {
  Analysis an = analyze(g);
  if (an.error) throw IRError(*an.error);
  return std::move(an.nest);
}

}  // namespace autofuse
