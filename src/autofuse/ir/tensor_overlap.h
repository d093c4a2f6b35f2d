// Whether two tensor views share memory: the check a call makes before writing its outputs (Kernel.run's bindings),
// so that an output overlapping an input or another output is refused instead of computed wrong.
//
//   memory_overlap(x, x)                        Overlap::Same     (the exact in-place alias)
//   memory_overlap(x, x.t())                    Overlap::Partial
//   memory_overlap(x[:, :32], x[:, 32:])        Overlap::None     (interleaved in the extent, no shared element)
//   memory_overlap(x[:, ::2], x[:, 1::2])       Overlap::None
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autofuse/ir/tensor.h"

namespace autofuse {

/// How two views' elements share memory.
enum class Overlap {
  None,     ///< no byte of an element of one is a byte of an element of the other
  Same,     ///< the same view: data pointer, dtype and sizes equal, strides equal in every dim of size > 1
  Partial,  ///< they share (or may share: see memory_overlap) memory without being the same view
};

/// The element span [lo, hi] (elements, relative to the data pointer; lo <= 0 <= hi) that a view of these sizes and
/// strides reaches; false, with lo = hi = 0, when a size is 0 (no elements).
bool element_span(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t& lo, int64_t& hi);

/// The bytes [lo, hi) a view's elements span, from its data pointer, sizes and strides (negative strides included):
/// lo is the lowest element's first byte, hi one past the highest element's last byte. lo == hi for a tensor with no
/// elements (a size 0), which overlaps nothing.
struct ByteExtent {
  intptr_t lo = 0, hi = 0;
  bool empty() const { return lo >= hi; }
};
ByteExtent byte_extent(const HostTensor& t);

/// How a and b (any dtypes, ranks, strides; sizes >= 0) share memory. None when their byte extents are disjoint or when
/// an exact test proves that no element of one overlaps an element of the other; that test runs when it is cheap (the
/// gcd of all byte strides separates them, as x[:, ::2] and x[:, 1::2], or, for one element size and element-aligned
/// pointers, the strides of both nest so that each element has one decomposition, as x[:, :32] and x[:, 32:]).
/// Otherwise Partial, conservatively: a pair it cannot decide is reported as sharing memory. Never throws.
Overlap memory_overlap(const HostTensor& a, const HostTensor& b);

/// Why a call that reads `inputs` and writes `outputs` would compute wrong values, or "" when it would not: an output
/// that shares memory with an input without being the same view (output 0 = x.t() for input 0 = x; `Same` is the
/// in-place alias, allowed), or with another output (even as the same view: both would be written). The message names
/// the two operands: "output 0 overlaps input 0 (partially); write to a separate tensor". Costs one byte extent per
/// pair (O(rank)) when nothing overlaps.
std::string operand_overlap_error(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs);

}  // namespace autofuse
