// SHA-256 content hashing for the kernel cache: cache keys and the checksum stored next to each cached binary.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace autofuse {

/// Incremental SHA-256 (FIPS 180-4, section 6.2). Feed bytes with update(), read the digest once with hex_digest().
/// Used where a collision would load the wrong machine code, so a cryptographic hash rather than a fast 64-bit one.
class Sha256 {
 public:
  Sha256();
  /// Appends bytes to the message.
  void update(const void* data, size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  /// Appends a length-prefixed field, so that ("ab","c") and ("a","bc") hash differently.
  void update_field(std::string_view s);
  /// Finishes the message and returns the 64-character lowercase hex digest. The object is spent afterwards.
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

/// SHA-256 of a byte string, as 64 lowercase hex characters.
std::string sha256_hex(std::string_view data);

}  // namespace autofuse

namespace autofuse {

/// A fast 64-bit checksum of a byte string (word-wise multiply-xorshift mixing; not cryptographic), used to detect
/// truncated or damaged cache files on load, where hashing must cost far less than the 5 ms warm-load budget.
uint64_t checksum64(std::string_view data);

}  // namespace autofuse
