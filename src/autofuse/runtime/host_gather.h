// Row gather on the host: aten.embedding's forward (out[i..., :] = table[indices[i...], :]) as one plain C++ loop,
// what the generated program calls instead of ATen's embedding (python/autofuse/program_embedding.py).
//
// Why: inside a model the embedding is the first op after the previous call's vocabulary matmul, when every code path
// runs cold; ATen's embedding (dispatcher, index_select, TensorIterator) then takes 40-55 us for 32 rows of a LLaMA-
// style table, where the row copies themselves take well under a microsecond (docs/demo.md, session 9, ovh10).
#pragma once

#include "autofuse/ir/tensor.h"

namespace autofuse {

/// Copies rows of `table` into `out`: for every multi-index i of `indices` (row-major order),
/// out[i..., :] = table[indices[i...], :]. Bit-exact (a byte copy of each element).
///
/// table: rank 2, [V, D], any dtype, any strides. indices: dtype i64 or i32, any rank (0 allowed) and strides.
/// out: indices' sizes followed by D, table's dtype, any strides (written only, never read).
/// Every index is checked (0 <= index < V) before anything is written.
/// Throws std::out_of_range "index out of range in self: index I, table of V rows" (eager's text, then the detail) for
/// an index outside [0, V), and std::invalid_argument naming the operand for a rank, dtype or size mismatch.
void gather_rows(const HostTensor& table, const HostTensor& indices, const HostTensor& out);

}  // namespace autofuse
