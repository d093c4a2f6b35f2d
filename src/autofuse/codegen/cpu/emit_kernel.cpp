// The CPU emitter's loop structure: rows over the kept axes, one pass over the reduction axes per reduction stage,
// vector lanes along the innermost domain axis (across rows when it is kept, along the row when it is reduced).
// GCC 12 reports a false -Wrestrict inside std::string concatenation at -O3 (GCC PR 105651).
#pragma GCC diagnostic ignored "-Wrestrict"
#include "autofuse/codegen/cpu/emitter.h"

namespace autofuse {
using cpu_emit::Emitter;

bool strided_vector_operand(const LoopNest& nest, const EmitOptions& o) {
  if (nest.inner_reduction) return false;
  const auto v = static_cast<size_t>(nest.vec_axis());
  for (size_t k = 0; k < nest.operands.size() && k < o.unit_inner.size(); ++k)
    if (!o.unit_inner[k] && nest.values[static_cast<size_t>(nest.operands[k])].varies[v]) return true;
  return false;
}

std::string emit_cpu_kernel(const Graph& g, const LoopNest& nest, const EmitOptions& o) {
  return Emitter(g, nest, o).run();
}

}  // namespace autofuse
