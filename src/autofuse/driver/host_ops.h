// Host steps of a fused graph: layout ops run natively on HostTensors, as views where the strides allow, else as
// copies.
#pragma once

#include <vector>

#include "autofuse/ir/graph.h"
#include "autofuse/ir/tensor.h"

namespace autofuse {

/// Copy every element of src into dst (same dtype and sizes, any strides on both sides). Throws IRError on a
/// dtype or size mismatch.
void copy_into(const HostTensor& src, const HostTensor& dst);

/// A new contiguous tensor owning a copy of t's elements.
HostTensor contiguous_copy(const HostTensor& t);

/// Run one layout node (reshape, permute, slice, concat; broadcast_to too) on its input tensors, with the graph's
/// symbols bound by `b`. permute, slice and broadcast_to return views sharing the input's storage (and owner);
/// reshape returns a view when the input is contiguous, else a contiguous copy; concat returns a new tensor.
/// Throws IRError "%name = op: ..." when the actual sizes do not fit the node (slice bounds, reshape numel, ...).
HostTensor run_host_op(const Node& n, const std::vector<HostTensor>& inputs, const Bindings& b);

}  // namespace autofuse
