#include "autofuse/fusion/report.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace autofuse {

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while ((v >= 1024.0 || v <= -1024.0) && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

std::vector<std::string> FusionReport::refusal_codes() const {
  std::set<std::string> s;
  for (const auto& r : refusals) s.insert(r.code);
  return {s.begin(), s.end()};
}

bool FusionReport::refused_with(const std::string& code) const {
  return std::any_of(refusals.begin(), refusals.end(), [&](const FusionDecision& d) { return d.code == code; });
}

std::string FusionReport::str() const {
  std::string s = "fusion report: " + std::to_string(num_kernels) + " kernel(s), " + std::to_string(num_externs) +
                  " extern(s), " + std::to_string(num_host) + " host step(s)\n";
  s += "bytes evaluated at the representative binding {";
  bool first = true;
  for (const auto& [k, v] : binding) {
    s += (first ? "" : ", ") + k + "=" + std::to_string(v);
    first = false;
  }
  s += "}\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-24s %-7s %6s %14s %14s %14s\n", "step", "kind", "ops", "bytes fused",
                "bytes unfused", "saved");
  s += line;
  for (const auto& t : steps) {
    std::snprintf(line, sizeof line, "  %-24s %-7s %6d %14s %14s %14s\n", t.group.c_str(), t.kind.c_str(), t.num_nodes,
                  format_bytes(t.bytes_fused).c_str(), format_bytes(t.bytes_unfused).c_str(),
                  format_bytes(t.bytes_unfused - t.bytes_fused).c_str());
    s += line;
  }
  std::snprintf(line, sizeof line, "  %-24s %-7s %6s %14s %14s %14s\n", "total", "", "",
                format_bytes(total_bytes_fused).c_str(), format_bytes(total_bytes_unfused).c_str(),
                format_bytes(bytes_saved()).c_str());
  s += line;
  if (!merges.empty()) {
    s += "merges (greedy by bytes saved):\n";
    for (const auto& m : merges)
      s += "  " + m.a + " + " + m.b + ": saves " + format_bytes(m.benefit_bytes) +
           (m.message.empty() ? "" : " (" + m.message + ")") + "\n";
  }
  if (!refusals.empty()) {
    s += "refusals:\n";
    for (const auto& r : refusals) {
      s += "  " + r.code + ": " + r.message;
      if (r.benefit_bytes > 0) s += " [would have saved " + format_bytes(r.benefit_bytes) + "]";
      s += "\n";
    }
  }
  return s;
}

}  // namespace autofuse
