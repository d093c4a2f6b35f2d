// Symbolic sizes: integer expressions over named symbols (s0, s1, ...) with +, -, *, floordiv, mod, min, max.
//
// Expressions are immutable and kept in a canonical form by the constructors (constants folded, sums and products
// flattened and sorted, like terms combined), so structural equality decides most equalities of sizes. Symbols stand
// for tensor sizes and are assumed to be >= 0, which the tri-state comparisons use.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace autofuse {

class Expr;
/// Values of symbols, by name.
using Bindings = std::map<std::string, int64_t>;

/// One node of an expression tree; use Expr, never this directly.
struct ExprNode;

/// An integer size expression in canonical form. Cheap to copy (shared immutable tree).
class Expr {
 public:
  enum class Kind : uint8_t { Const, Sym, Add, Mul, FloorDiv, Mod, Min, Max };

  Expr();               ///< the constant 0
  Expr(int64_t value);  // NOLINT(google-explicit-constructor): constants convert implicitly
  Expr(int value) : Expr(static_cast<int64_t>(value)) {}  // NOLINT
  /// A named symbol. The name must be an identifier ([A-Za-z_][A-Za-z0-9_]*); throws std::invalid_argument if not.
  static Expr sym(const std::string& name);

  Kind kind() const;
  bool is_const() const { return kind() == Kind::Const; }
  /// The value of a constant expression, nullopt otherwise.
  std::optional<int64_t> as_const() const;
  /// The constant's value; throws std::logic_error on a non-constant.
  int64_t value() const;
  /// The symbol's name; throws std::logic_error on a non-symbol.
  const std::string& name() const;
  /// Operands of Add, Mul (two or more), FloorDiv, Mod, Min, Max (two).
  const std::vector<Expr>& args() const;

  /// Value under the bindings. Throws std::out_of_range naming an unbound symbol, std::domain_error on a division
  /// or modulo by zero, std::overflow_error when a step does not fit in int64.
  int64_t eval(const Bindings& b) const;
  /// Replace symbols by expressions, re-canonicalizing.
  Expr substitute(const std::map<std::string, Expr>& m) const;
  /// Names of all symbols inside.
  void collect_symbols(std::set<std::string>& out) const;
  std::set<std::string> symbols() const;

  /// Text form, parseable by the IR parser: "s0*s1 + 4", "floordiv(s0, 2)", "min(s0, 8)".
  std::string str() const;

  /// Structural equality of canonical forms.
  bool operator==(const Expr& o) const;
  bool operator!=(const Expr& o) const { return !(*this == o); }
  /// A total order on canonical forms (constants first), used to sort operands.
  static int compare(const Expr& a, const Expr& b);
  size_t hash() const;

  friend Expr operator+(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a, const Expr& b);
  friend Expr operator*(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a);
  /// Floor division (rounds toward -inf, like Python's //).
  friend Expr floordiv(const Expr& a, const Expr& b);
  /// Modulo with the sign of the divisor (Python's %).
  friend Expr mod(const Expr& a, const Expr& b);
  friend Expr min(const Expr& a, const Expr& b);
  friend Expr max(const Expr& a, const Expr& b);

 private:
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  static Expr make(Kind k, std::vector<Expr> args);
  std::shared_ptr<const ExprNode> node_;
  friend struct ExprNode;
  friend class ExprBuilder;
};

/// The canonical sum of `terms` (0 for none), equal to terms[0] + terms[1] + ... but built in one step: O(n log n)
/// for n terms, where the chain of `+` is quadratic. Throws std::overflow_error when a partial sum of the constants
/// or of one base's coefficients, taken in order, does not fit in int64 (where the chain of `+` throws too).
Expr sum(const std::vector<Expr>& terms);

/// Answer of a comparison of symbolic sizes.
enum class Tri : uint8_t { False, True, Unknown };

/// a == b: True if provably equal, False if provably different, Unknown else.
Tri sym_eq(const Expr& a, const Expr& b);
/// a < b and a <= b, using that symbols are >= 0.
Tri sym_lt(const Expr& a, const Expr& b);
Tri sym_le(const Expr& a, const Expr& b);
/// Provably e >= 0 (all symbols are sizes, >= 0).
bool provably_nonnegative(const Expr& e);

/// Python-style floor division and modulo on int64 (divisor nonzero). floordiv_i64(INT64_MIN, -1) throws
/// std::overflow_error.
int64_t floordiv_i64(int64_t a, int64_t b);
int64_t mod_i64(int64_t a, int64_t b);
/// a + b and a * b on int64; throw std::overflow_error instead of wrapping. Every constant fold in Expr uses them, so
/// building or evaluating an expression whose value does not fit in int64 throws std::overflow_error.
int64_t checked_add(int64_t a, int64_t b);
int64_t checked_mul(int64_t a, int64_t b);

/// A tensor shape: one size expression per axis.
using Shape = std::vector<Expr>;
std::string shape_str(const Shape& s);  ///< "[s0, 4]"
/// Product of the sizes (canonical).
Expr numel(const Shape& s);
/// Evaluate every size; throws like Expr::eval.
std::vector<int64_t> eval_shape(const Shape& s, const Bindings& b);
/// Row-major contiguous strides (in elements) of a shape.
std::vector<Expr> contiguous_strides(const Shape& s);

}  // namespace autofuse

template <>
struct std::hash<autofuse::Expr> {
  size_t operator()(const autofuse::Expr& e) const { return e.hash(); }
};
