// The compiler's passes, in order, each followed by a verifier. This is the one place that lists them:
//
//   verify(graph) -> fuse (fusion/) -> verify every group's sub-graph -> [per kernel group: Kernel::compile, in
//   compiled_graph.cpp: loop nest, tiling, codegen, compile + cache + load]
#pragma once

#include <set>
#include <string>

#include "autofuse/fusion/fusion.h"

namespace autofuse {

/// The fusion options the pipeline uses: FusionOptions' defaults, with the code generator's verdict
/// (kernel_unsupported_reason, codegen/kernel.h) as the last word on every candidate kernel; AUTOFUSE_FUSE_CONCAT=0
/// turns FusionOptions::fuse_concat off (every concat a host step).
FusionOptions default_fusion_options();

/// verify(g) (o.given_symbols count as bound); fuse(g, o); verify each group's sub-graph and check that the groups
/// cover every live node once (or as a recomputed copy) and read only values written before them. Throws IRError (from
/// the verifier, naming the node, or "pipeline: after fusion: ..." for a broken partition).
FusedGraph run_fusion_pipeline(const Graph& g, const FusionOptions& o = default_fusion_options());

/// The verifier that runs after fusion (see run_fusion_pipeline); `given_symbols` as in FusionOptions. Throws IRError
/// "pipeline: after fusion: ...".
void verify_fused_graph(const FusedGraph& f, const std::set<std::string>& given_symbols = {});

}  // namespace autofuse
