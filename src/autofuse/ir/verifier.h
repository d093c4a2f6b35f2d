// The IR verifier: checks every structural and typing rule of a Graph (see verify()).
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "autofuse/ir/graph.h"

namespace autofuse {

/// A verification failure. The message names the node ("%v = add(%a, %b): what is wrong; expected ...");
/// node() is that node's id, or -1 for a graph-level problem (graph name, outputs).
class VerifyError : public IRError {
 public:
  VerifyError(ValueId node, const std::string& message) : IRError(message), node_(node) {}
  ValueId node() const { return node_; }

 private:
  ValueId node_;
};

/// Check a graph, throwing VerifyError at the first violation of:
///  - names: the graph name matches [A-Za-z_][A-Za-z0-9_.]*, every value name is non-empty, made of [A-Za-z0-9_.]
///    (so the text form reads it back) and unique;
///  - topological order: every input of node i is a value id in [0, i);
///  - typing: the op table's infer_type (arity, attribute kinds, dtype and shape rules, and the attribute values it
///    checks: an integer clamp's bounds, the value of an integer constant / full, which must be one eager converts
///    to the dtype) accepts the node, and the node's stored dtype and shape equal the inferred ones;
///  - inputs: strides (when given) have the shape's rank and no stride is provably negative;
///  - symbols: every size symbol used anywhere appears in a graph input's shape, the one place a run binds symbols
///    from (ir/bind_symbols.h); a symbol may also appear in an input's `strides` hint (a row pitch: the actual strides
///    are read at run time), but that alone binds nothing, so it may be used nowhere else. With
///    VerifyOptions::output_shapes_bind, an output's shape binds too (see there), and VerifyOptions::given_symbols
///    are bound by the caller;
///  - outputs: every output is a value id of the graph.
struct VerifyOptions {
  /// Count the symbols of output shapes as bound: for the sub-graph of a fusion group, whose caller allocates its
  /// outputs from sizes known outside it (a lone iota whose length comes from another group's input). Off for whole
  /// graphs: `reshape {shape=[s1, 4]}` with s1 in no input is an error there.
  bool output_shapes_bind = false;
  /// Symbols the caller binds from outside the tensors: a Dynamo graph's SymInt arguments (`torch.arange(n)` where n
  /// reaches the graph only as an integer). Kernels take their values from the caller (Kernel::given_symbols).
  std::set<std::string> given_symbols;
};
void verify(const Graph& g, const VerifyOptions& options = {});

/// "%v = add(%a, %b)": how diagnostics name a node (input ids out of range print as "%?").
std::string node_header(const Graph& g, const Node& n);

/// The name rules above, for builders that want to check before adding.
bool is_valid_value_name(std::string_view name);
bool is_valid_graph_name(std::string_view name);

}  // namespace autofuse
