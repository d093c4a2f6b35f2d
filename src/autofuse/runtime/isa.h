// The host's SIMD instruction set, as seen by generated kernels, and the compiler flags that target it.
#pragma once

#include <string>
#include <vector>

namespace autofuse {

/// The widest kernel ISA this CPU runs: "avx512" (AVX-512 F+BW+VL+DQ), "avx2" (AVX2+FMA+F16C) or "scalar".
/// The environment variable AUTOFUSE_ISA (one of those three names) overrides the probe, for tests; any other value
/// warns once (naming the variable and the value, support/env.h) and the probe's answer is used. The override is not
/// checked against the CPU: asking for more than it has builds kernels that die of SIGILL. Probed once per process
/// (cpuid through __builtin_cpu_supports).
std::string host_isa();

/// What the CPU itself supports, ignoring AUTOFUSE_ISA.
std::string probed_isa();

/// Vector register width in bytes for an ISA name: 64, 32, or 16 for "scalar" (SSE2 is the x86-64 baseline).
int isa_vector_bytes(const std::string& isa);

/// Code-generation flags for kernels of the given ISA (without -O, -shared, -fPIC): a -march baseline and, for
/// "avx512", the fp16/bf16 extensions when the CPU has them. Deterministic for a given ISA and CPU.
std::vector<std::string> isa_flags(const std::string& isa);

/// The optimisation flag of kernels for an ISA name: "-O2" for every ISA (measurements in isa.cpp).
std::string kernel_opt_level(const std::string& isa);

/// The full flag string kernels are compiled and linked with for host_isa(): kernel_compile_flag_list() then
/// kernel_link_libraries(), space-separated. Part of every cache key.
std::string kernel_compile_flags();

/// The flags placed before the source file: optimisation (kernel_opt_level), PIC, ISA flags, -nodefaultlibs and
/// -Wl,--no-undefined, and anything in the environment variable AUTOFUSE_EXTRA_CXXFLAGS (split on spaces).
std::vector<std::string> kernel_compile_flag_list();

/// The libraries placed after the source file (a kernel links only what -nodefaultlibs leaves to it): libsleef as
/// needed, libm, libc and libgcc's static helpers.
std::vector<std::string> kernel_link_libraries();

}  // namespace autofuse
