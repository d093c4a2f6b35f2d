#include "autofuse/runtime/bandwidth_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "autofuse/runtime/isa.h"
#include "autofuse/runtime/thread_pool.h"

namespace autofuse {
namespace {

volatile int64_t g_sink;

// The stream kernels, once per vector width. Each works on whole vectors (callers pass multiples of 256 bytes).
// Unsigned lanes: the read sum wraps (its value is irrelevant) without undefined behaviour. Four accumulators keep
// the read loop limited by loads, not by add latency. The copy adds a zero the compiler cannot see, so it is not turned
// into a memcpy call (glibc's uses non-temporal stores, which kernels do not).
#define AF_DEFINE_STREAMS(SUFFIX, BYTES, TARGET)                                                   \
  typedef unsigned long long v##SUFFIX __attribute__((vector_size(BYTES), may_alias));             \
  TARGET int64_t read_##SUFFIX(const void* p, int64_t bytes) {                                     \
    const v##SUFFIX* a = static_cast<const v##SUFFIX*>(p);                                         \
    v##SUFFIX s0 = {}, s1 = {}, s2 = {}, s3 = {};                                                  \
    for (int64_t i = 0, n = bytes / BYTES; i + 4 <= n; i += 4) {                                   \
      s0 += a[i];                                                                                  \
      s1 += a[i + 1];                                                                              \
      s2 += a[i + 2];                                                                              \
      s3 += a[i + 3];                                                                              \
    }                                                                                              \
    v##SUFFIX s = s0 + s1 + s2 + s3;                                                               \
    uint64_t r = 0;                                                                                \
    for (int i = 0; i < BYTES / 8; ++i) r += s[i];                                                 \
    return int64_t(r);                                                                             \
  }                                                                                                \
  TARGET void write_##SUFFIX(void* p, int64_t bytes, int64_t seed) {                               \
    v##SUFFIX* a = static_cast<v##SUFFIX*>(p);                                                     \
    v##SUFFIX v = {};                                                                              \
    v += (unsigned long long)seed;                                                                 \
    for (int64_t i = 0, n = bytes / BYTES; i < n; ++i) a[i] = v;                                   \
  }                                                                                                \
  TARGET void copy_##SUFFIX(void* d, const void* s, int64_t bytes, int64_t zero) {                 \
    v##SUFFIX* dst = static_cast<v##SUFFIX*>(d);                                                   \
    const v##SUFFIX* src = static_cast<const v##SUFFIX*>(s);                                       \
    for (int64_t i = 0, n = bytes / BYTES; i < n; ++i) dst[i] = src[i] + (unsigned long long)zero; \
  }

AF_DEFINE_STREAMS(512, 64, __attribute__((target("avx512f"))))
AF_DEFINE_STREAMS(256, 32, __attribute__((target("avx2"))))
AF_DEFINE_STREAMS(128, 16, )
#undef AF_DEFINE_STREAMS

struct Streams {
  int64_t (*read)(const void*, int64_t);
  void (*write)(void*, int64_t, int64_t);
  void (*copy)(void*, const void*, int64_t, int64_t);
};

Streams streams() {
  std::string isa = probed_isa();
  if (isa == "avx512") return {read_512, write_512, copy_512};
  if (isa == "avx2") return {read_256, write_256, copy_256};
  return {read_128, write_128, copy_128};
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

std::unique_ptr<char, FreeDeleter> alloc_pages(int64_t bytes) {
  void* p = std::aligned_alloc(4096, size_t(bytes));
  if (p == nullptr) throw std::bad_alloc();
  return std::unique_ptr<char, FreeDeleter>(static_cast<char*>(p));
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

BandwidthResult measure_bandwidth(int64_t bytes_per_array, int threads, int reps, double* read1_gbps) {
  const int64_t unit = 4096;
  threads = std::max(1, threads);
  int64_t bytes = std::max<int64_t>(unit * threads, bytes_per_array / unit * unit);
  auto a = alloc_pages(bytes), b = alloc_pages(bytes);
  Streams k = streams();
  const int64_t pages = bytes / unit;
  int saved = get_num_threads();
  set_num_threads(threads);
  // Runs fn on each thread's slice of whole pages; one chunk per thread.
  auto each_slice = [&](auto&& fn) {
    parallel_for(threads, 1, [&](int64_t tb, int64_t te) {
      for (int64_t t = tb; t < te; ++t) {
        int64_t p0 = pages * t / threads, p1 = pages * (t + 1) / threads;
        fn(p0 * unit, (p1 - p0) * unit);
      }
    });
  };
  BandwidthResult best;
  try {
    each_slice([&](int64_t off, int64_t len) {  // first touch from the thread that will stream it
      std::memset(a.get() + off, 1, size_t(len));
      std::memset(b.get() + off, 2, size_t(len));
    });
    volatile int64_t zero_source = 0;
    int64_t zero = zero_source;
    for (int r = 0; r < std::max(1, reps); ++r) {
      auto t0 = std::chrono::steady_clock::now();
      each_slice([&](int64_t off, int64_t len) { g_sink = k.read(a.get() + off, len); });
      best.read_gbps = std::max(best.read_gbps, double(bytes) / seconds_since(t0) / 1e9);
      t0 = std::chrono::steady_clock::now();
      each_slice([&](int64_t off, int64_t len) { k.write(b.get() + off, len, r); });
      best.write_gbps = std::max(best.write_gbps, double(bytes) / seconds_since(t0) / 1e9);
      t0 = std::chrono::steady_clock::now();
      each_slice([&](int64_t off, int64_t len) { k.copy(b.get() + off, a.get() + off, len, zero); });
      best.copy_gbps = std::max(best.copy_gbps, 2.0 * double(bytes) / seconds_since(t0) / 1e9);
    }
    if (read1_gbps != nullptr) {
      // One thread reading the same (already faulted-in) buffer: no second allocation and first touch.
      set_num_threads(1);
      *read1_gbps = 0;
      for (int r = 0; r < std::max(1, reps); ++r) {
        auto t0 = std::chrono::steady_clock::now();
        g_sink = k.read(a.get(), bytes);
        *read1_gbps = std::max(*read1_gbps, double(bytes) / seconds_since(t0) / 1e9);
      }
    }
  } catch (...) {
    set_num_threads(saved);
    throw;
  }
  set_num_threads(saved);
  return best;
}

double measure_cache_read_gbps(int64_t bytes, int64_t total_bytes) {
  bytes = std::max<int64_t>(1024, bytes / 256 * 256);
  auto a = alloc_pages((bytes + 4095) / 4096 * 4096);
  std::memset(a.get(), 3, size_t(bytes));
  Streams k = streams();
  g_sink = k.read(a.get(), bytes);  // warm the cache
  int64_t passes = std::max<int64_t>(1, total_bytes / bytes);
  double best = 0;
  for (int r = 0; r < 3; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    uint64_t acc = 0;  // wraps harmlessly
    for (int64_t i = 0; i < passes; ++i) acc += uint64_t(k.read(a.get(), bytes));
    g_sink = int64_t(acc);
    best = std::max(best, double(bytes) * double(passes) / seconds_since(t0) / 1e9);
  }
  return best;
}

}  // namespace autofuse
