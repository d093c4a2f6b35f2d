// A whole graph compiled for the host: fused into groups, each kernel group compiled to native code, run in
// topological order with host layout steps (views or copies) and extern calls (through a callback) in between.
//
//   CompiledGraph cg = CompiledGraph::compile(parse_graph(text));
//   std::vector<HostTensor> outs = cg.run({x, w});
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autofuse/driver/pipeline.h"
#include "autofuse/ir/tensor.h"

namespace autofuse {

class Kernel;

/// Runs one extern node (matmul, ...): given the node and its input tensors, returns its output (a tensor of the
/// node's dtype and the sizes of its shape under the current binding; any strides).
using ExternFn = std::function<HostTensor(const Node& node, const std::vector<HostTensor>& inputs)>;

/// Options of CompiledGraph::compile.
struct CompileGraphOptions {
  FusionOptions fusion = default_fusion_options();
  /// Runs extern steps. Unset: run() throws IRError naming the extern node when it reaches one.
  ExternFn extern_fn;
  /// A kernel group that fails to compile: true (default when the environment has AUTOFUSE_STRICT=1) throws;
  /// false runs that group with the reference interpreter and prints a warning on stderr.
  bool strict = strict_from_env();
  static bool strict_from_env();
  /// Run kernel groups on the reference interpreter instead of compiling them: the fused schedule with exact
  /// reference arithmetic (a reference mode for tests and debugging; nothing is compiled).
  bool use_interpreter = false;
};

/// A graph compiled to a sequence of steps. Immutable after compile; run() may be called concurrently.
class CompiledGraph {
 public:
  /// Fuse g (run_fusion_pipeline) and compile every kernel group (Kernel::compile). Throws IRError on an invalid
  /// graph; in strict mode rethrows a kernel's compile error, prefixed with the group's name.
  static CompiledGraph compile(const Graph& g, const CompileGraphOptions& o = {});

  /// Run on inputs given in Graph::inputs() order (any strides). Returns one new contiguous tensor per graph output,
  /// owning its storage. `given` (may be null): values of size symbols the input sizes do not determine (an input
  /// dim of s0*s1; `autofuse run --shape`), seeded before the input sizes bind and checked against them. Throws
  /// IRError on inputs that do not fit the graph or contradict `given`, or on an extern step without extern_fn.
  std::vector<HostTensor> run(const std::vector<HostTensor>& inputs, const Bindings* given = nullptr) const;

  const FusedGraph& fused() const { return *fused_; }
  const Graph& graph() const { return fused_->graph; }
  /// The compiled kernel of group i (null for extern / host groups and for kernels running on the interpreter).
  std::shared_ptr<const Kernel> kernel(size_t group) const { return steps_.at(group).kernel; }
  /// Kernel groups that failed to compile and run on the interpreter (non-strict mode): "k3: reason".
  const std::vector<std::string>& fallbacks() const { return fallbacks_; }

 private:
  struct Step {
    std::shared_ptr<const Kernel> kernel;  ///< null for extern / host steps and interpreter fallbacks
  };
  std::shared_ptr<const FusedGraph> fused_;
  std::vector<Step> steps_;
  std::vector<std::string> fallbacks_;
  ExternFn extern_fn_;
};

}  // namespace autofuse
