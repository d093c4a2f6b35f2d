// Tokens of the IR text form (internal to the parser; see parser.h for the grammar).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace autofuse {

/// Token kinds of the IR text form.
enum class Tok : uint8_t {
  End,     ///< end of input
  Ident,   ///< [A-Za-z_][A-Za-z0-9_.]*: keywords, op names, dtypes, symbols, attribute names
  Value,   ///< %name; text() is the name without '%'
  Int,     ///< decimal digits (no sign)
  Float,   ///< digits with a fraction and/or exponent (no sign)
  String,  ///< "..." ; text() is the decoded value
  LParen,
  RParen,
  LBrace,
  RBrace,
  LBracket,
  RBracket,
  Comma,
  Colon,
  Equals,
  Plus,
  Minus,
  Star,
};

/// One token with its 1-based source position.
struct Token {
  Tok kind = Tok::End;
  std::string text;  ///< spelling (Ident, Int, Float), name (Value), decoded contents (String)
  int line = 1;
  int col = 1;
};

/// Split IR text into tokens, dropping whitespace and `#` comments; the last token is End. Throws ParseError
/// (parser.h) on a character that starts no token, an unterminated string or a bad escape. String escapes:
/// \\ \" \n \t \r and \xHH (two hex digits).
std::vector<Token> tokenize(std::string_view text, const std::string& file);

/// How a token reads in a diagnostic: "identifier 'foo'", "'}'", "integer 12", "end of input".
std::string describe(const Token& t);

}  // namespace autofuse
