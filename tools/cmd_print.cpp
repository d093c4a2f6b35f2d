// `autofuse print FILE`: parse IR text (which verifies it) and print it back in canonical form.
#include <cstdio>
#include <iostream>

#include "autofuse/ir/parser.h"
#include "autofuse/ir/printer.h"
#include "commands.h"

namespace autofuse::cli {

int cmd_print(const Args& args) {
  ParsedArgs a = parse_args(args, {});
  expect_at_most_one_file(a);
  if (a.positional.size() != 1) {
    std::fprintf(stderr, "usage: autofuse print FILE\n");
    return 2;
  }
  Graph g = parse_graph(read_file(a.positional[0]), a.positional[0]);
  std::cout << print_graph(g);
  return 0;
}

}  // namespace autofuse::cli
