#include "autofuse/ir/tensor.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace autofuse {

std::vector<int64_t> contiguous_strides_i64(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> st(sizes.size(), 1);
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = acc;
    acc *= std::max<int64_t>(sizes[i], 1);
  }
  return st;
}

HostTensor HostTensor::empty(DType dtype, std::vector<int64_t> sizes) {
  HostTensor t;
  t.dtype = dtype;
  t.strides = contiguous_strides_i64(sizes);
  t.sizes = std::move(sizes);
  // The byte count is checked: sizes whose product overflows int64 (e.g. 2^62 x 4) are more memory than exists, not
  // a small wrapped-around buffer (the CLI segfaulted on `--shape s0=4611686018427387904 --shape s1=4`).
  int64_t elements = 1, bytes64 = 0;
  for (int64_t s : t.sizes)
    if (s < 0) throw std::invalid_argument("HostTensor::empty: negative size " + std::to_string(s));
  for (int64_t s : t.sizes)
    if (s == 0) elements = 0;
  auto overflow = [&] {
    std::string dims;
    for (int64_t s : t.sizes) dims += (dims.empty() ? "" : ", ") + std::to_string(s);
    return std::length_error("tensor of sizes [" + dims + "] (" + std::string(dtype_name(dtype)) +
                             "): its byte count overflows int64, more memory than any machine has");
  };
  for (int64_t s : t.sizes)
    if (elements != 0 && __builtin_mul_overflow(elements, s, &elements)) throw overflow();
  if (__builtin_mul_overflow(std::max<int64_t>(elements, 1), static_cast<int64_t>(dtype_size(dtype)), &bytes64) ||
      bytes64 > INT64_MAX - 63)
    throw overflow();
  size_t bytes = static_cast<size_t>(bytes64);
  bytes = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, bytes);
  if (!p) throw std::bad_alloc();
  t.owner = std::shared_ptr<void>(p, std::free);
  t.data = p;
  return t;
}

HostTensor HostTensor::view(DType dtype, void* data, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  if (sizes.size() != strides.size()) throw std::invalid_argument("HostTensor::view: sizes and strides differ in rank");
  HostTensor t;
  t.dtype = dtype;
  t.sizes = std::move(sizes);
  t.strides = std::move(strides);
  t.data = data;
  return t;
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

bool HostTensor::is_contiguous() const {
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] != 1 && strides[i] != acc) return false;
    acc *= sizes[i];
  }
  return true;
}

int64_t HostTensor::offset_bytes(const std::vector<int64_t>& index) const {
  int64_t off = 0;
  for (size_t i = 0; i < index.size(); ++i) off += index[i] * strides[i];
  return off * dtype_size(dtype);
}

namespace {
template <class T>
T load(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void store(void* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
}  // namespace

double HostTensor::get_double(const std::vector<int64_t>& index) const {
  const char* p = static_cast<const char*>(data) + offset_bytes(index);
  switch (dtype) {
    case DType::Bool:
      return load<uint8_t>(p) != 0 ? 1.0 : 0.0;
    case DType::UInt8:
      return load<uint8_t>(p);
    case DType::Int8:
      return load<int8_t>(p);
    case DType::Int16:
      return load<int16_t>(p);
    case DType::Int32:
      return load<int32_t>(p);
    case DType::Int64:
      return static_cast<double>(load<int64_t>(p));
    case DType::Float16:
      return half_bits_to_float(load<uint16_t>(p));
    case DType::BFloat16:
      return bf16_bits_to_float(load<uint16_t>(p));
    case DType::Float32:
      return load<float>(p);
    case DType::Float64:
      return load<double>(p);
  }
  return 0;
}

int64_t HostTensor::get_int(const std::vector<int64_t>& index) const {
  const char* p = static_cast<const char*>(data) + offset_bytes(index);
  switch (dtype) {
    case DType::Bool:
      return load<uint8_t>(p) != 0;
    case DType::UInt8:
      return load<uint8_t>(p);
    case DType::Int8:
      return load<int8_t>(p);
    case DType::Int16:
      return load<int16_t>(p);
    case DType::Int32:
      return load<int32_t>(p);
    case DType::Int64:
      return load<int64_t>(p);
    default:
      return static_cast<int64_t>(get_double(index));
  }
}

void HostTensor::set_double(const std::vector<int64_t>& index, double v) {
  char* p = static_cast<char*>(data) + offset_bytes(index);
  switch (dtype) {
    case DType::Bool:
      store<uint8_t>(p, v != 0.0);
      break;
    case DType::Float16:
      store<uint16_t>(p, float_to_half_bits(static_cast<float>(v)));
      break;
    case DType::BFloat16:
      store<uint16_t>(p, float_to_bf16_bits(static_cast<float>(v)));
      break;
    case DType::Float32:
      store<float>(p, static_cast<float>(v));
      break;
    case DType::Float64:
      store<double>(p, v);
      break;
    default: {
      // Float to integer: truncate toward zero, then wrap (matches eager on in-range values; out-of-range is UB in
      // eager and here wraps deterministically).
      int64_t i = std::isfinite(v) && std::fabs(v) < 9.2e18 ? static_cast<int64_t>(v) : 0;
      set_int(index, i);
    }
  }
}

void HostTensor::set_int(const std::vector<int64_t>& index, int64_t v) {
  char* p = static_cast<char*>(data) + offset_bytes(index);
  switch (dtype) {
    case DType::Bool:
      store<uint8_t>(p, v != 0);
      break;
    case DType::UInt8:
      store<uint8_t>(p, static_cast<uint8_t>(v));
      break;
    case DType::Int8:
      store<int8_t>(p, static_cast<int8_t>(v));
      break;
    case DType::Int16:
      store<int16_t>(p, static_cast<int16_t>(v));
      break;
    case DType::Int32:
      store<int32_t>(p, static_cast<int32_t>(v));
      break;
    case DType::Int64:
      store<int64_t>(p, v);
      break;
    default:
      set_double(index, static_cast<double>(v));
  }
}

std::string HostTensor::describe() const {
  std::string s = std::string(dtype_name(dtype)) + "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  s += "] strides [";
  for (size_t i = 0; i < strides.size(); ++i) s += (i ? ", " : "") + std::to_string(strides[i]);
  return s + "]";
}

uint16_t float_to_half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow (incl. rounding up) -> inf
  if (x < 0x38800000u) {
    // Subnormal or zero in half: value = x_float; half subnormal unit is 2^-24.
    float a;
    std::memcpy(&a, &x, 4);
    float scaled = a * 16777216.0f;  // exact: multiply by 2^24
    // Round to nearest even integer.
    float r = std::nearbyint(scaled);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(r));
  }
  // Normal: rebias exponent 127 -> 15 and round the 23-bit mantissa to 10 bits, nearest even.
  uint32_t mant_round = x + 0xfffu + ((x >> 13) & 1u);
  uint32_t h = (mant_round - (112u << 23)) >> 13;
  return static_cast<uint16_t>(sign | h);
}

float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(mant), -24);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    b |= sign;
    std::memcpy(&f, &b, 4);
    return f;
  }
  uint32_t b;
  if (exp == 31)
    b = sign | 0x7f800000u | (mant << 13);
  else
    b = sign | ((exp + 112) << 23) | (mant << 13);
  std::memcpy(&f, &b, 4);
  return f;
}

uint16_t float_to_bf16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float bf16_bits_to_float(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

double round_to_dtype(double v, DType t) {
  switch (t) {
    case DType::Bool:
      return v != 0.0 ? 1.0 : 0.0;
    case DType::Float16:
      return half_bits_to_float(float_to_half_bits(static_cast<float>(v)));
    case DType::BFloat16:
      return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(v)));
    case DType::Float32:
      return static_cast<float>(v);
    case DType::Float64:
      return v;
    default: {
      HostTensor tmp = HostTensor::empty(t, {});
      tmp.set_double({}, v);
      return tmp.get_double({});
    }
  }
}

void for_each_multi_index(const std::vector<int64_t>& sizes,
                          const std::function<void(const std::vector<int64_t>&)>& fn) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<int64_t> idx(sizes.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    fn(idx);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

double kernel_tolerance(DType t) {
  switch (t) {
    case DType::Float16:
      return 2e-2;
    case DType::BFloat16:
      return 6e-2;
    case DType::Float32:
      return 2e-4;
    case DType::Float64:
      return 1e-9;
    default:
      return 0;
  }
}

}  // namespace autofuse
