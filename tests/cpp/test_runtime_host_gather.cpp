// Tests of gather_rows (runtime/host_gather.h): the rows of every index in row-major order, any strides and element
// sizes, bounds checked before anything is written, operand mismatches named.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "autofuse/runtime/host_gather.h"

namespace autofuse {
namespace {

TEST(HostGather, ContiguousRowsInIndexOrder) {
  std::vector<float> table(5 * 3);
  for (size_t i = 0; i < table.size(); ++i) table[i] = 0.5f * static_cast<float>(i) - 1.0f;
  std::vector<int64_t> ids = {4, 0, 2, 2, 1, 3};  // [2, 3]
  std::vector<float> out(2 * 3 * 3, -99.0f);
  gather_rows(HostTensor::view(DType::Float32, table.data(), {5, 3}, {3, 1}),
              HostTensor::view(DType::Int64, ids.data(), {2, 3}, {3, 1}),
              HostTensor::view(DType::Float32, out.data(), {2, 3, 3}, {9, 3, 1}));
  for (size_t k = 0; k < ids.size(); ++k)
    for (size_t c = 0; c < 3; ++c) EXPECT_EQ(out[k * 3 + c], table[static_cast<size_t>(ids[k]) * 3 + c]) << k;
}

TEST(HostGather, StridedTableIndicesAndOutputOfTwoByteElements) {
  // table [4, 2] read through strides (1, 4): column-major storage of 8 uint16 values (any 2-byte dtype: bf16 bits)
  std::vector<uint16_t> storage = {10, 11, 12, 13, 20, 21, 22, 23};
  std::vector<int32_t> ids = {3, -7, 1, -7};  // [2] read with stride 2 (every other value)
  std::vector<uint16_t> out(2 * 2, 0);        // [2, 2] written through strides (1, 2)
  gather_rows(HostTensor::view(DType::BFloat16, storage.data(), {4, 2}, {1, 4}),
              HostTensor::view(DType::Int32, ids.data(), {2}, {2}),
              HostTensor::view(DType::BFloat16, out.data(), {2, 2}, {1, 2}));
  EXPECT_EQ(out[0], 13);  // out[0, 0] = table[3, 0]
  EXPECT_EQ(out[2], 23);  // out[0, 1] = table[3, 1]
  EXPECT_EQ(out[1], 11);  // out[1, 0] = table[1, 0]
  EXPECT_EQ(out[3], 21);
}

TEST(HostGather, OutOfRangeIndexThrowsBeforeWriting) {
  std::vector<float> table(4 * 2, 1.0f);
  std::vector<float> out(3 * 2, 7.0f);
  for (int64_t bad : {int64_t{4}, int64_t{-1}, int64_t{1} << 40}) {
    std::vector<int64_t> ids = {0, 1, bad};
    try {
      gather_rows(HostTensor::view(DType::Float32, table.data(), {4, 2}, {2, 1}),
                  HostTensor::view(DType::Int64, ids.data(), {3}, {1}),
                  HostTensor::view(DType::Float32, out.data(), {3, 2}, {2, 1}));
      FAIL() << "no error for index " << bad;
    } catch (const std::out_of_range& e) {
      EXPECT_NE(
          std::string(e.what()).find("index out of range in self: index " + std::to_string(bad) + ", table of 4 rows"),
          std::string::npos)
          << e.what();
    }
    for (float v : out) EXPECT_EQ(v, 7.0f);  // nothing written
  }
}

TEST(HostGather, MismatchedOperandsAreNamed) {
  std::vector<float> table(4 * 2, 0.0f), out(8, 0.0f);
  std::vector<int64_t> ids = {0, 1};
  auto t = HostTensor::view(DType::Float32, table.data(), {4, 2}, {2, 1});
  auto i = HostTensor::view(DType::Int64, ids.data(), {2}, {1});
  auto expect_error = [&](const HostTensor& tt, const HostTensor& ii, const HostTensor& oo, const std::string& what) {
    try {
      gather_rows(tt, ii, oo);
      FAIL() << "no error, expected " << what;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_error(t, i, HostTensor::view(DType::Float32, out.data(), {2, 3}, {3, 1}), "out must be f32");
  expect_error(t, i, HostTensor::view(DType::Float64, out.data(), {2, 2}, {2, 1}), "out must be f32");
  expect_error(t, HostTensor::view(DType::Float32, ids.data(), {2}, {1}),
               HostTensor::view(DType::Float32, out.data(), {2, 2}, {2, 1}), "indices must be i64 or i32");
  expect_error(HostTensor::view(DType::Float32, table.data(), {8}, {1}), i,
               HostTensor::view(DType::Float32, out.data(), {2, 2}, {2, 1}), "table must be 2-d");
}

}  // namespace
}  // namespace autofuse
