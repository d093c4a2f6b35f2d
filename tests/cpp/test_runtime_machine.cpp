// Tests of the machine model: OS topology, the bandwidth probe, and the per-machine cache file.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>

#include "autofuse/runtime/bandwidth_probe.h"
#include "autofuse/runtime/isa.h"
#include "autofuse/tiling/machine.h"

namespace autofuse {
namespace {

TEST(RuntimeMachine, TopologyIsConsistent) {
  MachineInfo m = probe_topology();
  EXPECT_GE(m.logical_cpus, 1);
  EXPECT_GE(m.physical_cores, 1);
  EXPECT_LE(m.physical_cores, m.logical_cpus);
  EXPECT_EQ(m.isa, host_isa());
  EXPECT_EQ(m.simd_bytes, isa_vector_bytes(m.isa));
  EXPECT_GT(m.cache_line_bytes, 0);
  if (m.l1d_bytes == 0) GTEST_SKIP() << "the OS reports no cache sizes (no sysfs cache dir, sysconf 0)";
  EXPECT_GE(m.l2_bytes, m.l1d_bytes);
  EXPECT_EQ(m.read_gbps, 0);  // topology only
}

TEST(RuntimeMachine, BandwidthProbeGivesPlausibleFigures) {
  BandwidthResult bw = measure_bandwidth(int64_t(16) << 20, 2, 1);
  for (double v : {bw.read_gbps, bw.write_gbps, bw.copy_gbps}) {
    EXPECT_TRUE(std::isfinite(v));
    EXPECT_GT(v, 0.1);  // any machine streams faster than 100 MB/s
    EXPECT_LT(v, 1e5);  // and slower than 100 TB/s
  }
  double l1 = measure_cache_read_gbps(16 << 10, 64 << 20);
  EXPECT_GT(l1, 0.1);
}

TEST(RuntimeMachine, BandwidthIsCachedPerMachine) {
  char tmpl[] = "/tmp/autofuse-test-machine-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  // The machine file follows AUTOFUSE_MACHINE_DIR, not the kernel cache's AUTOFUSE_CACHE_DIR (a small probe must
  // never land in the user's real machine directory).
  ::setenv("AUTOFUSE_CACHE_DIR", (dir + "/kernels").c_str(), 1);
  ::setenv("AUTOFUSE_MACHINE_DIR", (dir + "/machine").c_str(), 1);
  ::setenv("AUTOFUSE_PROBE_MB", "8", 1);
  MachineInfo probed = load_machine_info(true);
  EXPECT_EQ(probed.bandwidth_source, "probe");
  EXPECT_GT(probed.copy_gbps, 0);
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir + "/machine")) files += e.path().extension() == ".txt";
  EXPECT_EQ(files, 1);
  MachineInfo cached = load_machine_info(false);
  EXPECT_EQ(cached.bandwidth_source.rfind("cache ", 0), 0u) << cached.bandwidth_source;
  EXPECT_NEAR(cached.copy_gbps, probed.copy_gbps, 1e-3);
  EXPECT_NEAR(cached.l2_read_gbps, probed.l2_read_gbps, 1e-3);
  EXPECT_NE(describe_machine(cached).find("DRAM copy"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir + "/kernels/machine"));
  ::unsetenv("AUTOFUSE_PROBE_MB");
  ::unsetenv("AUTOFUSE_MACHINE_DIR");
  ::unsetenv("AUTOFUSE_CACHE_DIR");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace autofuse
