// The greedy partitioner: node sets of the fusion groups, before they are materialized as sub-graphs.
//
// Algorithm. (1) Drop dead nodes. (2) Classify: extern nodes and layout ops become single-node Extern / Host groups;
// sources and broadcast_to are *inline* (folded into every group that reads them: a constant in a register, a
// broadcast as a stride-0 load); a cheap elementwise value with several consumers is inline too when its chain of
// cheap single-use ops costs at most FusionOptions::recompute_max_weight per element and reads at most 1/8 more bytes
// than the value itself (bounded recompute; the chain is recomputed with it); every other op starts as a one-node
// kernel group. An inline value that is a graph output or read by an extern / host step also gets a one-node group that
// writes it. (3) Candidates are pairs of kernel groups joined by an edge (vertical) or reading a common value
// (horizontal); each is scored by the bytes of memory traffic the merge saves: traffic(A) + traffic(B) -
// traffic(A u B), where traffic = bytes of values read from outside + bytes of values needed outside, at the
// representative binding. (4) Repeatedly take the best legal candidate and merge it, until none is left: vertical
// pairs before horizontal ones, then by bytes saved (ties: closer in topological order, then lower ids). Legal: the
// caps, no cycle in the group graph, the iteration-space rules (space.h) and the code generator's verdict. A refused
// pair is remembered with its reason; refusals whose two sides end up in one group anyway are dropped from the report
// at the end. The greedy order follows what fusion schedulers (XLA, Inductor, the original Autofuse) do: fuse the most
// profitable pair first, re-score, repeat.
#pragma once

#include <vector>

#include "autofuse/fusion/fusion.h"

namespace autofuse {

/// One group as a node set.
struct PartGroup {
  GroupKind kind = GroupKind::Kernel;
  std::vector<ValueId> primary;  ///< nodes this group is responsible for writing if needed outside (ascending)
  std::vector<ValueId> members;  ///< primary + inline nodes pulled in (ascending)
};

/// Values read from outside and values needed outside, for a node set, given which groups contain each node.
struct GroupIO {
  std::vector<ValueId> inputs, outputs;
};

/// The partitioner's result.
struct Partition {
  std::vector<PartGroup> groups;             ///< the final groups, any order
  std::vector<bool> is_inline;               ///< per node: folded into the groups that read it
  std::vector<bool> live;                    ///< per node: reaches a graph output
  std::vector<bool> own_step;                ///< per node: runs as its own extern / host step
  std::vector<std::vector<int>> containing;  ///< per node: indices into `groups` of the groups computing it
  std::vector<FusionDecision> merges, refusals;
};

/// Run the partitioner (see the file comment). `binding` values the symbols for byte figures.
Partition partition_graph(const Graph& g, const FusionOptions& o, const Bindings& binding);

/// Inputs and outputs of the node set `members` (ascending) whose own nodes are `primary` (ascending; the rest are
/// inline values it recomputes), where `containing[v]` lists the groups computing v, `own_step[v]` says v runs as an
/// extern / host step of its own (an inline value it reads must then be written), and `self` are the group ids
/// standing for this set (users in them are internal).
GroupIO group_io(const Graph& g, const std::vector<ValueId>& members, const std::vector<ValueId>& primary,
                 const std::vector<bool>& is_inline, const std::vector<bool>& live, const std::vector<bool>& own_step,
                 const std::vector<std::vector<ValueId>>& users, const std::vector<std::vector<int>>& containing,
                 const std::vector<int>& self);

/// Bytes a step reads for value v: a broadcast_to reads its source, a 0-d constant nothing, others their size.
int64_t read_bytes(const Graph& g, ValueId v, const Bindings& b);

/// Build the standalone kernel graph of a node set: inputs named as the values they stand for, then the members,
/// outputs in the given order. Throws IRError if the set is not closed (a member reads a value neither in `inputs`
/// nor in `members`).
Graph build_subgraph(const Graph& g, const std::string& name, const std::vector<ValueId>& members,
                     const std::vector<ValueId>& inputs, const std::vector<ValueId>& outputs);

}  // namespace autofuse
