// The machine model: what the tiling cost model knows about this CPU. Topology and cache sizes come from the OS,
// the SIMD width from cpuid, and bandwidths from a short probe measured once per machine and cached on disk.
#pragma once

#include <cstdint>
#include <string>

namespace autofuse {

/// Parameters of the host. Sizes in bytes; bandwidths in GB/s (1e9 bytes/s, bytes as the program counts them:
/// a copy of N bytes counts 2N). Bandwidth fields are 0 when not measured.
struct MachineInfo {
  std::string cpu_model;   ///< /proc/cpuinfo "model name"
  int logical_cpus = 1;    ///< CPUs this process may run on (sched_getaffinity)
  int physical_cores = 1;  ///< distinct (package, core) pairs among them (sysfs topology)
  int64_t l1d_bytes = 0;   ///< L1 data cache of one core
  int64_t l2_bytes = 0;    ///< L2 of one core (or of the cores sharing it)
  int64_t l3_bytes = 0;    ///< last-level cache, total as the OS reports it
  int64_t cache_line_bytes = 64;
  std::string isa;               ///< host_isa(): "avx512", "avx2" or "scalar"
  int simd_bytes = 16;           ///< vector register width of that ISA
  int probe_threads = 0;         ///< threads used by the DRAM probe
  double read_gbps = 0;          ///< DRAM stream read, all probe threads
  double read1_gbps = 0;         ///< DRAM stream read, one thread (0: not measured, e.g. an older cache file)
  double write_gbps = 0;         ///< DRAM stream write (regular stores)
  double copy_gbps = 0;          ///< DRAM copy (read + write counted)
  double l1_read_gbps = 0;       ///< one core reading a buffer of half the L1
  double l2_read_gbps = 0;       ///< one core reading a buffer of half the L2
  std::string bandwidth_source;  ///< "probe", "cache <path>", or "not measured"
};

/// The machine model for this process: the OS part is read once; the bandwidths come from the per-machine file in
/// cache_dir()/machine/ when it exists, else are measured (about a second) and written there. Thread-safe. If the
/// probe or the cache directory fails, bandwidths stay 0 and bandwidth_source says why. Environment:
/// AUTOFUSE_REPROBE=1 measures again (and rewrites the file); AUTOFUSE_NO_BANDWIDTH_PROBE=1 skips measuring.
const MachineInfo& machine_info();

/// Measures the bandwidths again now, rewrites the cache file, and makes the result what machine_info() returns.
MachineInfo reprobe_machine();

/// A fresh model (not the process-wide one): bandwidths from the cache file, or measured and written when the file
/// is missing or `reprobe` is true.
MachineInfo load_machine_info(bool reprobe);

/// The OS and cpuid part only (no bandwidth figures), read afresh.
MachineInfo probe_topology();

/// Multi-line human-readable summary ("key: value" lines), for `autofuse machine` and logs.
std::string describe_machine(const MachineInfo& m);

}  // namespace autofuse
