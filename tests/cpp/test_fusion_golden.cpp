// IR-text golden tests of fusion: every tests/ir/fusion/*.af and tests/ir/models/*.af file is fused by the pipeline
// and checked against the directives in its comments, with a small FileCheck-like checker of our own:
//
//   # CHECK: TEXT          TEXT occurs on a line at or after the previous match (the search continues after it)
//   # CHECK-NEXT: TEXT     TEXT occurs on the line right after the previous match
//   # CHECK-NOT: TEXT      TEXT does not occur between the previous match and the next CHECK match (or the end)
//   # CHECK-KERNELS: N     the fused graph has exactly N kernels
//   # CHECK-REFUSAL: CODE  the report has a refusal with this reason code
//   # CHECK-NO-REFUSALS    the report has no refusal at all
//   # FUSE-OPTIONS: ...    --max-nodes N, --max-inputs N, --no-horizontal, --no-vertical, --no-recompute
// In TEXT, {{REGEX}} matches an ECMAScript regular expression; everything else matches literally.
// The text checked is FusedGraph::str() (each group's header line and sub-graph, then the report).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "autofuse/driver/pipeline.h"
#include "autofuse/ir/parser.h"

namespace autofuse {
namespace {

struct Directive {
  std::string kind, arg;
  int line = 0;
};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<Directive> parse_directives(const std::string& text) {
  static const char* kKinds[] = {"CHECK-NEXT",        "CHECK-NOT",    "CHECK-KERNELS", "CHECK-REFUSAL",
                                 "CHECK-NO-REFUSALS", "FUSE-OPTIONS", "CHECK"};
  std::vector<Directive> out;
  std::istringstream in(text);
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    std::string t = trim(line);
    if (t.rfind("#", 0) != 0) continue;
    t = trim(t.substr(1));
    for (const char* k : kKinds) {
      std::string ks = k;
      if (t.rfind(ks, 0) != 0) continue;
      std::string rest = t.substr(ks.size());
      if (!rest.empty() && rest[0] != ':') continue;  // "CHECK-NOTE" is not "CHECK-NOT"
      out.push_back({ks, trim(rest.empty() ? "" : rest.substr(1)), no});
      break;
    }
  }
  return out;
}

/// A directive pattern as a regular expression: literal text, with {{...}} parts taken as regex.
std::regex pattern_regex(const std::string& p) {
  std::string r;
  for (size_t i = 0; i < p.size();) {
    if (p.compare(i, 2, "{{") == 0) {
      size_t e = p.find("}}", i + 2);
      if (e == std::string::npos) throw std::invalid_argument("unterminated {{ in pattern: " + p);
      r += "(?:" + p.substr(i + 2, e - i - 2) + ")";
      i = e + 2;
      continue;
    }
    if (std::string("\\^$.|?*+()[]{}").find(p[i]) != std::string::npos) r += '\\';
    r += p[i++];
  }
  return std::regex(r);
}

bool pattern_matches(const std::string& pattern, const std::string& line) {
  return std::regex_search(line, pattern_regex(pattern));
}

/// "" on success, else a message naming the failing directive.
std::string run_text_checks(const std::vector<Directive>& ds, const std::string& output) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  size_t pos = 0;  // next line to search from
  long last = -1;  // line of the previous match
  std::vector<const Directive*> nots;
  auto check_nots = [&](size_t end) -> std::string {
    for (const Directive* d : nots)
      for (size_t i = static_cast<size_t>(last + 1); i < end && i < lines.size(); ++i)
        if (pattern_matches(d->arg, lines[i]))
          return "line " + std::to_string(d->line) + ": CHECK-NOT: '" + d->arg + "' found: " + lines[i];
    nots.clear();
    return "";
  };
  for (const Directive& d : ds) {
    if (d.kind == "CHECK-NOT") {
      nots.push_back(&d);
    } else if (d.kind == "CHECK") {
      size_t i = pos;
      while (i < lines.size() && !pattern_matches(d.arg, lines[i])) ++i;
      if (i == lines.size()) return "line " + std::to_string(d.line) + ": CHECK: '" + d.arg + "' not found";
      if (auto e = check_nots(i); !e.empty()) return e;
      last = static_cast<long>(i);
      pos = i + 1;
    } else if (d.kind == "CHECK-NEXT") {
      size_t i = static_cast<size_t>(last + 1);
      if (last < 0 || i >= lines.size() || !pattern_matches(d.arg, lines[i]))
        return "line " + std::to_string(d.line) + ": CHECK-NEXT: '" + d.arg + "' is not on the line after the match";
      last = static_cast<long>(i);
      pos = i + 1;
    }
  }
  return check_nots(lines.size());
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

FusionOptions options_from(const std::vector<Directive>& ds) {
  FusionOptions o = default_fusion_options();
  for (const Directive& d : ds) {
    if (d.kind != "FUSE-OPTIONS") continue;
    std::istringstream in(d.arg);
    for (std::string w; in >> w;) {
      if (w == "--no-horizontal")
        o.horizontal = false;
      else if (w == "--no-vertical")
        o.vertical = false;
      else if (w == "--no-recompute")
        o.recompute_max_weight = 0;
      else if (w == "--max-nodes")
        in >> o.max_group_nodes;
      else if (w == "--max-inputs")
        in >> o.max_group_inputs;
      else
        throw std::invalid_argument("unknown FUSE-OPTIONS word " + w);
    }
  }
  return o;
}

std::vector<std::filesystem::path> golden_files() {
  std::vector<std::filesystem::path> out;
  for (const char* dir : {"tests/ir/fusion", "tests/ir/models"}) {
    std::filesystem::path d = std::filesystem::path(AUTOFUSE_SOURCE_DIR) / dir;
    if (!std::filesystem::exists(d)) continue;
    for (const auto& e : std::filesystem::directory_iterator(d))
      if (e.path().extension() == ".af") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FusionCheck, CheckerMatchesAndFails) {
  std::vector<Directive> ds = {
      {"CHECK", "b = {{[0-9]+}}", 1}, {"CHECK-NEXT", "c", 2}, {"CHECK-NOT", "zz", 3}, {"CHECK", "e", 4}};
  EXPECT_EQ(run_text_checks(ds, "a\nb = 12\nc\nd\ne\n"), "");
  EXPECT_NE(run_text_checks(ds, "a\nb = x\nc\ne\n"), "");         // regex part fails
  EXPECT_NE(run_text_checks(ds, "b = 1\nd\nc\ne\n"), "");         // CHECK-NEXT not adjacent
  EXPECT_NE(run_text_checks(ds, "b = 1\nc\nzz\ne\n"), "");        // CHECK-NOT between matches
  EXPECT_EQ(run_text_checks(ds, "b = 1\nc\ne\nzz\n"), "");        // ...but after the next match is fine
  EXPECT_TRUE(pattern_matches("[s0, 1] (x)", "f32[s0, 1] (x)"));  // brackets and parens are literal
  auto parsed = parse_directives("# CHECK-KERNELS: 2\n  # CHECK: a b\n# CHECK-NOTE: not a directive\n%x = y\n");
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0].kind, "CHECK-KERNELS");
  EXPECT_EQ(parsed[1].arg, "a b");
  EXPECT_EQ(parsed[1].line, 2);
}

TEST(FusionGolden, EveryGoldenFilePasses) {
  auto files = golden_files();
  ASSERT_GE(files.size(), 10u) << "golden files missing under " << AUTOFUSE_SOURCE_DIR;
  for (const auto& p : files) {
    SCOPED_TRACE(p.string());
    std::string text = read_text(p);
    auto ds = parse_directives(text);
    ASSERT_FALSE(ds.empty()) << "no CHECK directives";
    FusedGraph f = run_fusion_pipeline(parse_graph(text, p.string()), options_from(ds));
    std::string out = f.str();
    for (const Directive& d : ds) {
      if (d.kind == "CHECK-KERNELS") {
        EXPECT_EQ(f.num_kernels(), std::stoi(d.arg)) << "line " << d.line << "\n" << out;
      } else if (d.kind == "CHECK-REFUSAL") {
        EXPECT_TRUE(f.report.refused_with(d.arg)) << "line " << d.line << ": no refusal " << d.arg << "\n" << out;
      } else if (d.kind == "CHECK-NO-REFUSALS") {
        EXPECT_TRUE(f.report.refusals.empty()) << "line " << d.line << "\n" << out;
      }
    }
    std::string err = run_text_checks(ds, out);
    EXPECT_EQ(err, "") << out;
  }
}

}  // namespace
}  // namespace autofuse
