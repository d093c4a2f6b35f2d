// Python bindings of fusion and the driver (owner: fusion):
//   fuse(graph, *, vertical=True, horizontal=True, max_group_nodes=64, max_group_inputs=16, recompute_max_weight=2)
//     -> FusedGraph (.groups, .report, .num_kernels, .dot(), str())
//   FusionGroup: .kind (GroupKind), .name, .nodes, .inputs, .outputs, .size_inputs, .recomputed (value ids of the
//     original graph), .subgraph (Graph), .domain / .reduce_axes, .bytes_fused, .bytes_unfused
//   FusionReport: .refusals / .merges (lists of FusionDecision: code, message, a, b, benefit_bytes), byte totals, str()
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "autofuse/driver/pipeline.h"
#include "autofuse/fusion/dot.h"
#include "bindings.h"

namespace autofuse::bindings {

void bind_fusion(nb::module_& m) {
  nb::enum_<GroupKind>(m, "GroupKind", "What a fusion group runs as")
      .value("Kernel", GroupKind::Kernel)
      .value("Extern", GroupKind::Extern)
      .value("Host", GroupKind::Host);

  nb::class_<FusionDecision>(m, "FusionDecision", "One fusion decision or refusal, with its reason code")
      .def_ro("code", &FusionDecision::code, "FUSED or an NF-... reason code")
      .def_ro("message", &FusionDecision::message, "one sentence naming the values, shapes and axes concerned")
      .def_ro("a", &FusionDecision::a)
      .def_ro("b", &FusionDecision::b)
      .def_ro("benefit_bytes", &FusionDecision::benefit_bytes, "bytes of traffic saved (or that would have been)")
      .def("__repr__", [](const FusionDecision& d) { return d.code + ": " + d.message; });

  nb::class_<KernelTraffic>(m, "StepTraffic", "Bytes moved by one step, fused vs its ops one by one")
      .def_ro("group", &KernelTraffic::group)
      .def_ro("kind", &KernelTraffic::kind)
      .def_ro("num_nodes", &KernelTraffic::num_nodes)
      .def_ro("bytes_fused", &KernelTraffic::bytes_fused)
      .def_ro("bytes_unfused", &KernelTraffic::bytes_unfused);

  nb::class_<FusionReport>(m, "FusionReport", "Everything fusion decided; byte figures at a representative binding")
      .def_ro("merges", &FusionReport::merges)
      .def_ro("refusals", &FusionReport::refusals)
      .def_ro("steps", &FusionReport::steps)
      .def_ro("binding", &FusionReport::binding)
      .def_ro("num_kernels", &FusionReport::num_kernels)
      .def_ro("num_externs", &FusionReport::num_externs)
      .def_ro("num_host", &FusionReport::num_host)
      .def_ro("total_bytes_fused", &FusionReport::total_bytes_fused)
      .def_ro("total_bytes_unfused", &FusionReport::total_bytes_unfused)
      .def_prop_ro("bytes_saved", &FusionReport::bytes_saved)
      .def("refusal_codes", &FusionReport::refusal_codes)
      .def("__str__", &FusionReport::str);

  nb::class_<FusionGroup>(m, "FusionGroup", "One step of a fused graph (value ids refer to the original graph)")
      .def_ro("kind", &FusionGroup::kind)
      .def_ro("name", &FusionGroup::name)
      .def_ro("nodes", &FusionGroup::nodes)
      .def_ro("recomputed", &FusionGroup::recomputed)
      .def_ro("inputs", &FusionGroup::inputs)
      .def_ro("outputs", &FusionGroup::outputs)
      .def_ro("size_inputs", &FusionGroup::size_inputs)
      .def_ro("subgraph", &FusionGroup::subgraph)
      .def_prop_ro("domain",
                   [](const FusionGroup& g) {
                     std::vector<std::string> d;
                     for (const Expr& e : g.space.domain) d.push_back(e.str());
                     return d;
                   })
      .def_prop_ro("reduce_axes", [](const FusionGroup& g) { return g.space.reduce_axes; })
      .def_ro("bytes_fused", &FusionGroup::bytes_fused)
      .def_ro("bytes_unfused", &FusionGroup::bytes_unfused);

  nb::class_<FusedGraph>(m, "FusedGraph", "A graph partitioned into fusion groups, in topological order")
      .def_ro("graph", &FusedGraph::graph)
      .def_ro("groups", &FusedGraph::groups)
      .def_ro("report", &FusedGraph::report)
      .def_prop_ro("num_kernels", &FusedGraph::num_kernels)
      .def(
          "dot", [](const FusedGraph& f) { return fused_graph_dot(f); }, "Graphviz DOT text, one colour per group")
      .def(
          "render", [](const FusedGraph& f, const std::string& path) { render_dot(fused_graph_dot(f), path); },
          nb::arg("path"), "Render the picture with graphviz dot (.svg, .png, .pdf, or .dot for the text)")
      .def("__str__", &FusedGraph::str);

  m.def(
      "fuse",
      [](const Graph& g, bool vertical, bool horizontal, int max_group_nodes, int max_group_inputs,
         int recompute_max_weight, const std::vector<std::string>& given_symbols) {
        FusionOptions o = default_fusion_options();
        o.given_symbols = std::set<std::string>(given_symbols.begin(), given_symbols.end());
        o.vertical = vertical;
        o.horizontal = horizontal;
        o.max_group_nodes = max_group_nodes;
        o.max_group_inputs = max_group_inputs;
        o.recompute_max_weight = recompute_max_weight;
        return run_fusion_pipeline(g, o);
      },
      nb::arg("graph"), nb::kw_only(), nb::arg("vertical") = true, nb::arg("horizontal") = true,
      nb::arg("max_group_nodes") = 64, nb::arg("max_group_inputs") = 16, nb::arg("recompute_max_weight") = 2,
      nb::arg("given_symbols") = std::vector<std::string>{},
      "Partition a verified graph into fusion groups (verify, fuse, verify the groups). Raises on invalid IR. "
      "given_symbols: size symbols the caller binds from scalar arguments (no input shape needs to bind them).");
}

}  // namespace autofuse::bindings
