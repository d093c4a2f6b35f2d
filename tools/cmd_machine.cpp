// `autofuse machine [--reprobe] [--launch]`: print the machine model (topology, cache sizes, ISA, measured
// bandwidths); --launch also measures the cost of an empty parallel_for launch on the runtime's thread pool.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

#include "autofuse/runtime/thread_pool.h"
#include "autofuse/tiling/machine.h"
#include "commands.h"

namespace autofuse::cli {
namespace {

/// Median microseconds of `reps` parallel_for launches with one trivial chunk per thread; `idle_us` of sleep
/// before each (0: back to back, workers still spinning; 1000: workers asleep, woken through the kernel).
double launch_us(int reps, int idle_us) {
  std::vector<double> us;
  int threads = get_num_threads();
  volatile int64_t sink = 0;
  for (int i = 0; i < reps; ++i) {
    if (idle_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(idle_us));
    auto t0 = std::chrono::steady_clock::now();
    parallel_for(threads, 1, [&](int64_t b, int64_t e) { sink = sink + (e - b); });
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

}  // namespace

int cmd_machine(const Args& args) {
  ParsedArgs a = parse_args(args, {}, {"reprobe", "launch"});
  if (!a.positional.empty()) throw std::invalid_argument("unexpected argument '" + a.positional[0] + "'");
  MachineInfo m = a.has("reprobe") ? reprobe_machine() : machine_info();
  std::fputs(describe_machine(m).c_str(), stdout);
  if (a.has("launch")) {
    std::printf("parallel_for launch, %d threads, back to back (median of 20000): %.2f us\n", get_num_threads(),
                launch_us(20000, 0));
    std::printf("parallel_for launch, %d threads, after 1 ms idle (median of 300): %.2f us\n", get_num_threads(),
                launch_us(300, 1000));
  }
  return 0;
}

}  // namespace autofuse::cli
