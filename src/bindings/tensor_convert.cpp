// Zero-copy tensor conversion for the bindings; see tensor_convert.h.
#include "tensor_convert.h"

#include <nanobind/stl/string.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <memory>

#include "autofuse/ir/tensor_overlap.h"
#include "torch_direct.h"

namespace autofuse::bindings {

namespace {

using dl_code = nb::dlpack::dtype_code;

// Read-only and writable imports: the read-only form also accepts read-only numpy arrays.
using ROArray = nb::ndarray<nb::ro, nb::device::cpu>;
using RWArray = nb::ndarray<nb::device::cpu>;

// str(h) as Python computes it (nb::str(h) only borrows h when it is not already a str, and c_str() is then null).
std::string py_str(nb::handle h) { return nb::cast<std::string>(nb::module_::import_("builtins").attr("str")(h)); }

// Import obj as a DLPack array without copying; falls back to obj.detach() for torch tensors that require grad
// (their __dlpack__ refuses to export). False if obj is not an array at all.
template <typename Array>
bool import_array(nb::handle obj, Array& out, nb::object& detached) {
  if (nb::try_cast(obj, out, /*convert=*/false)) return true;
  if (nb::hasattr(obj, "requires_grad") && nb::hasattr(obj, "detach") && nb::cast<bool>(obj.attr("requires_grad"))) {
    detached = obj.attr("detach")();
    return nb::try_cast(detached, out, /*convert=*/false);
  }
  return false;
}

// What numpy's DLPack export refuses in obj, a numpy.ndarray: a dtype it has no DLPack code for (object, str,
// datetime, structured), a non-native byte order, or a byte stride that is not a whole number of items. "" when obj
// is not an ndarray (numpy is never imported here) or none of these applies.
std::string numpy_import_problem(nb::handle obj) {
  PyObject* np = PyImport_GetModule(nb::str("numpy").ptr());
  if (np == nullptr) {
    if (PyErr_Occurred()) PyErr_Clear();
    return "";
  }
  nb::object mod = nb::steal(np);
  if (!nb::isinstance(obj, mod.attr("ndarray"))) return "";
  nb::object dt = obj.attr("dtype");
  const std::string dts = py_str(dt), kind = py_str(dt.attr("kind"));
  // kind + item size of the dtypes kernels take (float128 / complex256 have kind f / c but no DLPack code)
  const std::string ks = kind + std::to_string(nb::cast<int64_t>(dt.attr("itemsize")));
  static const char* const kSupported[] = {"b1", "u1", "i1", "i2", "i4", "i8", "f2", "f4", "f8"};
  if (std::find(std::begin(kSupported), std::end(kSupported), ks) == std::end(kSupported))
    return "numpy array of dtype '" + dts +
           "' is not supported; expected bool, uint8, int8, int16, int32, int64, float16, float32 or float64";
  if (!nb::cast<bool>(dt.attr("isnative")))
    return "numpy array has non-native byte order (dtype '" + dts +
           "'); convert it first, e.g. a.astype(a.dtype.newbyteorder('='))";
  const auto item = nb::cast<int64_t>(dt.attr("itemsize"));
  const nb::object strides = obj.attr("strides");
  for (nb::handle s : strides)
    if (item > 0 && nb::cast<int64_t>(s) % item != 0)
      return "numpy array has byte strides " + py_str(strides) + ", not all multiples of its item size " +
             std::to_string(item) + " (DLPack counts strides in items); copy it first, e.g. np.ascontiguousarray(a)";
  return "";
}

// Why obj could not be imported: a GPU tensor, a read-only output, a numpy array DLPack refuses, or not an array.
[[noreturn]] void import_failed(nb::handle obj, bool writable, const char* what) {
  if (nb::hasattr(obj, "device")) {
    std::string dev = py_str(obj.attr("device"));
    if (dev.rfind("cpu", 0) != 0) {
      throw nb::value_error(
          (std::string(what) + ": tensor is on device '" + dev + "'; autofuse runs on CPU tensors").c_str());
    }
  }
  if (writable && nb::hasattr(obj, "flags") && nb::hasattr(obj.attr("flags"), "writeable") &&
      !nb::cast<bool>(obj.attr("flags").attr("writeable"))) {
    throw nb::value_error((std::string(what) + ": array is read-only, but it is written to").c_str());
  }
  if (const std::string why = numpy_import_problem(obj); !why.empty())
    throw nb::value_error((std::string(what) + ": " + why).c_str());
  throw nb::type_error(
      (std::string(what) + ": expected a torch.Tensor or numpy.ndarray on the CPU, got '" + py_type_name(obj) + "'")
          .c_str());
}

template <typename Array>
HostTensor view_of(Array&& arr, const char* what) {
  std::optional<DType> dt = dtype_from_dlpack(arr.dtype());
  if (!dt) {
    nb::dlpack::dtype t = arr.dtype();
    throw nb::value_error((std::string(what) + ": unsupported element type (DLPack code " + std::to_string(t.code) +
                           ", " + std::to_string(t.bits) + " bits, " + std::to_string(t.lanes) + " lanes)")
                              .c_str());
  }
  const size_t rank = arr.ndim();
  std::vector<int64_t> sizes(rank), strides(rank);
  for (size_t i = 0; i < rank; ++i) {
    sizes[i] = static_cast<int64_t>(arr.shape(i));
    strides[i] = arr.stride(i);
  }
  HostTensor t = HostTensor::view(*dt, const_cast<void*>(static_cast<const void*>(arr.data())), std::move(sizes),
                                  std::move(strides));
  t.owner = std::make_shared<std::decay_t<Array>>(std::forward<Array>(arr));
  return t;
}

// The fast path for plain torch.Tensor objects (the backend's hot path, one call per kernel operand): the view is
// read off the tensor's own attributes (dtype, is_cpu, layout, is_neg, shape, stride(), data_ptr()), about 1 us less
// per tensor than a DLPack export (torch's __dlpack__ is Python code plus a capsule). Every check the DLPack path
// makes is kept: CPU device, strided layout, an IR dtype, and no pending negation (a neg-bit view, which DLPack
// refuses, would be read un-negated). torch.nn.Parameter (exactly that type: the model weights every compiled graph
// reads) is taken too: it adds no attribute of its own and disables __torch_function__, so the same reads give the
// same view; the DLPack path would also detach it first (about 5 us per weight). Any other subclass takes the DLPack
// path.
struct TorchFast {
  PyObject* tensor_type = nullptr;
  PyObject* parameter_type = nullptr;  // torch.nn.Parameter; nullptr when torch.nn is not importable
  PyObject* strided = nullptr;
  std::vector<std::pair<PyObject*, DType>> dtypes;
  PyObject *s_dtype, *s_is_cpu, *s_layout, *s_is_neg, *s_shape, *s_stride, *s_data_ptr;
};

// Built on first use once torch is imported (never imports it); the references are kept for the process.
const TorchFast* torch_fast() {
  static const TorchFast* cache = nullptr;
  if (cache != nullptr) return cache;
  PyObject* torch = PyImport_GetModule(nb::str("torch").ptr());
  if (torch == nullptr) {
    if (PyErr_Occurred()) PyErr_Clear();
    return nullptr;
  }
  nb::object mod = nb::steal(torch);
  auto* c = new TorchFast();
  c->tensor_type = nb::object(mod.attr("Tensor")).release().ptr();
  c->strided = nb::object(mod.attr("strided")).release().ptr();
  if (nb::hasattr(mod, "nn") && nb::hasattr(mod.attr("nn"), "Parameter"))
    c->parameter_type = nb::object(mod.attr("nn").attr("Parameter")).release().ptr();
  const std::pair<const char*, DType> names[] = {{"bool", DType::Bool},       {"uint8", DType::UInt8},
                                                 {"int8", DType::Int8},       {"int16", DType::Int16},
                                                 {"int32", DType::Int32},     {"int64", DType::Int64},
                                                 {"float16", DType::Float16}, {"bfloat16", DType::BFloat16},
                                                 {"float32", DType::Float32}, {"float64", DType::Float64}};
  for (const auto& [name, dt] : names) c->dtypes.emplace_back(nb::object(mod.attr(name)).release().ptr(), dt);
  auto intern = [](const char* s) { return PyUnicode_InternFromString(s); };
  c->s_dtype = intern("dtype");
  c->s_is_cpu = intern("is_cpu");
  c->s_layout = intern("layout");
  c->s_is_neg = intern("is_neg");
  c->s_shape = intern("shape");
  c->s_stride = intern("stride");
  c->s_data_ptr = intern("data_ptr");
  cache = c;
  return cache;
}

// Reads a Python int sequence (torch.Size or tuple) into v; false if it is not one.
bool read_int_tuple(PyObject* seq, std::vector<int64_t>& v) {
  if (!PyTuple_Check(seq)) return false;
  const Py_ssize_t n = PyTuple_GET_SIZE(seq);
  v.resize(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    const long long x = PyLong_AsLongLong(PyTuple_GET_ITEM(seq, i));
    if (x == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    v[static_cast<size_t>(i)] = x;
  }
  return true;
}

// Keeps obj (and through it the memory) alive while any copy of the view `out` does; released under the GIL.
void hold_owner(nb::handle obj, HostTensor& out) {
  out.owner = std::shared_ptr<void>(new nb::object(nb::borrow(obj)), [](void* p) {
    nb::gil_scoped_acquire gil;
    delete static_cast<nb::object*>(p);
  });
}

// The view of a plain CPU torch.Tensor, or false (the caller then takes the DLPack path, which also reports errors).
// First the direct C++ read (torch_direct.h), else the tensor's attributes. `borrow`: the caller keeps obj alive for
// as long as it uses the view, so no owner is attached (saves two allocations and a GIL round trip per tensor).
bool torch_fast_view(nb::handle obj, HostTensor& out, bool writable = false, bool borrow = false) {
  const TorchFast* c = torch_fast();
  if (c == nullptr) return false;
  const PyObject* type = reinterpret_cast<const PyObject*>(Py_TYPE(obj.ptr()));
  if (type != c->tensor_type && (c->parameter_type == nullptr || type != c->parameter_type)) return false;
  if (torch_direct_view(obj.ptr(), writable, out)) {
    if (!borrow) hold_owner(obj, out);
    return true;
  }
  auto get = [&](PyObject* name) { return nb::steal(PyObject_GetAttr(obj.ptr(), name)); };
  auto call = [&](PyObject* name) { return nb::steal(PyObject_CallMethodNoArgs(obj.ptr(), name)); };
  nb::object dt = get(c->s_dtype);
  if (!dt.is_valid()) return PyErr_Clear(), false;
  std::optional<DType> dtype;
  for (const auto& [p, d] : c->dtypes)
    if (p == dt.ptr()) dtype = d;
  if (!dtype) return false;
  nb::object cpu = get(c->s_is_cpu), layout = get(c->s_layout), neg = call(c->s_is_neg);
  if (!cpu.is_valid() || !layout.is_valid() || !neg.is_valid()) return PyErr_Clear(), false;
  if (cpu.ptr() != Py_True || layout.ptr() != c->strided || neg.ptr() != Py_False) return false;
  nb::object shape = get(c->s_shape), stride = call(c->s_stride), ptr = call(c->s_data_ptr);
  if (!shape.is_valid() || !stride.is_valid() || !ptr.is_valid()) return PyErr_Clear(), false;
  std::vector<int64_t> sizes, strides;
  if (!read_int_tuple(shape.ptr(), sizes) || !read_int_tuple(stride.ptr(), strides) || sizes.size() != strides.size())
    return false;
  void* data = PyLong_AsVoidPtr(ptr.ptr());
  if (data == nullptr && PyErr_Occurred()) return PyErr_Clear(), false;
  out = HostTensor::view(*dtype, data, std::move(sizes), std::move(strides));
  if (!borrow) hold_owner(obj, out);
  return true;
}

}  // namespace

std::optional<DType> dtype_from_dlpack(nb::dlpack::dtype t) {
  if (t.lanes != 1) return std::nullopt;
  switch (static_cast<dl_code>(t.code)) {
    case dl_code::Bool:
      return t.bits == 8 ? std::optional(DType::Bool) : std::nullopt;
    case dl_code::UInt:
      return t.bits == 8 ? std::optional(DType::UInt8) : std::nullopt;
    case dl_code::Int:
      switch (t.bits) {
        case 8:
          return DType::Int8;
        case 16:
          return DType::Int16;
        case 32:
          return DType::Int32;
        case 64:
          return DType::Int64;
        default:
          return std::nullopt;
      }
    case dl_code::Float:
      switch (t.bits) {
        case 16:
          return DType::Float16;
        case 32:
          return DType::Float32;
        case 64:
          return DType::Float64;
        default:
          return std::nullopt;
      }
    case dl_code::Bfloat:
      return t.bits == 16 ? std::optional(DType::BFloat16) : std::nullopt;
    default:
      return std::nullopt;
  }
}

nb::dlpack::dtype dtype_to_dlpack(DType t) {
  auto make = [](dl_code c, int bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(c), static_cast<uint8_t>(bits), 1};
  };
  switch (t) {
    case DType::Bool:
      return make(dl_code::Bool, 8);
    case DType::UInt8:
      return make(dl_code::UInt, 8);
    case DType::Int8:
      return make(dl_code::Int, 8);
    case DType::Int16:
      return make(dl_code::Int, 16);
    case DType::Int32:
      return make(dl_code::Int, 32);
    case DType::Int64:
      return make(dl_code::Int, 64);
    case DType::Float16:
      return make(dl_code::Float, 16);
    case DType::BFloat16:
      return make(dl_code::Bfloat, 16);
    case DType::Float32:
      return make(dl_code::Float, 32);
    case DType::Float64:
      return make(dl_code::Float, 64);
  }
  throw nb::value_error("dtype_to_dlpack: invalid DType");
}

// A torch tensor on another device (meta, cuda) or with a non-strided layout (sparse, mkldnn) is refused by name
// before DLPack sees it: their __dlpack__ fails with messages that do not say what is wrong.
void check_device_and_layout(nb::handle obj, const char* what) {
  if (nb::hasattr(obj, "device")) {
    std::string dev = py_str(obj.attr("device"));
    if (dev.rfind("cpu", 0) != 0)
      throw nb::value_error(
          (std::string(what) + ": tensor is on device '" + dev + "'; autofuse runs on CPU tensors").c_str());
  }
  // A lazily negated view (torch._neg_view, conj of a negated view) holds the un-negated values in memory; its
  // DLPack export does not resolve that, so the view would read wrong signs.
  if (nb::hasattr(obj, "is_neg") && nb::cast<bool>(obj.attr("is_neg")()))
    throw nb::value_error(
        (std::string(what) + ": tensor has its negative bit set (a lazily negated view); call .resolve_neg() first")
            .c_str());
  if (nb::hasattr(obj, "layout")) {
    std::string layout = py_str(obj.attr("layout"));
    if (layout != "torch.strided")
      throw nb::value_error((std::string(what) + ": tensor has layout " + layout +
                             "; autofuse reads dense strided tensors (convert with .to_dense())")
                                .c_str());
  }
}

namespace {

// The DLPack / buffer-protocol path (numpy arrays, tensor subclasses, and every error report).
HostTensor imported_host_tensor(nb::handle obj, bool writable, const char* what) {
  check_device_and_layout(obj, what);
  nb::object detached;
  if (writable) {
    RWArray arr;
    if (!import_array(obj, arr, detached)) import_failed(obj, writable, what);
    return view_of(std::move(arr), what);
  }
  ROArray arr;
  if (!import_array(obj, arr, detached)) import_failed(obj, writable, what);
  return view_of(std::move(arr), what);
}

// Why elements of t overlap, or "": a dim of size > 1 with stride 0 (an expanded tensor), or two dims of size > 1
// with the same stride magnitude (element (i + 1, j) is element (i, j + 1)). Other overlapping stride patterns are
// not looked for (deciding them in general is a subset-sum problem). An empty tensor has no elements to share.
std::string overlap_reason(const HostTensor& t) {
  const size_t r = t.sizes.size();
  for (size_t d = 0; d < r; ++d)
    if (t.sizes[d] == 0) return "";
  for (size_t d = 0; d < r; ++d) {
    if (t.sizes[d] < 2) continue;
    if (t.strides[d] == 0)
      return "dim " + std::to_string(d) + " has size " + std::to_string(t.sizes[d]) +
             " and stride 0 (an expanded tensor)";
    for (size_t e = d + 1; e < r; ++e)
      if (t.sizes[e] > 1 && std::llabs(t.strides[e]) == std::llabs(t.strides[d]))
        return "dims " + std::to_string(d) + " and " + std::to_string(e) + " both have stride " +
               std::to_string(std::llabs(t.strides[d]));
  }
  return "";
}

// Refuses a tensor that is written through (an output) whose elements overlap: threads writing different elements
// of it would race on the shared memory, and the value left would vary from run to run.
void check_no_overlap(const HostTensor& t, const std::string& what) {
  const std::string why = overlap_reason(t);
  if (!why.empty())
    throw nb::value_error((what + ": its elements overlap in memory (" + t.describe() + ": " + why +
                           "), but it is written to; pass a tensor of distinct elements (e.g. torch.empty)")
                              .c_str());
}

// Item i of a list or tuple (either type, subclasses included), borrowed from the sequence.
nb::handle seq_item(nb::handle seq, size_t i) {
  const auto k = static_cast<Py_ssize_t>(i);
  return PyList_Check(seq.ptr()) ? nb::handle(PyList_GET_ITEM(seq.ptr(), k))
                                 : nb::handle(PyTuple_GET_ITEM(seq.ptr(), k));
}

// An item (tensor, (sizes, strides, offset)) of to_host_tensors: the view of the tensor's memory with those sizes and
// strides (elements), `offset` elements past its data pointer (what torch's _reinterpret_tensor makes, without a
// torch tensor). Throws nb::value_error naming `what` and `i` when the spec is malformed or reaches outside the
// elements the tensor itself spans.
HostTensor spec_view(nb::handle item, bool writable, bool borrow, const char* what, size_t i) {
  const std::string label = std::string(what) + " " + std::to_string(i);
  nb::handle base = PyTuple_GET_ITEM(item.ptr(), 0), spec = PyTuple_GET_ITEM(item.ptr(), 1);
  HostTensor t;
  if (!torch_fast_view(base, t, writable, borrow)) t = imported_host_tensor(base, writable, label.c_str());
  std::vector<int64_t> sizes, strides;
  const bool ok = PyTuple_Check(spec.ptr()) && PyTuple_GET_SIZE(spec.ptr()) == 3 &&
                  read_int_tuple(PyTuple_GET_ITEM(spec.ptr(), 0), sizes) &&
                  read_int_tuple(PyTuple_GET_ITEM(spec.ptr(), 1), strides) && sizes.size() == strides.size() &&
                  PyLong_Check(PyTuple_GET_ITEM(spec.ptr(), 2));
  const int64_t offset = ok ? PyLong_AsLongLong(PyTuple_GET_ITEM(spec.ptr(), 2)) : 0;
  if (!ok || PyErr_Occurred()) {
    PyErr_Clear();
    throw nb::value_error((label + ": expected a tensor or (tensor, (sizes, strides, offset)) of ints").c_str());
  }
  int64_t lo = 0, hi = 0, base_lo = 0, base_hi = 0;
  for (int64_t s : sizes)
    if (s < 0) throw nb::value_error((label + ": view size " + std::to_string(s) + " is negative").c_str());
  if (element_span(sizes, strides, lo, hi) &&
      (!element_span(t.sizes, t.strides, base_lo, base_hi) || offset + lo < base_lo || offset + hi > base_hi)) {
    throw nb::value_error((label + ": view (offset " + std::to_string(offset) + ") reaches elements [" +
                           std::to_string(offset + lo) + ", " + std::to_string(offset + hi) +
                           "] outside its tensor's [" + std::to_string(base_lo) + ", " + std::to_string(base_hi) + "]")
                              .c_str());
  }
  HostTensor v = HostTensor::view(t.dtype, static_cast<char*>(t.data) + offset * dtype_size(t.dtype), std::move(sizes),
                                  std::move(strides));
  v.owner = std::move(t.owner);
  return v;
}

}  // namespace

bool takes_fast_path(nb::handle obj) {
  HostTensor unused;
  return torch_fast_view(obj, unused);
}

bool torch_direct_enabled() { return torch_direct_available(); }

HostTensor to_host_tensor(nb::handle obj, bool writable, const char* what) {
  HostTensor t;
  if (!torch_fast_view(obj, t, writable)) t = imported_host_tensor(obj, writable, what);
  if (writable) check_no_overlap(t, what);
  return t;
}

std::vector<HostTensor> to_host_tensors(nb::handle seq, bool writable, const char* what, bool borrow) {
  if (!nb::isinstance<nb::list>(seq) && !nb::isinstance<nb::tuple>(seq)) {
    throw nb::type_error(
        (std::string(what) + "s: expected a list or tuple of tensors, got '" + py_type_name(seq) + "'").c_str());
  }
  std::vector<HostTensor> out;
  size_t n = nb::len(seq);
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    nb::handle item = seq_item(seq, i);
    auto label = [&] { return std::string(what) + " " + std::to_string(i); };
    if (HostTensor fast; torch_fast_view(item, fast, writable, borrow)) {  // the common case: no label string is built
      out.push_back(std::move(fast));
    } else if (PyTuple_Check(item.ptr()) && PyTuple_GET_SIZE(item.ptr()) == 2) {  // a view spec (tensor_convert.h)
      out.push_back(spec_view(item, writable, borrow, what, i));
    } else {
      out.push_back(imported_host_tensor(item, writable, label().c_str()));  // the fast path already said no
    }
    if (writable && !overlap_reason(out.back()).empty()) check_no_overlap(out.back(), label());
  }
  return out;
}

void check_disjoint_operands(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs,
                             const char* what, const std::string& name) {
  const std::string why = operand_overlap_error(inputs, outputs);
  if (!why.empty()) throw nb::value_error((std::string(what) + (name.empty() ? "" : " " + name) + ": " + why).c_str());
}

DType to_dtype(nb::handle obj) {
  if (nb::isinstance<DType>(obj)) return nb::cast<DType>(obj);
  std::string text = nb::isinstance<nb::str>(obj) ? nb::cast<std::string>(obj) : py_str(obj);
  std::string name = text.rfind("torch.", 0) == 0 ? text.substr(6) : text;
  if (std::optional<DType> d = parse_dtype(name)) return *d;
  throw nb::value_error(("unknown dtype '" + text +
                         "'; expected one of bool, u8, i8, i16, i32, i64, f16, bf16, f32, "
                         "f64 (or a torch / numpy dtype of those)")
                            .c_str());
}

}  // namespace autofuse::bindings
