// Parser tests: what the text form means once parsed, and the diagnostics (message, line, column) for malformed text.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "autofuse/ir/parser.h"
#include "autofuse/ir/printer.h"

namespace autofuse {
namespace {

// The full diagnostic of parsing `text` as file "t.af", or "no error".
std::string parse_error(std::string_view text) {
  try {
    parse_graph(text, "t.af");
  } catch (const ParseError& e) {
    return e.what();
  }
  return "no error";
}

// A one-input graph around the given body lines, so tests can focus on one node.
std::string wrap(const std::string& body, const std::string& params = "%x: f32[s0, s1]") {
  return "graph g(" + params + ") {\n" + body + "\n}\n";
}

TEST(Parser, SoftmaxAsPrinted) {
  const char* text = R"(# softmax over the last axis, as ATen decomposes it
graph softmax(%x: f32[s0, s1]) {
  %m = amax(%x) {axes=[1], keepdim=true} : f32[s0, 1]
  %d = sub(%x, %m) : f32[s0, s1]   # broadcast over the reduced axis
  %e = exp(%d) : f32[s0, s1]
  %s = sum(%e) {axes=[1], keepdim=true} : f32[s0, 1]
  %out = div(%e, %s) : f32[s0, s1]
  return %out
}
)";
  Graph g = parse_graph(text);
  EXPECT_EQ(g.name(), "softmax");
  ASSERT_EQ(g.size(), 6u);
  EXPECT_EQ(g.node(1).op, OpKind::Amax);
  EXPECT_EQ(attr_ints(g.node(1).attrs, "axes"), std::vector<int64_t>{1});
  EXPECT_TRUE(attr_bool(g.node(1).attrs, "keepdim"));
  EXPECT_EQ(g.node(2).inputs, (std::vector<ValueId>{0, 1}));
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.node(g.outputs()[0]).name, "out");
  EXPECT_EQ(g.node(5).shape, (Shape{Expr::sym("s0"), Expr::sym("s1")}));
  // Reading back the printed text gives the same text.
  EXPECT_EQ(print_graph(parse_graph(print_graph(g))), print_graph(g));
}

TEST(Parser, TypeSuffixIsOptionalAndInferred) {
  Graph g = parse_graph(wrap("  %y = sum(%x) {axes=[0], keepdim=false}\n  %z = cast(%y) {dtype=f16}\n  return %z"));
  EXPECT_EQ(g.node(1).dtype, DType::Float32);
  EXPECT_EQ(g.node(1).shape, Shape{Expr::sym("s1")});
  EXPECT_EQ(g.node(2).dtype, DType::Float16);
}

TEST(Parser, InputStridesAndScalarInputs) {
  Graph g = parse_graph("graph g(%x: f32[s0, s1] strides [1, s0], %c: i64[]) {\n  return %x, %c\n}\n");
  const auto& st = attr_shape(g.node(0).attrs, "strides");
  EXPECT_EQ(st, (std::vector<Expr>{Expr(1), Expr::sym("s0")}));
  EXPECT_FALSE(has_attr(g.node(1).attrs, "strides"));
  EXPECT_TRUE(g.node(1).shape.empty());
  EXPECT_EQ(g.outputs(), (std::vector<ValueId>{0, 1}));
}

TEST(Parser, SizeExpressionsFollowPrecedence) {
  Graph g = parse_graph(
      wrap("  %f = full() {value=0, dtype=f32, shape=[s0 + s1*2 - 1, (s0 + 1)*2, -s0*-3, floordiv(s1, 2) + mod(s0, "
           "4), min(s0, s1), max(s0, 3)]}\n  return %f"));
  const Shape& s = g.node(1).shape;
  Bindings b{{"s0", 5}, {"s1", 7}};
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s[0].eval(b), 5 + 14 - 1);
  EXPECT_EQ(s[1].eval(b), 12);
  EXPECT_EQ(s[2].eval(b), 15);
  EXPECT_EQ(s[3].eval(b), 3 + 1);
  EXPECT_EQ(s[4].eval(b), 5);
  EXPECT_EQ(s[5].eval(b), 5);
}

TEST(Parser, AttributesAreTypedByTheSchema) {
  Graph g =
      parse_graph(wrap("  %a = constant() {value=2, dtype=i32}\n"
                       "  %b = constant() {value=2.0, dtype=f32}\n"
                       "  %c = constant() {value=-inf, dtype=f32}\n"
                       "  %d = constant() {value=nan, dtype=f64}\n"
                       "  %e = constant() {value=-0.0, dtype=f16}\n"
                       "  %f = constant() {value=1.5e-07, dtype=float32}\n"
                       "  %g = clamp(%x) {min=-1, max=2.5}\n"
                       "  %h = slice(%x) {axis=-1, start=(s1 - 3), stop=s1, step=1}\n"
                       "  %i = iota() {length=s0, start=-9223372036854775808, step=3, dtype=i64}\n"
                       "  return %a"));
  Scalar a = attr_scalar(g.node(1).attrs, "value");
  EXPECT_TRUE(a.is_int);
  EXPECT_EQ(a.i, 2);
  Scalar b = attr_scalar(g.node(2).attrs, "value");
  EXPECT_FALSE(b.is_int);
  EXPECT_EQ(b.f, 2.0);
  EXPECT_TRUE(std::isinf(attr_scalar(g.node(3).attrs, "value").f));
  EXPECT_LT(attr_scalar(g.node(3).attrs, "value").f, 0);
  EXPECT_TRUE(std::isnan(attr_scalar(g.node(4).attrs, "value").f));
  EXPECT_TRUE(std::signbit(attr_scalar(g.node(5).attrs, "value").f));
  EXPECT_EQ(attr_scalar(g.node(6).attrs, "value").f, 1.5e-07);
  EXPECT_EQ(attr_dtype(g.node(6).attrs, "dtype"), DType::Float32);  // PyTorch dtype names are accepted
  EXPECT_TRUE(attr_scalar(g.node(7).attrs, "min").is_int);
  EXPECT_EQ(attr_scalar(g.node(7).attrs, "max").f, 2.5);
  EXPECT_EQ(attr_int(g.node(8).attrs, "axis"), -1);
  EXPECT_EQ(attr_expr(g.node(8).attrs, "start"), Expr::sym("s1") - 3);
  EXPECT_EQ(g.node(8).shape[1], Expr(3));
  EXPECT_EQ(attr_int(g.node(9).attrs, "start"), std::numeric_limits<int64_t>::min());
}

TEST(Parser, StringEscapesDecode) {
  Graph g =
      parse_graph(wrap("  %e = extern(%x) {name=\"a\\\\b\\\"c\\n\\t\\x41\\x7f\", dtype=f32, shape=[s0]}\n  return %e"));
  EXPECT_EQ(attr_str(g.node(1).attrs, "name"), std::string("a\\b\"c\n\tA\x7f"));
  // ... and print back escaped, one line.
  std::string printed = print_graph(g);
  EXPECT_NE(printed.find("name=\"a\\\\b\\\"c\\n\\tA\\x7f\""), std::string::npos) << printed;
  EXPECT_EQ(print_graph(parse_graph(printed)), printed);
}

TEST(Parser, WindowsLineEndingsAndByteOrderMark) {
  Graph g = parse_graph("\xEF\xBB\xBFgraph g(%x: f32[4]) {\r\n  %y = neg(%x)\r\n  return %y\r\n}\r\n");
  EXPECT_EQ(g.size(), 2u);
  EXPECT_EQ(parse_error("\xEF\xBB\xBFgraph g() {\r\n  return %q\r\n}"), "t.af:2:10: error: use of undefined value %q");
}

TEST(Parser, NamesMayBeNumbersAndContainDots) {
  Graph g = parse_graph(wrap("  %0 = neg(%x)\n  %x.1 = abs(%0)\n  return %x.1, %0"));
  EXPECT_EQ(g.node(2).name, "x.1");
  EXPECT_EQ(g.outputs(), (std::vector<ValueId>{2, 1}));
}

struct DiagCase {
  const char* what;
  std::string text;
  std::string message;
};

TEST(Parser, Diagnostics) {
  const std::vector<DiagCase> cases = {
      {"undefined operand", wrap("  %y = add(%x, %z)\n  return %y"), "t.af:2:16: error: use of undefined value %z"},
      {"redefinition", wrap("  %y = neg(%x)\n  %y = abs(%x)\n  return %y"),
       "t.af:3:3: error: redefinition of value %y (first defined at line 2, column 3)"},
      {"redefined input", "graph g(%x: f32[4], %x: f32[4]) {\n  return %x\n}",
       "t.af:1:21: error: redefinition of value %x (first defined at line 1, column 9)"},
      {"unknown op", wrap("  %y = frobnicate(%x)\n  return %y"), "t.af:2:8: error: unknown op 'frobnicate'"},
      {"input as a node", wrap("  %y = input()\n  return %y"),
       "t.af:2:8: error: graph inputs are declared in the graph's parameter list, not as 'input' nodes"},
      {"unknown attribute", wrap("  %y = sum(%x) {axes=[0], keepdims=true}\n  return %y"),
       "t.af:2:27: error: op 'sum' has no attribute 'keepdims'; expected one of: axes, keepdim"},
      {"attribute on an op without any", wrap("  %y = exp(%x) {axes=[1]}\n  return %y"),
       "t.af:2:17: error: op 'exp' has no attribute 'axes'; it takes no attributes"},
      {"attribute twice", wrap("  %y = sum(%x) {axes=[0], axes=[1], keepdim=true}\n  return %y"),
       "t.af:2:27: error: attribute 'axes' is given twice"},
      {"attribute of the wrong kind", wrap("  %y = sum(%x) {axes=1, keepdim=true}\n  return %y"),
       "t.af:2:22: error: expected '[' to start a list of integers but found integer 1"},
      {"bool expected", wrap("  %y = sum(%x) {axes=[1], keepdim=1}\n  return %y"),
       "t.af:2:35: error: expected true or false but found integer 1"},
      {"missing attribute", wrap("  %y = sum(%x) {axes=[1]}\n  return %y"),
       "t.af:2:8: error: %y = sum(%x): missing attribute 'keepdim' (bool)"},
      {"declared type differs", wrap("  %y = neg(%x) : f32[s1, s0]\n  return %y"),
       "t.af:2:18: error: %y = neg(%x): declared type f32[s1, s0] differs from the op table's; expected f32[s0, s1]"},
      {"dtype rule", wrap("  %y = bitwise_and(%x, %x)\n  return %y"),
       "t.af:2:8: error: %y = bitwise_and(%x, %x): expects integer or bool inputs, got f32"},
      {"broadcast", wrap("  %y = add(%x, %v)\n  return %y", "%x: f32[s0, 3], %v: f32[4]"),
       "t.af:2:8: error: %y = add(%x, %v): shapes [s0, 3] and [4] do not broadcast: size 3 against 4 at dim 1"},
      {"missing return", wrap("  %y = neg(%x)"),
       "t.af:3:1: error: expected a node ('%name = op(...)') or 'return' but found '}'"},
      {"stray character", wrap("  %y = neg(%x) @\n  return %y"), "t.af:2:16: error: unexpected character '@'"},
      {"control byte", wrap("  %y = neg(%x)\x01\n  return %y"), "t.af:2:15: error: unexpected character byte 0x01"},
      {"empty value name", wrap("  % = neg(%x)\n  return %y"),
       "t.af:2:3: error: expected a value name ([A-Za-z0-9_.]) after '%' but found ' '"},
      {"unterminated string", wrap("  %e = extern(%x) {name=\"mm, dtype=f32, shape=[4]}\n  return %e"),
       "t.af:2:25: error: unterminated string literal"},
      {"bad escape", wrap("  %e = extern(%x) {name=\"a\\qb\", dtype=f32, shape=[4]}\n  return %e"),
       "t.af:2:27: error: unknown escape \\q in string literal; expected one of \\\\ \\\" \\n \\t \\r \\xHH"},
      {"bad hex escape", wrap("  %e = extern(%x) {name=\"\\x4g\", dtype=f32, shape=[4]}\n  return %e"),
       "t.af:2:26: error: expected two hex digits after \\x in string literal"},
      {"integer overflow", wrap("  %y = sum(%x) {axes=[9223372036854775808], keepdim=true}\n  return %y"),
       "t.af:2:23: error: integer literal 9223372036854775808 does not fit in int64"},
      {"float overflow", wrap("  %c = constant() {value=1e999, dtype=f64}\n  return %c"),
       "t.af:2:26: error: float literal 1e999 is out of range for f64"},
      {"size overflow", wrap("  %f = full() {value=0, dtype=f32, shape=[9223372036854775807 + 1]}\n  return %f"),
       "t.af:2:63: error: size arithmetic overflows int64: 9223372036854775807 + 1"},
      {"division by zero", wrap("  %f = full() {value=0, dtype=f32, shape=[floordiv(s0, 0)]}\n  return %f"),
       "t.af:2:43: error: floordiv by zero in size expression s0"},
      {"unknown dtype", "graph g(%x: f31[4]) {\n  return %x\n}",
       "t.af:1:13: error: unknown dtype 'f31'; expected bool, u8, i8, i16, i32, i64, f16, bf16, f32 or f64"},
      {"unknown function", wrap("  %f = full() {value=0, dtype=f32, shape=[ceildiv(s0, 2)]}\n  return %f"),
       "t.af:2:43: error: unknown function 'ceildiv' in size expression; expected floordiv, mod, min or max"},
      {"one argument", wrap("  %f = full() {value=0, dtype=f32, shape=[min(s0)]}\n  return %f"),
       "t.af:2:49: error: expected ',' between the two arguments of min but found ')'"},
      {"trailing text", wrap("  return %x") + "graph h() {\n  return\n}\n",
       "t.af:4:1: error: expected end of input after the graph but found identifier 'graph'"},
      {"not a graph", "grap g() {}", "t.af:1:1: error: expected 'graph' but found identifier 'grap'"},
      {"empty input", "", "t.af:1:1: error: expected 'graph' but found end of input"},
      {"unbound symbol (from the verifier)",
       wrap("  %i = iota() {length=n, start=0, step=1, dtype=i64}\n  %s = sum(%i) {axes=[0], keepdim=false}\n  return "
            "%s"),
       "t.af:2:3: error: %i = iota(): size symbol n is not bound by any graph input's shape; expected one of {s0, s1} "
       "(a run binds symbols from its input sizes)"},
      {"bad stride rank", "graph g(%x: f32[4, 4] strides [1]) {\n  return %x\n}",
       "t.af:1:13: error: input %x: input: strides have rank 1, shape has rank 2"},
      {"dotted symbol", wrap("  %f = full() {value=0, dtype=f32, shape=[a.b]}\n  return %f"),
       "t.af:2:43: error: invalid size symbol 'a.b'; expected [A-Za-z_][A-Za-z0-9_]*"},
  };
  for (const auto& c : cases) EXPECT_EQ(parse_error(c.text), c.message) << c.what << "\n" << c.text;
}

TEST(Parser, DeepNestingIsAnErrorNotACrash) {
  std::string deep(5000, '(');
  std::string text = wrap("  %f = full() {value=0, dtype=f32, shape=[" + deep + "s0]}\n  return %f");
  EXPECT_EQ(parse_error(text), "t.af:2:143: error: size expression nested too deeply (limit 100)");
  std::string minus(5000, '-');
  EXPECT_NE(parse_error(wrap("  %f = full() {value=0, dtype=f32, shape=[" + minus + "s0]}\n  return %f"))
                .find("nested too deeply"),
            std::string::npos);
}

TEST(Parser, ParseErrorParts) {
  try {
    parse_graph("graph g() {\n  retrun\n}", "dir/x.af");
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.file(), "dir/x.af");
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.col(), 3);
    EXPECT_EQ(e.message(), "expected a node ('%name = op(...)') or 'return' but found identifier 'retrun'");
  }
}

TEST(ParseExpr, CanonicalForms) {
  EXPECT_EQ(parse_expr("s0 + s0"), parse_expr("2*s0"));
  EXPECT_EQ(parse_expr("2*(s0 + 1)"), parse_expr("2*s0 + 2"));
  EXPECT_EQ(parse_expr("s1*s0 - s0*s1 + 4"), Expr(4));
  EXPECT_EQ(parse_expr("floordiv(4*s0 + 6, 2)"), parse_expr("2*s0 + 3"));
  EXPECT_EQ(parse_expr("mod(2*s0 + 5, 2)"), Expr(1));
  EXPECT_EQ(parse_expr("-9223372036854775808"), Expr(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(parse_expr("  s0 # comment\n"), Expr::sym("s0"));
}

TEST(ParseExpr, Errors) {
  auto err = [](std::string_view t) {
    try {
      parse_expr(t);
    } catch (const ParseError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(err("s0 +"), "<expr>:1:5: error: expected a size expression but found end of input");
  EXPECT_EQ(err("s0 s1"), "<expr>:1:4: error: expected end of expression but found identifier 's1'");
  EXPECT_EQ(err("(s0"), "<expr>:1:4: error: expected ')' but found end of input");
  EXPECT_EQ(err("mod(s0, 0)"), "<expr>:1:1: error: mod by zero in size expression s0");
  EXPECT_EQ(err("9223372036854775807 * 2"),
            "<expr>:1:21: error: size arithmetic overflows int64: 9223372036854775807 * 2");
  EXPECT_EQ(err("1.5"), "<expr>:1:1: error: expected a size expression but found float 1.5");
  // A chain of + and - is summed at once; an overflow still points at the operator where the chain overflows.
  EXPECT_EQ(err("s0 + 9223372036854775807 + 1 - s1"),
            "<expr>:1:26: error: size arithmetic overflows int64: 9223372036854775807 + 1");
  EXPECT_EQ(err("s0 + 1 - -9223372036854775808"),
            "<expr>:1:8: error: size arithmetic overflows int64: -1 * -9223372036854775808");
  EXPECT_EQ(parse_expr("-1 - -9223372036854775808"), Expr(std::numeric_limits<int64_t>::max()));
}

// Session 14 review: a dim written as a sum of n distinct symbols parsed in time cubic in n (2000: ~5 s; each '+'
// re-canonicalized the whole sum with a linear like-term search). Now one sum of the terms: milliseconds.
TEST(ParseExpr, LongSums) {
  std::string text;
  for (int i = 0; i < 3000; ++i) text += (i ? " + s" : "s") + std::to_string(i);
  text += " - s7 + 2*s7 + 5";
  // Not timed (speed is measured in benchmarks, not asserted in tests): ~8 ms here; the cubic parse took ~15 s.
  Expr e = parse_expr(text);
  ASSERT_EQ(e.kind(), Expr::Kind::Add);
  EXPECT_EQ(e.args().size(), 3001u);
  EXPECT_EQ(e.args()[0], Expr(5));
  EXPECT_EQ(e.args()[8], Expr(2) * Expr::sym("s7"));
}

}  // namespace
}  // namespace autofuse
