// Transparent huge pages for the large buffers the generated program allocates (kernel outputs and intermediates).
//
// Why: every call of a compiled graph allocates its outputs afresh. glibc serves an allocation of 32 MiB or more
// (its largest mmap threshold, DEFAULT_MMAP_THRESHOLD_MAX on 64-bit) with a new anonymous mapping and unmaps it on
// free, so the kernel's first write to each 4 KiB page faults and the OS zeroes it: measured on the 2-core Zen 5 VM
// (docs/codegen.md, "Huge pages for fresh outputs"), `x * 2` of a 256 MiB float32 tensor moved 4.3 GB/s with such an
// output against 33 GB/s into a preallocated one. Advising the mapping's 2 MiB-aligned interior as MADV_HUGEPAGE
// before the first write makes each fault map and zero a 2 MiB page (512x fewer faults): 18-20 GB/s for the same
// multiply. torch's own CPU allocator does this only when THP_MEM_ALLOC_ENABLE=1 is set before its first
// allocation; the advice changes no data and no address, only the page size the kernel maps.
#pragma once

#include <cstddef>
#include <cstdint>

namespace autofuse {

/// Bytes of one transparent huge page on x86-64 (the PMD size, 2 MiB; /sys/kernel/mm/transparent_hugepage/
/// hpage_pmd_size on Linux).
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

/// The smallest buffer (bytes) the generated program advises: glibc's largest mmap threshold (32 MiB), from which on
/// every allocation is a fresh mapping; smaller ones usually come back from the heap already mapped.
inline constexpr int64_t kHugePageMinBytes = int64_t{32} << 20;

/// Whether advise_huge_pages does anything: AUTOFUSE_HUGE_PAGES is not 0 (default on), the OS is Linux and its
/// transparent huge page mode (/sys/kernel/mm/transparent_hugepage/enabled) is "always" or "madvise" (with "never"
/// the advice would be ignored). Read once per process.
bool huge_pages_enabled();

/// Advises the 2 MiB-aligned part of [p, p + nbytes) as MADV_HUGEPAGE, so that pages first touched after this are
/// mapped as transparent huge pages. Returns the bytes advised: 0 when disabled (huge_pages_enabled()), when the range
/// holds no whole aligned huge page, or when madvise fails (e.g. the range is not one anonymous private mapping;
/// nothing is changed then). Never throws; the data in the range is not changed.
/// p: any address (null gives 0); nbytes: the buffer's size in bytes.
int64_t advise_huge_pages(void* p, int64_t nbytes);

}  // namespace autofuse
