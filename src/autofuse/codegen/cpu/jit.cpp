// The codegen's runtime adapter, on the runtime stage: compile_module (disk + memory cache), host_isa, parallel_for.
#include "autofuse/codegen/cpu/jit.h"

#include "autofuse/runtime/runtime.h"

namespace autofuse {

JitKernel jit_compile(const std::string& source, const std::string& func, const std::string& name_hint) {
  CompileResult r = compile_module(source, name_hint, func);  // an entry lacking func is rebuilt
  JitKernel jk;
  jk.entry = r.module->symbol(func);
  jk.module = std::shared_ptr<void>(r.module, r.module.get());  // aliasing: keeps the Module (and its .so) alive
  jk.cache_hit = r.cache_hit;
  return jk;
}

int jit_lanes() {
  const std::string isa = host_isa();
  return isa == "avx512" ? 16 : isa == "avx2" ? 8 : 1;
}

void jit_parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  parallel_for(n, grain, fn);
}

}  // namespace autofuse
