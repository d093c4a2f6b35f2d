// Helpers for the kernel tests: random strided tensors, comparison against the reference interpreter, and a seeded
// generator of random fusable kernel graphs (elementwise chains with broadcasts, reductions with prologues and
// epilogues, multi-output) that tracks which values are computed exactly (so tolerances can be zero there).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/graph.h"
#include "autofuse/ir/tensor.h"
#include "autofuse/runtime/thread_pool.h"
#include "autofuse/tiling/tiling_function.h"

namespace autofuse::kernel_testing {

/// `text` (an IR graph template) with every "DT" replaced by the dtype name `dt` ("f32", "bf16", ...).
inline std::string with_dtype(std::string text, const std::string& dt) {
  for (size_t p = text.find("DT"); p != std::string::npos; p = text.find("DT", p + dt.size())) text.replace(p, 2, dt);
  return text;
}

/// Row softmax over [s0, s1] (max, subtract, exp, sum, divide) as an IR template for with_dtype, shared by the
/// kernel, pipelined-row, streaming-store and row-stash tests.
inline constexpr const char* kSoftmaxRowsIR = R"(graph softmax(%x: DT[s0, s1]) {
  %m = amax(%x) {axes=[1], keepdim=true}
  %d = sub(%x, %m)
  %e = exp(%d)
  %s = sum(%e) {axes=[1], keepdim=true}
  %y = div(%e, %s)
  return %y
})";

/// Row layer norm over [s0, s1] with weight and bias [s1] (mean, deviations, variance, rsqrt, scale, shift) as an IR
/// template for with_dtype, shared by the pipelined-row and row-unroll tests.
inline constexpr const char* kLayerNormRowsIR = R"(graph layer_norm(%x: DT[s0, s1], %w: DT[s1], %b: DT[s1]) {
  %m = mean(%x) {axes=[1], keepdim=true}
  %d = sub(%x, %m)
  %q = mul(%d, %d)
  %v = mean(%q) {axes=[1], keepdim=true}
  %e = constant() {value=1e-5, dtype=DT}
  %ve = add(%v, %e)
  %r = rsqrt(%ve)
  %n = mul(%d, %r)
  %s = mul(%n, %w)
  %y = add(%s, %b)
  return %y
})";

/// The float dtype named "f32", "f16" or "bf16" (anything else: bf16), for tests parameterized by dtype name.
inline DType float_dtype_of(const std::string& dt) {
  return dt == "f32" ? DType::Float32 : dt == "f16" ? DType::Float16 : dt == "f64" ? DType::Float64 : DType::BFloat16;
}

/// Restores the thread count and the forced tiling kind at scope exit (tests that change either).
struct TilingRestore {
  int threads = get_num_threads();
  std::optional<TilingKind> forced = force_tiling_kind(std::nullopt);
  ~TilingRestore() {
    set_num_threads(threads);
    force_tiling_kind(forced);
  }
};

/// The seed of a random test: $AUTOFUSE_TEST_SEED, else a fixed default (make test stays reproducible).
inline uint64_t test_seed() {
  const char* env = std::getenv("AUTOFUSE_TEST_SEED");
  return env ? std::strtoull(env, nullptr, 10) : 20261129;
}

/// The random engine of a random test, seeded with test_seed(); prints the seed so a failure can be replayed.
inline std::mt19937_64 seeded_rng() {
  const uint64_t seed = test_seed();
  std::printf("seed %llu (replay with AUTOFUSE_TEST_SEED=%llu)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  return std::mt19937_64(seed);
}

/// Runs kernel k on `in` into fresh contiguous outputs of its output dtypes and sizes.
inline std::vector<HostTensor> run_kernel(const Kernel& k, const std::vector<HostTensor>& in) {
  std::vector<HostTensor> outs;
  for (auto& s : k.output_sizes(in))
    outs.push_back(HostTensor::empty(k.graph().node(k.graph().outputs()[outs.size()]).dtype, s));
  k.run(in, outs);
  return outs;
}

/// Random draws shared by the generators: an element of v, true with probability p, an int in [lo, hi].
template <class T>
const T& pick(const std::vector<T>& v, std::mt19937_64& rng) {
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}
inline bool coin(std::mt19937_64& rng, double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
inline int uni(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

/// Memory layout of a test tensor.
enum class Layout { Contiguous, Permuted, Gapped, Expanded };

/// A tensor of `sizes` in the given layout (Permuted: storage in a random dim order; Gapped: every stride doubled;
/// Expanded: one dim of size > 1 gets stride 0). Storage is owned by the tensor. Values are not initialised.
HostTensor make_tensor(DType t, const std::vector<int64_t>& sizes, Layout layout, std::mt19937_64& rng);

/// Fill with random values: floats ~ N(0, 1) (with NaN/inf/-0.0 sprinkled when `specials`), integers in a small
/// range ([-20, 20], u8 [0, 40]), bools 0/1.
void fill_random(HostTensor& t, std::mt19937_64& rng, bool specials);

/// Compare `got` with the reference `want` (same sizes). Floats: |got - want| <= tol * (|want| + scale) with scale the
/// largest finite |want| (at least 1), NaN only against NaN, infinities exactly; integers and bools exactly.
/// Returns "" when they match, else a message naming the first bad element.
std::string compare(const HostTensor& got, const HostTensor& want, double tol);

/// Default tolerance for an inexact output of dtype t (0 for integer types).
double default_tolerance(DType t);

/// Kernel k vs the reference interpreter on `in` (GoogleTest expectations): the same number of outputs, each within
/// its dtype's default_tolerance (NaN where the interpreter has NaN); `what` names the case in failure messages.
void expect_matches_interpreter(const Kernel& k, const std::vector<HostTensor>& in, const std::string& what);

/// A random kernel graph and, per output, whether it is computed exactly (bit-equal to the interpreter).
struct RandomGraph {
  Graph graph;
  std::vector<bool> exact;
  /// Per output: the tolerance of an inexact output (a value computed in f32 and cast to f64 keeps f32's), or -1
  /// for the output dtype's default.
  std::vector<double> tol;
};

/// Seeded random graph that kernel_unsupported_reason accepts.
RandomGraph random_kernel_graph(std::mt19937_64& rng);

/// Random sizes for the graph's symbols (0, 1, odd, larger; total work bounded).
Bindings random_bindings(const Graph& g, std::mt19937_64& rng);

/// Run one case: random inputs in random layouts, outputs in random layouts, kernel vs interpreter. Returns "" or
/// a message with everything needed to replay (the sizes, layouts and the first mismatch).
std::string run_case(const RandomGraph& rg, const Bindings& b, std::mt19937_64& rng);

}  // namespace autofuse::kernel_testing
