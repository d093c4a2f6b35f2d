// runtime/huge_pages.h: advise_huge_pages marks the 2 MiB-aligned part of a range MADV_HUGEPAGE (the mapping's
// "hg" VmFlag in /proc/self/smaps), returns the bytes advised, leaves the data alone and refuses what it cannot do.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "autofuse/runtime/huge_pages.h"

namespace autofuse {
namespace {

/// The VmFlags of the mapping holding `p` ("" if not found).
std::string vm_flags(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::ifstream f("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(f, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream s(line);
    if (s >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= a && a < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line.substr(8) + " ";
    }
  }
  return "";
}

constexpr size_t kHuge = kHugePageBytes;

/// An anonymous private mapping of `bytes`, unmapped at the end of the scope.
struct Mapping {
  explicit Mapping(size_t bytes) : n(bytes) {
    p = static_cast<char*>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~Mapping() {
    if (p != MAP_FAILED) munmap(p, n);
  }
  char* p;
  size_t n;
};

TEST(HugePages, AdvisesTheAlignedInteriorOnly) {
  if (!huge_pages_enabled())
    GTEST_SKIP() << "transparent huge pages are off here (THP mode never, or AUTOFUSE_HUGE_PAGES=0)";
  Mapping m(12 * kHuge);
  ASSERT_NE(m.p, MAP_FAILED);
  const uintptr_t base = reinterpret_cast<uintptr_t>(m.p);
  const uintptr_t first = (base + kHuge - 1) / kHuge * kHuge;
  char* start = reinterpret_cast<char*>(first) + 4096;  // not aligned: the advice starts at the next 2 MiB
  for (size_t i = 0; i < 5 * kHuge; ++i) start[i] = static_cast<char>(i * 7);
  const int64_t got = advise_huge_pages(start, static_cast<int64_t>(5 * kHuge));
  EXPECT_EQ(got, static_cast<int64_t>(4 * kHuge));  // (first + 2 MiB) .. (first + 6 MiB) aligned down
  EXPECT_NE(vm_flags(reinterpret_cast<char*>(first) + kHuge + 100).find(" hg "), std::string::npos);
  EXPECT_EQ(vm_flags(m.p + (m.n - 100)).find(" hg "), std::string::npos);  // beyond the range: not advised
  for (size_t i = 0; i < 5 * kHuge; ++i) ASSERT_EQ(start[i], static_cast<char>(i * 7)) << i;
}

TEST(HugePages, RefusesWhatItCannotAdvise) {
  EXPECT_EQ(advise_huge_pages(nullptr, int64_t{1} << 30), 0);
  Mapping m(4 * kHuge);
  ASSERT_NE(m.p, MAP_FAILED);
  const uintptr_t first = (reinterpret_cast<uintptr_t>(m.p) + kHuge - 1) / kHuge * kHuge;
  EXPECT_EQ(advise_huge_pages(reinterpret_cast<char*>(first) + 1, static_cast<int64_t>(kHuge)), 0);  // no whole page
  EXPECT_EQ(advise_huge_pages(m.p, 0), 0);
  EXPECT_EQ(advise_huge_pages(m.p, -1), 0);
}

TEST(HugePages, MinimumIsGlibcsLargestMmapThreshold) {
  EXPECT_EQ(kHugePageMinBytes, int64_t{32} << 20);  // DEFAULT_MMAP_THRESHOLD_MAX on 64-bit glibc
  EXPECT_EQ(kHugePageBytes, size_t{2} << 20);
}

}  // namespace
}  // namespace autofuse
