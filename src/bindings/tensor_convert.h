// Zero-copy conversion of Python tensors (torch.Tensor, numpy.ndarray, anything exporting DLPack or the buffer
// protocol) into HostTensor views, shared by every binding that passes tensors to C++.
//
// The view borrows the tensor's memory: sizes and strides are copied (in elements, any strides, 0-size allowed),
// the data is not. HostTensor::owner keeps the imported DLPack handle, and through it the memory, alive while any copy
// of the view exists. Supported element types: bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32,
// float64. A torch tensor that requires grad is viewed through .detach() (same memory). CPU memory only.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <optional>
#include <string>
#include <vector>

#include "autofuse/ir/dtype.h"
#include "autofuse/ir/tensor.h"

namespace autofuse::bindings {

namespace nb = nanobind;

/// The IR dtype of a DLPack element type, nullopt for types the IR lacks (complex, float8, vector lanes).
std::optional<DType> dtype_from_dlpack(nb::dlpack::dtype t);
/// The DLPack element type of an IR dtype.
nb::dlpack::dtype dtype_to_dlpack(DType t);

/// A HostTensor view of `obj`, without copying. `writable`: the caller will write through the view (read-only numpy
/// arrays are refused then, and so are tensors whose elements overlap: a dim of size > 1 with stride 0, as
/// torch.zeros(1, 1).expand(4096, 1), or two such dims with one stride). `what` names the argument in errors
/// ("input 2").
/// Throws nb::type_error when obj is not an array/tensor, nb::value_error for an unsupported dtype or a non-CPU
/// device; the message starts with `what`.
HostTensor to_host_tensor(nb::handle obj, bool writable, const char* what);

/// Whether to_host_tensor reads obj's view off the tensor itself (the fast path for exact torch.Tensor and
/// torch.nn.Parameter objects on the CPU, strided, of an IR dtype, not negated: directly from the C++ object when
/// torch_direct_enabled(), else from its attributes) rather than through DLPack. For tests.
bool takes_fast_path(nb::handle obj);

/// to_host_tensor over a sequence (list or tuple); `what` is "input" / "output", errors say "input 2: ...".
/// An item may also be a view spec `(tensor, (sizes, strides, offset))` (ints, in elements): the view of the tensor's
/// memory with those sizes and strides starting `offset` elements past its data pointer, as torch's
/// `_reinterpret_tensor(tensor, sizes, strides, offset)` would make it (the generated program passes views this way
/// instead of building a torch tensor per view); nb::value_error when it reaches outside the tensor's own elements.
/// `borrow`: the views of plain torch tensors get no owner, so they are valid only while `seq` holds its tensors: for
/// a call that uses the views and returns (Kernel.run), with a sequence no other thread changes meanwhile.
std::vector<HostTensor> to_host_tensors(nb::handle seq, bool writable, const char* what, bool borrow = false);

/// Refuses a call that would write `outputs` over memory it reads or writes through another operand: an output sharing
/// memory with an input (unless it is exactly that input's view: same data pointer, dtype, sizes and strides, the
/// in-place call, allowed) or with another output (ir/tensor_overlap.h operand_overlap_error; interleaved views with no
/// common element, as x[:, ::2] and x[:, 1::2], pass where that test can tell). Throws nb::value_error naming both
/// operands, prefixed with `what` and `name` ("kernel add: output 0 overlaps input 0 (partially) ...; write to a
/// separate tensor"). Builds no string unless it throws (Kernel.run's hot path).
void check_disjoint_operands(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs,
                             const char* what, const std::string& name = {});

/// Whether torch tensors are read directly from libtorch's C++ objects (torch_direct.h) in this build and process.
bool torch_direct_enabled();

/// The dtype argument of a binding: an autofuse DType, a name ("f32", "float32", "bfloat16"), or a torch / numpy
/// dtype (read by its str(), "torch.float32" / "float32"). Throws nb::value_error naming the text on failure.
DType to_dtype(nb::handle obj);

/// The Python type name of an object ("list", "torch.Tensor"), for error messages.
inline std::string py_type_name(nb::handle obj) { return nb::inst_name(obj).c_str(); }

}  // namespace autofuse::bindings
