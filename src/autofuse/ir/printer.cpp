#include "autofuse/ir/printer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace autofuse {

std::string print_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string print_attr(const AttrValue& v) {
  struct Visitor {
    std::string operator()(int64_t x) const { return std::to_string(x); }
    std::string operator()(double x) const { return print_float(x); }
    std::string operator()(bool x) const { return x ? "true" : "false"; }
    std::string operator()(const Scalar& x) const { return x.is_int ? std::to_string(x.i) : print_float(x.f); }
    std::string operator()(DType x) const { return std::string(dtype_name(x)); }
    std::string operator()(const std::vector<int64_t>& x) const {
      std::string s = "[";
      for (size_t i = 0; i < x.size(); ++i) s += (i ? ", " : "") + std::to_string(x[i]);
      return s + "]";
    }
    std::string operator()(const std::vector<Expr>& x) const { return shape_str(x); }
    std::string operator()(const Expr& x) const {
      // A compound expression is parenthesized so that it reads back as one attribute value.
      return x.is_const() || x.kind() == Expr::Kind::Sym ? x.str() : "(" + x.str() + ")";
    }
    std::string operator()(const std::string& x) const {
      // Escapes the parser reads back: \\ \" \n \t \r, and \xHH for every other byte outside printable ASCII.
      static const char* kHex = "0123456789abcdef";
      std::string s = "\"";
      for (char c : x) {
        auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\')
          s += std::string("\\") + c;
        else if (c == '\n')
          s += "\\n";
        else if (c == '\t')
          s += "\\t";
        else if (c == '\r')
          s += "\\r";
        else if (u < 0x20 || u >= 0x7f)
          s += std::string("\\x") + kHex[u >> 4] + kHex[u & 15];
        else
          s += c;
      }
      return s + "\"";
    }
  };
  return std::visit(Visitor{}, v);
}

std::string print_type(const TensorType& t) { return std::string(dtype_name(t.dtype)) + shape_str(t.shape); }

namespace {
std::string attrs_str(const Node& n, bool skip_type_attrs) {
  std::string s;
  for (const auto& spec : n.info().attrs) {
    auto it = n.attrs.find(spec.name);
    if (it == n.attrs.end()) continue;
    if (skip_type_attrs && (spec.name == "dtype" || spec.name == "shape" || spec.name == "strides")) continue;
    s += (s.empty() ? "" : ", ") + spec.name + "=" + print_attr(it->second);
  }
  return s.empty() ? s : " {" + s + "}";
}
}  // namespace

std::string print_node(const Graph& g, const Node& n) {
  std::string s = "%" + n.name + " = " + std::string(n.info().name) + "(";
  for (size_t i = 0; i < n.inputs.size(); ++i) s += (i ? ", %" : "%") + g.node(n.inputs[i]).name;
  s += ")" + attrs_str(n, false) + " : " + print_type(n.type());
  return s;
}

std::string print_graph(const Graph& g) {
  std::string s = "graph " + g.name() + "(";
  bool first = true;
  for (const auto& n : g.nodes()) {
    if (n.op != OpKind::Input) continue;
    s += (first ? "%" : ", %") + n.name + ": " + print_type(n.type());
    if (has_attr(n.attrs, "strides")) s += " strides " + shape_str(attr_shape(n.attrs, "strides"));
    first = false;
  }
  s += ") {\n";
  for (const auto& n : g.nodes())
    if (n.op != OpKind::Input) s += "  " + print_node(g, n) + "\n";
  s += "  return ";
  for (size_t i = 0; i < g.outputs().size(); ++i) s += (i ? ", %" : "%") + g.node(g.outputs()[i]).name;
  return s + "\n}\n";
}

}  // namespace autofuse
