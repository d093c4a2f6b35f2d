#include "autofuse/runtime/isa.h"

#include <cpuid.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "autofuse/runtime/compiler.h"
#include "autofuse/support/env.h"

namespace autofuse {
namespace {

bool cpu_has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

// One CPUID feature bit (register 0..3 = eax, ebx, ecx, edx; Intel SDM vol. 2A, CPUID). Used for the features
// clang 14's __builtin_cpu_supports does not know by name (f16c, avx512fp16), so the fuzz build (clang) compiles.
bool cpuid_bit(unsigned leaf, unsigned subleaf, int reg, int bit) {
  unsigned r[4] = {0, 0, 0, 0};
  if (!__get_cpuid_count(leaf, subleaf, &r[0], &r[1], &r[2], &r[3])) return false;
  return ((r[reg] >> bit) & 1u) != 0;
}
bool cpu_has_f16c() { return cpuid_bit(1, 0, 2, 29); }        // CPUID.1:ECX.F16C[bit 29]
bool cpu_has_avx512fp16() { return cpuid_bit(7, 0, 3, 23); }  // CPUID.(EAX=7,ECX=0):EDX.AVX512-FP16[bit 23]

bool cpu_has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c(); }

std::vector<std::string> split_spaces(const char* s) {
  std::vector<std::string> out;
  if (s == nullptr) return out;
  std::istringstream in(s);
  std::string word;
  while (in >> word) out.push_back(word);
  return out;
}

/// Whether the kernel compiler (compiler_info) is GCC, whose --param options clang rejects; false if it cannot be run.
bool compiler_is_gcc() {
  try {
    const std::string& v = compiler_info().version;
    return v.find("clang") == std::string::npos &&
           (v.find("g++") != std::string::npos || v.find("GCC") != std::string::npos ||
            v.find("gcc") != std::string::npos);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::string probed_isa() {
  static const std::string isa = [] {
    __builtin_cpu_init();
    if (cpu_has_avx512()) return std::string("avx512");
    if (cpu_has_avx2()) return std::string("avx2");
    return std::string("scalar");
  }();
  return isa;
}

std::string host_isa() {
  // a bad value warns once and is ignored (support/env.h)
  auto v = env_choice("AUTOFUSE_ISA", {"avx512", "avx2", "scalar"}, "the CPU's own ISA (" + probed_isa() + ")");
  return v ? *v : probed_isa();
}

int isa_vector_bytes(const std::string& isa) {
  if (isa == "avx512") return 64;
  if (isa == "avx2") return 32;
  return 16;
}

std::vector<std::string> isa_flags(const std::string& isa) {
  // x86-64-v4 = AVX-512 F/BW/CD/DQ/VL; x86-64-v3 = AVX2, FMA, F16C, BMI1/2, MOVBE (the psABI micro-architecture
  // levels, GCC >= 11 and clang >= 12). -mtune stays generic so the binary does not depend on the build host.
  if (isa == "avx512") {
    std::vector<std::string> f = {"-march=x86-64-v4", "-mprefer-vector-width=512"};
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512bf16")) f.push_back("-mavx512bf16");
    if (cpu_has_avx512fp16()) f.push_back("-mavx512fp16");
    return f;
  }
  if (isa == "avx2") return {"-march=x86-64-v3"};
  return {"-march=x86-64"};
}

std::string kernel_opt_level(const std::string& isa) {
  // The kernels are vectorized by hand and their helpers are inlined at -O2 as at -O3 (the same calls in the objects).
  // Zen 3, AVX2, g++ 12 (session 24; 7-11 rounds of the two alternating, median of per-round ratios): -O2 took
  // 0.84x the g++ CPU time of -O3 on bf16 softmax and 0.84-0.86x on bf16 layer_norm and f32 softmax, and its kernels
  // 0.996-1.010x the run time of -O3's (bf16 layer_norm) and 1.006-1.016x (bf16 and f32 softmax; one-thread harness,
  // the two alternating call by call, [32, 4096] and [8192, 4096]). Zen 4, AVX-512, g++ 12 (session 26): -O3 fully
  // unrolls the pipelined row loop's rolled group of four vectors (GCC drops `#pragma GCC unroll 1` inside the
  // generic lambda), so bf16 softmax took 2.48 G cc1plus instructions (cachegrind) at -O3 against 1.98 G at -O2; the
  // kernels at -O2 ran 0.99-1.02x the time of -O3's (bf16 softmax, 64 x 4096 and 256 x 1000, in cache), 0.993-0.997x
  // (bf16 layer_norm), 0.99-1.005x (f32 softmax and layer_norm; the same harness). Session 5's "f32 layer_norm 4-5 %
  // slower at -O2" (Zen 5, docs/demo.md "Cold compile after batching") is not seen on Zen 4.
  // AUTOFUSE_EXTRA_CXXFLAGS=-O3 (or -O2) overrides it.
  (void)isa;
  return "-O2";
}

std::vector<std::string> kernel_compile_flag_list() {
  // -fno-math-errno lets sqrt and friends inline; no -ffast-math, which would break NaN and signed-zero semantics.
  // -pipe: the compiler passes assembly to the assembler through a pipe rather than a temporary file.
  // -ffp-contract=off: GCC otherwise fuses a*b+c into one FMA (one rounding instead of two), which differs from eager
  // PyTorch and the interpreter by an ulp (found by the kernel fuzzer, seed 777574). -Wno-psabi silences GCC's notes
  // about the ABI of 512-bit vector arguments, which the generated kernels never pass across a library boundary.
  // -O2 (kernel_opt_level). -fno-exceptions: no kernel throws (below for its compile time). -nodefaultlibs (with
  // kernel_link_libraries()): the link skips libstdc++ and libgcc_s, which no kernel uses (Zen 3: 0.05 -> 0.02 s of
  // the link, session 24).
  const std::string isa = host_isa();
  std::vector<std::string> flags = {"-std=c++20", kernel_opt_level(isa), "-pipe",          "-shared",
                                    "-fPIC",      "-fno-math-errno",     "-fno-plt",       "-ffp-contract=off",
                                    "-Wno-psabi", "-fno-exceptions",     "-nodefaultlibs", "-Wl,--no-undefined"};
  for (auto& f : isa_flags(isa)) flags.push_back(f);
  // GCC caps the inlining growth of a translation unit past `large-unit-insns` instructions, so a batch of kernels
  // compiled as one unit (compile_modules) would get less inlining than each kernel alone (measured: a softmax
  // kernel 30% smaller, its vector code not inlined). Lifting the cap gives every kernel of a batch the code it gets
  // alone (function sizes compared with nm -S); a single kernel is far below the cap either way.
  // -fno-tree-vrp -fno-ivopts: two GCC passes whose work the hand-vectorized kernels do not need (their loops step
  // one vector at a time through x86 scaled-index addressing, their range checks are explicit). Zen 4, g++ 12 -O2,
  // session 26: cc1plus instructions (cachegrind) of bf16 softmax 1.88 -> 1.73 G with both (-fno-exceptions, no
  // kernel throws: 0.016 G more), bf16 layer_norm 0.93 -> 0.86 G; the 21 bench patterns x f32 / bf16 at [1024, 1024]
  // (one thread, the two builds alternating call by call, 400 calls, medians) ran 0.97-1.01x the time without them
  // on AVX-512 and on AVX2 (AUTOFUSE_ISA=avx2), geomean 0.996x either way, the same as a build against itself in
  // that harness's order (docs/codegen.md "Compile time on Zen 4 AVX-512 (session 26)").
  if (compiler_is_gcc()) {
    for (const char* f :
         {"--param=large-unit-insns=100000000", "--param=inline-unit-growth=1000", "-fno-tree-vrp", "-fno-ivopts"})
      flags.push_back(f);
  }
  for (auto& f : split_spaces(std::getenv("AUTOFUSE_EXTRA_CXXFLAGS"))) flags.push_back(f);
  return flags;
}

std::vector<std::string> kernel_link_libraries() {
  // libsleef only where a kernel calls it; libm and libc (memcpy, the scalar path's libm calls) and libgcc's static
  // helpers (__popcountdi2 and the like on the scalar baseline): what -nodefaultlibs leaves out that a kernel may use.
  // -Wl,--no-undefined (kernel_compile_flag_list) makes any other symbol a compile error rather than a dlopen failure.
  return {"-Wl,--as-needed", "-lsleef", "-lm", "-lc", "-lgcc"};
}

std::string kernel_compile_flags() {
  std::vector<std::string> all = kernel_compile_flag_list();
  for (auto& l : kernel_link_libraries()) all.push_back(l);
  std::string out;
  for (auto& f : all) {
    if (!out.empty()) out += ' ';
    out += f;
  }
  return out;
}

}  // namespace autofuse
