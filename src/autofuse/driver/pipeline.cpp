#include "autofuse/driver/pipeline.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/verifier.h"
#include "autofuse/support/env.h"

namespace autofuse {

FusionOptions default_fusion_options() {
  FusionOptions o;
  o.kernel_check = [](const Graph& g) { return kernel_unsupported_reason(g); };
  // AUTOFUSE_FUSE_CONCAT=0: every concat a host step (the A/B switch of the concat split, codegen/kernel_concat.cpp).
  o.fuse_concat = env_bool("AUTOFUSE_FUSE_CONCAT", true);
  return o;
}

void verify_fused_graph(const FusedGraph& f, const std::set<std::string>& given_symbols) {
  const Graph& g = f.graph;
  auto fail = [](const std::string& m) { throw IRError("pipeline: after fusion: " + m); };
  std::vector<bool> available(g.size(), false);
  for (ValueId v : g.inputs()) available[v] = true;
  std::vector<int> computed(g.size(), 0);
  for (const FusionGroup& grp : f.groups) {
    // its caller allocates its outputs and gives the symbols of the graph's scalar arguments
    verify(grp.subgraph, VerifyOptions{.output_shapes_bind = true, .given_symbols = given_symbols});
    for (ValueId v : grp.inputs)
      if (!available[v]) fail("group " + grp.name + " reads %" + g.node(v).name + " before any step writes it");
    std::set<ValueId> mem(grp.nodes.begin(), grp.nodes.end());
    for (ValueId v : grp.outputs)
      if (!mem.count(v)) fail("group " + grp.name + " writes %" + g.node(v).name + " but does not compute it");
    for (ValueId v : grp.nodes) ++computed[v];
    for (ValueId v : grp.outputs) available[v] = true;
    if (grp.subgraph.inputs().size() != grp.inputs.size() || grp.subgraph.outputs().size() != grp.outputs.size())
      fail("group " + grp.name + ": its sub-graph's inputs/outputs differ from the group's");
  }
  for (ValueId v : g.outputs())
    if (!available[v]) fail("graph output %" + g.node(v).name + " is written by no step");
  for (const FusionGroup& grp : f.groups)
    for (ValueId v : grp.nodes)
      if (computed[v] > 1 && std::find(grp.recomputed.begin(), grp.recomputed.end(), v) == grp.recomputed.end())
        fail("%" + g.node(v).name + " is computed by several groups but not marked recomputed in " + grp.name);
}

FusedGraph run_fusion_pipeline(const Graph& g, const FusionOptions& o) {
  verify(g, VerifyOptions{.output_shapes_bind = false, .given_symbols = o.given_symbols});
  FusedGraph f = fuse(g, o);
  verify_fused_graph(f, o.given_symbols);
  return f;
}

}  // namespace autofuse
