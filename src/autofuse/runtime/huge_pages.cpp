// Transparent huge pages for large program buffers (see huge_pages.h).
#include "autofuse/runtime/huge_pages.h"

#include <fstream>
#include <string>

#include "autofuse/support/env.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace autofuse {
namespace {

/// The THP mode in brackets in /sys/kernel/mm/transparent_hugepage/enabled ("always [madvise] never"), or "" when
/// the file cannot be read.
std::string thp_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(f, line)) return "";
  const size_t a = line.find('['), b = line.find(']');
  return a != std::string::npos && b != std::string::npos && b > a ? line.substr(a + 1, b - a - 1) : "";
}

}  // namespace

bool huge_pages_enabled() {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  static const bool on = [] {
    if (!env_bool("AUTOFUSE_HUGE_PAGES", true)) return false;
    const std::string mode = thp_mode();
    return mode == "always" || mode == "madvise";
  }();
  return on;
#else
  return false;
#endif
}

int64_t advise_huge_pages(void* p, int64_t nbytes) {
  if (p == nullptr || nbytes <= 0 || !huge_pages_enabled()) return 0;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = (begin + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const uintptr_t last = (begin + static_cast<uintptr_t>(nbytes)) / kHugePageBytes * kHugePageBytes;
  if (last <= first) return 0;
  if (madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE) != 0) return 0;
  return static_cast<int64_t>(last - first);
#else
  return 0;
#endif
}

}  // namespace autofuse
