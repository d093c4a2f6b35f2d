// The direct read of a torch tensor's view (see torch_direct.h).
#include "torch_direct.h"

#include <nanobind/nanobind.h>

#include <optional>
#include <vector>

#ifdef AUTOFUSE_TORCH_DIRECT
#include <c10/core/TensorImpl.h>
#endif

namespace autofuse::bindings {

#ifdef AUTOFUSE_TORCH_DIRECT

namespace nb = nanobind;

namespace {

// A torch.Tensor object (torch/csrc/autograd/python_variable.h, THPVariable) is a PyObject header followed by its
// at::Tensor, which is a single intrusive pointer to the c10::TensorImpl. Only that first member is read; the
// self-check below confirms the layout on real tensors before the path is used.
struct PyTensorHead {
  PyObject ob_base;
  c10::TensorImpl* impl;
};

c10::TensorImpl* impl_of(PyObject* obj) { return reinterpret_cast<PyTensorHead*>(obj)->impl; }

std::optional<DType> ir_dtype(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Bool:
      return DType::Bool;
    case c10::ScalarType::Byte:
      return DType::UInt8;
    case c10::ScalarType::Char:
      return DType::Int8;
    case c10::ScalarType::Short:
      return DType::Int16;
    case c10::ScalarType::Int:
      return DType::Int32;
    case c10::ScalarType::Long:
      return DType::Int64;
    case c10::ScalarType::Half:
      return DType::Float16;
    case c10::ScalarType::BFloat16:
      return DType::BFloat16;
    case c10::ScalarType::Float:
      return DType::Float32;
    case c10::ScalarType::Double:
      return DType::Float64;
    default:
      return std::nullopt;
  }
}

// The read itself, without the availability check (the self-check calls it before the path is enabled).
bool read_view(PyObject* obj, bool writable, HostTensor& out) noexcept {
  try {
    c10::TensorImpl* impl = impl_of(obj);
    if (impl == nullptr || !impl->is_cpu() || impl->layout() != c10::kStrided || impl->is_neg() ||
        !impl->has_storage() || !impl->dtype_initialized())
      return false;
    const caffe2::TypeMeta meta = impl->dtype();
    if (!meta.isScalarType()) return false;
    std::optional<DType> dt = ir_dtype(meta.toScalarType());
    if (!dt) return false;
    const c10::IntArrayRef sizes = impl->sizes(), strides = impl->strides();
    void* data = writable ? impl->mutable_data() : const_cast<void*>(impl->data());
    out = HostTensor::view(*dt, data, std::vector<int64_t>(sizes.begin(), sizes.end()),
                           std::vector<int64_t>(strides.begin(), strides.end()));
    return true;
  } catch (...) {  // c10::Error from a storage that refuses data access (fake / meta-like tensors): not ours
    return false;
  }
}

// One probe: the direct read of `t` agrees with what Python says about it.
bool probe_agrees(nb::handle t, bool writable) {
  HostTensor v;
  if (!read_view(t.ptr(), writable, v)) return false;
  std::vector<int64_t> sizes, strides;
  for (nb::handle s : t.attr("shape")) sizes.push_back(nb::cast<int64_t>(s));
  for (nb::handle s : t.attr("stride")()) strides.push_back(nb::cast<int64_t>(s));
  const auto ptr = nb::cast<uintptr_t>(t.attr("data_ptr")());
  return v.sizes == sizes && v.strides == strides && reinterpret_cast<uintptr_t>(v.data) == ptr;
}

// Probes: a float32 view with an offset and transposed strides, a bfloat16 tensor, an nn.Parameter, an int64 tensor.
bool self_check(nb::handle torch) {
  try {
    nb::object f32 = torch.attr("empty")(5, 7).attr("__getitem__")(nb::slice(1, 4, 1)).attr("t")();
    nb::object bf16 = torch.attr("zeros")(3, 2, nb::arg("dtype") = torch.attr("bfloat16"));
    nb::object param = torch.attr("nn").attr("Parameter")(torch.attr("ones")(4, 3));
    nb::object i64 = torch.attr("arange")(6).attr("view")(2, 3);
    HostTensor v;
    return probe_agrees(f32, false) && probe_agrees(f32, true) && probe_agrees(bf16, true) &&
           probe_agrees(param, false) && probe_agrees(i64, false) && read_view(bf16.ptr(), false, v) &&
           v.dtype == DType::BFloat16 && read_view(i64.ptr(), false, v) && v.dtype == DType::Int64;
  } catch (...) {
    if (PyErr_Occurred()) PyErr_Clear();
    return false;
  }
}

int g_state = -1;  // -1 not checked yet, 0 off, 1 on (GIL-protected)

}  // namespace

bool torch_direct_compiled() { return true; }

bool torch_direct_available() {
  if (g_state >= 0) return g_state == 1;
  PyObject* torch = PyImport_GetModule(nb::str("torch").ptr());
  if (torch == nullptr) {
    if (PyErr_Occurred()) PyErr_Clear();
    return false;  // torch not imported yet: ask again later
  }
  nb::object mod = nb::steal(torch);
  g_state = self_check(mod) ? 1 : 0;
  return g_state == 1;
}

bool torch_direct_view(PyObject* obj, bool writable, HostTensor& out) {
  return torch_direct_available() && read_view(obj, writable, out);
}

#else  // built without torch's headers: the attribute path serves every tensor

bool torch_direct_compiled() { return false; }

bool torch_direct_available() { return false; }

bool torch_direct_view(PyObject*, bool, HostTensor&) { return false; }

#endif

}  // namespace autofuse::bindings
