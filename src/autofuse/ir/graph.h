// The Autofuse graph IR: a list of nodes in topological order, each producing one typed tensor value.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "autofuse/ir/ops.h"

namespace autofuse {

/// Index of a node (and of the value it produces) in Graph::nodes().
using ValueId = int32_t;

/// One op application. Every node produces exactly one value, identified by the node's index.
struct Node {
  OpKind op;
  std::vector<ValueId> inputs;
  Attrs attrs;
  DType dtype = DType::Float32;  ///< output element type
  Shape shape;                   ///< output shape
  std::string name;              ///< text-form name without '%' ("x", "3"); unique in the graph

  const OpInfo& info() const { return op_info(op); }
  TensorType type() const { return {dtype, shape}; }
};

/// A dataflow graph of tensor ops. Inputs are nodes of op Input; outputs are a list of value ids.
/// Nodes are appended in topological order: a node's inputs always precede it.
class Graph {
 public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  /// Add a graph input of the given dtype, shape and optional strides (in elements; default contiguous).
  /// Throws IRError when the name is taken.
  ValueId add_input(const std::string& name, DType dtype, Shape shape,
                    std::optional<std::vector<Expr>> strides = std::nullopt);
  /// Append a node; its type is inferred from the op table. Throws IRError naming the node on any rule violation.
  ValueId add(OpKind op, std::vector<ValueId> inputs, Attrs attrs = {}, std::string name = "");
  /// Append a node with a declared type, unchecked (the parser uses this; run verify() afterwards).
  ValueId add_unchecked(Node node);

  /// Convenience builders for common ops.
  ValueId constant(Scalar value, DType dtype);
  ValueId reduce(OpKind op, ValueId x, std::vector<int64_t> axes, bool keepdim);
  ValueId cast(ValueId x, DType to);

  void set_outputs(std::vector<ValueId> outs);
  const std::vector<ValueId>& outputs() const { return outputs_; }

  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(ValueId v) const { return nodes_.at(static_cast<size_t>(v)); }
  /// A node to edit in place. Renaming through it is allowed; find() then falls back to a linear scan.
  Node& mutable_node(ValueId v) {
    names_may_be_stale_ = true;
    return nodes_.at(static_cast<size_t>(v));
  }
  size_t size() const { return nodes_.size(); }
  /// Input node ids, in declaration order.
  std::vector<ValueId> inputs() const;
  /// For every value, the nodes that use it (each user listed once per use).
  std::vector<std::vector<ValueId>> users() const;
  /// Every symbol that appears in a shape, stride or attribute.
  std::set<std::string> symbols() const;
  /// Find a node by name (the first, if several share it); nullopt if none. O(1) through a name index.
  std::optional<ValueId> find(const std::string& name) const;

  /// Text form (see printer.h); parse_graph() reads it back.
  std::string str() const;

 private:
  std::string fresh_name();
  std::string name_;
  std::vector<Node> nodes_;
  std::vector<ValueId> outputs_;
  std::unordered_map<std::string, ValueId> index_;  ///< name -> first node of that name
  bool names_may_be_stale_ = false;                 ///< mutable_node() was called: index_ may be out of date
};

/// The ordered input-type list of a node, looked up in its graph.
std::vector<TensorType> input_types(const Graph& g, const Node& n);

}  // namespace autofuse
