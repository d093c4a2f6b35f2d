// Python bindings of the tensor conversion itself, for tests and debugging: what C++ sees of a Python tensor.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "tensor_convert.h"
#include "torch_direct.h"

namespace autofuse::bindings {

void bind_tensor(nb::module_& m) {
  m.def(
      "tensor_view",
      [](nb::handle obj, bool writable) {
        HostTensor t = to_host_tensor(obj, writable, "tensor");
        nb::dict d;
        d["dtype"] = t.dtype;
        d["sizes"] = t.sizes;
        d["strides"] = t.strides;
        d["data_ptr"] = reinterpret_cast<uintptr_t>(t.data);
        d["fast"] = takes_fast_path(obj);
        return d;
      },
      nb::arg("tensor"), nb::arg("writable") = false,
      "The HostTensor view C++ gets of a torch tensor / numpy array: dict(dtype, sizes, strides (elements), "
      "data_ptr, fast: whether the attribute fast path made it rather than DLPack). No copy is made, so data_ptr "
      "equals the tensor's own.");
  m.def("torch_direct_enabled", &torch_direct_enabled,
        "Whether torch tensors are read straight from libtorch's C++ objects (src/bindings/torch_direct.h: built "
        "against torch's headers and the self-check passed) rather than through their Python attributes.");
  m.def("torch_direct_compiled", &torch_direct_compiled,
        "Whether this build has the direct torch tensor reader (CMake AUTOFUSE_TORCH_DIRECT found torch's headers).");
}

}  // namespace autofuse::bindings
