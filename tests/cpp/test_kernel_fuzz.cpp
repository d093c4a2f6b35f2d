// Differential testing of generated kernels: seeded random kernel graphs x random sizes and layouts against the
// reference interpreter. `make test` runs AUTOFUSE_FUZZ_GRAPHS (default 120) graphs x 3 cases; `make fuzz-kernels`
// runs many more. Odd cases force the non-temporal output stores (force_stream_stores). A failure prints the seed;
// replay it with AUTOFUSE_FUZZ_SEED=<seed> AUTOFUSE_FUZZ_GRAPHS=1 (and AUTOFUSE_EMULATE_PRECISION_CASTS=1 when the
// failing test is the one under the other precision policy).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "autofuse/ir/printer.h"
#include "autofuse/tiling/tiling_function.h"
#include "kernel_test_util.h"

namespace autofuse::kernel_testing {
namespace {

int64_t env_int(const char* name, int64_t dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : dflt;
}

/// `graphs` random graphs x AUTOFUSE_FUZZ_CASES_PER_GRAPH cases from seed `base`; kernels and interpreter both use
/// the precision policy of the environment (AUTOFUSE_EMULATE_PRECISION_CASTS).
void fuzz(int64_t graphs, uint64_t base, const char* label) {
  const int64_t cases = env_int("AUTOFUSE_FUZZ_CASES_PER_GRAPH", 3);
  int64_t ran = 0, failed = 0;
  for (int64_t i = 0; i < graphs; ++i) {
    const uint64_t seed = base + static_cast<uint64_t>(i);
    std::mt19937_64 rng(seed);
    RandomGraph rg = random_kernel_graph(rng);
    for (int64_t c = 0; c < cases; ++c) {
      Bindings b = random_bindings(rg.graph, rng);
      std::string err;
      // Odd cases take the non-temporal output stores (af_sto) that calls larger than the last-level cache use.
      const bool stream = c % 2 == 1;
      const std::optional<bool> prev = force_stream_stores(stream ? std::optional<bool>(true) : std::nullopt);
      try {
        err = run_case(rg, b, rng);
      } catch (const std::exception& e) {
        err = std::string("exception: ") + e.what();
      }
      force_stream_stores(prev);
      if (!err.empty() && stream) err += " (streaming stores forced)";
      ++ran;
      if (!err.empty()) {
        ++failed;
        ADD_FAILURE() << "seed " << seed << " case " << c << ": " << err << "\n" << print_graph(rg.graph);
        break;
      }
    }
    if (failed >= 5) break;
  }
  std::printf("[kernel fuzz%s] %lld cases over %lld graphs from seed %llu, %lld failed\n", label,
              static_cast<long long>(ran), static_cast<long long>(graphs), static_cast<unsigned long long>(base),
              static_cast<long long>(failed));
}

TEST(KernelFuzz, RandomGraphsMatchInterpreter) {
  fuzz(env_int("AUTOFUSE_FUZZ_GRAPHS", 120), static_cast<uint64_t>(env_int("AUTOFUSE_FUZZ_SEED", 20261129)), "");
}

/// The same under the other precision policy than the environment's (per-op f16/bf16 rounding by default), on a
/// quarter of the graphs.
TEST(KernelFuzz, RandomGraphsMatchInterpreterUnderTheOtherPrecisionPolicy) {
  const char* old = std::getenv("AUTOFUSE_EMULATE_PRECISION_CASTS");
  const std::string saved = old ? old : "";
  const bool emulating = old && std::string(old) == "1";
  ::setenv("AUTOFUSE_EMULATE_PRECISION_CASTS", emulating ? "0" : "1", 1);
  fuzz(std::max<int64_t>(1, env_int("AUTOFUSE_FUZZ_GRAPHS", 120) / 4),
       static_cast<uint64_t>(env_int("AUTOFUSE_FUZZ_SEED", 20261129)), emulating ? " f32-inside" : " emulate-casts");
  if (old)
    ::setenv("AUTOFUSE_EMULATE_PRECISION_CASTS", saved.c_str(), 1);
  else
    ::unsetenv("AUTOFUSE_EMULATE_PRECISION_CASTS");
}

}  // namespace
}  // namespace autofuse::kernel_testing
