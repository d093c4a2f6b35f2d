#include "autofuse/runtime/thread_pool.h"

#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "autofuse/runtime/host_openmp.h"
#include "autofuse/support/env.h"

namespace autofuse {
namespace {

thread_local bool t_in_parallel = false;

/// One parallel_for call, living on the caller's stack until every worker has left it.
struct Job {
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0, chunks = 0;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mu;

  /// Claims and runs chunks until none are left. Returns after this thread's last chunk.
  void work() {
    const int64_t base = n / chunks, extra = n % chunks;
    for (;;) {
      int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks) return;
      if (!failed.load(std::memory_order_relaxed)) {
        int64_t begin = c * base + std::min(c, extra);
        int64_t end = begin + base + (c < extra ? 1 : 0);
        try {
          (*fn)(begin, end);
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mu);
          if (!error) error = std::current_exception();
          failed.store(true, std::memory_order_relaxed);
        }
      }
      done.fetch_add(1, std::memory_order_acq_rel);
    }
  }
};

class Pool {
 public:
  ~Pool() { stop_workers(); }

  /// The worker count matching `threads` total threads (the caller is one of them).
  void ensure_workers(int threads) {
    int want = threads - 1;
    if (int(workers_.size()) == want) return;
    stop_workers();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = false;
    }
    uint64_t now = gen_.load(std::memory_order_acquire);  // jobs from now on are theirs
    for (int i = 0; i < want; ++i) workers_.emplace_back([this, now] { worker_loop(now); });
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      gen_.fetch_add(1, std::memory_order_release);
    }
    wake_cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  /// Runs the job with the workers. The caller holds run_mu_.
  void run(Job& job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &job;
      gen_.fetch_add(1, std::memory_order_release);
      if (sleeping_ > 0) wake_cv_.notify_all();
    }
    job.work();
    // Wait for the chunks other threads claimed: spin briefly, then sleep.
    auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
    while (job.done.load(std::memory_order_acquire) < job.chunks && std::chrono::steady_clock::now() < spin_until) {
      for (int i = 0; i < 16; ++i) _mm_pause();
    }
    std::unique_lock<std::mutex> lock(mu_);
    job_ = nullptr;  // no worker joins from now on
    done_cv_.wait(lock, [&] { return job.done.load(std::memory_order_acquire) >= job.chunks && inside_ == 0; });
  }

  std::mutex run_mu_;  // one parallel_for at a time uses the pool

 private:
  void worker_loop(uint64_t seen) {
    for (;;) {
      // Spin about 50 us for the next launch, then sleep.
      auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
      while (gen_.load(std::memory_order_acquire) == seen) {
        for (int i = 0; i < 64; ++i) _mm_pause();
        if (std::chrono::steady_clock::now() > spin_until) break;
      }
      Job* job = nullptr;
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (gen_.load(std::memory_order_acquire) == seen && !stop_) {
          ++sleeping_;
          wake_cv_.wait(lock, [&] { return gen_.load(std::memory_order_acquire) != seen || stop_; });
          --sleeping_;
        }
        seen = gen_.load(std::memory_order_acquire);
        if (stop_) return;
        job = job_;
        if (job == nullptr) continue;
        ++inside_;
      }
      t_in_parallel = true;
      job->work();
      t_in_parallel = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        --inside_;
      }
      done_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_cv_, done_cv_;
  std::atomic<uint64_t> gen_{0};
  Job* job_ = nullptr;
  int sleeping_ = 0, inside_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

std::atomic<int> g_num_threads{0};

/// The pool, replaced (the old one leaked: its threads do not exist in the child) after fork().
Pool* g_pool = nullptr;
std::once_flag g_pool_once;

Pool& pool() {
  std::call_once(g_pool_once, [] {
    g_pool = new Pool();  // never destroyed: workers must not be joined during static destruction
    pthread_atfork(nullptr, nullptr, [] { g_pool = new Pool(); });
  });
  return *g_pool;
}

int default_threads() {
  check_environment();  // the first parallel_for of a C++ API user: every bad AUTOFUSE_* value warns (once)
  const int cpus = cpu_count();
  auto n = env_int("AUTOFUSE_NUM_THREADS", 1, 4096, "the CPU count (" + std::to_string(cpus) + ")");
  return n ? static_cast<int>(*n) : cpus;
}

/// One OpenMP team thread's share of a job (GOMP_parallel's callback): claims chunks like a pool worker.
void omp_team_work(void* data) {
  Job* job = static_cast<Job*>(data);
  const bool was = t_in_parallel;
  t_in_parallel = true;
  job->work();
  t_in_parallel = was;
}

}  // namespace

void set_num_threads(int n) { g_num_threads.store(std::max(1, n)); }

int get_num_threads() {
  int n = g_num_threads.load();
  if (n > 0) return n;
  n = default_threads();
  int expected = 0;
  g_num_threads.compare_exchange_strong(expected, n);
  return g_num_threads.load();
}

bool in_parallel_region() { return t_in_parallel; }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int threads = get_num_threads();
  if (n <= grain || threads <= 1 || t_in_parallel) {
    fn(0, n);
    return;
  }
  Pool& p = pool();
  std::unique_lock<std::mutex> run_lock(p.run_mu_, std::try_to_lock);
  if (!run_lock.owns_lock()) {  // another thread is using the pool: run serially rather than oversubscribe
    bool was = t_in_parallel;
    t_in_parallel = true;
    try {
      fn(0, n);
    } catch (...) {
      t_in_parallel = was;
      throw;
    }
    t_in_parallel = was;
    return;
  }
  Job job;
  job.fn = &fn;
  job.n = n;
  job.chunks = std::min<int64_t>(threads, n / grain);  // every chunk gets at least grain indices
  if (job.chunks <= 1) {
    run_lock.unlock();
    fn(0, n);
    return;
  }
  if (GompParallelFn gomp = host_gomp_parallel()) {  // the host's OpenMP team (ATen's): see host_openmp.h
    gomp(&omp_team_work, &job, static_cast<unsigned>(job.chunks), 0);  // run_lock held: one team at a time
    if (job.error) std::rethrow_exception(job.error);
    return;
  }
  p.ensure_workers(threads);
  t_in_parallel = true;
  p.run(job);
  t_in_parallel = false;
  run_lock.unlock();
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace autofuse
