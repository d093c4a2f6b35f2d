// Python <-> IR attribute and size-expression conversions; see attr_convert.h.
#include "attr_convert.h"

#include <nanobind/stl/string.h>

#include <stdexcept>

#include "autofuse/ir/parser.h"
#include "tensor_convert.h"

namespace autofuse::bindings {

namespace {

bool is_int(nb::handle obj) { return nb::isinstance<nb::int_>(obj) && !nb::isinstance<nb::bool_>(obj); }

std::string py_repr(nb::handle obj) { return nb::cast<std::string>(nb::repr(obj)); }

std::vector<int64_t> to_ints(nb::handle obj, const std::string& what) {
  if (!nb::isinstance<nb::list>(obj) && !nb::isinstance<nb::tuple>(obj)) {
    throw nb::type_error((what + ": expected a list of ints, got '" + py_type_name(obj) + "'").c_str());
  }
  std::vector<int64_t> r;
  for (nb::handle x : obj) {
    if (!is_int(x)) throw nb::type_error((what + ": expected a list of ints, found '" + py_type_name(x) + "'").c_str());
    r.push_back(to_int64(x, what));
  }
  return r;
}

}  // namespace

int64_t to_int64(nb::handle obj, const std::string& what, const char* noun) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
  if (overflow != 0) throw std::overflow_error(what + ": " + noun + " " + py_repr(obj) + " does not fit in int64");
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    throw nb::type_error((what + ": expected an int, got '" + py_type_name(obj) + "'").c_str());
  }
  return v;
}

Expr to_expr(nb::handle obj, const std::string& what) {
  if (is_int(obj)) return Expr(to_int64(obj, what, "size"));
  if (nb::isinstance<nb::str>(obj)) return parse_expr(nb::cast<std::string>(obj));
  throw nb::type_error(
      ("size: expected an int or an expression string like 's0*2', got '" + py_type_name(obj) + "'").c_str());
}

Shape to_shape(nb::handle obj, const char* what) {
  if (!nb::isinstance<nb::list>(obj) && !nb::isinstance<nb::tuple>(obj)) {
    throw nb::type_error(
        (std::string(what) + ": expected a list of sizes (ints or strings like 's0'), got '" + py_type_name(obj) + "'")
            .c_str());
  }
  Shape s;
  for (nb::handle x : obj) s.push_back(to_expr(x, what));
  return s;
}

nb::object from_expr(const Expr& e) {
  if (auto c = e.as_const()) return nb::int_(*c);
  return nb::str(e.str().c_str());
}

nb::list from_shape(const Shape& s) {
  nb::list l;
  for (const Expr& e : s) l.append(from_expr(e));
  return l;
}

AttrValue to_attr(nb::handle obj, const AttrSpec& spec, std::string_view op) {
  const std::string what = std::string(op) + ": attribute '" + spec.name + "'";
  auto bad = [&](const char* expected) {
    return nb::type_error((what + ": expected " + expected + ", got '" + py_type_name(obj) + "'").c_str());
  };
  switch (spec.kind) {
    case AttrKind::Int:
      if (!is_int(obj)) throw bad("an int");
      return to_int64(obj, what);
    case AttrKind::Float:
      if (!nb::isinstance<nb::float_>(obj) && !is_int(obj)) throw bad("a float");
      return nb::cast<double>(obj);
    case AttrKind::Bool:
      if (!nb::isinstance<nb::bool_>(obj)) throw bad("a bool");
      return nb::cast<bool>(obj);
    case AttrKind::Scalar:
      if (nb::isinstance<nb::float_>(obj)) return Scalar::of_float(nb::cast<double>(obj));
      if (nb::isinstance<nb::int_>(obj)) return Scalar::of_int(to_int64(obj, what));  // bool: 0 / 1
      throw bad("an int or a float");
    case AttrKind::DTypeK:
      return to_dtype(obj);
    case AttrKind::Ints:
      return to_ints(obj, what);
    case AttrKind::ShapeK:
      return to_shape(obj, what.c_str());
    case AttrKind::ExprK:
      return to_expr(obj, what);
    case AttrKind::Str:
      if (!nb::isinstance<nb::str>(obj)) throw bad("a str");
      return nb::cast<std::string>(obj);
  }
  throw bad("a known attribute kind");
}

Attrs to_attrs(nb::handle dict, OpKind k) {
  const OpInfo& info = op_info(k);
  Attrs attrs;
  if (dict.is_none()) return attrs;
  if (!nb::isinstance<nb::dict>(dict)) {
    throw nb::type_error(
        (std::string(info.name) + ": attrs: expected a dict, got '" + py_type_name(dict) + "'").c_str());
  }
  for (auto [key, value] : nb::borrow<nb::dict>(dict)) {
    std::string name = nb::cast<std::string>(key);
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : info.attrs) {
      if (s.name == name) spec = &s;
    }
    if (!spec) {
      std::string known;
      for (const AttrSpec& s : info.attrs) known += (known.empty() ? "" : ", ") + s.name;
      throw nb::value_error((std::string(info.name) + ": no attribute named '" + name +
                             "'; its attributes are: " + (known.empty() ? std::string("(none)") : known))
                                .c_str());
    }
    attrs[name] = to_attr(value, *spec, info.name);
  }
  return attrs;
}

nb::object from_attr(const AttrValue& v) {
  struct Visitor {
    nb::object operator()(int64_t x) const { return nb::int_(x); }
    nb::object operator()(double x) const { return nb::float_(x); }
    nb::object operator()(bool x) const { return nb::bool_(x); }
    nb::object operator()(const Scalar& s) const {
      return s.is_int ? nb::object(nb::int_(s.i)) : nb::object(nb::float_(s.f));
    }
    nb::object operator()(DType d) const { return nb::cast(d); }
    nb::object operator()(const std::vector<int64_t>& xs) const {
      nb::list l;
      for (int64_t x : xs) l.append(nb::int_(x));
      return l;
    }
    nb::object operator()(const std::vector<Expr>& s) const { return from_shape(s); }
    nb::object operator()(const Expr& e) const { return from_expr(e); }
    nb::object operator()(const std::string& s) const { return nb::str(s.c_str()); }
  };
  return std::visit(Visitor{}, v);
}

}  // namespace autofuse::bindings
