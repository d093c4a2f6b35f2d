// Splitting a kernel graph with concats into per-segment elementwise graphs (see concat_split.h).
#include "autofuse/schedule/concat_split.h"

#include <algorithm>
#include <unordered_map>

#include "autofuse/ir/printer.h"

namespace autofuse {

bool has_concat(const Graph& g) {
  return std::any_of(g.nodes().begin(), g.nodes().end(), [](const Node& n) { return n.op == OpKind::Concat; });
}

namespace {

/// The dim of a rank-`rv` value that lines up with domain axis `axis` of a rank-`r` domain (NumPy right-aligned
/// broadcasting), or -1 when the value has no such dim.
int dim_of_axis(int rv, int r, int axis) {
  const int d = rv - (r - axis);
  return d >= 0 ? d : -1;
}

}  // namespace

std::optional<ConcatSplit> plan_concat_split(const Graph& g, std::string* why) {
  auto fail = [&](std::string msg) -> std::optional<ConcatSplit> {
    if (why) *why = std::move(msg);
    return std::nullopt;
  };
  const size_t n = g.size();
  auto where = [&](ValueId v) { return print_node(g, g.node(v)); };
  // 1. Ops allowed, the domain rank, the concat axis and the split points.
  int r = 0;
  std::vector<ValueId> concats;
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = g.node(static_cast<ValueId>(i));
    const OpCategory c = nd.info().category;
    const bool ok = c == OpCategory::Elementwise || c == OpCategory::Broadcast || nd.op == OpKind::Concat ||
                    nd.op == OpKind::Input || nd.op == OpKind::Constant || nd.op == OpKind::Full;
    if (!ok)
      return fail(where(static_cast<ValueId>(i)) + ": op " + std::string(nd.info().name) +
                  " cannot share a kernel with the graph's concat (such a kernel is split along the concat axis into " +
                  "elementwise segments)");
    r = std::max(r, static_cast<int>(nd.shape.size()));
    if (nd.op == OpKind::Concat) concats.push_back(static_cast<ValueId>(i));
  }
  if (concats.empty()) return fail("graph " + g.name() + " has no concat");
  ConcatSplit split;
  for (size_t ci = 0; ci < concats.size(); ++ci) {
    const Node& c = g.node(concats[ci]);
    const int rc = static_cast<int>(c.shape.size());
    const int a = static_cast<int>(normalize_axes({attr_int(c.attrs, "axis")}, static_cast<size_t>(rc))[0]);
    const int axis = r - rc + a;
    std::vector<Expr> widths;
    for (ValueId s : c.inputs) widths.push_back(g.node(s).shape[static_cast<size_t>(a)]);
    if (ci == 0) {
      split.domain_axis = axis;
      split.widths = widths;
      continue;
    }
    bool same = axis == split.domain_axis && widths.size() == split.widths.size();
    for (size_t j = 0; same && j < widths.size(); ++j) same = sym_eq(widths[j], split.widths[j]) == Tri::True;
    if (!same)
      return fail(where(concats[ci]) + " splits the kernel's domain differently from " + where(concats[0]) +
                  " (one kernel splits one axis at one set of points)");
  }
  const int D = split.domain_axis;
  const size_t K = split.widths.size();
  // Broadcast along D: no dim there, or a dim of static size 1 (such values are the same in every segment).
  auto broadcast_along = [&](ValueId v) {
    const Node& nd = g.node(v);
    const int d = dim_of_axis(static_cast<int>(nd.shape.size()), r, D);
    return d < 0 || nd.shape[static_cast<size_t>(d)].as_const() == std::optional<int64_t>(1);
  };
  // 2. Segment membership: local[v][j] when v is an ancestor of (or is) the j-th source of a concat.
  std::vector<std::vector<bool>> local(n, std::vector<bool>(K, false));
  std::vector<bool> any_local(n, false);
  for (size_t i = n; i-- > 0;) {
    const ValueId v = static_cast<ValueId>(i);
    const Node& nd = g.node(v);
    if (nd.op == OpKind::Concat) {
      if (any_local[i]) return fail(where(v) + " feeds a source of another concat (nested concats are not split)");
      for (size_t j = 0; j < nd.inputs.size(); ++j) {
        local[static_cast<size_t>(nd.inputs[j])][j] = true;
        any_local[static_cast<size_t>(nd.inputs[j])] = true;
      }
      continue;
    }
    if (!any_local[i]) continue;
    for (ValueId u : nd.inputs) {
      for (size_t j = 0; j < K; ++j)
        if (local[i][j]) local[static_cast<size_t>(u)][j] = true;
      any_local[static_cast<size_t>(u)] = true;
    }
  }
  // 3. A value as wide as a segment may only be read by values of that segment (or by the concat itself); every
  //    other value spans the whole concat axis (the concat's width N) or is broadcast along it.
  //    An input nothing reads (fusion's size-only input, carrying a symbol for the launch to bind) is in no
  //    segment: the parent binds from it (Kernel::bind_concat), whatever its sizes.
  std::vector<bool> read(n, false);
  for (size_t i = 0; i < n; ++i)
    for (ValueId u : g.node(static_cast<ValueId>(i)).inputs) read[static_cast<size_t>(u)] = true;
  for (ValueId o : g.outputs()) read[static_cast<size_t>(o)] = true;
  const Node& c0 = g.node(concats[0]);
  const Expr total = c0.shape[static_cast<size_t>(dim_of_axis(static_cast<int>(c0.shape.size()), r, D))];
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = g.node(static_cast<ValueId>(i));
    if (nd.op == OpKind::Concat || any_local[i] || (nd.op == OpKind::Input && !read[i])) continue;
    if (!broadcast_along(static_cast<ValueId>(i))) {
      const Expr& w = nd.shape[static_cast<size_t>(dim_of_axis(static_cast<int>(nd.shape.size()), r, D))];
      if (sym_eq(w, total) != Tri::True)
        return fail(where(static_cast<ValueId>(i)) + " has size " + w.str() + " along the concat axis, neither " +
                    "the concat's " + total.str() + " nor 1");
    }
    for (ValueId u : nd.inputs)
      if (any_local[static_cast<size_t>(u)] && !broadcast_along(u))
        return fail(where(u) + " is part of a concat source and is also read by " + where(static_cast<ValueId>(i)) +
                    ", which spans the whole concat axis");
  }
  for (ValueId o : g.outputs()) {
    if (any_local[static_cast<size_t>(o)])
      return fail("output " + where(o) + " is part of a concat source (only full-width values are written)");
    if (broadcast_along(o))
      return fail("output " + where(o) + " does not vary along the concat axis " + std::to_string(D));
    split.output_dim.push_back(dim_of_axis(static_cast<int>(g.node(o).shape.size()), r, D));
  }
  // 4. One graph per segment: what its outputs need, the concats mapped to their j-th sources.
  const std::vector<ValueId> parent_inputs = g.inputs();
  std::unordered_map<ValueId, int> input_index;
  for (size_t k = 0; k < parent_inputs.size(); ++k) input_index[parent_inputs[k]] = static_cast<int>(k);
  for (size_t j = 0; j < K; ++j) {
    std::vector<bool> needed(n, false);
    for (ValueId o : g.outputs()) needed[static_cast<size_t>(o)] = true;
    for (size_t i = n; i-- > 0;) {
      if (!needed[i]) continue;
      const Node& nd = g.node(static_cast<ValueId>(i));
      if (nd.op == OpKind::Concat)
        needed[static_cast<size_t>(nd.inputs[j])] = true;
      else
        for (ValueId u : nd.inputs) needed[static_cast<size_t>(u)] = true;
    }
    ConcatSegment seg;
    seg.graph = Graph(g.name() + "_seg" + std::to_string(j));
    // The segment's width along D: a constant stays one; an expression (s1 - floordiv(s1, 2) for rotate_half of an
    // odd symbolic width, or a plain s0) becomes a fresh symbol, which the segment kernel binds from its operands'
    // sizes where they span the axis and is otherwise given by the parent (a broadcast-only source: its value is the
    // parent's width expression, evaluated at launch).
    Expr width = split.widths[j];
    if (!width.as_const()) {
      const auto syms = g.symbols();
      std::string name = "cw" + std::to_string(j);
      while (syms.count(name)) name += "_";
      width = Expr::sym(name);
      seg.width_symbol = name;
    }
    std::vector<ValueId> map(n, -1);
    try {
      for (size_t i = 0; i < n; ++i) {
        if (!needed[i]) continue;
        const ValueId v = static_cast<ValueId>(i);
        const Node& nd = g.node(v);
        // Values wider than 1 along D take this segment's width there (full ones are sliced to it).
        const bool wide = !broadcast_along(v);
        const bool narrow = !any_local[i] && wide;
        const int d = dim_of_axis(static_cast<int>(nd.shape.size()), r, D);
        if (nd.op == OpKind::Input) {
          Shape shape = nd.shape;
          if (wide) shape[static_cast<size_t>(d)] = width;
          std::optional<std::vector<Expr>> strides;
          if (has_attr(nd.attrs, "strides")) strides = attr_shape(nd.attrs, "strides");
          map[i] = seg.graph.add_input(nd.name, nd.dtype, shape, strides);
          seg.parent_input.push_back(input_index.at(v));
          seg.input_dim.push_back(narrow ? d : -1);
          continue;
        }
        if (nd.op == OpKind::Concat) {
          map[i] = map[static_cast<size_t>(nd.inputs[j])];
          continue;
        }
        Attrs attrs = nd.attrs;
        if (wide && has_attr(attrs, "shape")) {
          std::vector<Expr> s = attr_shape(attrs, "shape");
          s[static_cast<size_t>(d)] = width;
          attrs["shape"] = AttrValue(s);
        }
        std::vector<ValueId> ins;
        for (ValueId u : nd.inputs) ins.push_back(map[static_cast<size_t>(u)]);
        map[i] = seg.graph.add(nd.op, ins, attrs, nd.name);
      }
    } catch (const IRError& e) {
      return fail("segment " + std::to_string(j) +
                  " of the split along the concat axis does not type-check: " + e.what());
    }
    std::vector<ValueId> outs;
    for (ValueId o : g.outputs()) outs.push_back(map[static_cast<size_t>(o)]);
    seg.graph.set_outputs(outs);
    split.segments.push_back(std::move(seg));
  }
  return split;
}

}  // namespace autofuse
