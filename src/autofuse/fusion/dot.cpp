#include "autofuse/fusion/dot.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <stdexcept>

#include "autofuse/ir/printer.h"

namespace autofuse {

namespace {

std::string escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r;
}

std::string node_id(const FusionGroup* g, ValueId v) {
  return g ? "\"" + g->name + "_" + std::to_string(v) + "\"" : "\"v" + std::to_string(v) + "\"";
}

}  // namespace

std::string fused_graph_dot(const FusedGraph& f) {
  static const char* kColors[] = {"#cfe8fc", "#d5f5d0", "#fde2c8", "#e7d8f5", "#fbf3c0", "#d0f0ef", "#f8d0dc"};
  const Graph& g = f.graph;
  std::string s = "digraph \"" + escape(g.name()) +
                  "\" {\n  rankdir=TB;\n  node [shape=box, fontsize=10, fontname=\"monospace\"];\n";
  for (ValueId v : g.inputs())
    s += "  " + node_id(nullptr, v) + " [shape=ellipse, label=\"%" + escape(g.node(v).name) + " : " +
         escape(print_type(g.node(v).type())) + "\"];\n";
  int k = 0;
  for (const FusionGroup& grp : f.groups) {
    std::string color = grp.kind == GroupKind::Kernel   ? kColors[k++ % 7]
                        : grp.kind == GroupKind::Extern ? "#d9d9d9"
                                                        : "#ffffff";
    s += "  subgraph \"cluster_" + grp.name + "\" {\n    style=filled; fillcolor=\"" + color + "\";\n    label=\"" +
         grp.name + " (" + std::string(group_kind_name(grp.kind)) + "): " + format_bytes(grp.bytes_fused) +
         " fused vs " + format_bytes(grp.bytes_unfused) + " unfused\";\n";
    std::set<ValueId> rec(grp.recomputed.begin(), grp.recomputed.end());
    for (ValueId v : grp.nodes) {
      const Node& n = g.node(v);
      std::string label = "%" + n.name + " = " + std::string(n.info().name) + " : " + print_type(n.type());
      s += "    " + node_id(&grp, v) + " [label=\"" + escape(label) + "\"" + (rec.count(v) ? ", style=dashed" : "") +
           "];\n";
    }
    s += "  }\n";
  }
  // Edges: inside a group between its nodes; across groups from the writer's node to the reader's node.
  for (const FusionGroup& grp : f.groups) {
    std::set<ValueId> mem(grp.nodes.begin(), grp.nodes.end());
    for (ValueId v : grp.nodes)
      for (ValueId u : g.node(v).inputs) {
        std::string from;
        if (mem.count(u))
          from = node_id(&grp, u);
        else if (g.node(u).op == OpKind::Input)
          from = node_id(nullptr, u);
        else if (f.producer[u] >= 0)
          from = node_id(&f.groups[f.producer[u]], u);
        else
          continue;
        s += "  " + from + " -> " + node_id(&grp, v) + ";\n";
      }
  }
  s += "  \"outputs\" [shape=plaintext];\n";
  for (ValueId v : g.outputs()) {
    std::string from = g.node(v).op == OpKind::Input ? node_id(nullptr, v)
                       : f.producer[v] >= 0          ? node_id(&f.groups[f.producer[v]], v)
                                                     : "";
    if (!from.empty()) s += "  " + from + " -> \"outputs\";\n";
  }
  return s + "}\n";
}

void render_dot(const std::string& dot_text, const std::string& out_path) {
  auto dot_pos = out_path.rfind('.');
  std::string ext = dot_pos == std::string::npos ? "svg" : out_path.substr(dot_pos + 1);
  if (ext == "dot" || ext == "gv") {
    std::ofstream o(out_path);
    if (!(o << dot_text)) throw std::runtime_error(out_path + ": cannot write");
    return;
  }
  char tmpl[] = "/tmp/autofuse_dot_XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) throw std::runtime_error("render_dot: cannot create a temporary file");
  close(fd);
  {
    std::ofstream o(tmpl);
    o << dot_text;
  }
  auto quote = [](const std::string& p) {
    std::string q = "'";
    for (char c : p) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  std::string cmd = "dot -T" + ext + " " + quote(tmpl) + " -o " + quote(out_path) + " 2>&1";
  std::string said;  // dot's diagnostics go into the error, not to the terminal
  int rc = -1;
  if (FILE* pipe = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (size_t n = fread(buf, 1, sizeof buf, pipe)) said.append(buf, n);
    rc = pclose(pipe);
  }
  std::remove(tmpl);
  while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
  if (rc != 0)  // pclose gives a wait status: the exit code is in its high byte
    throw std::runtime_error(out_path + ": graphviz dot failed (exit status " +
                             std::to_string(WIFEXITED(rc) ? WEXITSTATUS(rc) : rc) + ")" +
                             (said.empty() ? "" : ": " + said));
}

}  // namespace autofuse
