// `autofuse codegen FILE [--full]`: print the generated C++ kernel source of a graph (with --full, the embedded
// helper header too). A graph that is not one kernel is first partitioned by the fusion pipeline, and the source of
// every kernel group is printed, each after a comment naming the group.
#include <cstdio>
#include <iostream>

#include "autofuse/codegen/cpu/emit.h"
#include "autofuse/codegen/kernel.h"
#include "autofuse/driver/pipeline.h"
#include "autofuse/ir/parser.h"
#include "autofuse/schedule/loop_nest.h"
#include "commands.h"

namespace autofuse::cli {

int cmd_codegen(const Args& args) {
  ParsedArgs a = parse_args(args, {}, {"full"});
  expect_at_most_one_file(a);
  if (a.positional.size() != 1) {
    std::fprintf(stderr, "usage: autofuse codegen FILE [--full]\n");
    return 2;
  }
  Graph g = parse_graph(read_file(a.positional[0]), a.positional[0]);
  auto print = [&](const Graph& kg) {
    std::shared_ptr<Kernel> k = Kernel::compile(kg);
    const std::string& src = k->source();
    if (a.has("full")) {
      std::cout << src;
    } else {
      const size_t at = src.find("// ---- end of af_kernel.h ----");
      std::cout << "// (helper header af_kernel.h omitted; --full prints it)\n"
                << (at == std::string::npos ? src : src.substr(at + 32));
    }
  };
  if (!kernel_unsupported_reason(g)) {
    print(g);
    return 0;
  }
  FusedGraph f = run_fusion_pipeline(g);
  for (const FusionGroup& grp : f.groups) {
    if (grp.kind != GroupKind::Kernel) continue;
    std::cout << "// ===== fusion group " << grp.name << " =====\n";
    if (auto why = kernel_unsupported_reason(grp.subgraph)) {
      std::cout << "// not one kernel: " << *why << "\n";
      continue;
    }
    print(grp.subgraph);
  }
  return 0;
}

}  // namespace autofuse::cli
