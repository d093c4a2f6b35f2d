// The interpreter's source and elementwise ops: constant, full, iota, the unary and binary ops, fma, predicates,
// where, clamp and cast. Inputs broadcast NumPy-style against the node's output sizes.
#include <algorithm>
#include <cmath>
#include <string>

#include "autofuse/ir/interp_scalar.h"
#include "autofuse/ir/interp_value.h"

namespace autofuse::interp {

namespace {

/// A scalar attribute converted to the dtype, as storing it in a tensor of that dtype does.
void scalar_to_dtype(const Scalar& v, DType t, double& f, int64_t& i) {
  if (is_float(t)) {
    f = v.is_int ? cast_int_to_float(v.i, t) : round_float(v.f, t);
  } else {
    i = v.is_int ? wrap_int(v.i, t) : cast_float_to_int(v.f, t);
  }
}

Value fill(const NodeContext& c, const Scalar& v) {
  Value out = Value::zeros(c.node.dtype, c.out_sizes);
  double f = 0;
  int64_t i = 0;
  scalar_to_dtype(v, c.node.dtype, f, i);
  if (out.is_float())
    std::fill(out.f.begin(), out.f.end(), f);
  else
    std::fill(out.i.begin(), out.i.end(), i);
  return out;
}

Value iota(const NodeContext& c) {
  Value out = Value::zeros(c.node.dtype, c.out_sizes);
  const int64_t start = attr_int(c.node.attrs, "start"), step = attr_int(c.node.attrs, "step");
  const int64_t n = out.numel();
  for (int64_t k = 0; k < n; ++k) {
    int64_t v =
        static_cast<int64_t>(static_cast<uint64_t>(start) + static_cast<uint64_t>(k) * static_cast<uint64_t>(step));
    if (out.is_float())
      out.f[k] = cast_int_to_float(v, out.dtype);
    else
      out.i[k] = wrap_int(v, out.dtype);
  }
  return out;
}

/// Apply fn(offsets, k) for every output element k, offsets into each input broadcast to the output.
template <class F>
void broadcast_loop(const NodeContext& c, const std::vector<const Value*>& in, F&& fn) {
  bool same = true;
  for (const Value* v : in) same = same && v->sizes == c.out_sizes;
  if (same) {  // no broadcasting: every operand is indexed like the output
    int64_t n = 1;
    for (int64_t s : c.out_sizes) n *= s;
    int64_t offs[3];
    for (int64_t k = 0; k < n; ++k) {
      offs[0] = offs[1] = offs[2] = k;
      fn(k, static_cast<const int64_t*>(offs));
    }
    return;
  }
  std::vector<std::vector<int64_t>> strides;
  for (const Value* v : in) strides.push_back(broadcast_strides(v->sizes, c.out_sizes));
  for_each_index(c.out_sizes, strides, fn);
}

Value unary(const NodeContext& c, const Value& x) {
  const OpKind op = c.node.op;
  Value out = Value::zeros(c.node.dtype, c.out_sizes);
  const int64_t n = out.numel();
  const bool pred = op == OpKind::IsNan || op == OpKind::IsInf || op == OpKind::IsFinite || op == OpKind::LogicalNot;
  for (int64_t k = 0; k < n; ++k) {
    if (pred)
      out.i[k] = x.is_float() ? predicate_float(op, x.f[k]) : predicate_int(op, x.i[k]);
    else if (x.is_float())
      out.f[k] = round_float(unary_float(op, x.f[k]), c.round_dtype(out.dtype));
    else
      out.i[k] = wrap_int(unary_int(op, x.i[k], x.dtype), out.dtype);
  }
  return out;
}

bool is_comparison(OpKind op) {
  switch (op) {
    case OpKind::Eq:
    case OpKind::Ne:
    case OpKind::Lt:
    case OpKind::Le:
    case OpKind::Gt:
    case OpKind::Ge:
    case OpKind::LogicalAnd:
    case OpKind::LogicalOr:
    case OpKind::LogicalXor:
      return true;
    default:
      return false;
  }
}

Value binary(const NodeContext& c, const Value& a, const Value& b) {
  const OpKind op = c.node.op;
  Value out = Value::zeros(c.node.dtype, c.out_sizes);
  const DType t = a.dtype;
  if (is_comparison(op)) {
    if (a.is_float())
      broadcast_loop(c, {&a, &b},
                     [&](int64_t k, const int64_t* o) { out.i[k] = compare_float(op, a.f[o[0]], b.f[o[1]]); });
    else
      broadcast_loop(c, {&a, &b},
                     [&](int64_t k, const int64_t* o) { out.i[k] = compare_int(op, a.i[o[0]], b.i[o[1]]); });
    return out;
  }
  if (a.is_float()) {
    const DType rt = c.round_dtype(t);
    broadcast_loop(c, {&a, &b}, [&](int64_t k, const int64_t* o) {
      out.f[k] = round_float(binary_float(op, a.f[o[0]], b.f[o[1]], t), rt);
    });
    return out;
  }
  try {
    broadcast_loop(c, {&a, &b}, [&](int64_t k, const int64_t* o) {
      out.i[k] = wrap_int(binary_int(op, a.i[o[0]], b.i[o[1]], t), t);
    });
  } catch (const IntegerDivisionByZero&) {
    c.fail("integer division by zero (eager raises ZeroDivisionError)");
  }
  return out;
}

/// fma(a, b, c) of floating values (the op's type rule refuses integers), rounded once to the policy's dtype.
Value fma(const NodeContext& c, const Value& a, const Value& b, const Value& d) {
  Value out = Value::zeros(c.node.dtype, c.out_sizes);
  const DType t = a.dtype, rt = c.round_dtype(t);
  broadcast_loop(c, {&a, &b, &d}, [&](int64_t k, const int64_t* o) {
    out.f[k] = round_float(fma_float(a.f[o[0]], b.f[o[1]], d.f[o[2]], t), rt);
  });
  return out;
}

Value where(const NodeContext& c, const Value& cond, const Value& a, const Value& b) {
  Value out = Value::zeros(c.node.dtype, c.out_sizes);
  broadcast_loop(c, {&cond, &a, &b}, [&](int64_t k, const int64_t* o) {
    const bool take_a = cond.i[o[0]] != 0;
    if (out.is_float())
      out.f[k] = take_a ? a.f[o[1]] : b.f[o[2]];
    else
      out.i[k] = take_a ? a.i[o[1]] : b.i[o[2]];
  });
  return out;
}

/// clamp(x, min, max) = minimum(maximum(x, min), max): NaN in x or in a bound gives NaN; min > max gives max.
/// Each bound is first converted to the tensor's dtype, as eager's kernel does (Scalar::to<scalar_t>): rounded for
/// floating dtypes, wrapped for integer ones (so clamp(u8, min=-2) clamps at 254, as eager does).
Value clamp(const NodeContext& c, const Value& x) {
  Value out = Value::zeros(c.node.dtype, c.out_sizes);
  const Attrs& at = c.node.attrs;
  const bool has_lo = has_attr(at, "min"), has_hi = has_attr(at, "max");
  double flo = 0, fhi = 0;
  int64_t ilo = 0, ihi = 0;
  if (has_lo) scalar_to_dtype(attr_scalar(at, "min"), x.dtype, flo, ilo);
  if (has_hi) scalar_to_dtype(attr_scalar(at, "max"), x.dtype, fhi, ihi);
  const int64_t n = out.numel();
  for (int64_t k = 0; k < n; ++k) {
    if (x.is_float()) {
      double v = x.f[k];
      if (has_lo) v = maximum_f(v, flo);
      if (has_hi) v = minimum_f(v, fhi);
      out.f[k] = v;
    } else {
      int64_t v = x.i[k];
      if (has_lo) v = std::max(v, ilo);
      if (has_hi) v = std::min(v, ihi);
      out.i[k] = v;
    }
  }
  return out;
}

Value cast(const NodeContext& c, const Value& x) {
  const DType to = c.node.dtype;
  Value out = Value::zeros(to, c.out_sizes);
  const int64_t n = out.numel();
  for (int64_t k = 0; k < n; ++k) {
    if (x.is_float()) {
      if (out.is_float())
        out.f[k] = round_float(x.f[k], to);
      else
        out.i[k] = cast_float_to_int(x.f[k], to);
    } else {
      if (out.is_float())
        out.f[k] = cast_int_to_float(x.i[k], to);
      else
        out.i[k] = wrap_int(x.i[k], to);
    }
  }
  return out;
}

}  // namespace

Value eval_elementwise(const NodeContext& c, const std::vector<const Value*>& in) {
  const Node& n = c.node;
  switch (n.op) {
    case OpKind::Constant:
    case OpKind::Full:
      return fill(c, attr_scalar(n.attrs, "value"));
    case OpKind::Iota:
      return iota(c);
    case OpKind::Where:
      return where(c, *in[0], *in[1], *in[2]);
    case OpKind::Fma:
      return fma(c, *in[0], *in[1], *in[2]);
    case OpKind::Clamp:
      return clamp(c, *in[0]);
    case OpKind::Cast:
      return cast(c, *in[0]);
    default:
      break;
  }
  if (in.size() == 1) return unary(c, *in[0]);
  if (in.size() == 2) return binary(c, *in[0], *in[1]);
  c.fail("the interpreter has no rule for this op");
}

}  // namespace autofuse::interp
