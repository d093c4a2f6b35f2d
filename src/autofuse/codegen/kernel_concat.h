// Internal to codegen: the parts of a Kernel whose graph has concats (kernel_concat.cpp).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "autofuse/codegen/kernel.h"
#include "autofuse/schedule/concat_split.h"

namespace autofuse {

/// A kernel with concats: its split (schedule/concat_split.h) and one ordinary Kernel per segment, run on slices of
/// the operands along the concat axis, all segments in one parallel launch (Kernel::run_concat).
struct Kernel::ConcatParts {
  ConcatSplit split;
  std::vector<std::shared_ptr<Kernel>> parts;  ///< per segment
  /// Segment widths when all are constants (no symbol binding at launch), else nullopt.
  std::optional<std::vector<int64_t>> const_widths;
  /// The symbols the concat launch itself evaluates (output shapes, widths) and those segments take from it (their
  /// given symbols other than their width symbols, which run_concat sets from the widths), bound by
  /// Kernel::bind_concat from the input sizes and the caller's values of the kernel's given symbols.
  std::set<std::string> need;
};

}  // namespace autofuse
