// Python bindings of the tensor conversion itself, for tests and debugging: what C++ sees of a Python tensor.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "bindings.h"
#include "tensor_convert.h"
#include "torch_direct.h"

namespace autofuse::bindings {

namespace {

/// A 64-bit stamp of `nbytes` bytes at `p`: every byte when there are at most 512, else 64 eight-byte words at
/// evenly spaced offsets (the first and the last word included), mixed with the 64-bit FNV-1a prime and finished
/// with splitmix64's finalizer (Steele et al., "Fast splittable pseudorandom number generators", OOPSLA 2014). Not a
/// checksum: a write that misses every sampled word keeps the stamp; it detects a tensor rewritten as a whole.
uint64_t sample_stamp(const unsigned char* p, uint64_t nbytes) {
  constexpr uint64_t kPrime = 0x100000001b3ULL;
  constexpr int kWords = 64;
  uint64_t h = 0xcbf29ce484222325ULL ^ nbytes;
  auto mix = [&](uint64_t w) { h = (h ^ w) * kPrime; };
  if (nbytes <= 8u * kWords) {
    for (uint64_t i = 0; i < nbytes; ++i) mix(p[i]);
  } else {
    const uint64_t last = nbytes - 8;
    for (int i = 0; i < kWords; ++i) {
      uint64_t w = 0;
      std::memcpy(&w, p + last * static_cast<uint64_t>(i) / (kWords - 1), 8);
      mix(w);
    }
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

}  // namespace

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
  m.def(
      "weight_stamp",
      [](nb::handle obj) -> uint64_t {
        HostTensor t = to_host_tensor(obj, false, "weight");
        if (!t.is_contiguous()) throw nb::value_error("weight_stamp: the tensor is not contiguous");
        const auto nbytes = static_cast<uint64_t>(t.numel()) * static_cast<uint64_t>(dtype_size(t.dtype));
        return sample_stamp(static_cast<const unsigned char*>(t.data), nbytes);
      },
      nb::arg("tensor"),
      "A 64-bit stamp of a contiguous tensor's bytes (all of them up to 512 bytes, else 64 evenly spaced 8-byte "
      "words): weight_pack.py's check that a pre-packed weight was not rewritten behind its version counter. "
      "Raises ValueError for a non-contiguous tensor; about 0.2 us.");
  m.def("torch_direct_enabled", &torch_direct_enabled,
        "Whether torch tensors are read straight from libtorch's C++ objects (src/bindings/torch_direct.h: built "
        "against torch's headers and the self-check passed) rather than through their Python attributes.");
  m.def("torch_direct_compiled", &torch_direct_compiled,
        "Whether this build has the direct torch tensor reader (CMake AUTOFUSE_TORCH_DIRECT found torch's headers).");
}

}  // namespace autofuse::bindings
