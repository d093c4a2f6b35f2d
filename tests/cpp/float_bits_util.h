// Float bit patterns and ulp spacing for the tests of the inline math functions (exp, tanh, erf).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

namespace autofuse::testing_float {

/// The f32 whose IEEE-754 bits are `u`.
inline float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// The IEEE-754 bits of `f`.
inline uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

/// The spacing of floats at the float nearest to r (subnormal spacing below 2^-126; FLT_MAX's spacing above it).
inline double ulp_at(double r) {
  const double a = std::min(std::fabs(r), static_cast<double>(std::numeric_limits<float>::max()));
  if (a < std::ldexp(1.0, -126)) return std::ldexp(1.0, -149);
  int e = 0;
  std::frexp(static_cast<double>(static_cast<float>(a)), &e);
  return std::ldexp(1.0, e - 24);
}

/// The sweep step: every step-th bit pattern; the environment variable `env` (a positive integer) overrides 256
/// (16.8M inputs; 1 runs all 2^32).
inline uint64_t sweep_step(const char* env) {
  if (const char* e = std::getenv(env); e != nullptr && std::atoll(e) > 0) return static_cast<uint64_t>(std::atoll(e));
  return 256;
}

/// Calls fn(xs) with every step-th f32 bit pattern in order, in chunks of at most 2^24 floats.
template <class Fn>
void for_each_pattern_chunk(uint64_t step, Fn&& fn) {
  const uint64_t chunk = 1 << 24;
  std::vector<float> xs;
  for (uint64_t base = 0; base < (1ull << 32); base += chunk * step) {
    xs.clear();
    for (uint64_t b = base; b < std::min<uint64_t>(1ull << 32, base + chunk * step); b += step)
      xs.push_back(bits_to_float(static_cast<uint32_t>(b)));
    fn(xs);
  }
}

}  // namespace autofuse::testing_float
