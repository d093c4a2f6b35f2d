// libFuzzer entry for the IR text parser. Arbitrary bytes go to parse_graph and parse_expr: errors (ParseError) are
// the expected outcome; crashes, sanitizer reports, leaks and uncaught exceptions are bugs. Whatever parses must also
// round-trip: print(parse(print(g))) == print(g), and parse_expr(e.str()) == e.
//
// Build and run: `make fuzz` (build/fuzz/parser_fuzz, seeded from tests/ir/), or by hand:
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc fuzz/parser_fuzz.cpp src/autofuse/ir/*.cpp
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "autofuse/ir/parser.h"
#include "autofuse/ir/printer.h"

namespace {

[[noreturn]] void round_trip_failure(const std::string& first, const std::string& second) {
  std::fprintf(stderr, "round trip changed the text:\n--- first print\n%s\n--- second print\n%s\n", first.c_str(),
               second.c_str());
  __builtin_trap();
}

void fuzz_graph(std::string_view text) {
  autofuse::Graph g;
  try {
    g = autofuse::parse_graph(text, "fuzz.af");
  } catch (const autofuse::ParseError&) {
    return;
  }
  std::string first = autofuse::print_graph(g);
  std::string second;
  try {
    second = autofuse::print_graph(autofuse::parse_graph(first, "printed.af"));
  } catch (const autofuse::ParseError& e) {
    round_trip_failure(first, e.what());
  }
  if (first != second) round_trip_failure(first, second);
}

void fuzz_expr(std::string_view text) {
  autofuse::Expr e;
  try {
    e = autofuse::parse_expr(text);
  } catch (const autofuse::ParseError&) {
    return;
  }
  std::string printed = e.str();
  autofuse::Expr back;
  try {
    back = autofuse::parse_expr(printed);
  } catch (const autofuse::ParseError& err) {
    round_trip_failure(printed, err.what());
  }
  if (back != e) round_trip_failure(printed, back.str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz_graph(text);
  fuzz_expr(text);
  return 0;
}
