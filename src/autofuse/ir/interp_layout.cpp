// The interpreter's layout ops: broadcast_to, reshape, permute, slice and concat. Values are contiguous, so each op
// is a strided copy (or, for reshape, a copy of the data under new sizes).
#include <string>

#include "autofuse/ir/interp_value.h"

namespace autofuse::interp {

namespace {

/// Copy the elements of a `sizes`-shaped index space from src (base + strides) to dst (base + strides).
void copy_strided(const Value& src, int64_t src_base, const std::vector<int64_t>& src_strides, Value& dst,
                  int64_t dst_base, const std::vector<int64_t>& dst_strides, const std::vector<int64_t>& sizes) {
  for_each_index(sizes, {src_strides, dst_strides}, [&](int64_t, const int64_t* o) {
    if (src.is_float())
      dst.f[dst_base + o[1]] = src.f[src_base + o[0]];
    else
      dst.i[dst_base + o[1]] = src.i[src_base + o[0]];
  });
}

/// out = src read through (base, strides) over the output's sizes.
Value gather(const NodeContext& c, const Value& src, int64_t base, const std::vector<int64_t>& strides) {
  Value out = Value::zeros(src.dtype, c.out_sizes);
  copy_strided(src, base, strides, out, 0, row_major_strides(c.out_sizes), c.out_sizes);
  return out;
}

int64_t wrap_axis(const NodeContext& c, int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  const int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return a;
}

Value reshape(const NodeContext& c, const Value& x) {
  int64_t n = 1;
  for (int64_t s : c.out_sizes) n *= s;
  if (n != x.numel())
    c.fail("cannot reshape " + std::to_string(x.numel()) + " elements to " + std::to_string(n) + " elements");
  Value out = x;
  out.sizes = c.out_sizes;
  return out;
}

Value permute(const NodeContext& c, const Value& x) {
  const auto& dims = attr_ints(c.node.attrs, "dims");
  const std::vector<int64_t> st = row_major_strides(x.sizes);
  std::vector<int64_t> strides;
  for (int64_t d : dims) strides.push_back(st[wrap_axis(c, d, x.sizes.size())]);
  return gather(c, x, 0, strides);
}

Value slice(const NodeContext& c, const Value& x) {
  const Attrs& at = c.node.attrs;
  const int64_t axis = wrap_axis(c, attr_int(at, "axis"), x.sizes.size());
  const int64_t start = attr_expr(at, "start").eval(c.bindings), stop = attr_expr(at, "stop").eval(c.bindings);
  const int64_t step = attr_int(at, "step");
  if (start < 0 || stop < start || stop > x.sizes[axis] || step <= 0)
    c.fail("slice [" + std::to_string(start) + ":" + std::to_string(stop) + ":" + std::to_string(step) +
           "] is out of range for size " + std::to_string(x.sizes[axis]) + " at axis " + std::to_string(axis) +
           "; expected 0 <= start <= stop <= size and step > 0");
  std::vector<int64_t> st = row_major_strides(x.sizes);
  const int64_t base = start * st[axis];
  st[axis] *= step;
  return gather(c, x, base, st);
}

Value concat(const NodeContext& c, const std::vector<const Value*>& in) {
  const int64_t axis = wrap_axis(c, attr_int(c.node.attrs, "axis"), c.out_sizes.size());
  Value out = Value::zeros(c.node.dtype, c.out_sizes);
  const std::vector<int64_t> ost = row_major_strides(c.out_sizes);
  int64_t at = 0;
  for (const Value* v : in) {
    for (size_t d = 0; d < v->sizes.size(); ++d)
      if (static_cast<int64_t>(d) != axis && v->sizes[d] != c.out_sizes[d])
        c.fail("input of size " + std::to_string(v->sizes[d]) + " at dim " + std::to_string(d) + ", expected " +
               std::to_string(c.out_sizes[d]));
    copy_strided(*v, 0, row_major_strides(v->sizes), out, at * ost[axis], ost, v->sizes);
    at += v->sizes[axis];
  }
  if (at != c.out_sizes[axis])
    c.fail("inputs add up to " + std::to_string(at) + " along axis " + std::to_string(axis) + ", expected " +
           std::to_string(c.out_sizes[axis]));
  return out;
}

}  // namespace

Value eval_layout(const NodeContext& c, const std::vector<const Value*>& in) {
  switch (c.node.op) {
    case OpKind::BroadcastTo: {
      const Value& x = *in[0];
      for (size_t i = 0; i < x.sizes.size(); ++i) {
        const int64_t s = x.sizes[x.sizes.size() - 1 - i], o = c.out_sizes[c.out_sizes.size() - 1 - i];
        if (s != o && s != 1)
          c.fail("cannot broadcast size " + std::to_string(s) + " to " + std::to_string(o) + " at dim " +
                 std::to_string(c.out_sizes.size() - 1 - i));
      }
      return gather(c, x, 0, broadcast_strides(x.sizes, c.out_sizes));
    }
    case OpKind::Reshape:
      return reshape(c, *in[0]);
    case OpKind::Permute:
      return permute(c, *in[0]);
    case OpKind::Slice:
      return slice(c, *in[0]);
    case OpKind::Concat:
      return concat(c, in);
    default:
      c.fail("the interpreter has no layout rule for this op");
  }
}

}  // namespace autofuse::interp
