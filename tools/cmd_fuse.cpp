// `autofuse fuse FILE [--dot OUT.svg] [--no-horizontal] [--no-recompute] [--max-nodes N]`: partition a graph into
// fusion groups; print each group's sub-graph as IR text, then the fusion report (kernel count, bytes per step,
// merges, refusals with reason codes).
#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "autofuse/driver/pipeline.h"
#include "autofuse/fusion/dot.h"
#include "autofuse/ir/parser.h"
#include "commands.h"

namespace autofuse::cli {

int cmd_fuse(const Args& args) {
  ParsedArgs a = parse_args(args, {"dot", "max-nodes", "max-inputs"}, {"no-horizontal", "no-vertical", "no-recompute"});
  expect_at_most_one_file(a);
  if (a.positional.size() != 1) {
    std::fprintf(stderr,
                 "usage: autofuse fuse FILE [--dot OUT.svg] [--no-horizontal] [--no-vertical] [--no-recompute] "
                 "[--max-nodes N] [--max-inputs N]\n");
    return 2;
  }
  Graph g = parse_graph(read_file(a.positional[0]), a.positional[0]);
  FusionOptions o = default_fusion_options();
  o.horizontal = !a.has("no-horizontal");
  o.vertical = !a.has("no-vertical");
  if (a.has("no-recompute")) o.recompute_max_weight = 0;
  auto positive = [](const std::string& text, const char* what) {
    int64_t v = parse_int(text, what);
    if (v < 1 || v > (1 << 30))
      throw std::invalid_argument(std::string(what) + ": expected a count from 1 to 2^30, got " + text);
    return static_cast<int>(v);
  };
  if (auto n = a.get("max-nodes")) o.max_group_nodes = positive(*n, "--max-nodes");
  if (auto n = a.get("max-inputs")) o.max_group_inputs = positive(*n, "--max-inputs");
  FusedGraph f = run_fusion_pipeline(g, o);
  // The picture first: a --dot path that cannot be written fails before anything is printed.
  if (auto out = a.get("dot")) render_dot(fused_graph_dot(f), *out);
  std::cout << f.str();
  std::cout << "kernels: " << f.num_kernels() << "\n";
  if (auto out = a.get("dot")) std::cout << "wrote " << *out << "\n";
  return 0;
}

}  // namespace autofuse::cli
