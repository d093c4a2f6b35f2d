// Text form of the IR: parsing. Reads what printer.h writes; print_graph(parse_graph(print_graph(g))) ==
// print_graph(g).
//
// Grammar (docs/ir.md has the full description; `#` starts a comment that runs to the end of the line):
//
//   graph   := 'graph' NAME '(' [param (',' param)*] ')' '{' node* 'return' [value (',' value)*] '}'
//   param   := value ':' type ['strides' shape]
//   node    := value '=' OPNAME '(' [value (',' value)*] ')' ['{' attr (',' attr)* '}'] [':' type]
//   attr    := NAME '=' attr-value            (read as the kind the op's schema gives the attribute)
//   type    := DTYPE shape                    (f32[s0, 4], i64[])
//   shape   := '[' [expr (',' expr)*] ']'
//   expr    := term (('+' | '-') term)*       term := unary ('*' unary)*      unary := '-' unary | atom
//   atom    := INT | SYMBOL | '(' expr ')' | ('floordiv' | 'mod' | 'min' | 'max') '(' expr ',' expr ')'
//   value   := '%' [A-Za-z0-9_.]+
//
// A node's `: type` suffix is optional: when absent the type is inferred from the op table, when present it must
// equal the inferred type. The parsed graph is verified (verifier.h) before it is returned.
#pragma once

#include <string>
#include <string_view>

#include "autofuse/ir/graph.h"
#include "autofuse/ir/verifier.h"

namespace autofuse {

/// Malformed IR text. what() is "FILE:LINE:COL: error: MESSAGE" (line and column 1-based, the column counted in
/// bytes); the parts are also available separately.
class ParseError : public IRError {
 public:
  ParseError(std::string file, int line, int col, std::string message);
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int col() const { return col_; }
  /// The message without the location prefix.
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  int line_;
  int col_;
  std::string message_;
};

/// Parse one graph from IR text. `filename` only labels diagnostics. Throws ParseError on any lexical, syntax, type
/// or verification error, with the location of the offending token (for verification errors found after parsing,
/// the location of the node named in the message).
Graph parse_graph(std::string_view text, std::string_view filename = "<input>");

/// parse_graph, verified with `options` instead of the defaults: the sub-graph of a fusion group (a kernel's IR, as
/// AUTOFUSE_DEBUG_DIR writes it) with VerifyOptions::output_shapes_bind, whose caller gives the symbols only its output
/// sizes name (cat([x, t.expand(n, -1)]): the output [s0 + s1, D] and no input of extent s1).
Graph parse_graph(std::string_view text, std::string_view filename, const VerifyOptions& options);

/// Parse a size expression ("s0*s1 + 4", "floordiv(s0, 2)") into canonical form. Throws ParseError with file name
/// "<expr>" on malformed text, division by a literal zero or int64 overflow.
Expr parse_expr(std::string_view text);

}  // namespace autofuse
