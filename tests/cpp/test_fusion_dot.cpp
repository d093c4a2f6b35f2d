// The fusion picture: DOT text with one cluster per group, and rendering through graphviz.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "autofuse/fusion/dot.h"

namespace autofuse {
namespace {

FusedGraph sample() {
  Graph g("sample");
  Expr s0 = Expr::sym("s0");
  ValueId x = g.add_input("x", DType::Float32, {s0, s0});
  ValueId e = g.add(OpKind::Exp, {x}, {}, "e");
  ValueId mm = g.add(OpKind::Extern, {e},
                     {{"name", std::string("aten.mm")}, {"dtype", DType::Float32}, {"shape", Shape{s0, s0}}}, "mm");
  ValueId y = g.add(OpKind::Add, {mm, e}, {}, "y");
  g.set_outputs({y});
  return fuse(g);
}

TEST(FusionDot, OneClusterPerGroupAndDataflowEdges) {
  FusedGraph f = sample();
  std::string d = fused_graph_dot(f);
  for (const FusionGroup& grp : f.groups) EXPECT_NE(d.find("subgraph \"cluster_" + grp.name + "\""), std::string::npos);
  EXPECT_NE(d.find("\"k0_1\" -> \"e0_2\""), std::string::npos) << d;  // exp's kernel feeds the extern
  EXPECT_NE(d.find("\"e0_2\" -> \"k1_3\""), std::string::npos) << d;
  EXPECT_NE(d.find("\"v0\" -> \"k0_1\""), std::string::npos) << d;  // the graph input
  EXPECT_NE(d.find("-> \"outputs\""), std::string::npos);
}

TEST(FusionDot, RendersSvgWithGraphviz) {
  if (std::system("command -v dot >/dev/null 2>&1") != 0) GTEST_SKIP() << "graphviz `dot` is not installed";
  std::string path = ::testing::TempDir() + "autofuse_fusion_dot_test.svg";
  render_dot(fused_graph_dot(sample()), path);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find("<svg"), std::string::npos);
  EXPECT_NE(ss.str().find("k0 (kernel)"), std::string::npos);
  std::remove(path.c_str());
  try {
    render_dot("digraph { this is not dot", path);
    ADD_FAILURE() << "invalid dot text rendered";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("syntax error"), std::string::npos) << e.what();  // dot's own words
  }
}

}  // namespace
}  // namespace autofuse
