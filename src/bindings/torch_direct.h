// Reading a CPU torch.Tensor's view straight from libtorch's C++ tensor object, without any Python attribute call:
// the kernel-launch hot path (one read per operand per launch).
//
// Why: the attribute path (tensor_convert.cpp, torch_fast_view) makes seven Python-level calls per tensor (dtype,
// is_cpu, layout, is_neg(), shape, stride(), data_ptr()). Warm they cost about 0.5 us together, but inside a model
// most launches run soon after a matmul, and after one every code path runs cold (torch.empty(32, 768): 0.7 us back
// to back, 11 us after an addmm over [32,768]x[768,3072], 49 us after the GPT-2 vocabulary matmul; no page faults,
// the same with OMP_WAIT_POLICY=passive or one thread). Then the conversion took 10.7 us per launch with one input and
// one output; read directly, 2.9 us (launch6, 2026-11-29, quiet machine; docs/demo.md, inference session 6).
//
// Compiled in only when the extension is built against the installed torch's headers (CMake option
// AUTOFUSE_TORCH_DIRECT, on when the building Python imports torch with the C++11 ABI and ships c10 headers); else
// every function here reports "not available" and the attribute path is used. At first use a self-check compares
// the direct read with what Python reports (shape, stride(), data_ptr()) on probe tensors (a transposed, offset
// float32 view, a bfloat16 tensor, an nn.Parameter, an int64 tensor); any difference turns the direct path off for
// the process, so a torch whose object layout differs from the one compiled against falls back instead of reading
// garbage.
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
