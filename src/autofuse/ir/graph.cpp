#include "autofuse/ir/graph.h"

#include "autofuse/ir/printer.h"

namespace autofuse {

std::string Graph::fresh_name() {
  for (size_t i = nodes_.size();; ++i) {
    std::string n = std::to_string(i);
    if (!find(n)) return n;
  }
}

ValueId Graph::add_input(const std::string& name, DType dtype, Shape shape, std::optional<std::vector<Expr>> strides) {
  Attrs a{{"dtype", dtype}, {"shape", shape}};
  if (strides) a["strides"] = *strides;
  return add(OpKind::Input, {}, std::move(a), name);
}

ValueId Graph::add(OpKind op, std::vector<ValueId> inputs, Attrs attrs, std::string name) {
  if (name.empty()) name = fresh_name();
  if (find(name)) throw IRError("%" + name + ": a value of this name already exists");
  std::vector<TensorType> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] < 0 || static_cast<size_t>(inputs[i]) >= nodes_.size())
      throw IRError("%" + name + " = " + std::string(op_info(op).name) + ": input " + std::to_string(i) +
                    " refers to value " + std::to_string(inputs[i]) + ", which is not defined before it");
    in.push_back(nodes_[inputs[i]].type());
  }
  TensorType t;
  try {
    t = infer_type(op, in, attrs);
  } catch (const IRError& e) {
    throw IRError("%" + name + " = " + e.what());
  }
  Node n{op, std::move(inputs), std::move(attrs), t.dtype, std::move(t.shape), std::move(name)};
  return add_unchecked(std::move(n));
}

ValueId Graph::add_unchecked(Node node) {
  if (node.name.empty()) node.name = fresh_name();
  const auto id = static_cast<ValueId>(nodes_.size());
  index_.emplace(node.name, id);
  nodes_.push_back(std::move(node));
  return id;
}

ValueId Graph::constant(Scalar value, DType dtype) {
  return add(OpKind::Constant, {}, {{"value", value}, {"dtype", dtype}});
}

ValueId Graph::reduce(OpKind op, ValueId x, std::vector<int64_t> axes, bool keepdim) {
  return add(op, {x}, {{"axes", std::move(axes)}, {"keepdim", keepdim}});
}

ValueId Graph::cast(ValueId x, DType to) {
  if (node(x).dtype == to) return x;
  return add(OpKind::Cast, {x}, {{"dtype", to}});
}

void Graph::set_outputs(std::vector<ValueId> outs) {
  for (ValueId v : outs)
    if (v < 0 || static_cast<size_t>(v) >= nodes_.size())
      throw IRError("graph output refers to undefined value " + std::to_string(v));
  outputs_ = std::move(outs);
}

std::vector<ValueId> Graph::inputs() const {
  std::vector<ValueId> r;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].op == OpKind::Input) r.push_back(static_cast<ValueId>(i));
  return r;
}

std::vector<std::vector<ValueId>> Graph::users() const {
  std::vector<std::vector<ValueId>> u(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i)
    for (ValueId in : nodes_[i].inputs) u[in].push_back(static_cast<ValueId>(i));
  return u;
}

std::set<std::string> Graph::symbols() const {
  std::set<std::string> s;
  for (const auto& n : nodes_) {
    for (const auto& d : n.shape) d.collect_symbols(s);
    for (const auto& [k, v] : n.attrs) {
      if (auto* e = std::get_if<Expr>(&v)) e->collect_symbols(s);
      if (auto* es = std::get_if<std::vector<Expr>>(&v))
        for (const auto& e2 : *es) e2.collect_symbols(s);
    }
  }
  return s;
}

std::optional<ValueId> Graph::find(const std::string& name) const {
  if (!names_may_be_stale_) {
    auto it = index_.find(name);
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].name == name) return static_cast<ValueId>(i);
  return std::nullopt;
}

std::string Graph::str() const { return print_graph(*this); }

std::vector<TensorType> input_types(const Graph& g, const Node& n) {
  std::vector<TensorType> r;
  for (ValueId v : n.inputs) r.push_back(g.node(v).type());
  return r;
}

}  // namespace autofuse
