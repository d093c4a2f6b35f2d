// `autofuse check FILE`: parse and verify IR text. Prints "FILE: ok (N nodes)" and exits 0, or prints the diagnostic
// ("FILE:LINE:COL: error: ...") and exits 1.
#include <cstdio>

#include "autofuse/ir/bind_symbols.h"
#include "autofuse/ir/parser.h"
#include "autofuse/ir/verifier.h"
#include "commands.h"

namespace autofuse::cli {

int cmd_check(const Args& args) {
  ParsedArgs a = parse_args(args, {});
  expect_at_most_one_file(a);
  if (a.positional.size() != 1) {
    std::fprintf(stderr, "usage: autofuse check FILE\n");
    return 2;
  }
  const std::string& file = a.positional[0];
  try {
    Graph g = parse_graph(read_file(file), file);
    verify(g);
    expect_outputs(g, file);
    std::printf("%s: ok (graph %s, %zu nodes, %zu outputs)\n", file.c_str(), g.name().c_str(), g.size(),
                g.outputs().size());
    for (const std::string& s : unbound_symbols(g, symbols_needed_to_run(g)))
      std::printf(
          "note: size symbol %s is not determined by the input sizes: `autofuse interp` / `run` take its "
          "value from --shape %s=N\n",
          s.c_str(), s.c_str());
    return 0;
  } catch (const IRError& e) {
    // ParseError already carries FILE:LINE:COL; a verifier error names the node.
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}

}  // namespace autofuse::cli
