// Float bit patterns and ulp spacing for the tests of the inline math functions (exp, tanh, erf).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

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

}  // namespace autofuse::testing_float
