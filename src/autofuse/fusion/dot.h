// A picture of a fused graph: Graphviz DOT with one coloured cluster per fusion group.
#pragma once

#include <string>

#include "autofuse/fusion/fusion.h"

namespace autofuse {

/// DOT text of the fused graph: every live node as a box labelled "%name = op : type", inside a cluster per group
/// (kernels in one of a cycle of pastel colours, externs grey, host steps white, labelled with the group's name and
/// bytes fused / unfused); graph inputs as ellipses; edges follow data flow, recomputed inline values are drawn in
/// every group that computes them (dashed).
std::string fused_graph_dot(const FusedGraph& f);

/// Render DOT text to a file with graphviz `dot` (format from the extension: .svg, .png, .pdf; .dot writes the text
/// itself). Throws std::runtime_error naming the file and dot's exit status on failure.
void render_dot(const std::string& dot_text, const std::string& out_path);

}  // namespace autofuse
