// Outer (cross-row) reductions: a kernel whose rows loop computes the usual per-row (inner) reductions and full
// outputs, and also reduces some values over ALL the row axes: the batch mean of cross-entropy's per-row losses
// (a scalar), layer-norm backward's grad_weight / grad_bias (sums over the rows of [rows, D] values: a [D] vector).
//
// The kernel graph g is split in two parts:
//   - the main part: every node except the outer reductions and what depends on them. It is an ordinary loop nest
//     (loop_nest.h) with an inner reduction (its reduced axes R include the vectorized innermost axis); its outputs are
//     g's outputs computed there, then the inputs of the outer reductions.
//   - the outer part: the outer reductions, each reducing exactly the kept (row) axes K of the main nest, and an
//     epilogue of elementwise ops on their results (and on constants and 0-d graph inputs), e.g. CE's division by the
//     number of valid rows, or casts.
// Each outer reduction reads either a kept value (one number per row: a scalar partial) or a full value varying along
// every axis of the domain (a partial vector over R, in row-major order). The launcher (codegen/kernel_outer.cpp)
// splits the rows into a fixed number of chunks that depends on the sizes only, gives each chunk its own partials (f64
// for float inputs, int64 for integer/bool ones), combines them in chunk order (deterministic, independent of the
// thread count and timing), rounds to the reduction's dtype, and runs the epilogue with the reference interpreter.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "autofuse/ir/graph.h"
#include "autofuse/schedule/loop_nest.h"

namespace autofuse {

/// One outer reduction of a split kernel graph.
struct OuterReduction {
  ValueId node = -1;        ///< the reduction, in the original graph
  ValueId input = -1;       ///< its input, as a value of OuterPlan::main
  OpKind op = OpKind::Sum;  ///< sum, mean, amax or amin
  bool full = false;        ///< the input varies along R: one partial per R element (row-major); else one per row
  bool integer = false;     ///< partials are int64 (integer / bool input); else f64
  int epilogue_input = -1;  ///< index of this reduction among OuterPlan::epilogue's inputs
};

/// Where one output of the original graph comes from.
struct OuterOutputSource {
  enum Kind { Main, Reduction, Epilogue } kind = Main;
  int index = 0;  ///< Main: operand index among the nest's outputs; Reduction: into reductions; Epilogue: output index
};

/// The split of a kernel graph for the outer-reduction kernel kind.
struct OuterPlan {
  Graph main;                              ///< the row part; same inputs as the original, in the same order
  LoopNest nest;                           ///< of `main`; operands: inputs, real outputs, one per outer reduction
  int num_real_outputs = 0;                ///< operands [num_inputs, num_inputs + num_real_outputs) are g's outputs
  std::vector<OuterReduction> reductions;  ///< operand num_inputs + num_real_outputs + i is reductions[i]'s input
  /// The epilogue: inputs are the outer reductions (epilogue_input order), then the 0-d graph inputs it reads
  /// (epilogue_graph_inputs: their indices among the original graph's inputs); outputs are the original graph's
  /// outputs computed by epilogue ops (not the reductions themselves).
  Graph epilogue;
  std::vector<int> epilogue_graph_inputs;
  std::vector<OuterOutputSource> output_sources;  ///< per output of the original graph
  std::vector<int> kept_axes, reduce_axes;        ///< K (reduced by the outer reductions) and R of the main nest
};

/// nullopt if g can run as an outer-reduction kernel (a plan exists), else why not. Meant for graphs that are not an
/// ordinary loop nest (loop_nest_unsupported_reason(g) is set); for those it explains the first rule broken.
std::optional<std::string> outer_plan_unsupported_reason(const Graph& g);

/// The plan, or nullopt (with the reason in *why when given).
std::optional<OuterPlan> plan_outer_reductions(const Graph& g, std::string* why = nullptr);

}  // namespace autofuse
