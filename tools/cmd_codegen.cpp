// `autofuse codegen FILE [--full]`: print the generated C++ kernel source of a graph that is one kernel (with
// --full, the embedded helper header too). A graph that is not one kernel: the reason, exit status 1.
#include <cstdio>
#include <iostream>

#include "autofuse/codegen/cpu/emit.h"
#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/parser.h"
#include "autofuse/schedule/loop_nest.h"
#include "commands.h"

namespace autofuse::cli {

int cmd_codegen(const Args& args) {
  ParsedArgs a = parse_args(args, {}, {"full"});
  if (a.positional.size() != 1) {
    std::fprintf(stderr, "usage: autofuse codegen FILE [--full]\n");
    return 2;
  }
  Graph g = parse_graph(read_file(a.positional[0]), a.positional[0]);
  if (auto why = kernel_unsupported_reason(g)) {
    std::fprintf(stderr, "%s: not one kernel: %s\n", a.positional[0].c_str(), why->c_str());
    return 1;
  }
  std::shared_ptr<Kernel> k = Kernel::compile(g);
  const std::string& src = k->source();
  if (a.has("full")) {
    std::cout << src;
  } else {
    const size_t at = src.find("// ---- end of af_kernel.h ----");
    std::cout << "// (helper header af_kernel.h omitted; --full prints it)\n"
              << (at == std::string::npos ? src : src.substr(at + 32));
  }
  return 0;
}

}  // namespace autofuse::cli
