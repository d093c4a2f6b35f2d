// The codegen's view of the runtime (runtime/: compile_module, host_isa, parallel_for): compile a kernel source to
// a loaded entry point, the lane count for the host ISA, and the parallel-for kernels are launched with. A thin
// adapter, so the Kernel class does not depend on how the runtime is built.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace autofuse {

/// A compiled kernel module kept alive by the shared pointer, with its entry point.
struct JitKernel {
  std::shared_ptr<void> module;  ///< keeps the shared object loaded
  void* entry = nullptr;         ///< the extern "C" function named at compile time
  bool cache_hit = false;
};

/// Compile (or find in the caches) `source` and look up `func`. Throws CompileError (runtime/) with the compiler's
/// output when the source does not compile, std::runtime_error when the symbol is missing.
JitKernel jit_compile(const std::string& source, const std::string& func, const std::string& name_hint);

/// Vector lanes (f32 lanes of the widest vector) for the probed host ISA: 16 (avx512), 8 (avx2), 1 (scalar).
int jit_lanes();

/// Run fn over [0, n) in chunks of at least `grain` on the runtime's thread pool.
void jit_parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace autofuse
