// tiling/launch.h launch_rows_together: several row-schedule calls (a concat kernel's segments) run as one parallel
// launch. Each call's rows must be visited exactly once, by that call's own entry point with its own sizes, strides,
// data and schedule, whatever the thread count and grain, with empty calls anywhere in the list. Several calls run
// interleaved (session 17): blocks of about kInterleaveElems elements of each call in turn, the same fraction of each
// call's rows per block, so the segments of one output row run together on one thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <new>
#include <string>
#include <tuple>
#include <vector>

#include "autofuse/runtime/thread_pool.h"
#include "autofuse/tiling/launch.h"

namespace autofuse {
namespace {

/// Per call: one visit counter per row, and the vblock / blk / sizes / strides the entry point saw.
struct Record {
  std::vector<std::atomic<int>> visits;
  std::atomic<int> wrong_args{0};
  int64_t vblock = 0, blk = 0, lflags = 0;
  int64_t size0 = 0, stride0 = 0;
  explicit Record(int64_t rows) : visits(static_cast<size_t>(rows)) {}
};

/// The fake kernels: data[0] is the call's Record; sizes[0] / strides[0] identify the call. `tag` tells the two entry
/// points apart (tag 1 for odd calls): each call must reach its own.
template <int tag>
int64_t fake_kernel(const int64_t* sizes, const int64_t* strides, void* const* data, int64_t b0, int64_t b1,
                    int64_t vblock, int64_t blk, int64_t lflags) {
  auto* r = static_cast<Record*>(data[0]);
  if (vblock != r->vblock || blk != r->blk || lflags != r->lflags || sizes[0] != r->size0 || strides[0] != r->stride0 ||
      b0 < 0 || b1 > static_cast<int64_t>(r->visits.size()) || b0 >= b1 || (r->size0 % 2) != tag)
    r->wrong_args.fetch_add(1);
  for (int64_t i = std::max<int64_t>(b0, 0); i < std::min<int64_t>(b1, static_cast<int64_t>(r->visits.size())); ++i)
    r->visits[static_cast<size_t>(i)].fetch_add(1);
  return 0;
}

void check_rows(const std::vector<int64_t>& rows, const std::vector<int64_t>& grains, int threads) {
  SCOPED_TRACE("threads " + std::to_string(threads));
  const int before = get_num_threads();
  set_num_threads(threads);
  std::vector<std::unique_ptr<Record>> recs;
  std::vector<int64_t> sizes(rows.size()), strides(rows.size());
  std::vector<void*> data(rows.size());
  std::vector<RowLaunch> calls;
  for (size_t j = 0; j < rows.size(); ++j) {
    recs.push_back(std::make_unique<Record>(std::max<int64_t>(rows[j], 0)));
    Record& r = *recs.back();
    r.vblock = 16 * static_cast<int64_t>(j + 1);
    r.blk = 64 + static_cast<int64_t>(j);
    r.lflags = j % 3 == 1 ? kLaunchStreamStores : 0;  // each call passes its own schedule's launch flags
    r.size0 = 100 + static_cast<int64_t>(j);          // parity selects the entry point
    r.stride0 = 7 * static_cast<int64_t>(j) + 1;
    sizes[j] = r.size0;
    strides[j] = r.stride0;
    data[j] = &r;
  }
  for (size_t j = 0; j < rows.size(); ++j) {
    RowLaunch c;
    c.fn = j % 2 == 0 ? &fake_kernel<0> : &fake_kernel<1>;
    c.sizes = &sizes[j];
    c.strides = &strides[j];
    c.data = &data[j];
    c.schedule.rows = rows[j];
    c.schedule.vblock = recs[j]->vblock;
    c.schedule.blk = recs[j]->blk;
    c.schedule.stream_stores = recs[j]->lflags != 0;
    c.schedule.grain = grains[j];
    calls.push_back(c);
  }
  launch_rows_together(calls);
  set_num_threads(before);
  for (size_t j = 0; j < rows.size(); ++j) {
    EXPECT_EQ(recs[j]->wrong_args.load(), 0) << "call " << j;
    for (size_t i = 0; i < recs[j]->visits.size(); ++i)
      ASSERT_EQ(recs[j]->visits[i].load(), 1) << "call " << j << " row " << i;
  }
}

TEST(LaunchRowsTogether, EveryRowOfEveryCallOnce) {
  for (int threads : {1, 2, 3, 8}) {
    check_rows({5, 7}, {1, 1}, threads);
    check_rows({1000, 1}, {1, 1}, threads);
    check_rows({0, 9, 0, 0, 13, 0}, {4, 1, 1, 1, 2, 1}, threads);  // empty calls first, between and last
    check_rows({3, 3, 3, 3, 3}, {1, 1, 1, 1, 1}, threads);         // chunks spanning several calls
    check_rows({64, 64}, {64, 64}, threads);                       // each alone serial, together two tasks
  }
}

TEST(LaunchRowsTogether, NoRowsCallsNothing) {
  check_rows({}, {}, 4);
  check_rows({0, 0}, {1, 1}, 4);
}

/// The calls one thread made, in order: (call's size0, b0, b1).
std::vector<std::tuple<int64_t, int64_t, int64_t>> g_order;

int64_t order_kernel(const int64_t* sizes, const int64_t*, void* const*, int64_t b0, int64_t b1, int64_t, int64_t,
                     int64_t) {
  g_order.emplace_back(sizes[0], b0, b1);
  return 0;
}

/// A kernel whose calls fail (kKernelStatusNoMemory, a row stash that could not be allocated) when they include row
/// sizes[0]; the others return 0.
int64_t failing_kernel(const int64_t* sizes, const int64_t*, void* const*, int64_t b0, int64_t b1, int64_t, int64_t,
                       int64_t) {
  return b0 <= sizes[0] && sizes[0] < b1 ? kKernelStatusNoMemory : 0;
}

TEST(LaunchRowsTogether, FailedCallThrowsBadAlloc) {
  const int before = get_num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    const int64_t fail_at = 37, never = -1;
    auto call = [](const int64_t* size, int64_t rows) {
      RowLaunch c;
      c.fn = &failing_kernel;
      c.sizes = size;
      c.schedule.rows = rows;
      c.schedule.grain = 1;
      return c;
    };
    EXPECT_THROW(launch_rows_together({call(&fail_at, 100)}), std::bad_alloc) << "one call, threads " << threads;
    EXPECT_THROW(launch_rows_together({call(&never, 50), call(&fail_at, 100)}), std::bad_alloc)
        << "two calls, threads " << threads;
    EXPECT_NO_THROW(launch_rows_together({call(&never, 50), call(&never, 100)})) << "threads " << threads;
  }
  set_num_threads(before);
}

TEST(LaunchRowsTogether, CallsInterleaveInBlocks) {
  const int before = get_num_threads();
  set_num_threads(1);
  // Two segments of 64 rows of 64 elements (vblock 64): blocks of 1024 / 64 = 16 rows, call 0 then call 1.
  const int64_t s0 = 0, s1 = 1, s2 = 2;
  auto call = [](const int64_t* size, int64_t rows, int64_t vblock) {
    RowLaunch c;
    c.fn = &order_kernel;
    c.sizes = size;
    c.schedule.rows = rows;
    c.schedule.vblock = vblock;
    c.schedule.grain = 1 << 20;  // one task
    return c;
  };
  g_order.clear();
  launch_rows_together({call(&s0, 64, 64), call(&s1, 64, 64)});
  std::vector<std::tuple<int64_t, int64_t, int64_t>> want;
  for (int64_t b = 0; b < 64; b += 16)
    for (int64_t j = 0; j < 2; ++j) want.emplace_back(j, b, b + 16);
  EXPECT_EQ(g_order, want);
  // Unequal rows (24 and 48; vblock 256: blocks of 4 indices of the 48): the same fraction of each call per block.
  g_order.clear();
  launch_rows_together({call(&s0, 24, 16), call(&s2, 0, 16), call(&s1, 48, 256)});
  want.clear();
  for (int64_t b = 0; b < 48; b += 4) {
    want.emplace_back(0, b / 2, (b + 4) / 2);
    want.emplace_back(1, b, b + 4);
  }
  EXPECT_EQ(g_order, want);
  // One call: its rows in one piece (no blocks).
  g_order.clear();
  launch_rows_together({call(&s2, 0, 16), call(&s0, 100, 16)});
  want = {{0, 0, 100}};
  EXPECT_EQ(g_order, want);
  set_num_threads(before);
}

}  // namespace
}  // namespace autofuse
