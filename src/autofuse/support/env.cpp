#include "autofuse/support/env.h"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "autofuse/runtime/isa.h"

namespace autofuse {
namespace {

std::mutex g_mu;
std::set<std::pair<std::string, std::string>>& warned() {
  static auto* s = new std::set<std::pair<std::string, std::string>>();  // never destroyed: used at exit too
  return *s;
}

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n\r"), e = s.find_last_not_of(" \t\n\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

/// The variable's value, nullopt when unset or empty.
std::optional<std::string> value_of(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::string join(const std::vector<std::string>& v, const std::string& last_sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i == 0 ? "" : i + 1 == v.size() ? last_sep : ", ") + v[i];
  return out;
}

}  // namespace

void env_warn(const std::string& name, const std::string& value, const std::string& problem,
              const std::string& instead) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!warned().emplace(name, value).second) return;
  std::fprintf(stderr, "autofuse: warning: %s='%s' %s; using %s\n", name.c_str(), value.c_str(), problem.c_str(),
               instead.c_str());
  std::fflush(stderr);
}

bool env_bool(const char* name, bool fallback) {
  auto v = value_of(name);
  if (!v) return fallback;
  const std::string s = lower(trim(*v));
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  env_warn(name, *v, "is not a boolean (expected 1/true/yes/on or 0/false/no/off)",
           std::string(fallback ? "1" : "0") + " (the default)");
  return fallback;
}

std::optional<int64_t> env_int(const char* name, int64_t lo, int64_t hi, const std::string& instead) {
  auto v = value_of(name);
  if (!v) return std::nullopt;
  const std::string s = trim(*v);
  errno = 0;
  char* end = nullptr;
  long long n = s.empty() ? 0 : std::strtoll(s.c_str(), &end, 10);
  const bool parsed = !s.empty() && end != nullptr && *end == '\0' && errno == 0;
  if (parsed && n >= lo && n <= hi) return static_cast<int64_t>(n);
  env_warn(name, *v,
           "is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]" +
               (parsed ? "" : " (not a decimal integer)"),
           instead);
  return std::nullopt;
}

std::optional<std::string> env_choice(const char* name, const std::vector<std::string>& choices,
                                      const std::string& instead) {
  auto v = value_of(name);
  if (!v) return std::nullopt;
  std::string lower = *v;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (std::find(choices.begin(), choices.end(), lower) != choices.end()) return lower;
  env_warn(name, *v, "is not one of " + join(choices, " or "), instead);
  return std::nullopt;
}

int cpu_count() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

void check_environment() {
  // Booleans and their defaults (README's table; AUTOFUSE_FUSE_CONCAT, AUTOFUSE_AOT_CACHE, AUTOFUSE_ROUND_AT_STORE
  // and AUTOFUSE_HUGE_PAGES are on by default).
  static const std::pair<const char*, bool> kBools[] = {
      {"AUTOFUSE_DEBUG", false},         {"AUTOFUSE_STRICT", false},     {"AUTOFUSE_FORCE_DISABLE_CACHES", false},
      {"AUTOFUSE_PROFILE", false},       {"AUTOFUSE_REPROBE", false},    {"AUTOFUSE_EMULATE_PRECISION_CASTS", false},
      {"AUTOFUSE_FUSE_CONCAT", true},    {"AUTOFUSE_WARM_START", false}, {"AUTOFUSE_AOT_CACHE", true},
      {"AUTOFUSE_ROUND_AT_STORE", true}, {"AUTOFUSE_HUGE_PAGES", true},
  };
  for (const auto& [name, fallback] : kBools) env_bool(name, fallback);
  const std::string cpus = std::to_string(cpu_count());
  env_int("AUTOFUSE_NUM_THREADS", 1, 4096, "the CPU count (" + cpus + ")");
  env_int("AUTOFUSE_COMPILE_THREADS", 1, 4096, "the CPU count (" + cpus + ")");
  env_int("AUTOFUSE_COMPILE_TIMEOUT", 0, 86400, "60 s");
  env_choice("AUTOFUSE_THREADS", {"auto", "omp", "pool"}, "auto");
  env_choice("AUTOFUSE_MATMUL", {"auto", "aten", "onednn"}, "auto");
  env_choice("AUTOFUSE_ISA", {"avx512", "avx2", "scalar"}, "the CPU's own ISA (" + probed_isa() + ")");
}

}  // namespace autofuse
