// Memory overlap of tensor views (ir/tensor_overlap.h): the cases Kernel.run's bindings refuse or allow, and a
// brute-force cross-check on random views of one buffer (every byte each view's elements cover), which memory_overlap
// must never call disjoint when they share a byte. Random views are seeded (AUTOFUSE_TEST_SEED=N replays).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "autofuse/ir/tensor_overlap.h"
#include "kernel_test_util.h"

namespace autofuse {
namespace {

// A view of `buf` (f32 unless given) `offset` elements in.
HostTensor at(std::vector<float>& buf, int64_t offset, std::vector<int64_t> sizes, std::vector<int64_t> strides,
              DType dt = DType::Float32) {
  return HostTensor::view(dt, buf.data() + offset, std::move(sizes), std::move(strides));
}

TEST(TensorOverlap, ByteExtent) {
  std::vector<float> buf(64 * 64);
  const intptr_t p = reinterpret_cast<intptr_t>(buf.data());
  const ByteExtent full = byte_extent(at(buf, 0, {64, 64}, {64, 1}));
  EXPECT_EQ(full.lo, p);
  EXPECT_EQ(full.hi, p + 64 * 64 * 4);
  const ByteExtent flipped = byte_extent(at(buf, 63 * 64, {64, 64}, {-64, 1}));  // x.flip(0)
  EXPECT_EQ(flipped.lo, p);
  EXPECT_EQ(flipped.hi, p + 64 * 64 * 4);
  EXPECT_TRUE(byte_extent(at(buf, 5, {0, 64}, {64, 1})).empty());
  const ByteExtent one = byte_extent(at(buf, 3, {}, {}));  // a 0-d tensor: one element
  EXPECT_EQ(one.hi - one.lo, 4);
}

TEST(TensorOverlap, Cases) {
  std::vector<float> buf(64 * 64 * 2);
  const HostTensor x = at(buf, 0, {64, 64}, {64, 1});
  EXPECT_EQ(memory_overlap(x, x), Overlap::Same);
  EXPECT_EQ(memory_overlap(x, at(buf, 0, {64, 64}, {64, 1}, DType::Int32)), Overlap::Partial);          // another dtype
  EXPECT_EQ(memory_overlap(x, at(buf, 0, {64, 64, 1}, {64, 1, 999})), Overlap::Partial);                // another rank
  EXPECT_EQ(memory_overlap(at(buf, 0, {1, 64}, {7, 1}), at(buf, 0, {1, 64}, {64, 1})), Overlap::Same);  // size-1 dim
  EXPECT_EQ(memory_overlap(x, at(buf, 0, {64, 64}, {1, 64})), Overlap::Partial);                        // x.t()
  EXPECT_EQ(memory_overlap(x, at(buf, 64 * 64, {64, 64}, {64, 1})), Overlap::None);         // the next buffer
  EXPECT_EQ(memory_overlap(x, at(buf, 64 * 64 - 1, {64, 64}, {64, 1})), Overlap::Partial);  // one shared element
  EXPECT_EQ(memory_overlap(x, at(buf, 1, {64, 64}, {64, 1})), Overlap::Partial);            // shifted by one
  EXPECT_EQ(memory_overlap(x, at(buf, 5, {0, 64}, {64, 1})), Overlap::None);                // no elements
  // Disjoint views whose extents interleave: column halves, even / odd columns, even / odd rows.
  EXPECT_EQ(memory_overlap(at(buf, 0, {64, 32}, {64, 1}), at(buf, 32, {64, 32}, {64, 1})), Overlap::None);
  EXPECT_EQ(memory_overlap(at(buf, 0, {64, 32}, {64, 2}), at(buf, 1, {64, 32}, {64, 2})), Overlap::None);
  EXPECT_EQ(memory_overlap(at(buf, 0, {32, 64}, {128, 1}), at(buf, 64, {32, 64}, {128, 1})), Overlap::None);
  EXPECT_EQ(memory_overlap(at(buf, 0, {64, 33}, {64, 1}), at(buf, 32, {64, 32}, {64, 1})), Overlap::Partial);
  // The halves again, one of them transposed (strides that do not nest: conservatively Partial) and flipped.
  EXPECT_EQ(memory_overlap(at(buf, 0, {64, 32}, {64, 1}), at(buf, 32 + 63 * 64, {64, 32}, {-64, 1})), Overlap::None);
  EXPECT_EQ(memory_overlap(x, at(buf, 63 * 64, {64, 64}, {-64, 1})), Overlap::Partial);  // x.flip(0)
  // Another element size: bf16 halves of the f32 elements' bytes.
  EXPECT_EQ(memory_overlap(at(buf, 0, {64}, {2}), at(buf, 1, {64}, {4}, DType::BFloat16)), Overlap::None);
  EXPECT_EQ(memory_overlap(at(buf, 0, {64}, {2}), at(buf, 0, {64}, {4}, DType::BFloat16)), Overlap::Partial);
}

TEST(TensorOverlap, OperandErrors) {
  std::vector<float> buf(64 * 64 * 4);
  const HostTensor x = at(buf, 0, {64, 64}, {64, 1}), y = at(buf, 64 * 64, {64, 64}, {64, 1});
  const HostTensor z = at(buf, 2 * 64 * 64, {64, 64}, {64, 1});
  EXPECT_EQ(operand_overlap_error({x, y}, {z}), "");
  EXPECT_EQ(operand_overlap_error({x, y}, {x}), "");  // in place
  EXPECT_EQ(operand_overlap_error({x, y}, {y, x}), "");
  EXPECT_EQ(operand_overlap_error({x, x}, {x}), "");
  const std::string t = operand_overlap_error({x, y}, {at(buf, 0, {64, 64}, {1, 64})});
  EXPECT_EQ(t.rfind("output 0 overlaps input 0 (partially)", 0), 0u) << t;
  EXPECT_NE(t.find("write to a separate tensor"), std::string::npos) << t;
  const std::string same = operand_overlap_error({x}, {z, z});
  EXPECT_EQ(same.rfind("output 1 is the same memory as output 0", 0), 0u) << same;
  const std::string part = operand_overlap_error({x}, {z, at(buf, 2 * 64 * 64, {64}, {1})});
  EXPECT_EQ(part.rfind("output 1 overlaps output 0 (partially)", 0), 0u) << part;
  const std::string second = operand_overlap_error({x, y}, {z, at(buf, 64 * 64 + 1, {64}, {1})});
  EXPECT_EQ(second.rfind("output 1 overlaps input 1 (partially)", 0), 0u) << second;
  EXPECT_EQ(operand_overlap_error({y}, {at(buf, 0, {64, 32}, {64, 2}), at(buf, 1, {64, 32}, {64, 2})}), "");
  EXPECT_EQ(operand_overlap_error({x}, {at(buf, 0, {0, 64}, {64, 1}), at(buf, 0, {0, 64}, {64, 1})}), "");
}

// The bytes a view's elements cover, offsets from `base`.
std::set<int64_t> covered(const HostTensor& t, const char* base) {
  std::set<int64_t> out;
  const int64_t e = dtype_size(t.dtype);
  for_each_multi_index(t.sizes, [&](const std::vector<int64_t>& idx) {
    const int64_t start = static_cast<const char*>(t.data) - base + t.offset_bytes(idx);
    for (int64_t b = 0; b < e; ++b) out.insert(start + b);
  });
  return out;
}

// Random views (rank 0-3, sizes 0-5, strides -9..9 elements, f32 / bf16 / f64, offsets inside a buffer) compared by
// brute force: None only when no byte is shared, Same only for equal views, and every pair the exact tests decide as
// disjoint is really disjoint (Partial for a disjoint pair is allowed: the conservative answer).
TEST(TensorOverlap, RandomViewsAgreeWithBruteForce) {
  auto rng = kernel_testing::seeded_rng();
  std::vector<double> buf(512);
  char* base = reinterpret_cast<char*>(buf.data());
  const DType dts[] = {DType::Float32, DType::BFloat16, DType::Float64};
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  auto random_view = [&]() {
    const DType dt = dts[pick(0, 2)];
    const int64_t e = dtype_size(dt);
    const size_t rank = static_cast<size_t>(pick(0, 3));
    std::vector<int64_t> sizes(rank), strides(rank);
    for (size_t d = 0; d < rank; ++d) {
      sizes[d] = pick(0, 5) == 0 ? pick(0, 1) : pick(2, 5);
      strides[d] = pick(-9, 9);
    }
    // Start far enough in that negative strides stay inside; byte offsets of whole elements of 2 bytes.
    const int64_t start = 1000 + 2 * pick(0, 200);
    return HostTensor::view(dt, base + (start / e) * e, sizes, strides);
  };
  int none = 0, partial_disjoint = 0;
  for (int i = 0; i < 20000; ++i) {
    const HostTensor a = random_view();
    const HostTensor b = pick(0, 9) == 0 ? a : random_view();
    const std::set<int64_t> ca = covered(a, base), cb = covered(b, base);
    bool shared = false;
    for (int64_t x : ca) shared = shared || cb.count(x) > 0;
    const Overlap v = memory_overlap(a, b);
    SCOPED_TRACE(a.describe() + " at " + std::to_string(static_cast<const char*>(a.data) - base) + ", " + b.describe() +
                 " at " + std::to_string(static_cast<const char*>(b.data) - base));
    ASSERT_EQ(v, memory_overlap(b, a));
    if (v == Overlap::None) {
      ASSERT_FALSE(shared);
      ++none;
    }
    if (v == Overlap::Same) {
      ASSERT_TRUE(a.data == b.data && a.dtype == b.dtype && a.sizes == b.sizes);
    }
    if (v == Overlap::Partial && !shared) ++partial_disjoint;
  }
  EXPECT_GT(none, 1000);
  RecordProperty("conservative", partial_disjoint);
}

}  // namespace
}  // namespace autofuse
