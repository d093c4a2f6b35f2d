// The cost figures fusion ranks its decisions by: bytes of memory traffic per value, and a rough per-element
// compute weight per op used to bound recomputation.
#pragma once

#include <cstdint>

#include "autofuse/ir/graph.h"

namespace autofuse {

/// The binding byte figures are evaluated at: every size symbol of `g` set to `size` (default 1024; symbolic sizes
/// have no value at fusion time, so a representative one is used, and reported).
Bindings representative_binding(const Graph& g, int64_t size = 1024);

/// The most value_bytes returns (2^50 bytes, 1 PiB): sizes past it saturate, so that sums of byte figures over a
/// graph (up to 2^13 of them) cannot overflow int64.
inline constexpr int64_t kMaxValueBytes = int64_t{1} << 50;

/// Bytes of value `v` when materialized in memory: numel at the binding times the dtype size, saturated at
/// kMaxValueBytes. A symbol missing from the binding counts as 1024. Never negative.
int64_t value_bytes(const Graph& g, ValueId v, const Bindings& b);

/// Relative per-element compute cost of an op: 1 for cheap arithmetic, compares, casts and selects; 4 for divisions
/// and square roots; 8 for transcendental functions (exp, log, tanh, erf, pow, ...); 0 for sources and broadcast_to.
/// A rough ranking for the recompute bound, not a measurement.
int op_compute_weight(OpKind op);

}  // namespace autofuse
