// Temporary private shim until the runtime (compile_module, host_isa, parallel_for) is on main: g++ + dlopen with a
// per-user directory keyed by a hash of the source, and a serial parallel-for.
#include "autofuse/codegen/cpu/jit.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string_view>

namespace autofuse {
namespace {

std::string shim_dir() {
  std::string d = "/tmp/autofuse-codegen-shim-" + std::to_string(getuid());
  mkdir(d.c_str(), 0700);
  return d;
}

std::string hex64(uint64_t h) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

}  // namespace

JitKernel jit_compile(const std::string& source, const std::string& func, const std::string& name_hint) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<void>> loaded;
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = hex64(std::hash<std::string_view>()(source)) + "-" + std::to_string(jit_lanes());
  JitKernel jk;
  auto it = loaded.find(key);
  if (it != loaded.end()) {
    jk.module = it->second;
    jk.cache_hit = true;
  } else {
    const std::string base = shim_dir() + "/" + key;
    const std::string so = base + ".so";
    if (access(so.c_str(), R_OK) != 0) {
      const std::string cpp = base + ".cpp";
      { std::ofstream f(cpp); f << source; }
      const std::string tmp = base + "." + std::to_string(getpid()) + ".tmp.so";
      const std::string cmd = "g++ -std=c++20 -O2 -march=native -fno-math-errno -fPIC -shared -o " + tmp + " " + cpp +
                              " -lsleef 2>" + base + ".err";
      if (std::system(cmd.c_str()) != 0) {
        std::ifstream e(base + ".err");
        std::string msg((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
        throw std::runtime_error("kernel " + name_hint + " failed to compile (" + cpp + "):\n" + msg);
      }
      std::rename(tmp.c_str(), so.c_str());
    } else {
      jk.cache_hit = true;
    }
    void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) throw std::runtime_error("cannot load kernel " + so + ": " + dlerror());
    jk.module = std::shared_ptr<void>(h, [](void* p) { dlclose(p); });
    loaded[key] = jk.module;
  }
  jk.entry = dlsym(jk.module.get(), func.c_str());
  if (!jk.entry) throw std::runtime_error("kernel module " + name_hint + " has no symbol " + func);
  return jk;
}

int jit_lanes() {
  const char* e = std::getenv("AUTOFUSE_ISA");
  std::string isa = e ? e : "";
  if (isa.empty()) isa = __builtin_cpu_supports("avx512f") ? "avx512" : __builtin_cpu_supports("avx2") ? "avx2" : "scalar";
  return isa == "avx512" ? 16 : isa == "avx2" ? 8 : 1;
}

void jit_parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  (void)grain;
  if (n > 0) fn(0, n);
}

}  // namespace autofuse
