// Loop-nest construction for one kernel graph: every value is mapped onto one iteration domain D (rank r), whose axes
// are either kept (K) or reduced (R); every node lives in the full domain (varies along some R axis) or in the kept
// domain, and has a reduction stage (how many reduction levels it depends on). The CPU emitter turns this into loops:
// per kept row, one pass over R per reduction stage, then a final pass that writes full-domain outputs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "autofuse/ir/graph.h"

namespace autofuse {

/// Where one value lives in the kernel's iteration domain.
struct ValuePlacement {
  /// The D axis of each of the value's own dims (value rank entries).
  std::vector<int> axis_of_dim;
  /// Per D axis: the value varies along it (it has a dim mapped there whose size is not statically 1).
  std::vector<bool> varies;
  /// True when the value does not vary along any R axis and R is not empty: computed once per kept row.
  bool kept = false;
  /// Number of reduction levels this value depends on (a var counts two: its mean, then its squares).
  int stage = 0;
  /// For a float mean over the same input as a var of the kernel (layer_norm's mean and variance, var_mean): that
  /// var, whose accumulators give this mean (corrected two-pass, docs/precision.md); its stage is the var's. -1 for
  /// every other value.
  ValueId var_of_mean = -1;
};

/// The loop nest of a kernel graph. Built by build_loop_nest(); immutable afterwards.
struct LoopNest {
  int rank = 0;                        ///< r >= 1 (a 0-d kernel gets one axis of size 1)
  Shape domain;                        ///< D sizes (symbolic), r entries
  std::vector<bool> is_reduce;         ///< per D axis: in R
  bool inner_reduction = false;        ///< the innermost axis (the vectorized one) is in R
  int num_stages = 0;                  ///< S: the highest reduction stage
  std::vector<ValuePlacement> values;  ///< per node of the graph
  /// Operand order of the compiled kernel: graph inputs (in Graph::inputs() order), then graph outputs.
  std::vector<ValueId> operands;
  int num_inputs = 0;
  /// Iota nodes: they index the domain directly, so their axis must not be merged at launch.
  std::vector<ValueId> iotas;

  std::vector<int> kept_axes() const;    ///< K axes in order
  std::vector<int> reduce_axes() const;  ///< R axes in order
  int vec_axis() const { return rank - 1; }
};

/// nullopt if the graph can become one kernel, else a sentence naming the node and the reason
/// ("%y = permute(...): layout op permute is not supported inside a kernel").
std::optional<std::string> loop_nest_unsupported_reason(const Graph& g);

/// Build the loop nest. Throws IRError with the reason of loop_nest_unsupported_reason when the graph does not fit.
LoopNest build_loop_nest(const Graph& g);

}  // namespace autofuse
