#include "autofuse/runtime/host_openmp.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "autofuse/support/env.h"

namespace autofuse {
namespace {

std::atomic<GompParallelFn> g_fn{nullptr};
std::atomic<bool> g_disabled{false};
std::once_flag g_once;

void look_up() {
  pthread_atfork(nullptr, nullptr, [] { disable_host_openmp(); });
  if (env_choice("AUTOFUSE_THREADS", {"auto", "omp", "pool"}, "auto") == "pool") return;  // bad values warn once
  // RTLD_NOLOAD: only an already-loaded libgomp (matched by its soname), never a fresh one of our own, which would
  // start a second team of spinning threads.
  void* h = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return;
  g_fn.store(reinterpret_cast<GompParallelFn>(dlsym(h, "GOMP_parallel")));
  // The handle stays open: the runtime must outlive every later call (dlclose would only drop our reference).
}

}  // namespace

GompParallelFn host_gomp_parallel() {
  if (g_disabled.load(std::memory_order_relaxed)) return nullptr;
  std::call_once(g_once, look_up);
  return g_disabled.load(std::memory_order_relaxed) ? nullptr : g_fn.load(std::memory_order_relaxed);
}

void disable_host_openmp() { g_disabled.store(true); }

}  // namespace autofuse
