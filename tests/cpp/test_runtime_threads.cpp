// Tests of parallel_for: coverage of every index exactly once, chunking, nesting, exceptions, concurrent callers.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "autofuse/runtime/thread_pool.h"

namespace autofuse {
namespace {

/// Restores the thread count after each test.
class ParallelFor : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = get_num_threads(); }
  void TearDown() override { set_num_threads(saved_); }
  int saved_ = 1;
};

/// Runs parallel_for(n, grain) and checks every index is visited exactly once and chunk count/size rules hold.
void check_cover(int64_t n, int64_t grain, int threads) {
  set_num_threads(threads);
  std::vector<std::atomic<int>> hits(size_t(std::max<int64_t>(n, 0)));
  std::atomic<int64_t> calls{0}, smallest{INT64_MAX};
  parallel_for(n, grain, [&](int64_t begin, int64_t end) {
    ASSERT_LT(begin, end);
    ++calls;
    int64_t len = end - begin, cur = smallest.load();
    while (len < cur && !smallest.compare_exchange_weak(cur, len)) {
    }
    for (int64_t i = begin; i < end; ++i) hits[size_t(i)]++;
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "n=" << n << " grain=" << grain << " i=" << i;
  if (n <= 0) {
    EXPECT_EQ(calls.load(), 0);
    return;
  }
  EXPECT_LE(calls.load(), threads) << "n=" << n << " grain=" << grain;
  if (calls.load() > 1) {
    EXPECT_GE(smallest.load(), std::min<int64_t>(std::max<int64_t>(grain, 1), n));
  }
}

TEST_F(ParallelFor, CoversEveryIndexOnce) {
  const int64_t sizes[] = {0, 1, 2, 3, 7, 64, 100, 1000, 4097, 100003};
  const int64_t grains[] = {0, 1, 3, 16, 1000, 1 << 20};
  const int thread_counts[] = {1, 2, 3, 4, 8};
  for (int t : thread_counts)
    for (int64_t n : sizes)
      for (int64_t g : grains) check_cover(n, g, t);
}

TEST_F(ParallelFor, RandomCases) {
  const char* env = std::getenv("AUTOFUSE_TEST_SEED");  // fixed default, reproducible; set it to explore others
  const unsigned seed = env ? static_cast<unsigned>(std::strtoul(env, nullptr, 10)) : 20261129u;
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::printf("ParallelFor.RandomCases seed=%u\n", seed);
  for (int i = 0; i < 200; ++i) {
    int64_t n = std::uniform_int_distribution<int64_t>(0, 5000)(rng);
    int64_t grain = std::uniform_int_distribution<int64_t>(0, 700)(rng);
    int threads = std::uniform_int_distribution<int>(1, 6)(rng);
    check_cover(n, grain, threads);
  }
}

TEST_F(ParallelFor, SmallRangeRunsInline) {
  set_num_threads(4);
  std::thread::id caller = std::this_thread::get_id(), seen;
  int calls = 0;
  parallel_for(10, 10, [&](int64_t b, int64_t e) {
    seen = std::this_thread::get_id();
    ++calls;
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 10);
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, caller);
}

TEST_F(ParallelFor, UsesSeveralThreads) {
  set_num_threads(4);
  std::mutex mu;
  std::set<std::thread::id> ids;
  parallel_for(4, 1, [&](int64_t, int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_GE(ids.size(), 2u);
  EXPECT_TRUE(ids.count(std::this_thread::get_id()));  // the caller participates
}

TEST_F(ParallelFor, NestedCallsRunSerially) {
  set_num_threads(4);
  std::atomic<int64_t> total{0};
  std::atomic<int> nested_inline{0};
  parallel_for(8, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      std::thread::id outer = std::this_thread::get_id();
      parallel_for(100, 1, [&](int64_t ib, int64_t ie) {
        if (ib == 0 && ie == 100 && std::this_thread::get_id() == outer) ++nested_inline;
        total += ie - ib;
      });
    }
  });
  EXPECT_EQ(total.load(), 800);
  EXPECT_EQ(nested_inline.load(), 8);
  EXPECT_FALSE(in_parallel_region());
}

TEST_F(ParallelFor, ExceptionsPropagate) {
  for (int threads : {1, 2, 4}) {
    set_num_threads(threads);
    for (int64_t bad : {int64_t(0), int64_t(999)}) {
      try {
        parallel_for(1000, 10, [&](int64_t b, int64_t e) {
          if (b <= bad && bad < e) throw std::invalid_argument("bad index " + std::to_string(bad));
        });
        FAIL() << "expected an exception";
      } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()), "bad index " + std::to_string(bad));
      }
    }
    // The pool still works afterwards.
    std::atomic<int64_t> sum{0};
    parallel_for(1000, 10, [&](int64_t b, int64_t e) { sum += e - b; });
    EXPECT_EQ(sum.load(), 1000);
  }
}

TEST_F(ParallelFor, ConcurrentCallersAllComplete) {
  set_num_threads(3);
  std::vector<std::thread> callers;
  std::atomic<int64_t> total{0};
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 200; ++rep) {
        parallel_for(1000, 50, [&](int64_t b, int64_t e) { total += e - b; });
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 200 * 1000);
}

TEST_F(ParallelFor, ManyBackToBackLaunches) {
  set_num_threads(2);
  std::atomic<int64_t> total{0};
  for (int rep = 0; rep < 20000; ++rep) parallel_for(64, 1, [&](int64_t b, int64_t e) { total += e - b; });
  EXPECT_EQ(total.load(), 20000 * 64);
}

TEST_F(ParallelFor, ThreadCountChanges) {
  for (int t : {4, 1, 3, 2, 6}) {
    set_num_threads(t);
    EXPECT_EQ(get_num_threads(), t);
    check_cover(1000, 1, t);
  }
  set_num_threads(0);
  EXPECT_EQ(get_num_threads(), 1);
}

TEST_F(ParallelFor, WorksInAForkedChild) {
  set_num_threads(3);
  std::atomic<int64_t> warm{0};
  parallel_for(300, 1, [&](int64_t b, int64_t e) { warm += e - b; });  // the parent's workers exist now
  ASSERT_EQ(warm.load(), 300);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child has none of the parent's worker threads; the pool must start new ones rather than wait forever.
    std::atomic<int64_t> total{0};
    parallel_for(3000, 1, [&](int64_t b, int64_t e) { total += e - b; });
    ::_exit(total.load() == 3000 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace autofuse
