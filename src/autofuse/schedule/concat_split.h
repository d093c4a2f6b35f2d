// Kernels that contain concat: the output's iteration is split along the concat axis into one segment per concat
// source, and each segment is an ordinary elementwise kernel graph (no concat) run on slices of the operands.
//
// Example (rotary embedding, rotate_half): y = q*cos + concat(-q2, q1, axis=-1)*sin, q2 / q1 the halves of q (views
// read by the kernel as inputs). Segment 0 computes y[..., :d/2] = q[..., :d/2]*cos[..., :d/2] + (-q2)*sin[..., :d/2];
// segment 1 computes y[..., d/2:] = q[..., d/2:]*cos[..., d/2:] + q1*sin[..., d/2:]. Each segment vectorizes as any
// elementwise kernel does; no per-element select on the concat index. Several concats are allowed when they split the
// same domain axis at the same points (the rotary of q and of k in one kernel).
//
// Terms (per kernel graph g, domain rank r = the largest rank in g, concat axis D of the domain):
//  - a node is *local to segment j* when it is an ancestor of the j-th source of a concat (it has the source's width
//    S_j along D, or is broadcast along D);
//  - every other node is *full* (width N = sum of S_j along D, or broadcast along D).
// Segment j's graph keeps the full nodes (inputs that are not broadcast along D become inputs of width S_j, read at
// offset S_0 + ... + S_{j-1}), the nodes local to j, and maps each concat to its j-th source.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "autofuse/ir/graph.h"

namespace autofuse {

/// One segment of a split kernel graph.
struct ConcatSegment {
  Graph graph;  ///< elementwise kernel graph, no concat; inputs and outputs as listed below
  /// Per input of `graph` (Graph::inputs() order): the index of the parent graph input it reads.
  std::vector<int> parent_input;
  /// Per input of `graph`: the dim of the parent input sliced to this segment's range along the concat axis, or -1
  /// when the input is read whole (local to this segment, or broadcast along the axis).
  std::vector<int> input_dim;
  /// The symbol standing for this segment's width along the concat axis in `graph` (`cw<j>`, a fresh name), or empty
  /// when the width is a constant. The parent evaluates the width (ConcatSplit::widths) and gives the segment its value
  /// (Kernel::run_concat), so a segment whose inputs have no extent along the axis (a broadcast) still knows it.
  std::string width_symbol;
};

/// A kernel graph split along its concat axis (see the file comment).
struct ConcatSplit {
  int domain_axis = 0;                  ///< D
  std::vector<Expr> widths;             ///< S_j, one per segment (symbolic)
  std::vector<ConcatSegment> segments;  ///< one per concat source position
  /// Per parent output (Graph::outputs() order): its dim along D (every output is full and not broadcast along D).
  std::vector<int> output_dim;
};

/// Whether g has a concat node.
bool has_concat(const Graph& g);

/// Split g (a kernel graph with at least one concat: inputs, sources, elementwise, broadcast_to and concat nodes) into
/// segments. Returns nullopt and sets *why (when non-null) to a sentence naming the node when g cannot be split: a
/// reduction, iota or layout op other than concat / broadcast_to; concats along different domain axes or at different
/// split points; a concat whose source depends on another concat; a value wider than a segment that is both a concat
/// source's ancestor and read by full-width values; an output that is a concat source's ancestor or broadcast along
/// the concat axis.
std::optional<ConcatSplit> plan_concat_split(const Graph& g, std::string* why = nullptr);

}  // namespace autofuse
