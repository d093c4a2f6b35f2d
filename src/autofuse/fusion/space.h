// Iteration-space rules for one kernel: which sets of nodes can run as one loop nest.
//
// A kernel iterates over one full domain D (the broadcast of its full-domain values; rank r). Its reductions all
// reduce ONE axis set R of D, each reading a value whose shape is exactly D. Every value then lives in D (possibly
// broadcast: a [s1] bias read inside a [s0, s1] domain) or in the kept domain K (D with the axes of R reduced: keepdim
// form, size 1 on R, or dropped form, rank r - |R|). Dropped-form values may only meet other dropped-form values or
// 0-d values: NumPy's right-aligned broadcasting would otherwise pair their axes with the wrong axes of D. Values the
// kernel writes must have the shape of D or of K. This mirrors the code generator's contract
// (kernel_unsupported_reason in codegen/kernel.h), which has the last word.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "autofuse/ir/graph.h"

namespace autofuse {

/// The loop nest of a would-be kernel.
struct IterSpace {
  Shape domain;                      ///< D
  std::vector<int64_t> reduce_axes;  ///< R, normalized (sorted, unique); empty when there is no reduction
  bool has_reduce = false;
  /// Kernels with cross-row reductions (schedule/outer_reduce.h): the row axes K those reductions reduce (every axis
  /// of D not in R). Empty otherwise.
  std::vector<int64_t> outer_axes;
};

/// Why a node set cannot be one kernel: a reason code (nf::k...) and a sentence.
struct SpaceRefusal {
  std::string code;
  std::string message;
};

/// Check that `members` (node ids of g, ascending; sources, elementwise, broadcast_to and reduce ops only) can run as
/// one kernel writing `outputs` (a subset of members). On success fills `out` (if non-null) and returns nullopt;
/// otherwise returns the first rule broken (NF-DOMAIN, NF-REDUCE-AXES or NF-KEPT-MIX) with a sentence naming the
/// values, shapes and axes concerned. A set that breaks those rules is still accepted when the code generator can run
/// it as one kernel with cross-row reductions (plan_outer_reductions in schedule/outer_reduce.h: per-row reductions
/// plus reductions over all the rows, e.g. cross-entropy's batch mean or layer norm's weight / bias gradients).
std::optional<SpaceRefusal> check_space(const Graph& g, const std::vector<ValueId>& members,
                                        const std::vector<ValueId>& outputs, IterSpace* out = nullptr);

/// "[0, 1]"
std::string axes_str(const std::vector<int64_t>& axes);

/// True if both shapes have the same rank and every pair of sizes is provably equal.
bool shapes_equal(const Shape& a, const Shape& b);

}  // namespace autofuse
