#include "autofuse/tiling/machine.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "autofuse/runtime/bandwidth_probe.h"
#include "autofuse/runtime/cache_dir.h"
#include "autofuse/runtime/hash.h"
#include "autofuse/runtime/isa.h"
#include "autofuse/support/env.h"

namespace autofuse {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

/// "48K" / "2048K" / "1M" (sysfs cache size) in bytes; 0 if unparseable.
int64_t parse_size(const std::string& s) {
  if (s.empty()) return 0;
  char* end = nullptr;
  int64_t v = std::strtoll(s.c_str(), &end, 10);
  if (end == nullptr || end == s.c_str()) return 0;
  if (*end == 'K') v *= 1024;
  if (*end == 'M') v *= 1024 * 1024;
  if (*end == 'G') v *= int64_t(1024) * 1024 * 1024;
  return v;
}

bool env_flag(const char* name) { return env_bool(name, false); }  // bad values warn once (support/env.h)

/// The key the per-machine file is named by: everything that would change the measured figures.
std::string fingerprint(const MachineInfo& m) {
  Sha256 h;
  h.update_field(m.cpu_model);
  h.update_field(std::to_string(m.logical_cpus) + "/" + std::to_string(m.physical_cores));
  h.update_field(std::to_string(m.l1d_bytes) + "/" + std::to_string(m.l2_bytes) + "/" + std::to_string(m.l3_bytes));
  h.update_field(probed_isa());
  std::ifstream meminfo("/proc/meminfo");
  std::string first;
  std::getline(meminfo, first);  // MemTotal
  h.update_field(first);
  return h.hex_digest().substr(0, 20);
}

/// Bytes per array for the DRAM probe: twice the last-level cache, within [64 MiB, 256 MiB]; AUTOFUSE_PROBE_MB
/// overrides.
int64_t dram_probe_bytes(const MachineInfo& m) {
  if (const char* env = std::getenv("AUTOFUSE_PROBE_MB"); env != nullptr && std::atoll(env) > 0) {
    return std::atoll(env) * 1024 * 1024;
  }
  return std::clamp<int64_t>(2 * m.l3_bytes, int64_t(64) << 20, int64_t(256) << 20);
}

void measure(MachineInfo* m) {
  m->probe_threads = std::max(1, m->physical_cores);
  // One thread alone (read1): on many machines (and VMs) a single core already draws most of the DRAM bandwidth, so
  // a split of one long row over all cores gains little; the cost model needs this figure to see that. Measured on
  // the same buffers (one allocation and first touch for both figures).
  double read1 = 0;
  BandwidthResult bw =
      measure_bandwidth(dram_probe_bytes(*m), m->probe_threads, 3, m->probe_threads > 1 ? &read1 : nullptr);
  m->read_gbps = bw.read_gbps;
  m->write_gbps = bw.write_gbps;
  m->copy_gbps = bw.copy_gbps;
  m->read1_gbps = m->probe_threads > 1 ? read1 : bw.read_gbps;
  const int64_t total = int64_t(512) << 20;
  if (m->l1d_bytes > 0) m->l1_read_gbps = measure_cache_read_gbps(m->l1d_bytes / 2, total);
  if (m->l2_bytes > 0) m->l2_read_gbps = measure_cache_read_gbps(m->l2_bytes / 2, total);
  m->bandwidth_source = "probe";
}

std::string bandwidth_file_text(const MachineInfo& m) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "probe_threads %d\nread_gbps %.3f\nwrite_gbps %.3f\ncopy_gbps %.3f\nl1_read_gbps %.3f\n"
                "l2_read_gbps %.3f\nread1_gbps %.3f\n",
                m.probe_threads, m.read_gbps, m.write_gbps, m.copy_gbps, m.l1_read_gbps, m.l2_read_gbps, m.read1_gbps);
  return "# autofuse machine model: " + m.cpu_model + "\n" + buf;
}

/// Reads a file written by bandwidth_file_text into m; false if it is missing or incomplete.
bool load_bandwidth_file(const std::string& path, MachineInfo* m) {
  std::string text;
  if (!read_file(path, &text)) return false;
  std::map<std::string, double> kv;
  std::istringstream in(text);
  std::string key;
  double value;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    if (line.empty() || line[0] == '#') continue;
    if (ls >> key >> value) kv[key] = value;
  }
  for (const char* k : {"probe_threads", "read_gbps", "write_gbps", "copy_gbps", "l1_read_gbps", "l2_read_gbps"}) {
    if (!kv.count(k)) return false;
  }
  if (kv["copy_gbps"] <= 0 || kv["read_gbps"] <= 0) return false;
  m->probe_threads = int(kv["probe_threads"]);
  m->read_gbps = kv["read_gbps"];
  m->write_gbps = kv["write_gbps"];
  m->copy_gbps = kv["copy_gbps"];
  m->l1_read_gbps = kv["l1_read_gbps"];
  m->l2_read_gbps = kv["l2_read_gbps"];
  m->read1_gbps = kv.count("read1_gbps") ? kv["read1_gbps"] : 0;  // optional: files written before it existed
  m->bandwidth_source = "cache " + path;
  return true;
}

/// Fills the bandwidth fields: from the cache file unless `force`, else by measuring (then writing the file).
void fill_bandwidth(MachineInfo* m, bool force) {
  if (env_flag("AUTOFUSE_NO_BANDWIDTH_PROBE") && !force) {
    m->bandwidth_source = "not measured (AUTOFUSE_NO_BANDWIDTH_PROBE)";
    return;
  }
  std::string path;
  try {
    path = machine_dir() + "/" + fingerprint(*m) + ".txt";
  } catch (const std::exception& e) {
    path.clear();
    m->bandwidth_source = std::string("not cached: ") + e.what();
    if (const char* env = std::getenv("AUTOFUSE_MACHINE_DIR"); env != nullptr && *env != '\0') {
      std::string why = e.what();  // machine_dir()'s message starts with "AUTOFUSE_MACHINE_DIR='...': "
      if (size_t at = why.find("': "); why.rfind("AUTOFUSE_MACHINE_DIR=", 0) == 0 && at != std::string::npos)
        why = why.substr(at + 3);
      env_warn("AUTOFUSE_MACHINE_DIR", env, "is not usable (" + why + ")",
               "no machine-model cache (the bandwidths are measured again in every process)");
    }
  }
  if (!force && !path.empty() && load_bandwidth_file(path, m)) return;
  try {
    measure(m);
  } catch (const std::exception& e) {
    m->bandwidth_source = std::string("not measured: ") + e.what();
    return;
  }
  if (path.empty()) return;
  try {
    std::string tmp = path + ".tmp-" + unique_suffix();
    write_file(tmp, bandwidth_file_text(*m));
    if (std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
  } catch (const std::exception&) {
    // A read-only cache only costs a re-probe in the next process.
  }
}

std::mutex g_mu;
MachineInfo* g_info = nullptr;  // published once, replaced (and leaked) by reprobe_machine

}  // namespace

MachineInfo probe_topology() {
  MachineInfo m;
  {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("model name", 0) == 0) {
        m.cpu_model = line.substr(line.find(':') + 2);
        break;
      }
    }
  }
  cpu_set_t set;
  std::set<std::pair<std::string, std::string>> cores;
  int first_cpu = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    m.logical_cpus = CPU_COUNT(&set);
    bool have_first = false;
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (!CPU_ISSET(c, &set)) continue;
      if (!have_first) first_cpu = c, have_first = true;
      std::string topo = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
      cores.emplace(read_line(topo + "physical_package_id"), read_line(topo + "core_id"));
    }
  } else {
    m.logical_cpus = int(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  }
  m.physical_cores = cores.empty() ? m.logical_cpus : int(cores.size());
  m.logical_cpus = std::max(1, m.logical_cpus);
  m.physical_cores = std::clamp(m.physical_cores, 1, m.logical_cpus);
  std::string cache_root = "/sys/devices/system/cpu/cpu" + std::to_string(first_cpu) + "/cache/index";
  for (int i = 0; i < 8; ++i) {
    std::string dir = cache_root + std::to_string(i) + "/";
    std::string level = read_line(dir + "level"), type = read_line(dir + "type");
    if (level.empty()) break;
    int64_t size = parse_size(read_line(dir + "size"));
    int64_t line = parse_size(read_line(dir + "coherency_line_size"));
    if (line > 0) m.cache_line_bytes = line;
    if (level == "1" && type == "Data") m.l1d_bytes = size;
    if (level == "2") m.l2_bytes = size;
    if (level == "3") m.l3_bytes = size;
  }
  // Fallbacks where sysfs has no cache directory (some containers): glibc's sysconf reads cpuid.
  if (m.l1d_bytes == 0) m.l1d_bytes = std::max(0L, sysconf(_SC_LEVEL1_DCACHE_SIZE));
  if (m.l2_bytes == 0) m.l2_bytes = std::max(0L, sysconf(_SC_LEVEL2_CACHE_SIZE));
  if (m.l3_bytes == 0) m.l3_bytes = std::max(0L, sysconf(_SC_LEVEL3_CACHE_SIZE));
  m.isa = host_isa();
  m.simd_bytes = isa_vector_bytes(m.isa);
  m.bandwidth_source = "not measured";
  return m;
}

MachineInfo load_machine_info(bool reprobe) {
  MachineInfo m = probe_topology();
  fill_bandwidth(&m, reprobe);
  return m;
}

const MachineInfo& machine_info() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_info == nullptr) {
    g_info = new MachineInfo(load_machine_info(env_flag("AUTOFUSE_REPROBE")));
  }
  return *g_info;
}

MachineInfo reprobe_machine() {
  auto* m = new MachineInfo(load_machine_info(true));
  std::lock_guard<std::mutex> lock(g_mu);
  g_info = m;  // the previous object is leaked on purpose: callers may still hold references to it
  return *m;
}

std::string describe_machine(const MachineInfo& m) {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "cpu: %s\nlogical cpus: %d\nphysical cores: %d\nL1d: %lld KiB\nL2: %lld KiB\nL3: %lld KiB\n"
                "cache line: %lld B\nisa: %s (%d-byte vectors)\nDRAM read: %.1f GB/s (one thread: %.1f GB/s)\n"
                "DRAM write: %.1f GB/s\n"
                "DRAM copy: %.1f GB/s (read + write, %d threads)\nL1 read (1 core): %.1f GB/s\n"
                "L2 read (1 core): %.1f GB/s\nbandwidth source: %s\n",
                m.cpu_model.c_str(), m.logical_cpus, m.physical_cores, (long long)(m.l1d_bytes >> 10),
                (long long)(m.l2_bytes >> 10), (long long)(m.l3_bytes >> 10), (long long)m.cache_line_bytes,
                m.isa.c_str(), m.simd_bytes, m.read_gbps, m.read1_gbps, m.write_gbps, m.copy_gbps, m.probe_threads,
                m.l1_read_gbps, m.l2_read_gbps, m.bandwidth_source.c_str());
  return buf;
}

}  // namespace autofuse
