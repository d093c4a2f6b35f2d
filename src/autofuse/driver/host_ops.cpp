#include "autofuse/driver/host_ops.h"

#include <cstring>

namespace autofuse {

namespace {

[[noreturn]] void fail(const Node& n, const std::string& msg) {
  throw IRError("%" + n.name + " = " + std::string(n.info().name) + ": " + msg);
}

std::string sizes_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

int64_t wrap_axis(const Node& n, int64_t axis, size_t rank) {
  int64_t a = axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
  if (a < 0 || a >= static_cast<int64_t>(rank)) fail(n, "axis " + std::to_string(axis) + " out of range");
  return a;
}

HostTensor view_of(const HostTensor& t, void* data, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  HostTensor v = HostTensor::view(t.dtype, data, std::move(sizes), std::move(strides));
  v.owner = t.owner;
  return v;
}

}  // namespace

void copy_into(const HostTensor& src, const HostTensor& dst) {
  if (src.dtype != dst.dtype || src.sizes != dst.sizes)
    throw IRError("copy_into: source " + src.describe() + " does not match destination " + dst.describe());
  const int64_t es = dtype_size(src.dtype);
  const size_t r = src.sizes.size();
  if (src.numel() == 0) return;
  if (src.is_contiguous() && dst.is_contiguous()) {
    std::memmove(dst.data, src.data, static_cast<size_t>(src.numel() * es));
    return;
  }
  std::vector<int64_t> idx(r, 0);
  const char* s = static_cast<const char*>(src.data);
  char* d = static_cast<char*>(dst.data);
  for (int64_t k = 0, n = src.numel(); k < n; ++k) {
    int64_t so = 0, dof = 0;
    for (size_t i = 0; i < r; ++i) {
      so += idx[i] * src.strides[i];
      dof += idx[i] * dst.strides[i];
    }
    std::memcpy(d + dof * es, s + so * es, static_cast<size_t>(es));
    for (size_t i = r; i-- > 0;) {
      if (++idx[i] < src.sizes[i]) break;
      idx[i] = 0;
    }
  }
}

HostTensor contiguous_copy(const HostTensor& t) {
  HostTensor out = HostTensor::empty(t.dtype, t.sizes);
  copy_into(t, out);
  return out;
}

HostTensor run_host_op(const Node& n, const std::vector<HostTensor>& in, const Bindings& b) {
  const HostTensor& x = in.at(0);
  const size_t r = x.sizes.size();
  const int64_t es = dtype_size(x.dtype);
  switch (n.op) {
    case OpKind::Reshape: {
      std::vector<int64_t> sizes = eval_shape(attr_shape(n.attrs, "shape"), b);
      int64_t numel = 1;
      for (int64_t s : sizes) numel *= s;
      if (numel != x.numel())
        fail(n,
             "cannot reshape " + x.describe() + " (" + std::to_string(x.numel()) + " elements) to " + sizes_str(sizes));
      HostTensor base = x.is_contiguous() ? x : contiguous_copy(x);
      return view_of(base, base.data, sizes, contiguous_strides_i64(sizes));
    }
    case OpKind::Permute: {
      const auto& dims = attr_ints(n.attrs, "dims");
      if (dims.size() != r) fail(n, "dims " + sizes_str(dims) + " do not match rank " + std::to_string(r));
      std::vector<int64_t> sizes, strides;
      for (int64_t d : dims) {
        int64_t a = wrap_axis(n, d, r);
        sizes.push_back(x.sizes[a]);
        strides.push_back(x.strides[a]);
      }
      return view_of(x, x.data, sizes, strides);
    }
    case OpKind::Slice: {
      int64_t axis = wrap_axis(n, attr_int(n.attrs, "axis"), r);
      int64_t start = attr_expr(n.attrs, "start").eval(b), stop = attr_expr(n.attrs, "stop").eval(b);
      int64_t step = attr_int(n.attrs, "step");
      if (start < 0 || stop < start || stop > x.sizes[axis] || step <= 0)
        fail(n, "slice [" + std::to_string(start) + ":" + std::to_string(stop) + ":" + std::to_string(step) +
                    "] is out of range for size " + std::to_string(x.sizes[axis]) + " at axis " + std::to_string(axis));
      std::vector<int64_t> sizes = x.sizes, strides = x.strides;
      sizes[axis] = (stop - start + step - 1) / step;
      strides[axis] = x.strides[axis] * step;
      char* data = static_cast<char*>(x.data) + (sizes[axis] > 0 ? start * x.strides[axis] * es : 0);
      return view_of(x, data, sizes, strides);
    }
    case OpKind::BroadcastTo: {
      std::vector<int64_t> sizes = eval_shape(attr_shape(n.attrs, "shape"), b);
      if (sizes.size() < r) fail(n, "cannot broadcast " + x.describe() + " to " + sizes_str(sizes));
      std::vector<int64_t> strides(sizes.size(), 0);
      size_t off = sizes.size() - r;
      for (size_t i = 0; i < r; ++i) {
        if (x.sizes[i] == sizes[off + i])
          strides[off + i] = x.strides[i];
        else if (x.sizes[i] != 1)
          fail(n, "cannot broadcast " + x.describe() + " to " + sizes_str(sizes));
      }
      return view_of(x, x.data, sizes, strides);
    }
    case OpKind::Concat: {
      int64_t axis = wrap_axis(n, attr_int(n.attrs, "axis"), r);
      std::vector<int64_t> sizes = x.sizes;
      sizes[axis] = 0;
      for (const HostTensor& t : in) {
        if (t.sizes.size() != r) fail(n, "inputs differ in rank");
        for (size_t d = 0; d < r; ++d)
          if (static_cast<int64_t>(d) != axis && t.sizes[d] != x.sizes[d])
            fail(n, "input " + t.describe() + " differs from " + x.describe() + " at dim " + std::to_string(d));
        sizes[axis] += t.sizes[axis];
      }
      HostTensor out = HostTensor::empty(x.dtype, sizes);
      int64_t at = 0;
      for (const HostTensor& t : in) {
        std::vector<int64_t> part = out.sizes;
        part[axis] = t.sizes[axis];
        char* data = static_cast<char*>(out.data) + at * out.strides[axis] * es;
        copy_into(t, HostTensor::view(out.dtype, data, part, out.strides));
        at += t.sizes[axis];
      }
      return out;
    }
    default:
      fail(n, "not a layout op that runs on the host");
  }
}

}  // namespace autofuse
