// tiling/launch.h launch_rows_together: several row-schedule calls (a concat kernel's segments) run as one parallel
// launch. Each call's rows must be visited exactly once, by that call's own entry point with its own sizes, strides,
// data and schedule, whatever the thread count and grain, with empty calls anywhere in the list.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
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
void fake_kernel(const int64_t* sizes, const int64_t* strides, void* const* data, int64_t b0, int64_t b1,
                 int64_t vblock, int64_t blk, int64_t lflags) {
  auto* r = static_cast<Record*>(data[0]);
  if (vblock != r->vblock || blk != r->blk || lflags != r->lflags || sizes[0] != r->size0 || strides[0] != r->stride0 ||
      b0 < 0 || b1 > static_cast<int64_t>(r->visits.size()) || b0 >= b1 || (r->size0 % 2) != tag)
    r->wrong_args.fetch_add(1);
  for (int64_t i = std::max<int64_t>(b0, 0); i < std::min<int64_t>(b1, static_cast<int64_t>(r->visits.size())); ++i)
    r->visits[static_cast<size_t>(i)].fetch_add(1);
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

}  // namespace
}  // namespace autofuse
