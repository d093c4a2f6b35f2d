// The op table's C++ face: op kinds, categories, attribute values, and type (dtype + shape) inference.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "autofuse/ir/dtype.h"
#include "autofuse/ir/symbolic.h"

namespace autofuse {

/// Every IR op, in op_table.def order.
enum class OpKind : uint16_t {
#define AF_OP(E, ...) E,
#include "autofuse/ir/op_table.def"
#undef AF_OP
};

/// What an op does to its iteration space; drives fusion.
enum class OpCategory : uint8_t { Source, Elementwise, Broadcast, Reduce, Layout, Extern };

/// How an op's output dtype follows from its inputs (see op_table.def).
enum class DTypeRule : uint8_t {
  FromAttr,      ///< the "dtype" attribute
  SameAny,       ///< all inputs one dtype, output the same
  SameNumeric,   ///< like SameAny, bool refused
  SameFloat,     ///< like SameAny, floating point only
  SameIntegral,  ///< integers or bool
  SameInteger,   ///< integers only
  ToBool,        ///< inputs one dtype (any), output bool (any/all on u8 give u8, as eager)
  ToInt64,       ///< inputs any dtype but bool, output i64 (argmax, argmin)
  ReduceAccum,   ///< float: same; integer or bool: i64 (torch.sum / torch.prod)
  Where,         ///< where(bool, T, T) -> T
};

/// How an op's output shape follows from its inputs.
enum class ShapeRule : uint8_t { FromAttr, ScalarShape, IotaShape, Broadcast, Permute, Slice, Concat, Reduce };

enum class AttrKind : uint8_t { Int, Float, Bool, Scalar, DTypeK, Ints, ShapeK, ExprK, Str };

/// One attribute of an op's schema.
struct AttrSpec {
  std::string name;
  AttrKind kind;
  bool optional;
};

/// A scalar attribute (constant value, clamp bound): an integer or a float, kept exactly as written.
struct Scalar {
  bool is_int = true;
  int64_t i = 0;
  double f = 0.0;
  static Scalar of_int(int64_t v) { return {true, v, static_cast<double>(v)}; }
  static Scalar of_float(double v) { return {false, 0, v}; }
  double as_double() const { return is_int ? static_cast<double>(i) : f; }
  bool operator==(const Scalar& o) const;
};

using AttrValue =
    std::variant<int64_t, double, bool, Scalar, DType, std::vector<int64_t>, std::vector<Expr>, Expr, std::string>;
/// An op's attributes by name.
using Attrs = std::map<std::string, AttrValue>;

/// A row of the op table.
struct OpInfo {
  OpKind kind;
  std::string_view name;
  OpCategory category;
  int min_inputs;
  int max_inputs;  ///< -1: any number
  DTypeRule dtype_rule;
  ShapeRule shape_rule;
  std::vector<AttrSpec> attrs;
};

const OpInfo& op_info(OpKind k);

/// Ops computed by a library function (SLEEF) rather than a few instructions: exp/log families, trigonometric,
/// tanh, sigmoid, erf, pow, atan2. Used by cost models (fusion recompute, tiling) and by the emitter's row stash.
bool is_transcendental(OpKind k);
/// Lookup by IR text name; nullopt if no such op.
std::optional<OpKind> op_by_name(std::string_view name);
const std::vector<OpInfo>& all_ops();
std::string_view category_name(OpCategory c);

/// Malformed IR: a verifier, type-inference or builder error. The message names the node and what was expected.
class IRError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The type of one value: element type and symbolic shape.
struct TensorType {
  DType dtype;
  Shape shape;
};

/// Infer an op's output type from its input types and attributes, checking every rule of the op table
/// (arity, attribute presence and kinds, dtype rule, shape rule) and the attribute values eager would refuse: an
/// integer clamp's non-integral bounds, and a constant / full value that does not convert to its integer dtype
/// (NaN, +-inf, out of range: "constant: value=1e+20 does not fit i32; ..."). Throws IRError with a message that names
/// the op and what was expected ("add: input 1 has dtype f16, expected f32 like input 0").
TensorType infer_type(OpKind op, const std::vector<TensorType>& inputs, const Attrs& attrs);

/// NumPy/PyTorch broadcasting of two shapes; throws IRError when sizes are not provably compatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);

/// Typed attribute access; throws IRError naming the attribute when absent or of another kind.
int64_t attr_int(const Attrs& a, const std::string& name);
double attr_float(const Attrs& a, const std::string& name);
bool attr_bool(const Attrs& a, const std::string& name);
Scalar attr_scalar(const Attrs& a, const std::string& name);
DType attr_dtype(const Attrs& a, const std::string& name);
const std::vector<int64_t>& attr_ints(const Attrs& a, const std::string& name);
const std::vector<Expr>& attr_shape(const Attrs& a, const std::string& name);
Expr attr_expr(const Attrs& a, const std::string& name);
const std::string& attr_str(const Attrs& a, const std::string& name);
bool has_attr(const Attrs& a, const std::string& name);

/// Reduction axes normalized against a rank: negatives wrapped, sorted, unique. Throws IRError if out of range.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, size_t rank);

}  // namespace autofuse
