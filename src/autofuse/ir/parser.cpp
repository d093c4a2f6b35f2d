#include "autofuse/ir/parser.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_map>

#include "autofuse/ir/lexer.h"
#include "autofuse/ir/printer.h"
#include "autofuse/ir/verifier.h"

namespace autofuse {

ParseError::ParseError(std::string file, int line, int col, std::string message)
    : IRError(file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: " + message),
      file_(std::move(file)),
      line_(line),
      col_(col),
      message_(std::move(message)) {}

namespace {

// Deepest nesting of parentheses, function calls and unary minus in one size expression. Printed expressions nest a
// few levels; the bound keeps hostile input from exhausting the stack.
constexpr int kMaxExprDepth = 100;

class Parser {
 public:
  Parser(std::string_view text, std::string_view file) : file_(file), toks_(tokenize(text, file_)) {}

  Graph graph(const VerifyOptions& vo = {});
  Expr whole_expr() {
    Expr e = expr();
    expect(Tok::End, "end of expression");
    return e;
  }

 private:
  // --- tokens ---
  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool at(Tok k) const { return peek().kind == k; }
  bool at_ident(std::string_view s) const { return peek().kind == Tok::Ident && peek().text == s; }
  bool accept(Tok k) {
    if (!at(k)) return false;
    next();
    return true;
  }
  const Token& expect(Tok k, const std::string& what) {
    if (!at(k)) fail_expected(what);
    return next();
  }
  void expect_ident(std::string_view word) {
    if (!at_ident(word)) fail_expected("'" + std::string(word) + "'");
    next();
  }
  [[noreturn]] void fail(const Token& at, const std::string& msg) const {
    throw ParseError(file_, at.line, at.col, msg);
  }
  [[noreturn]] void fail_expected(const std::string& what) const {
    fail(peek(), "expected " + what + " but found " + describe(peek()));
  }

  // --- size expressions ---
  Expr expr();
  Expr term();
  Expr unary();
  Expr atom();
  // Runs an Expr construction, turning arithmetic errors (overflow, division by zero) into a ParseError at `at`.
  template <class F>
  Expr arith(const Token& at, F&& f) {
    try {
      return f();
    } catch (const std::overflow_error& e) {
      fail(at, e.what());
    } catch (const std::domain_error& e) {
      fail(at, e.what());
    }
  }
  int64_t int_literal(const Token& t, bool negative) const;
  int64_t signed_int();
  double signed_float(bool* is_int, int64_t* int_value);

  // --- graph ---
  TensorType type();
  Shape shape();
  void param(Graph& g);
  void node(Graph& g);
  void attribute(const OpInfo& op, Attrs& attrs);
  AttrValue attr_value(AttrKind k);
  ValueId use(const Token& t) const;
  void define(const Token& t, ValueId id);

  std::string file_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::unordered_map<std::string, ValueId> names_;
  std::vector<Token> def_loc_;  // per value id: the token that defined it
};

// ---------------------------------------------------------------------------------------------------------------
// Size expressions.

Expr Parser::expr() {
  std::vector<Expr> terms{term()};
  std::vector<const Token*> ops;  // ops[i] joins terms[i + 1]
  while (at(Tok::Plus) || at(Tok::Minus)) {
    ops.push_back(&next());
    terms.push_back(term());
  }
  if (ops.empty()) return terms[0];
  // One sum of all the terms: adding them one at a time is quadratic in their number (a dim written as a sum of
  // 2000 symbols took seconds). It accumulates constants and coefficients in the same order as the chain does, so it
  // overflows only where the chain might; then the chain is rebuilt step by step to point at the operator.
  try {
    std::vector<Expr> signed_terms{terms[0]};
    for (size_t i = 0; i < ops.size(); ++i)
      signed_terms.push_back(ops[i]->kind == Tok::Plus ? terms[i + 1] : -terms[i + 1]);
    return sum(signed_terms);
  } catch (const std::overflow_error&) {
  }
  Expr e = terms[0];
  for (size_t i = 0; i < ops.size(); ++i) {
    const Expr& r = terms[i + 1];
    e = arith(*ops[i], [&] { return ops[i]->kind == Tok::Plus ? e + r : e - r; });
  }
  return e;
}

Expr Parser::term() {
  Expr e = unary();
  while (at(Tok::Star)) {
    const Token& op = next();
    Expr r = unary();
    e = arith(op, [&] { return e * r; });
  }
  return e;
}

Expr Parser::unary() {
  if (!at(Tok::Minus)) return atom();
  const Token& minus = next();
  // A literal after '-' is read as one negative number, so that -9223372036854775808 is representable.
  if (at(Tok::Int)) return Expr(int_literal(next(), true));
  if (++depth_ > kMaxExprDepth)
    fail(minus, "size expression nested too deeply (limit " + std::to_string(kMaxExprDepth) + ")");
  Expr e = unary();
  --depth_;
  return arith(minus, [&] { return -e; });
}

Expr Parser::atom() {
  const Token& t = peek();
  if (t.kind == Tok::Int) return Expr(int_literal(next(), false));
  if (t.kind != Tok::Ident && t.kind != Tok::LParen) fail_expected("a size expression");
  if (++depth_ > kMaxExprDepth)
    fail(t, "size expression nested too deeply (limit " + std::to_string(kMaxExprDepth) + ")");
  Expr e;
  if (t.kind == Tok::LParen) {
    next();
    e = expr();
    expect(Tok::RParen, "')'");
  } else if (peek(1).kind == Tok::LParen) {
    const Token& fn = next();
    const std::string& f = fn.text;
    if (f != "floordiv" && f != "mod" && f != "min" && f != "max")
      fail(fn, "unknown function '" + f + "' in size expression; expected floordiv, mod, min or max");
    next();
    Expr a = expr();
    expect(Tok::Comma, "',' between the two arguments of " + f);
    Expr b = expr();
    expect(Tok::RParen, "')' after the two arguments of " + f);
    e = arith(fn, [&] {
      if (f == "floordiv") return floordiv(a, b);
      if (f == "mod") return mod(a, b);
      return f == "min" ? min(a, b) : max(a, b);
    });
  } else {
    const Token& s = next();
    if (s.text.find('.') != std::string::npos)
      fail(s, "invalid size symbol '" + s.text + "'; expected [A-Za-z_][A-Za-z0-9_]*");
    e = Expr::sym(s.text);
  }
  --depth_;
  return e;
}

int64_t Parser::int_literal(const Token& t, bool negative) const {
  uint64_t v = 0;
  const uint64_t limit = negative ? uint64_t{1} << 63 : static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (char c : t.text) {
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (limit - d) / 10)
      fail(t, "integer literal " + std::string(negative ? "-" : "") + t.text + " does not fit in int64");
    v = v * 10 + d;
  }
  if (!negative) return static_cast<int64_t>(v);
  return v == (uint64_t{1} << 63) ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(v);
}

int64_t Parser::signed_int() {
  bool neg = accept(Tok::Minus);
  if (!at(Tok::Int)) fail_expected("an integer");
  return int_literal(next(), neg);
}

// [-] (INT | FLOAT | inf | nan). Sets *is_int (and *int_value) when the literal is an integer.
double Parser::signed_float(bool* is_int, int64_t* int_value) {
  bool neg = accept(Tok::Minus);
  const Token& t = peek();
  *is_int = false;
  if (t.kind == Tok::Int) {
    *is_int = true;
    *int_value = int_literal(next(), neg);
    return static_cast<double>(*int_value);
  }
  double v;
  if (t.kind == Tok::Ident && (t.text == "inf" || t.text == "nan")) {
    v = t.text == "inf" ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (t.kind == Tok::Float) {
    errno = 0;
    v = std::strtod(t.text.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(v)) fail(t, "float literal " + t.text + " is out of range for f64");
  } else {
    fail_expected("a number");
  }
  next();
  return neg ? -v : v;
}

// ---------------------------------------------------------------------------------------------------------------
// Types and graphs.

Shape Parser::shape() {
  expect(Tok::LBracket, "'[' to start a shape");
  Shape s;
  if (accept(Tok::RBracket)) return s;
  do s.push_back(expr());
  while (accept(Tok::Comma));
  expect(Tok::RBracket, "',' or ']' in a shape");
  return s;
}

TensorType Parser::type() {
  if (!at(Tok::Ident)) fail_expected("a dtype (f32, i64, bool, ...)");
  const Token& t = next();
  auto dt = parse_dtype(t.text);
  if (!dt) fail(t, "unknown dtype '" + t.text + "'; expected bool, u8, i8, i16, i32, i64, f16, bf16, f32 or f64");
  return {*dt, shape()};
}

ValueId Parser::use(const Token& t) const {
  auto it = names_.find(t.text);
  if (it == names_.end()) fail(t, "use of undefined value %" + t.text);
  return it->second;
}

void Parser::define(const Token& t, ValueId id) {
  def_loc_.resize(static_cast<size_t>(id) + 1);
  def_loc_[id] = t;
}

void Parser::param(Graph& g) {
  const Token& name = expect(Tok::Value, "an input value ('%name')");
  if (auto it = names_.find(name.text); it != names_.end())
    fail(name, "redefinition of value %" + name.text + " (first defined at line " +
                   std::to_string(def_loc_[it->second].line) + ", column " + std::to_string(def_loc_[it->second].col) +
                   ")");
  expect(Tok::Colon, "':' and the input's type");
  const Token& type_tok = peek();
  TensorType t = type();
  Attrs attrs{{"dtype", t.dtype}, {"shape", t.shape}};
  if (at_ident("strides")) {
    next();
    attrs["strides"] = shape();
  }
  try {
    infer_type(OpKind::Input, {}, attrs);
  } catch (const IRError& e) {
    fail(type_tok, "input %" + name.text + ": " + e.what());
  }
  Node n{OpKind::Input, {}, std::move(attrs), t.dtype, t.shape, name.text};
  ValueId id = g.add_unchecked(std::move(n));
  names_.emplace(name.text, id);
  define(name, id);
}

AttrValue Parser::attr_value(AttrKind k) {
  switch (k) {
    case AttrKind::Int:
      return signed_int();
    case AttrKind::Float: {
      bool is_int;
      int64_t iv;
      return signed_float(&is_int, &iv);
    }
    case AttrKind::Scalar: {
      bool is_int;
      int64_t iv = 0;
      double f = signed_float(&is_int, &iv);
      return is_int ? Scalar::of_int(iv) : Scalar::of_float(f);
    }
    case AttrKind::Bool:
      if (at_ident("true") || at_ident("false")) return next().text == "true";
      fail_expected("true or false");
    case AttrKind::DTypeK: {
      if (!at(Tok::Ident)) fail_expected("a dtype (f32, i64, bool, ...)");
      const Token& t = next();
      auto dt = parse_dtype(t.text);
      if (!dt) fail(t, "unknown dtype '" + t.text + "'; expected bool, u8, i8, i16, i32, i64, f16, bf16, f32 or f64");
      return *dt;
    }
    case AttrKind::Ints: {
      expect(Tok::LBracket, "'[' to start a list of integers");
      std::vector<int64_t> v;
      if (accept(Tok::RBracket)) return v;
      do v.push_back(signed_int());
      while (accept(Tok::Comma));
      expect(Tok::RBracket, "',' or ']' in a list of integers");
      return v;
    }
    case AttrKind::ShapeK:
      return shape();
    case AttrKind::ExprK:
      return expr();
    case AttrKind::Str:
      return expect(Tok::String, "a string (\"...\")").text;
  }
  fail_expected("an attribute value");
}

void Parser::attribute(const OpInfo& op, Attrs& attrs) {
  const Token& name = expect(Tok::Ident, "an attribute name");
  const AttrSpec* spec = nullptr;
  for (const auto& s : op.attrs)
    if (s.name == name.text) spec = &s;
  if (!spec) {
    std::string known;
    for (const auto& s : op.attrs) known += (known.empty() ? "" : ", ") + s.name;
    fail(name, "op '" + std::string(op.name) + "' has no attribute '" + name.text + "'; " +
                   (known.empty() ? "it takes no attributes" : "expected one of: " + known));
  }
  if (attrs.count(name.text)) fail(name, "attribute '" + name.text + "' is given twice");
  expect(Tok::Equals, "'=' after attribute name '" + name.text + "'");
  attrs[name.text] = attr_value(spec->kind);
}

void Parser::node(Graph& g) {
  const Token& name = next();  // a Tok::Value, checked by the caller
  if (auto it = names_.find(name.text); it != names_.end())
    fail(name, "redefinition of value %" + name.text + " (first defined at line " +
                   std::to_string(def_loc_[it->second].line) + ", column " + std::to_string(def_loc_[it->second].col) +
                   ")");
  expect(Tok::Equals, "'=' after %" + name.text);
  if (!at(Tok::Ident)) fail_expected("an op name");
  const Token& op_tok = next();
  auto op = op_by_name(op_tok.text);
  if (!op) fail(op_tok, "unknown op '" + op_tok.text + "'");
  if (*op == OpKind::Input)
    fail(op_tok, "graph inputs are declared in the graph's parameter list, not as 'input' nodes");
  const OpInfo& info = op_info(*op);
  expect(Tok::LParen, "'(' after op name '" + op_tok.text + "'");
  std::vector<ValueId> inputs;
  if (!accept(Tok::RParen)) {
    do inputs.push_back(use(expect(Tok::Value, "an operand ('%name')")));
    while (accept(Tok::Comma));
    expect(Tok::RParen, "',' or ')' in the operand list");
  }
  Attrs attrs;
  if (accept(Tok::LBrace)) {
    do attribute(info, attrs);
    while (accept(Tok::Comma));
    expect(Tok::RBrace, "',' or '}' in the attribute list");
  }
  Node n{*op, std::move(inputs), std::move(attrs), DType::Float32, {}, name.text};
  TensorType inferred;
  try {
    inferred = infer_type(*op, input_types(g, n), n.attrs);
  } catch (const IRError& e) {
    std::string msg = e.what();
    std::string prefix = std::string(info.name) + ": ";
    if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
    fail(op_tok, node_header(g, n) + ": " + msg);
  } catch (const std::overflow_error& e) {
    fail(op_tok, node_header(g, n) + ": " + e.what());
  } catch (const std::domain_error& e) {
    fail(op_tok, node_header(g, n) + ": " + e.what());
  }
  if (accept(Tok::Colon)) {
    const Token& type_tok = peek();
    TensorType declared = type();
    if (declared.dtype != inferred.dtype || declared.shape != inferred.shape)
      fail(type_tok, node_header(g, n) + ": declared type " + print_type(declared) +
                         " differs from the op table's; expected " + print_type(inferred));
  }
  n.dtype = inferred.dtype;
  n.shape = std::move(inferred.shape);
  ValueId id = g.add_unchecked(std::move(n));
  names_.emplace(name.text, id);
  define(name, id);
}

Graph Parser::graph(const VerifyOptions& vo) {
  expect_ident("graph");
  if (!at(Tok::Ident)) fail_expected("a graph name");
  Graph g(next().text);
  expect(Tok::LParen, "'(' to start the graph's inputs");
  if (!accept(Tok::RParen)) {
    do param(g);
    while (accept(Tok::Comma));
    expect(Tok::RParen, "',' or ')' in the graph's inputs");
  }
  expect(Tok::LBrace, "'{' to start the graph body");
  while (at(Tok::Value)) node(g);
  if (!at_ident("return")) fail_expected("a node ('%name = op(...)') or 'return'");
  const Token& ret = next();
  std::vector<ValueId> outs;
  if (at(Tok::Value)) {
    do outs.push_back(use(expect(Tok::Value, "an output value ('%name')")));
    while (accept(Tok::Comma));
  }
  expect(Tok::RBrace, "'}' to end the graph");
  expect(Tok::End, "end of input after the graph");
  g.set_outputs(std::move(outs));
  try {
    verify(g, vo);
  } catch (const VerifyError& e) {
    const Token& at = e.node() >= 0 && static_cast<size_t>(e.node()) < def_loc_.size() ? def_loc_[e.node()] : ret;
    fail(at, e.what());
  }
  return g;
}

}  // namespace

Graph parse_graph(std::string_view text, std::string_view filename) { return Parser(text, filename).graph(); }

Graph parse_graph(std::string_view text, std::string_view filename, const VerifyOptions& options) {
  return Parser(text, filename).graph(options);
}

Expr parse_expr(std::string_view text) { return Parser(text, "<expr>").whole_expr(); }

}  // namespace autofuse
