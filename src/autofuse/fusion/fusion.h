// Fusion-scope identification: partition a Graph into fusion groups (kernels, extern calls, host layout steps).
//
//   FusedGraph f = fuse(g);
//   for (const FusionGroup& k : f.groups) if (k.kind == GroupKind::Kernel) Kernel::compile(k.subgraph);
//
// Rules (see partition.h for the algorithm): vertical fusion of producer -> consumer when the consumer's iteration
// space absorbs the producer (elementwise chains, broadcasts folded into loads, elementwise prologues into reductions,
// epilogues after a reduction, including those that broadcast the reduced value back over the row); horizontal fusion
// of groups reading the same values over a compatible space; multi-output groups; no cycles; bounded recompute of cheap
// values; caps on group size and inputs; greedy by bytes of memory traffic saved. Every refusal is in the report.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "autofuse/fusion/report.h"
#include "autofuse/fusion/space.h"
#include "autofuse/ir/graph.h"

namespace autofuse {

/// What a fusion group runs as.
enum class GroupKind {
  Kernel,  ///< one generated kernel: `subgraph` is a standalone kernel graph
  Extern,  ///< one extern node (matmul, ...), run by the framework
  Host,    ///< one layout op (reshape, permute, slice, concat) run on the host as a view or a copy
};
std::string_view group_kind_name(GroupKind k);  ///< "kernel", "extern", "host"

/// One step of the fused graph. Value ids refer to the original graph (FusedGraph::graph).
struct FusionGroup {
  GroupKind kind = GroupKind::Kernel;
  std::string name;                 ///< "k0", "k1", ... for kernels; "e0", ... externs; "h0", ... host steps
  std::vector<ValueId> nodes;       ///< nodes computed in this group, ascending (recomputed copies included)
  std::vector<ValueId> recomputed;  ///< the subset of `nodes` also computed elsewhere (cheap values duplicated)
  std::vector<ValueId> inputs;      ///< values read from outside (graph inputs or other groups' outputs), ascending
  std::vector<ValueId> outputs;     ///< values this group writes that are needed outside, ascending
  /// The subset of `inputs` read for their sizes only: graph inputs added so that the kernel can bind every size
  /// symbol it uses from its inputs' shapes (e.g. a broadcast of a [s1] bias to [s0, s1] learns s0 from one).
  std::vector<ValueId> size_inputs;
  /// Kernel: a standalone Graph whose inputs are `inputs` (same names) and outputs `outputs` (same order).
  /// Extern / Host: a Graph with the single node and its inputs, for printing and for running the step.
  Graph subgraph;
  IterSpace space;            ///< Kernel only: the loop nest's domain and reduction axes
  int64_t bytes_fused = 0;    ///< inputs read + outputs written, at the report's binding
  int64_t bytes_unfused = 0;  ///< the same, summed over its ops run one by one
};

/// The partition of a graph: groups in a topological order (every group after the groups it reads from).
struct FusedGraph {
  Graph graph;  ///< the original graph (a copy)
  std::vector<FusionGroup> groups;
  FusionReport report;
  /// Index into `groups` of the group that writes value v; -1 for graph inputs and for values only recomputed.
  std::vector<int> producer;
  int num_kernels() const { return report.num_kernels; }
  /// Text form: every group's sub-graph as IR text, headed by its kind and I/O, then the report.
  std::string str() const;
};

/// Knobs of the partitioner. Defaults are what the pipeline uses.
struct FusionOptions {
  bool vertical = true;       ///< fuse producer -> consumer
  bool horizontal = true;     ///< fuse groups that read the same values
  int max_group_nodes = 64;   ///< size cap: ops per kernel (recomputed copies included)
  int max_group_inputs = 16;  ///< input cap: values a kernel reads
  /// Bounded recompute: a value whose ops cost at most this much per element (cost.h weights, summed along its
  /// chain of cheap ops back to materialized values), and whose chain reads at most 1/8 more bytes than the value,
  /// may be duplicated into each consumer group instead of being written once and read by each. 0 disables recompute of
  /// computed values (sources and broadcast_to are always folded into their consumers).
  int recompute_max_weight = 2;
  int64_t representative_size = FusionReport::kRepresentativeSize;  ///< value of every symbol for byte figures
  /// Concats become kernel groups that fuse with their producers and consumers (codegen splits such a kernel along
  /// the concat axis, schedule/concat_split.h) when kernel_check accepts them; off: every concat is a host step.
  bool fuse_concat = true;
  /// The code generator's verdict on a candidate kernel graph: nullopt if it compiles to one kernel, else the reason.
  /// Empty: only fusion's own rules (space.h) apply. The pipeline passes codegen's kernel_unsupported_reason.
  std::function<std::optional<std::string>(const Graph&)> kernel_check;
  /// Symbols the caller binds from scalar arguments (VerifyOptions::given_symbols): the pipeline's verifiers count
  /// them as bound; fusion itself does not look at them.
  std::set<std::string> given_symbols;
};

/// Partition `g` (verified, nodes in topological order) into fusion groups. Dead nodes (not reaching an output) are
/// dropped. Throws IRError if the graph has no outputs.
FusedGraph fuse(const Graph& g, const FusionOptions& o = {});

}  // namespace autofuse
