// Differential testing of generated kernels: seeded random kernel graphs x random sizes and layouts against the
// reference interpreter. `make test` runs AUTOFUSE_FUZZ_GRAPHS (default 120) graphs x 3 cases; `make fuzz-kernels`
// runs many more. A failure prints the seed; replay it with AUTOFUSE_FUZZ_SEED=<seed> AUTOFUSE_FUZZ_GRAPHS=1.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "autofuse/ir/printer.h"
#include "kernel_test_util.h"

namespace autofuse::kernel_testing {
namespace {

int64_t env_int(const char* name, int64_t dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : dflt;
}

TEST(KernelFuzz, RandomGraphsMatchInterpreter) {
  const int64_t graphs = env_int("AUTOFUSE_FUZZ_GRAPHS", 120);
  const int64_t cases = env_int("AUTOFUSE_FUZZ_CASES_PER_GRAPH", 3);
  const uint64_t base = static_cast<uint64_t>(env_int("AUTOFUSE_FUZZ_SEED", 20261129));
  int64_t ran = 0, failed = 0;
  for (int64_t i = 0; i < graphs; ++i) {
    const uint64_t seed = base + static_cast<uint64_t>(i);
    std::mt19937_64 rng(seed);
    RandomGraph rg = random_kernel_graph(rng);
    for (int64_t c = 0; c < cases; ++c) {
      Bindings b = random_bindings(rg.graph, rng);
      std::string err;
      try {
        err = run_case(rg, b, rng);
      } catch (const std::exception& e) {
        err = std::string("exception: ") + e.what();
      }
      ++ran;
      if (!err.empty()) {
        ++failed;
        ADD_FAILURE() << "seed " << seed << " case " << c << ": " << err << "\n" << print_graph(rg.graph);
        break;
      }
    }
    if (failed >= 5) break;
  }
  std::printf("[kernel fuzz] %lld cases over %lld graphs from seed %llu, %lld failed\n", static_cast<long long>(ran),
              static_cast<long long>(graphs), static_cast<unsigned long long>(base), static_cast<long long>(failed));
}

}  // namespace
}  // namespace autofuse::kernel_testing
