// `autofuse cache [--bench] [--reps N] [--source FILE]`: where the kernel cache is and what it holds; with --bench,
// the median cold compile time of a small kernel and the median warm (disk cache) load time.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "autofuse/runtime/runtime.h"
#include "commands.h"

namespace autofuse::cli {
namespace {

/// A small kernel of the kind codegen emits: a loop over 16-lane GCC vectors with a scalar tail and a SLEEF exp
/// declared by prototype (including sleef.h alone costs about 0.4 s of compile time), the extern "C" entry taking
/// pointers, sizes and strides. Use --source for a real generated kernel (`autofuse codegen FILE > k.cpp`).
const char* kBenchKernel = R"(#include <stdint.h>
#include <string.h>
typedef float vf __attribute__((vector_size(64)));
extern "C" vf Sleef_expf16_u10(vf);
extern "C" float Sleef_expf_u10(float);
static inline vf vexp(vf x) { return Sleef_expf16_u10(x); }
extern "C" void af_bench_kernel(const float* x, const float* y, float* out, int64_t rows, int64_t cols,
                                int64_t sx, int64_t sy, int64_t so) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * sx; const float* yr = y + r * sy; float* orow = out + r * so;
    int64_t c = 0;
    for (; c + 16 <= cols; c += 16) {
      vf a, b; memcpy(&a, xr + c, 64); memcpy(&b, yr + c, 64);
      vf v = vexp(a * b + 1.0f); memcpy(orow + c, &v, 64);
    }
    for (; c < cols; ++c) orow[c] = Sleef_expf_u10(xr[c] * yr[c] + 1.0f);
  }
}
)";

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int run_bench(const std::string& base_source, int reps) {
  // A throw-away cache directory, so the figures do not depend on (or pollute) the user's cache.
  char tmpl[] = "/tmp/autofuse-bench-cache-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("cannot create a temporary cache directory");
  std::string saved = std::getenv("AUTOFUSE_CACHE_DIR") ? std::getenv("AUTOFUSE_CACHE_DIR") : "";
  ::setenv("AUTOFUSE_CACHE_DIR", tmpl, 1);
  auto t0 = std::chrono::steady_clock::now();
  compiler_info();  // one-time per process: `g++ --version`
  double probe_ms = ms_since(t0);
  std::vector<double> cold, warm, memory;
  // CPU seconds of the compiler processes: on a loaded machine wall time overstates the compiler's own cost.
  auto child_cpu_ms = [] {
    rusage ru;
    ::getrusage(RUSAGE_CHILDREN, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-3;
  };
  double cpu0 = child_cpu_ms();
  for (int i = 0; i < reps; ++i) {
    // A unique comment makes every cold compile a cache miss.
    std::string source = "// bench " + std::to_string(::getpid()) + "-" + std::to_string(i) + "\n" + base_source;
    CompileResult c = compile_module(source, "bench");
    if (c.cache_hit) throw std::runtime_error("benchmark source unexpectedly found in a fresh cache");
    cold.push_back(c.seconds * 1e3);
    c = CompileResult{};
    clear_memory_cache();  // the module is unloaded: the next call reads and dlopens the disk entry
    CompileResult w = compile_module(source, "bench");
    if (!w.cache_hit) throw std::runtime_error("warm load missed the cache");
    warm.push_back(w.seconds * 1e3);
    memory.push_back(compile_module(source, "bench").seconds * 1e3);
  }
  double compiler_cpu_ms = (child_cpu_ms() - cpu0) / reps;
  if (saved.empty())
    ::unsetenv("AUTOFUSE_CACHE_DIR");
  else
    ::setenv("AUTOFUSE_CACHE_DIR", saved.c_str(), 1);
  std::filesystem::remove_all(tmpl);
  std::printf("compiler: %s (%s)\nflags: %s\n", compiler_info().path.c_str(), compiler_info().version.c_str(),
              kernel_compile_flags().c_str());
  std::printf("reps: %d\ncold compile (median): %.1f ms   [min %.1f, max %.1f]   target <= 300 ms\n", reps,
              median(cold), *std::min_element(cold.begin(), cold.end()), *std::max_element(cold.begin(), cold.end()));
  std::printf("compiler CPU time (mean user+sys per compile): %.1f ms\n", compiler_cpu_ms);
  std::printf("warm load from disk (median): %.3f ms   [min %.3f, max %.3f]   target <= 5 ms\n", median(warm),
              *std::min_element(warm.begin(), warm.end()), *std::max_element(warm.begin(), warm.end()));
  std::printf("in-memory hit (median): %.4f ms\nfirst-call compiler probe (once per process): %.1f ms\n",
              median(memory), probe_ms);
  return 0;
}

}  // namespace

int cmd_cache(const Args& args) {
  ParsedArgs a = parse_args(args, {"reps", "source"}, {"bench"});
  if (!a.positional.empty()) throw std::invalid_argument("unexpected argument '" + a.positional[0] + "'");
  if (a.has("bench")) {
    int reps = int(parse_int(a.get("reps").value_or("7"), "--reps"));
    if (reps < 1) throw std::invalid_argument("--reps must be at least 1");
    std::string source = a.has("source") ? read_file(*a.get("source")) : std::string(kBenchKernel);
    return run_bench(source, reps);
  }
  std::string dir = cache_dir();
  int64_t entries = 0, bytes = 0;
  std::error_code ec;
  std::filesystem::path kernels = dir + "/v1/kernels";
  if (std::filesystem::exists(kernels, ec)) {
    for (auto& e : std::filesystem::recursive_directory_iterator(kernels, ec)) {
      if (e.is_regular_file(ec)) {
        bytes += int64_t(e.file_size(ec));
        if (e.path().filename() == "kernel.so") ++entries;
      }
    }
  }
  std::printf("cache dir: %s\nentries: %lld\nsize: %.1f MiB\nisa: %s\nflags: %s\n", dir.c_str(), (long long)entries,
              double(bytes) / (1 << 20), host_isa().c_str(), kernel_compile_flags().c_str());
  return 0;
}

}  // namespace autofuse::cli
