#include "autofuse/driver/compiled_graph.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "autofuse/codegen/kernel.h"
#include "autofuse/driver/host_ops.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/support/env.h"

namespace autofuse {

bool CompileGraphOptions::strict_from_env() { return env_bool("AUTOFUSE_STRICT", false); }

CompiledGraph CompiledGraph::compile(const Graph& g, const CompileGraphOptions& o) {
  CompiledGraph cg;
  cg.fused_ = std::make_shared<const FusedGraph>(run_fusion_pipeline(g, o.fusion));
  cg.extern_fn_ = o.extern_fn;
  for (const FusionGroup& grp : cg.fused_->groups) {
    Step st;
    if (grp.kind == GroupKind::Kernel && !o.use_interpreter) {
      try {
        st.kernel = Kernel::compile(grp.subgraph);
      } catch (const std::exception& e) {
        if (o.strict) throw IRError("CompiledGraph: kernel " + grp.name + " failed to compile: " + e.what());
        cg.fallbacks_.push_back(grp.name + ": " + e.what());
        std::fprintf(stderr, "autofuse: warning: kernel %s runs on the reference interpreter: %s\n", grp.name.c_str(),
                     e.what());
      }
    }
    cg.steps_.push_back(std::move(st));
  }
  return cg;
}

std::vector<HostTensor> CompiledGraph::run(const std::vector<HostTensor>& inputs, const Bindings* given) const {
  const Graph& g = fused_->graph;
  Bindings b = bind_symbols(g, inputs, given);
  std::vector<HostTensor> env(g.size());
  std::vector<bool> is_view(g.size(), false);  // shares storage with an input or another value
  std::vector<ValueId> in_ids = g.inputs();
  for (size_t i = 0; i < in_ids.size(); ++i) {
    env[in_ids[i]] = inputs[i];
    is_view[in_ids[i]] = true;
  }
  for (size_t gi = 0; gi < fused_->groups.size(); ++gi) {
    const FusionGroup& grp = fused_->groups[gi];
    std::vector<HostTensor> ins;
    for (ValueId v : grp.inputs) ins.push_back(env[v]);
    if (grp.kind == GroupKind::Kernel) {
      std::vector<std::vector<int64_t>> sizes;
      if (steps_[gi].kernel) {
        sizes = steps_[gi].kernel->output_sizes(ins, &b);
      } else {
        sizes = output_sizes(grp.subgraph, bind_symbols(grp.subgraph, ins));
      }
      std::vector<HostTensor> outs;
      for (size_t k = 0; k < grp.outputs.size(); ++k)
        outs.push_back(HostTensor::empty(g.node(grp.outputs[k]).dtype, sizes[k]));
      if (steps_[gi].kernel)
        steps_[gi].kernel->run(ins, outs, &b);
      else
        interpret_into(grp.subgraph, ins, outs);
      for (size_t k = 0; k < grp.outputs.size(); ++k) env[grp.outputs[k]] = outs[k];
    } else {
      ValueId v = grp.nodes.at(0);
      const Node& n = g.node(v);
      std::vector<HostTensor> node_ins;
      for (ValueId u : n.inputs) node_ins.push_back(env[u]);
      if (grp.kind == GroupKind::Host) {
        env[v] = run_host_op(n, node_ins, b);
        is_view[v] = true;
      } else {
        if (!extern_fn_)
          throw IRError("%" + n.name + " = extern(\"" + attr_str(n.attrs, "name") +
                        "\"): extern ops (ATen calls) run only under the PyTorch backend; the CLI and the C++ API "
                        "compile and run graphs of native ops (CompileGraphOptions::extern_fn is unset)");
        HostTensor out = extern_fn_(n, node_ins);
        std::vector<int64_t> want = eval_shape(n.shape, b);
        if (out.dtype != n.dtype || out.sizes != want)
          throw IRError("%" + n.name + " = extern(\"" + attr_str(n.attrs, "name") +
                        "\"): the extern function returned " + out.describe() + ", expected " +
                        std::string(dtype_name(n.dtype)) + " of the node's sizes");
        env[v] = out;
        is_view[v] = out.owner == nullptr;
      }
    }
  }
  std::vector<HostTensor> outs;
  for (ValueId v : g.outputs()) {
    const HostTensor& t = env[v];
    bool fresh_owned = !is_view[v] && t.is_contiguous() && t.owner;
    bool repeated = false;
    for (ValueId w : g.outputs()) {
      if (w == v) break;
      repeated |= env[w].data == t.data;
    }
    outs.push_back(fresh_owned && !repeated ? t : contiguous_copy(t));
  }
  return outs;
}

}  // namespace autofuse
