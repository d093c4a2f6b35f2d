#include "autofuse/ir/symbolic.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <functional>
#include <stdexcept>
#include <unordered_map>

namespace autofuse {

struct ExprNode {
  Expr::Kind kind;
  int64_t value = 0;
  std::string name;
  std::vector<Expr> args;
  size_t hash = 0;
};

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    throw std::overflow_error("size arithmetic overflows int64: " + std::to_string(a) + " + " + std::to_string(b));
  return r;
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    throw std::overflow_error("size arithmetic overflows int64: " + std::to_string(a) + " * " + std::to_string(b));
  return r;
}

int64_t floordiv_i64(int64_t a, int64_t b) {
  if (b == -1) return checked_mul(a, -1);  // INT64_MIN / -1 is the one quotient that does not fit
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t mod_i64(int64_t a, int64_t b) {
  if (b == -1) return 0;  // INT64_MIN % -1 is undefined in C++; mathematically 0
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

namespace {

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

std::shared_ptr<const ExprNode> make_const_node(int64_t v) {
  auto n = std::make_shared<ExprNode>();
  n->kind = Expr::Kind::Const;
  n->value = v;
  n->hash = mix(1, std::hash<int64_t>()(v));
  return n;
}

}  // namespace

// Builds nodes without canonicalization; the operators below canonicalize first.
class ExprBuilder {
 public:
  static Expr raw(Expr::Kind k, std::vector<Expr> args) {
    auto n = std::make_shared<ExprNode>();
    n->kind = k;
    size_t h = mix(17, static_cast<size_t>(k));
    for (const auto& a : args) h = mix(h, a.hash());
    n->hash = h;
    n->args = std::move(args);
    return Expr(std::shared_ptr<const ExprNode>(std::move(n)));
  }
  static Expr sym(const std::string& name) {
    auto n = std::make_shared<ExprNode>();
    n->kind = Expr::Kind::Sym;
    n->name = name;
    n->hash = mix(2, std::hash<std::string>()(name));
    return Expr(std::shared_ptr<const ExprNode>(std::move(n)));
  }
};

Expr::Expr() : node_(make_const_node(0)) {}
Expr::Expr(int64_t value) : node_(make_const_node(value)) {}

Expr Expr::sym(const std::string& name) {
  bool ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok) throw std::invalid_argument("invalid symbol name '" + name + "': expected an identifier");
  return ExprBuilder::sym(name);
}

Expr::Kind Expr::kind() const { return node_->kind; }
std::optional<int64_t> Expr::as_const() const {
  if (node_->kind == Kind::Const) return node_->value;
  return std::nullopt;
}
int64_t Expr::value() const {
  if (node_->kind != Kind::Const) throw std::logic_error("Expr::value on non-constant " + str());
  return node_->value;
}
const std::string& Expr::name() const {
  if (node_->kind != Kind::Sym) throw std::logic_error("Expr::name on non-symbol " + str());
  return node_->name;
}
const std::vector<Expr>& Expr::args() const { return node_->args; }
size_t Expr::hash() const { return node_->hash; }

int Expr::compare(const Expr& a, const Expr& b) {
  if (a.node_ == b.node_) return 0;
  if (a.kind() != b.kind()) return a.kind() < b.kind() ? -1 : 1;
  switch (a.kind()) {
    case Kind::Const:
      return a.node_->value < b.node_->value ? -1 : (a.node_->value > b.node_->value ? 1 : 0);
    case Kind::Sym:
      // Natural order so that s2 sorts before s10.
      if (a.node_->name.size() != b.node_->name.size()) return a.node_->name.size() < b.node_->name.size() ? -1 : 1;
      return a.node_->name.compare(b.node_->name) < 0 ? -1 : (a.node_->name == b.node_->name ? 0 : 1);
    default: {
      const auto& x = a.args();
      const auto& y = b.args();
      if (x.size() != y.size()) return x.size() < y.size() ? -1 : 1;
      for (size_t i = 0; i < x.size(); ++i)
        if (int c = compare(x[i], y[i])) return c;
      return 0;
    }
  }
}

bool Expr::operator==(const Expr& o) const {
  return node_ == o.node_ || (hash() == o.hash() && compare(*this, o) == 0);
}

namespace {

bool less(const Expr& a, const Expr& b) { return Expr::compare(a, b) < 0; }

// Largest number of terms a product of sums is expanded into (see make_mul).
constexpr size_t kMaxExpandedTerms = 1024;

// Split a product term into (coefficient, non-constant part). The non-constant part of a constant is 1.
std::pair<int64_t, Expr> split_coeff(const Expr& e) {
  if (auto c = e.as_const()) return {*c, Expr(1)};
  if (e.kind() == Expr::Kind::Mul && e.args()[0].is_const()) {
    const auto& a = e.args();
    std::vector<Expr> rest(a.begin() + 1, a.end());
    Expr base = rest.size() == 1 ? rest[0] : ExprBuilder::raw(Expr::Kind::Mul, rest);
    return {a[0].value(), base};
  }
  return {1, e};
}

Expr scale(int64_t c, const Expr& base) {
  if (c == 0) return Expr(0);
  if (base.is_const()) return Expr(checked_mul(c, base.value()));
  if (c == 1) return base;
  std::vector<Expr> args{Expr(c)};
  if (base.kind() == Expr::Kind::Mul)
    args.insert(args.end(), base.args().begin(), base.args().end());
  else
    args.push_back(base);
  return ExprBuilder::raw(Expr::Kind::Mul, std::move(args));
}

Expr make_add(const std::vector<Expr>& in) {
  std::vector<Expr> flat;
  std::function<void(const Expr&)> push = [&](const Expr& e) {
    if (e.kind() == Expr::Kind::Add)
      for (const auto& a : e.args()) push(a);
    else
      flat.push_back(e);
  };
  for (const auto& e : in) push(e);
  int64_t constant = 0;
  std::vector<std::pair<Expr, int64_t>> terms;  // base -> coefficient
  // Like terms are found by a linear scan while there are few, then through a hash index (a sum of n distinct
  // symbols, parsed one '+' at a time, was cubic in n with the scan alone).
  constexpr size_t kScanTerms = 8;
  std::unordered_map<Expr, size_t> index;  // base -> its position in terms, once terms outgrows kScanTerms
  for (const auto& e : flat) {
    auto [c, base] = split_coeff(e);
    if (base.is_const()) {
      constant = checked_add(constant, checked_mul(c, base.value()));
      continue;
    }
    size_t at = terms.size();
    if (terms.size() <= kScanTerms) {
      for (size_t k = 0; k < terms.size() && at == terms.size(); ++k)
        if (terms[k].first == base) at = k;
    } else {
      if (index.empty())
        for (size_t k = 0; k < terms.size(); ++k) index.emplace(terms[k].first, k);
      at = index.try_emplace(base, terms.size()).first->second;
    }
    if (at < terms.size())
      terms[at].second = checked_add(terms[at].second, c);
    else
      terms.emplace_back(base, c);
  }
  std::sort(terms.begin(), terms.end(), [](const auto& a, const auto& b) { return less(a.first, b.first); });
  std::vector<Expr> out;
  out.reserve(terms.size() + 1);
  if (constant != 0) out.push_back(Expr(constant));
  for (const auto& [base, c] : terms)
    if (c != 0) out.push_back(scale(c, base));
  if (out.empty()) return Expr(0);
  if (out.size() == 1) return out[0];
  return ExprBuilder::raw(Expr::Kind::Add, std::move(out));
}

Expr make_mul(const std::vector<Expr>& in) {
  // Distribute a constant over a sum so that 2*(s0+1) and 2*s0+2 share one canonical form.
  std::vector<Expr> flat;
  std::function<void(const Expr&)> push = [&](const Expr& e) {
    if (e.kind() == Expr::Kind::Mul)
      for (const auto& a : e.args()) push(a);
    else
      flat.push_back(e);
  };
  for (const auto& e : in) push(e);
  int64_t c = 1;
  std::vector<Expr> rest;
  for (const auto& e : flat) {
    if (e.is_const())
      c = checked_mul(c, e.value());
    else
      rest.push_back(e);
  }
  if (c == 0) return Expr(0);
  if (rest.empty()) return Expr(c);
  // Distribute over sums: (a + b) * x = a*x + b*x, keeping polynomials in sum-of-products form. A product whose
  // expansion would exceed kMaxExpandedTerms terms is refused (std::overflow_error) rather than kept factored: a
  // partly factored form would depend on the order the factors were multiplied in, and no tensor size needs it.
  size_t expanded = 1;
  for (const auto& e : rest)
    if (e.kind() == Expr::Kind::Add) expanded = std::min<size_t>(expanded * e.args().size(), kMaxExpandedTerms + 1);
  if (expanded > kMaxExpandedTerms)
    throw std::overflow_error("size expression too large: expanding a product of sums gives more than " +
                              std::to_string(kMaxExpandedTerms) + " terms");
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i].kind() == Expr::Kind::Add) {
      std::vector<Expr> others(rest.begin(), rest.end());
      others.erase(others.begin() + static_cast<long>(i));
      others.push_back(Expr(c));
      std::vector<Expr> sum;
      for (const auto& t : rest[i].args()) {
        std::vector<Expr> f = others;
        f.push_back(t);
        sum.push_back(make_mul(f));
      }
      return make_add(sum);
    }
  }
  std::sort(rest.begin(), rest.end(), less);
  if (rest.size() == 1 && c == 1) return rest[0];
  std::vector<Expr> args;
  if (c != 1) args.push_back(Expr(c));
  args.insert(args.end(), rest.begin(), rest.end());
  return ExprBuilder::raw(Expr::Kind::Mul, std::move(args));
}

}  // namespace

Expr sum(const std::vector<Expr>& terms) { return make_add(terms); }

Expr operator+(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(checked_add(a.value(), b.value()));
  return make_add({a, b});
}
Expr operator-(const Expr& a) { return make_mul({Expr(-1), a}); }
Expr operator-(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) {
    int64_t r;
    if (__builtin_sub_overflow(a.value(), b.value(), &r))
      throw std::overflow_error("size arithmetic overflows int64: " + a.str() + " - " + b.str());
    return Expr(r);
  }
  return make_add({a, -b});
}
Expr operator*(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(checked_mul(a.value(), b.value()));
  return make_mul({a, b});
}

namespace {
// The terms of a sum (or the expression itself when it is not a sum).
std::vector<Expr> sum_terms(const Expr& a) { return a.kind() == Expr::Kind::Add ? a.args() : std::vector<Expr>{a}; }
}  // namespace

// Canonical rules (c a nonzero constant): constants fold; floordiv(x, 1) = x; terms whose coefficient c divides are
// pulled out, floordiv(c*x + r, c) = x + floordiv(r, c) (exact for every integer x); nested divisions by positive
// constants merge, floordiv(floordiv(x, a), b) = floordiv(x, a*b).
Expr floordiv(const Expr& a, const Expr& b) {
  if (auto cb = b.as_const()) {
    if (*cb == 0) throw std::domain_error("floordiv by zero in size expression " + a.str());
    if (auto ca = a.as_const()) return Expr(floordiv_i64(*ca, *cb));
    if (*cb == 1) return a;
    if (*cb > 0 && a.kind() == Expr::Kind::FloorDiv && a.args()[1].is_const() && a.args()[1].value() > 0)
      return floordiv(a.args()[0], Expr(checked_mul(a.args()[1].value(), *cb)));
    std::vector<Expr> whole, rest;
    for (const auto& t : sum_terms(a)) {
      auto [c, base] = split_coeff(t);
      if (mod_i64(c, *cb) == 0)
        whole.push_back(scale(floordiv_i64(c, *cb), base));
      else
        rest.push_back(t);
    }
    if (!whole.empty()) {
      Expr r = make_add(rest);
      whole.push_back(rest.empty() ? Expr(0) : floordiv(r, b));
      return make_add(whole);
    }
  }
  if (auto ca = a.as_const(); ca && *ca == 0) return Expr(0);
  if (a == b) return Expr(1);  // sizes in a floordiv by themselves are taken as nonzero
  return ExprBuilder::raw(Expr::Kind::FloorDiv, {a, b});
}

// Canonical rules (c a nonzero constant): constants fold; every coefficient of the dividend is reduced modulo c
// (adding multiples of c does not change the result), so mod(2*s0 + 5, 2) = mod(1, 2) = 1 and mod(3*s0, 2) =
// mod(s0, 2); mod(x, x) = 0.
Expr mod(const Expr& a, const Expr& b) {
  if (auto cb = b.as_const()) {
    if (*cb == 0) throw std::domain_error("mod by zero in size expression " + a.str());
    if (auto ca = a.as_const()) return Expr(mod_i64(*ca, *cb));
    std::vector<Expr> reduced;
    bool changed = false;
    for (const auto& t : sum_terms(a)) {
      auto [c, base] = split_coeff(t);
      int64_t r = mod_i64(c, *cb);
      changed = changed || r != c;
      if (r != 0) reduced.push_back(scale(r, base));
    }
    if (changed) return mod(make_add(reduced), b);
  }
  if (auto ca = a.as_const(); ca && *ca == 0) return Expr(0);
  if (a == b) return Expr(0);
  return ExprBuilder::raw(Expr::Kind::Mod, {a, b});
}

Expr min(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(std::min(a.value(), b.value()));
  if (sym_le(a, b) == Tri::True) return a;
  if (sym_le(b, a) == Tri::True) return b;
  return less(a, b) ? ExprBuilder::raw(Expr::Kind::Min, {a, b}) : ExprBuilder::raw(Expr::Kind::Min, {b, a});
}

Expr max(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(std::max(a.value(), b.value()));
  if (sym_le(a, b) == Tri::True) return b;
  if (sym_le(b, a) == Tri::True) return a;
  return less(a, b) ? ExprBuilder::raw(Expr::Kind::Max, {a, b}) : ExprBuilder::raw(Expr::Kind::Max, {b, a});
}

int64_t Expr::eval(const Bindings& b) const {
  switch (kind()) {
    case Kind::Const:
      return node_->value;
    case Kind::Sym: {
      auto it = b.find(node_->name);
      if (it == b.end()) throw std::out_of_range("unbound size symbol '" + node_->name + "'");
      return it->second;
    }
    case Kind::Add: {
      int64_t s = 0;
      for (const auto& a : args()) s = checked_add(s, a.eval(b));
      return s;
    }
    case Kind::Mul: {
      int64_t p = 1;
      for (const auto& a : args()) p = checked_mul(p, a.eval(b));
      return p;
    }
    case Kind::FloorDiv:
    case Kind::Mod: {
      int64_t x = args()[0].eval(b), y = args()[1].eval(b);
      if (y == 0) throw std::domain_error("division by zero evaluating size expression " + str());
      return kind() == Kind::FloorDiv ? floordiv_i64(x, y) : mod_i64(x, y);
    }
    case Kind::Min:
      return std::min(args()[0].eval(b), args()[1].eval(b));
    case Kind::Max:
      return std::max(args()[0].eval(b), args()[1].eval(b));
  }
  return 0;
}

Expr Expr::substitute(const std::map<std::string, Expr>& m) const {
  switch (kind()) {
    case Kind::Const:
      return *this;
    case Kind::Sym: {
      auto it = m.find(node_->name);
      return it == m.end() ? *this : it->second;
    }
    default: {
      std::vector<Expr> a;
      for (const auto& x : args()) a.push_back(x.substitute(m));
      switch (kind()) {
        case Kind::Add:
          return make_add(a);
        case Kind::Mul:
          return make_mul(a);
        case Kind::FloorDiv:
          return floordiv(a[0], a[1]);
        case Kind::Mod:
          return mod(a[0], a[1]);
        case Kind::Min:
          return min(a[0], a[1]);
        default:
          return max(a[0], a[1]);
      }
    }
  }
}

void Expr::collect_symbols(std::set<std::string>& out) const {
  if (kind() == Kind::Sym) out.insert(node_->name);
  for (const auto& a : args()) a.collect_symbols(out);
}
std::set<std::string> Expr::symbols() const {
  std::set<std::string> s;
  collect_symbols(s);
  return s;
}

std::string Expr::str() const {
  switch (kind()) {
    case Kind::Const:
      return std::to_string(node_->value);
    case Kind::Sym:
      return node_->name;
    case Kind::Add: {
      // Constant last reads naturally: "s0 + 1".
      std::string s;
      const auto& a = args();
      std::vector<Expr> order(a.begin(), a.end());
      if (order[0].is_const()) std::rotate(order.begin(), order.begin() + 1, order.end());
      for (size_t i = 0; i < order.size(); ++i) {
        auto [c, base] = split_coeff(order[i]);
        if (i == 0) {
          s += order[i].str();
        } else if (c < 0 && c != INT64_MIN) {  // INT64_MIN has no positive counterpart: "+ -9223372036854775808"
          s += " - " + (base.is_const() ? std::to_string(-c) : scale(-c, base).str());
        } else {
          s += " + " + order[i].str();
        }
      }
      return s;
    }
    case Kind::Mul: {
      std::string s;
      for (size_t i = 0; i < args().size(); ++i) {
        const Expr& a = args()[i];
        if (i) s += "*";
        if (i == 0 && a.is_const() && a.value() == -1 && args().size() > 1) {
          s = "-";
          continue;
        }
        bool paren = a.kind() == Kind::Add || (a.is_const() && a.value() < 0 && i > 0);
        s += paren ? "(" + a.str() + ")" : a.str();
      }
      // "-*x" -> "-x"
      if (s.rfind("-*", 0) == 0) s = "-" + s.substr(2);
      return s;
    }
    case Kind::FloorDiv:
      return "floordiv(" + args()[0].str() + ", " + args()[1].str() + ")";
    case Kind::Mod:
      return "mod(" + args()[0].str() + ", " + args()[1].str() + ")";
    case Kind::Min:
      return "min(" + args()[0].str() + ", " + args()[1].str() + ")";
    case Kind::Max:
      return "max(" + args()[0].str() + ", " + args()[1].str() + ")";
  }
  return "?";
}

bool provably_nonnegative(const Expr& e) {
  switch (e.kind()) {
    case Expr::Kind::Const:
      return e.value() >= 0;
    case Expr::Kind::Sym:
      return true;
    case Expr::Kind::Add:
    case Expr::Kind::Mul:
    case Expr::Kind::Min:
    case Expr::Kind::Max:
      if (e.kind() == Expr::Kind::Max) {
        return provably_nonnegative(e.args()[0]) || provably_nonnegative(e.args()[1]);
      }
      for (const auto& a : e.args())
        if (!provably_nonnegative(a)) return false;
      return true;
    case Expr::Kind::FloorDiv:
      return provably_nonnegative(e.args()[0]) && provably_nonnegative(e.args()[1]);
    case Expr::Kind::Mod:
      return provably_nonnegative(e.args()[1]);
  }
  return false;
}

// The comparisons work on differences of canonical forms; a difference that overflows int64 answers Unknown.
Tri sym_le(const Expr& a, const Expr& b) {
  try {
    Expr d = b - a;
    if (auto c = d.as_const()) return *c >= 0 ? Tri::True : Tri::False;
    if (provably_nonnegative(d)) return Tri::True;
    if (provably_nonnegative(a - b - Expr(1))) return Tri::False;
  } catch (const std::overflow_error&) {
  }
  return Tri::Unknown;
}

Tri sym_lt(const Expr& a, const Expr& b) {
  try {
    return sym_le(a + Expr(1), b);
  } catch (const std::overflow_error&) {
    return Tri::Unknown;
  }
}

Tri sym_eq(const Expr& a, const Expr& b) {
  if (a == b) return Tri::True;
  try {
    Expr d = a - b;
    if (auto c = d.as_const()) return *c == 0 ? Tri::True : Tri::False;
  } catch (const std::overflow_error&) {
    return Tri::Unknown;
  }
  if (sym_lt(a, b) == Tri::True || sym_lt(b, a) == Tri::True) return Tri::False;
  return Tri::Unknown;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + s[i].str();
  return r + "]";
}

Expr numel(const Shape& s) {
  Expr n(1);
  for (const auto& d : s) n = n * d;
  return n;
}

std::vector<int64_t> eval_shape(const Shape& s, const Bindings& b) {
  std::vector<int64_t> r;
  r.reserve(s.size());
  for (const auto& d : s) r.push_back(d.eval(b));
  return r;
}

std::vector<Expr> contiguous_strides(const Shape& s) {
  std::vector<Expr> st(s.size(), Expr(1));
  Expr acc(1);
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc = acc * s[i];
  }
  return st;
}

}  // namespace autofuse
