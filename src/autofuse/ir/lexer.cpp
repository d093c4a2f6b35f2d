#include "autofuse/ir/lexer.h"

#include "autofuse/ir/parser.h"

namespace autofuse {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_alpha(c) || is_digit(c) || c == '.'; }
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A printable rendering of one source character for diagnostics.
std::string show_char(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  static const char* kHex = "0123456789abcdef";
  return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 15];
}

class Lexer {
 public:
  Lexer(std::string_view src, const std::string& file) : src_(src), file_(file) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    if (src_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // a UTF-8 byte-order mark some editors write
    for (;;) {
      skip_space();
      Token t;
      t.line = line_;
      t.col = col_;
      if (pos_ >= src_.size()) {
        out.push_back(t);
        return out;
      }
      char c = src_[pos_];
      if (is_alpha(c)) {
        t.kind = Tok::Ident;
        while (pos_ < src_.size() && is_name_char(src_[pos_])) t.text += advance();
      } else if (is_digit(c)) {
        lex_number(t);
      } else if (c == '%') {
        advance();
        t.kind = Tok::Value;
        while (pos_ < src_.size() && is_name_char(src_[pos_])) t.text += advance();
        if (t.text.empty())
          fail(t, "expected a value name ([A-Za-z0-9_.]) after '%' but found " +
                      (pos_ < src_.size() ? show_char(src_[pos_]) : std::string("end of input")));
      } else if (c == '"') {
        lex_string(t);
      } else {
        t.kind = punct(c);
        if (t.kind == Tok::End) fail(t, "unexpected character " + show_char(c));
        t.text = std::string(1, advance());
      }
      out.push_back(std::move(t));
    }
  }

 private:
  [[noreturn]] void fail(const Token& at, const std::string& msg) { throw ParseError(file_, at.line, at.col, msg); }

  char advance() {
    char c = src_[pos_++];
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    return c;
  }

  void skip_space() {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        advance();
      } else if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') advance();
      } else {
        return;
      }
    }
  }

  static Tok punct(char c) {
    switch (c) {
      case '(':
        return Tok::LParen;
      case ')':
        return Tok::RParen;
      case '{':
        return Tok::LBrace;
      case '}':
        return Tok::RBrace;
      case '[':
        return Tok::LBracket;
      case ']':
        return Tok::RBracket;
      case ',':
        return Tok::Comma;
      case ':':
        return Tok::Colon;
      case '=':
        return Tok::Equals;
      case '+':
        return Tok::Plus;
      case '-':
        return Tok::Minus;
      case '*':
        return Tok::Star;
      default:
        return Tok::End;
    }
  }

  // digits ['.' digits*] [('e'|'E') ['+'|'-'] digits]; an 'e' not followed by digits is not part of the number.
  void lex_number(Token& t) {
    t.kind = Tok::Int;
    while (pos_ < src_.size() && is_digit(src_[pos_])) t.text += advance();
    if (pos_ < src_.size() && src_[pos_] == '.') {
      t.kind = Tok::Float;
      t.text += advance();
      while (pos_ < src_.size() && is_digit(src_[pos_])) t.text += advance();
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t k = pos_ + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && is_digit(src_[k])) {
        t.kind = Tok::Float;
        while (pos_ < k) t.text += advance();
        while (pos_ < src_.size() && is_digit(src_[pos_])) t.text += advance();
      }
    }
  }

  void lex_string(Token& t) {
    t.kind = Tok::String;
    advance();  // opening quote
    for (;;) {
      if (pos_ >= src_.size() || src_[pos_] == '\n') fail(t, "unterminated string literal");
      char c = advance();
      if (c == '"') return;
      if (c != '\\') {
        t.text += c;
        continue;
      }
      Token esc;
      esc.line = line_;
      esc.col = col_ - 1;
      if (pos_ >= src_.size()) fail(t, "unterminated string literal");
      char e = advance();
      switch (e) {
        case '\\':
          t.text += '\\';
          break;
        case '"':
          t.text += '"';
          break;
        case 'n':
          t.text += '\n';
          break;
        case 't':
          t.text += '\t';
          break;
        case 'r':
          t.text += '\r';
          break;
        case 'x': {
          int hi = pos_ < src_.size() ? hex_value(src_[pos_]) : -1;
          int lo = pos_ + 1 < src_.size() ? hex_value(src_[pos_ + 1]) : -1;
          if (hi < 0 || lo < 0) fail(esc, "expected two hex digits after \\x in string literal");
          advance();
          advance();
          t.text += static_cast<char>(hi * 16 + lo);
          break;
        }
        default:
          fail(esc, "unknown escape \\" + std::string(1, e) +
                        " in string literal; expected one of \\\\ \\\" \\n \\t \\r \\xHH");
      }
    }
  }

  std::string_view src_;
  const std::string& file_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

}  // namespace

std::vector<Token> tokenize(std::string_view text, const std::string& file) { return Lexer(text, file).run(); }

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::End:
      return "end of input";
    case Tok::Ident:
      return "identifier '" + t.text + "'";
    case Tok::Value:
      return "value '%" + t.text + "'";
    case Tok::Int:
      return "integer " + t.text;
    case Tok::Float:
      return "float " + t.text;
    case Tok::String:
      return "a string";
    default:
      return "'" + t.text + "'";
  }
}

}  // namespace autofuse
