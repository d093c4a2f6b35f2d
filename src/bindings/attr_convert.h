// Conversions between Python values and IR attribute values / size expressions, for the bindings.
//
// Python forms: a size expression is an int (constant) or a str ("s0", "s0*2 + 1", parsed by ir/parser.h); a shape
// is a list of those. Attribute values follow the kind in the op's schema (ops.h AttrKind): int, float, bool,
// scalar (int or float), dtype (see to_dtype), ints (list of int), shape, expr, str.
#pragma once

#include <nanobind/nanobind.h>

#include <string>
#include <vector>

#include "autofuse/ir/ops.h"

namespace autofuse::bindings {

namespace nb = nanobind;

/// An int or an expression string as an Expr. Throws nb::type_error for other types, ParseError for bad text.
Expr to_expr(nb::handle obj);
/// A list/tuple of sizes as a Shape; `what` names the argument in errors.
Shape to_shape(nb::handle obj, const char* what);
/// Back to Python: an int for a constant, the canonical text otherwise.
nb::object from_expr(const Expr& e);
nb::list from_shape(const Shape& s);

/// A Python value as the attribute `spec` of op `op` expects. Throws nb::type_error naming op and attribute.
AttrValue to_attr(nb::handle obj, const AttrSpec& spec, std::string_view op);
/// A Python dict of attributes for op `k`, checked against its schema: unknown names are refused (nb::value_error).
Attrs to_attrs(nb::handle dict, OpKind k);
/// An attribute value as a plain Python value (DType values as autofuse.DType).
nb::object from_attr(const AttrValue& v);

}  // namespace autofuse::bindings
