// The launcher's thread pool: parallel_for over a persistent set of workers that coexists with ATen's OpenMP pool.
#pragma once

#include <cstdint>
#include <functional>

namespace autofuse {

/// Runs fn(begin, end) over disjoint ranges covering [0, n) exactly once, on up to get_num_threads() threads (the
/// calling thread included). Work is split into at most get_num_threads() contiguous chunks of at least `grain`
/// indices (grain < 1 is taken as 1), balanced to within one index. Runs inline on the calling thread, with no
/// synchronisation at all, when n <= grain, when one thread is configured, when called from inside another
/// parallel_for (nesting is serial), or when another thread is already using the pool (so concurrent callers never
/// oversubscribe the machine or wait for each other). The first exception thrown by fn is rethrown in the caller
/// after all started chunks finish; chunks not yet started are skipped. Workers spin for about 50 microseconds after
/// a call (so back-to-back launches skip the kernel's wake-up), then sleep on a condition variable: between calls
/// they use no CPU, leaving the cores to ATen's OpenMP threads. When the process already has GNU OpenMP loaded
/// (PyTorch's), the chunks run on that runtime's team instead of the own workers (host_openmp.h), so kernels and
/// ATen calls share one set of threads as Inductor's kernels do.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

/// Sets the number of threads parallel_for uses (caller included); n < 1 is taken as 1. Takes effect at the next
/// call; workers are started lazily. The Python layer passes torch.get_num_threads().
void set_num_threads(int n);

/// The current thread count: set_num_threads()'s value, else $AUTOFUSE_NUM_THREADS, else the number of CPUs this
/// process may run on (sched_getaffinity).
int get_num_threads();

/// True while the calling thread is running a chunk of a parallel_for.
bool in_parallel_region();

}  // namespace autofuse
