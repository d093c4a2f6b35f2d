// Memory-bandwidth micro-benchmarks for the machine model: read, write and copy streams at the widest vector width
// the CPU has, over buffers sized for DRAM or for one cache level.
#pragma once

#include <cstdint>

namespace autofuse {

/// Bandwidths in GB/s (1e9 bytes per second). Bytes counted are those the program asks for: a read or a write of
/// N bytes counts N, a copy of N bytes counts 2N (read + write, as STREAM counts it), whatever extra traffic the
/// hardware adds (the write-allocate read of a store).
struct BandwidthResult {
  double read_gbps = 0, write_gbps = 0, copy_gbps = 0;
};

/// Streams over two fresh buffers of `bytes_per_array` bytes (rounded down to 4 KiB) with `threads` threads, each
/// thread on its own contiguous slice, on the runtime's thread pool. Each figure is the best of `reps` passes (the
/// least disturbed by other processes). With `read1_gbps`, also the read bandwidth of one thread streaming the whole
/// first buffer (best of `reps`), on the buffers already allocated and touched (a second call would pay the page
/// faults of both buffers again, most of a cold probe's time). Throws std::bad_alloc if the buffers cannot be
/// allocated.
BandwidthResult measure_bandwidth(int64_t bytes_per_array, int threads, int reps, double* read1_gbps = nullptr);

/// Single-thread read bandwidth of a buffer of `bytes` re-read until about `total_bytes` have been read: with a
/// buffer that fits in L1 or L2 this is that level's read bandwidth per core.
double measure_cache_read_gbps(int64_t bytes, int64_t total_bytes);

}  // namespace autofuse
