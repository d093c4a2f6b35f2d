// Reading a CPU torch.Tensor's view straight from libtorch's C++ tensor object, without any Python attribute call:
// the kernel-launch hot path (one read per operand per launch).
//
// Why: the attribute path (tensor_convert.cpp, torch_fast_view) makes seven Python-level calls per tensor (dtype,
// is_cpu, layout, is_neg(), shape, stride(), data_ptr()). Warm they cost about 0.5 us together, but inside a model
// every launch follows a matmul that has evicted the caches and TLBs, and then each of those calls runs its own cold
// code path: about 5 us per tensor, 10 us per launch with one input and one output (measured after an addmm over
// [32,768]x[768,3072], launch6, 2026-11-29; docs/runtime.md). The direct read touches a few fields of one object.
//
// Compiled in only when the extension is built against the installed torch's headers (CMake option
// AUTOFUSE_TORCH_DIRECT, on when the building Python imports torch with the C++11 ABI and ships c10 headers); else
// every function here reports "not available" and the attribute path is used. At first use a self-check compares the
// direct read with the attribute path on probe tensors (a transposed, offset float32 view, a bfloat16 tensor and an
// nn.Parameter); any difference turns the direct path off for the process, so a torch whose object layout differs
// from the one compiled against falls back instead of reading garbage.
#pragma once

#include <Python.h>

#include "autofuse/ir/tensor.h"

namespace autofuse::bindings {

/// True when this build has the direct path (compiled against torch's headers: CMake AUTOFUSE_TORCH_DIRECT).
bool torch_direct_compiled();

/// True when the direct path is compiled in and passed its self-check (runs the check on first call; needs the GIL
/// and an imported torch, else returns false without caching the answer).
bool torch_direct_available();

/// Fills `out` with a borrowed view (owner left empty) of `obj` read from its C++ tensor: dtype, sizes, strides
/// (elements) and data pointer (the mutable pointer when `writable`, which un-shares a copy-on-write storage as
/// tensor.data_ptr() does). `obj` must already be known to be an exact torch.Tensor or torch.nn.Parameter (the caller
/// checks the type). Returns false, leaving `out` untouched, when the direct path is unavailable or the tensor is not
/// a CPU, strided tensor of an IR dtype without the negative bit, or has no readable storage; the caller then takes
/// the attribute / DLPack path, which also reports the errors. Never throws. GIL held.
bool torch_direct_view(PyObject* obj, bool writable, HostTensor& out);

}  // namespace autofuse::bindings
