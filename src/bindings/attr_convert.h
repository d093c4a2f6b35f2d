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

/// A Python int (or an object with __index__) as int64. Throws std::overflow_error (Python's OverflowError) naming
/// `what`, `noun` and the value when it does not fit in int64 ("sum: attribute 'axes': integer 1180591620717411303424
/// does not fit in int64"), nb::type_error naming `what` for a value that is not an int.
int64_t to_int64(nb::handle obj, const std::string& what, const char* noun = "integer");
/// An int or an expression string as an Expr. Throws nb::type_error for other types, ParseError for bad text,
/// std::overflow_error naming `what` for an int outside int64 ("shape: size 9223372036854775808 does not fit in
/// int64").
Expr to_expr(nb::handle obj, const std::string& what);
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
