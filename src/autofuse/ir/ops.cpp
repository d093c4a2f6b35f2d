#include "autofuse/ir/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "autofuse/ir/printer.h"

namespace autofuse {

bool Scalar::operator==(const Scalar& o) const {
  if (is_int != o.is_int) return false;
  if (is_int) return i == o.i;
  return (f == o.f && std::signbit(f) == std::signbit(o.f)) || (f != f && o.f != o.f);
}

namespace {

std::vector<AttrSpec> parse_schema(std::string_view s) {
  std::vector<AttrSpec> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string_view::npos) end = s.size();
    std::string_view item = s.substr(pos, end - pos);
    size_t colon = item.find(':');
    AttrSpec spec;
    spec.name = std::string(item.substr(0, colon));
    std::string_view kind = item.substr(colon + 1);
    spec.optional = !kind.empty() && kind.back() == '?';
    if (spec.optional) kind.remove_suffix(1);
    if (kind == "int")
      spec.kind = AttrKind::Int;
    else if (kind == "float")
      spec.kind = AttrKind::Float;
    else if (kind == "bool")
      spec.kind = AttrKind::Bool;
    else if (kind == "scalar")
      spec.kind = AttrKind::Scalar;
    else if (kind == "dtype")
      spec.kind = AttrKind::DTypeK;
    else if (kind == "ints")
      spec.kind = AttrKind::Ints;
    else if (kind == "shape")
      spec.kind = AttrKind::ShapeK;
    else if (kind == "expr")
      spec.kind = AttrKind::ExprK;
    else
      spec.kind = AttrKind::Str;
    out.push_back(spec);
    pos = end + 1;
  }
  return out;
}

std::vector<OpInfo> build_table() {
  std::vector<OpInfo> t;
#define AF_OP(E, NAME, CAT, MIN, MAX, DR, SR, ATTRS) \
  t.push_back({OpKind::E, NAME, OpCategory::CAT, MIN, MAX, DTypeRule::DR, ShapeRule::SR, parse_schema(ATTRS)});
#include "autofuse/ir/op_table.def"
#undef AF_OP
  return t;
}

[[noreturn]] void fail(const OpInfo& op, const std::string& msg) { throw IRError(std::string(op.name) + ": " + msg); }

template <class T>
const T& get_attr(const Attrs& a, const std::string& name, const char* kind) {
  auto it = a.find(name);
  if (it == a.end()) throw IRError("missing attribute '" + name + "'");
  const T* v = std::get_if<T>(&it->second);
  if (!v) throw IRError("attribute '" + name + "' is not of kind " + kind);
  return *v;
}

bool attr_matches(AttrKind k, const AttrValue& v) {
  switch (k) {
    case AttrKind::Int:
      return std::holds_alternative<int64_t>(v);
    case AttrKind::Float:
      return std::holds_alternative<double>(v);
    case AttrKind::Bool:
      return std::holds_alternative<bool>(v);
    case AttrKind::Scalar:
      return std::holds_alternative<Scalar>(v);
    case AttrKind::DTypeK:
      return std::holds_alternative<DType>(v);
    case AttrKind::Ints:
      return std::holds_alternative<std::vector<int64_t>>(v);
    case AttrKind::ShapeK:
      return std::holds_alternative<std::vector<Expr>>(v);
    case AttrKind::ExprK:
      return std::holds_alternative<Expr>(v);
    case AttrKind::Str:
      return std::holds_alternative<std::string>(v);
  }
  return false;
}

/// Why eager refuses to convert the scalar `s` to the integer dtype `t` (c10's checked conversion: "value cannot be
/// converted to type int32 without overflow"), or nullopt when it converts. The ranges are eager's (measured, torch
/// 2.13), as in the lowering's check_scalar_fits: an int must lie in the dtype's range, except that an unsigned dtype
/// also takes [-max, -1], wrapped (full(-1, uint8) is 255); a float must be finite and lie in [lowest, max] compared
/// as doubles (127.5 on i8 is refused, 2.5 on i32 truncates to 2). For i64, c10's max as a double is 2^63, which
/// eager accepts and converts with undefined behaviour; it is refused here.
std::optional<std::string> integer_value_misfit(const Scalar& s, DType t) {
  int64_t lo = 0, hi = 0;
  switch (t) {
    case DType::UInt8:
      hi = std::numeric_limits<uint8_t>::max();
      break;
    case DType::Int8:
      lo = std::numeric_limits<int8_t>::min(), hi = std::numeric_limits<int8_t>::max();
      break;
    case DType::Int16:
      lo = std::numeric_limits<int16_t>::min(), hi = std::numeric_limits<int16_t>::max();
      break;
    case DType::Int32:
      lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
      break;
    default:
      lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
      break;
  }
  const auto misfit = [&](const std::string& value, const char* what) {
    return "value=" + value + " does not fit " + std::string(dtype_name(t)) + "; expected " + what + " in [" +
           std::to_string(lo) + ", " + std::to_string(hi) + "]" +
           (t == DType::UInt8 ? ", or an integer in [-255, -1], which wraps as in eager" : "") +
           " (eager raises an overflow error converting it)";
  };
  if (s.is_int) {
    if (s.i >= (t == DType::UInt8 ? -hi : lo) && s.i <= hi) return std::nullopt;
    return misfit(std::to_string(s.i), "a value");
  }
  const bool fits = s.f >= static_cast<double>(lo) &&
                    (t == DType::Int64 ? s.f < 0x1p63 : s.f <= static_cast<double>(hi));  // false for NaN
  if (fits) return std::nullopt;
  return misfit(print_float(s.f), std::isfinite(s.f) ? "a value" : "a finite value");
}

const char* attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::Int:
      return "int";
    case AttrKind::Float:
      return "float";
    case AttrKind::Bool:
      return "bool";
    case AttrKind::Scalar:
      return "scalar";
    case AttrKind::DTypeK:
      return "dtype";
    case AttrKind::Ints:
      return "ints";
    case AttrKind::ShapeK:
      return "shape";
    case AttrKind::ExprK:
      return "expr";
    case AttrKind::Str:
      return "str";
  }
  return "?";
}

}  // namespace

const std::vector<OpInfo>& all_ops() {
  static const std::vector<OpInfo> table = build_table();
  return table;
}

const OpInfo& op_info(OpKind k) { return all_ops()[static_cast<size_t>(k)]; }

std::optional<OpKind> op_by_name(std::string_view name) {
  for (const auto& op : all_ops())
    if (op.name == name) return op.kind;
  return std::nullopt;
}

std::string_view category_name(OpCategory c) {
  switch (c) {
    case OpCategory::Source:
      return "source";
    case OpCategory::Elementwise:
      return "elementwise";
    case OpCategory::Broadcast:
      return "broadcast";
    case OpCategory::Reduce:
      return "reduce";
    case OpCategory::Layout:
      return "layout";
    case OpCategory::Extern:
      return "extern";
  }
  return "?";
}

int64_t attr_int(const Attrs& a, const std::string& n) { return get_attr<int64_t>(a, n, "int"); }
double attr_float(const Attrs& a, const std::string& n) { return get_attr<double>(a, n, "float"); }
bool attr_bool(const Attrs& a, const std::string& n) { return get_attr<bool>(a, n, "bool"); }
Scalar attr_scalar(const Attrs& a, const std::string& n) { return get_attr<Scalar>(a, n, "scalar"); }
DType attr_dtype(const Attrs& a, const std::string& n) { return get_attr<DType>(a, n, "dtype"); }
const std::vector<int64_t>& attr_ints(const Attrs& a, const std::string& n) {
  return get_attr<std::vector<int64_t>>(a, n, "ints");
}
const std::vector<Expr>& attr_shape(const Attrs& a, const std::string& n) {
  return get_attr<std::vector<Expr>>(a, n, "shape");
}
Expr attr_expr(const Attrs& a, const std::string& n) { return get_attr<Expr>(a, n, "expr"); }
const std::string& attr_str(const Attrs& a, const std::string& n) { return get_attr<std::string>(a, n, "str"); }
bool has_attr(const Attrs& a, const std::string& n) { return a.count(n) != 0; }

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, size_t rank) {
  std::vector<int64_t> out;
  if (axes.empty()) {
    for (size_t i = 0; i < rank; ++i) out.push_back(static_cast<int64_t>(i));
    return out;
  }
  const int64_t r = static_cast<int64_t>(rank);
  for (int64_t a : axes) {
    int64_t w = a < 0 ? a + r : a;
    // A rank-0 tensor accepts axis 0 and -1, as eager does.
    if (r == 0 && (a == 0 || a == -1)) continue;
    if (w < 0 || w >= r)
      throw IRError("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    out.push_back(w);
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) throw IRError("repeated axis in reduction axes");
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    bool ha = i < a.size(), hb = i < b.size();
    Expr x = ha ? a[a.size() - 1 - i] : Expr(1);
    Expr y = hb ? b[b.size() - 1 - i] : Expr(1);
    Expr r;
    if (x == y)
      r = x;
    else if (x.as_const() == 1)
      r = y;
    else if (y.as_const() == 1)
      r = x;
    else
      throw IRError("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast: size " + x.str() +
                    " against " + y.str() + " at dim " + std::to_string(static_cast<int64_t>(n - 1 - i)));
    out[n - 1 - i] = r;
  }
  return out;
}

TensorType infer_type(OpKind k, const std::vector<TensorType>& in, const Attrs& attrs) {
  const OpInfo& op = op_info(k);
  const int n = static_cast<int>(in.size());
  if (n < op.min_inputs || (op.max_inputs >= 0 && n > op.max_inputs)) {
    std::string want = op.min_inputs == op.max_inputs ? std::to_string(op.min_inputs)
                       : op.max_inputs < 0            ? "at least " + std::to_string(op.min_inputs)
                                           : std::to_string(op.min_inputs) + " to " + std::to_string(op.max_inputs);
    fail(op, "takes " + want + " inputs, got " + std::to_string(n));
  }
  for (const auto& spec : op.attrs) {
    auto it = attrs.find(spec.name);
    if (it == attrs.end()) {
      if (!spec.optional) fail(op, "missing attribute '" + spec.name + "' (" + attr_kind_name(spec.kind) + ")");
      continue;
    }
    if (!attr_matches(spec.kind, it->second))
      fail(op, "attribute '" + spec.name + "' must be of kind " + attr_kind_name(spec.kind));
  }
  for (const auto& kv : attrs) {
    const std::string& name = kv.first;  // a plain reference: clang 14 cannot capture structured bindings
    bool known = std::any_of(op.attrs.begin(), op.attrs.end(), [&](const AttrSpec& s) { return s.name == name; });
    if (!known) fail(op, "unknown attribute '" + name + "'");
  }

  // Dtype.
  auto same_dtype = [&](int from) {
    for (int i = from + 1; i < n; ++i)
      if (in[i].dtype != in[from].dtype)
        fail(op, "input " + std::to_string(i) + " has dtype " + std::string(dtype_name(in[i].dtype)) + ", expected " +
                     std::string(dtype_name(in[from].dtype)) + " like input " + std::to_string(from));
  };
  DType dt = DType::Float32;
  switch (op.dtype_rule) {
    case DTypeRule::FromAttr:
      dt = attr_dtype(attrs, "dtype");
      break;
    case DTypeRule::SameAny:
    case DTypeRule::SameNumeric:
    case DTypeRule::SameFloat:
    case DTypeRule::SameIntegral:
    case DTypeRule::SameInteger:
    case DTypeRule::ToBool:
    case DTypeRule::ReduceAccum:
      same_dtype(0);
      dt = in[0].dtype;
      if (op.dtype_rule == DTypeRule::SameNumeric && dt == DType::Bool) fail(op, "does not accept bool inputs");
      if (op.dtype_rule == DTypeRule::SameFloat && !is_float(dt))
        fail(op, "expects floating-point inputs, got " + std::string(dtype_name(dt)));
      if (op.dtype_rule == DTypeRule::SameIntegral && is_float(dt))
        fail(op, "expects integer or bool inputs, got " + std::string(dtype_name(dt)));
      if (op.dtype_rule == DTypeRule::SameInteger && !is_integer(dt))
        fail(op, "expects integer inputs, got " + std::string(dtype_name(dt)));
      // torch.any / torch.all keep uint8 (NumPy compatibility quirk of eager); everything else gives bool.
      if (op.dtype_rule == DTypeRule::ToBool)
        dt = (k == OpKind::Any || k == OpKind::All) && dt == DType::UInt8 ? DType::UInt8 : DType::Bool;
      if (op.dtype_rule == DTypeRule::ReduceAccum && !is_float(dt)) dt = DType::Int64;
      break;
    case DTypeRule::ToInt64:
      if (in[0].dtype == DType::Bool) fail(op, "does not accept bool inputs (as eager's argmax/argmin)");
      dt = DType::Int64;
      break;
    case DTypeRule::Where:
      if (in[0].dtype != DType::Bool)
        fail(op, "condition (input 0) must be bool, got " + std::string(dtype_name(in[0].dtype)));
      same_dtype(1);
      dt = in[1].dtype;
      break;
  }
  // An integer clamp converts its bounds to the input's dtype: a float bound that is not a whole number would be
  // truncated (clamp(i64, min=0.5) let 0 through), where eager promotes the result to float. Whole floats (2.0) are
  // the integer bound exactly.
  if (k == OpKind::Clamp && !is_float(dt))
    for (const char* b : {"min", "max"}) {
      if (!has_attr(attrs, b)) continue;
      const Scalar s = attr_scalar(attrs, b);
      if (!s.is_int && !(std::trunc(s.f) == s.f && s.f >= -0x1p63 && s.f < 0x1p63))
        fail(op, std::string("bound ") + b + "=" + print_float(s.f) +
                     (std::trunc(s.f) == s.f ? " is outside int64" : " is not an integer") + ", but the input is " +
                     std::string(dtype_name(dt)) +
                     "; cast the input to a floating dtype first (eager's clamp promotes the result to float)");
    }

  // A constant / full converts its value to its dtype (float -> integer truncates toward zero, as eager); a value
  // eager refuses to convert (NaN, +-inf, out of range) has no agreed result (the kernel and the interpreter wrapped
  // or saturated differently), so it is refused. Bool takes any value (nonzero and NaN are true); float dtypes round.
  if ((k == OpKind::Constant || k == OpKind::Full) && is_integer(dt))
    if (auto why = integer_value_misfit(attr_scalar(attrs, "value"), dt)) fail(op, *why);

  // Shape.
  Shape shape;
  switch (op.shape_rule) {
    case ShapeRule::FromAttr:
      shape = attr_shape(attrs, "shape");
      for (const auto& d : shape)
        if (auto c = d.as_const(); c && *c < 0) fail(op, "negative size " + d.str() + " in shape " + shape_str(shape));
      if (k == OpKind::BroadcastTo) {
        const Shape& s = in[0].shape;
        if (s.size() > shape.size())
          fail(op, "cannot broadcast rank " + std::to_string(s.size()) + " to rank " + std::to_string(shape.size()));
        for (size_t i = 0; i < s.size(); ++i) {
          const Expr& src = s[s.size() - 1 - i];
          const Expr& dst = shape[shape.size() - 1 - i];
          if (!(src == dst) && src.as_const() != 1)
            fail(op, "cannot broadcast " + shape_str(s) + " to " + shape_str(shape));
        }
      } else if (k == OpKind::Reshape) {
        if (sym_eq(numel(in[0].shape), numel(shape)) == Tri::False)
          fail(op, "cannot reshape " + shape_str(in[0].shape) + " (" + numel(in[0].shape).str() + " elements) to " +
                       shape_str(shape) + " (" + numel(shape).str() + " elements)");
      }
      if (k == OpKind::Input && has_attr(attrs, "strides") && attr_shape(attrs, "strides").size() != shape.size())
        fail(op, "strides have rank " + std::to_string(attr_shape(attrs, "strides").size()) + ", shape has rank " +
                     std::to_string(shape.size()));
      break;
    case ShapeRule::ScalarShape:
      break;
    case ShapeRule::IotaShape:
      shape = {attr_expr(attrs, "length")};
      if (auto c = shape[0].as_const(); c && *c < 0)
        fail(op, "negative size " + shape[0].str() + " in shape " + shape_str(shape) + " (attribute 'length')");
      break;
    case ShapeRule::Broadcast:
      shape = in[0].shape;
      for (int i = 1; i < n; ++i) {
        try {
          shape = broadcast_shapes(shape, in[i].shape);
        } catch (const IRError& e) {
          fail(op, e.what());
        }
      }
      break;
    case ShapeRule::Permute: {
      const auto& dims = attr_ints(attrs, "dims");
      const size_t r = in[0].shape.size();
      if (dims.size() != r)
        fail(op, "dims has " + std::to_string(dims.size()) + " entries for an input of rank " + std::to_string(r));
      std::vector<bool> seen(r, false);
      for (int64_t d : dims) {
        int64_t w = d < 0 ? d + static_cast<int64_t>(r) : d;
        if (w < 0 || w >= static_cast<int64_t>(r) || seen[w]) fail(op, "dims is not a permutation");
        seen[w] = true;
        shape.push_back(in[0].shape[w]);
      }
      break;
    }
    case ShapeRule::Slice: {
      shape = in[0].shape;
      int64_t axis = attr_int(attrs, "axis");
      const int64_t r = static_cast<int64_t>(shape.size());
      if (axis < 0) axis += r;
      if (axis < 0 || axis >= r) fail(op, "axis " + std::to_string(attr_int(attrs, "axis")) + " out of range");
      int64_t step = attr_int(attrs, "step");
      if (step <= 0) fail(op, "step must be positive, got " + std::to_string(step));
      Expr start = attr_expr(attrs, "start"), stop = attr_expr(attrs, "stop");
      if (sym_lt(start, Expr(0)) == Tri::True || sym_lt(stop, start) == Tri::True ||
          sym_lt(shape[axis], stop) == Tri::True)
        fail(op, "needs 0 <= start <= stop <= size, got start " + start.str() + ", stop " + stop.str() + ", size " +
                     shape[axis].str());
      shape[axis] = floordiv(stop - start + Expr(step - 1), Expr(step));
      break;
    }
    case ShapeRule::Concat: {
      shape = in[0].shape;
      int64_t axis = attr_int(attrs, "axis");
      const int64_t r = static_cast<int64_t>(shape.size());
      if (axis < 0) axis += r;
      if (axis < 0 || axis >= r) fail(op, "axis out of range");
      for (int i = 1; i < n; ++i) {
        if (in[i].shape.size() != shape.size()) fail(op, "inputs differ in rank");
        for (int64_t d = 0; d < r; ++d)
          if (d != axis && !(in[i].shape[d] == shape[d]))
            fail(op, "input " + std::to_string(i) + " has size " + in[i].shape[d].str() + " at dim " +
                         std::to_string(d) + ", expected " + shape[d].str());
        shape[axis] = shape[axis] + in[i].shape[axis];
      }
      break;
    }
    case ShapeRule::Reduce: {
      std::vector<int64_t> axes;
      try {
        axes = normalize_axes(attr_ints(attrs, "axes"), in[0].shape.size());
      } catch (const IRError& e) {
        fail(op, e.what());
      }
      bool keep = attr_bool(attrs, "keepdim");
      for (size_t i = 0; i < in[0].shape.size(); ++i) {
        bool red = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(i));
        if (!red)
          shape.push_back(in[0].shape[i]);
        else if (keep)
          shape.push_back(Expr(1));
      }
      if ((k == OpKind::Argmax || k == OpKind::Argmin) && attr_ints(attrs, "axes").size() > 1)
        fail(op, "reduces over exactly one axis (or all, with axes=[]), got " + std::to_string(axes.size()));
      break;
    }
  }
  return {dt, shape};
}

bool is_transcendental(OpKind k) {
  switch (k) {
    case OpKind::Exp:
    case OpKind::Exp2:
    case OpKind::Expm1:
    case OpKind::Log:
    case OpKind::Log2:
    case OpKind::Log10:
    case OpKind::Log1p:
    case OpKind::Sin:
    case OpKind::Cos:
    case OpKind::Tan:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::Erf:
    case OpKind::Pow:
    case OpKind::Atan2:
      return true;
    default:
      return false;
  }
}

}  // namespace autofuse
