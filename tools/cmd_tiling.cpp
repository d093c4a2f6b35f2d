// `autofuse tiling-sweep`: the reduction sweep of issue 5. For rows x cols = total (rows = 1, 4, 16, ... total), for
// sum(-1) and softmax(-1) in f32 and bf16: the median time of every tiling candidate (forced; candidates interleaved
// rep by rep, so a change of load hits them alike), which one the tiling function chooses, whether that is within 10%
// of the best, and the speedup of the choice over the fixed row schedule at that schedule's worst point (the point
// where it is slowest relative to the best candidate). Also the load average and the tiling function's cost per
// launch. A printed benchmark, not a test: figures vary with the machine's load.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/parser.h"
#include "autofuse/runtime/thread_pool.h"
#include "autofuse/tiling/tiling_function.h"
#include "commands.h"

namespace autofuse::cli {
namespace {

std::string graph_text(const std::string& op, const std::string& dt) {
  if (op == "sum")
    return "graph sum_" + dt + "(%x: " + dt + "[s0, s1]) {\n  %y = sum(%x) {axes=[1], keepdim=true}\n  return %y\n}\n";
  return "graph softmax_" + dt + "(%x: " + dt +
         "[s0, s1]) {\n  %xf = cast(%x) {dtype=f32}\n"
         "  %m = amax(%xf) {axes=[1], keepdim=true}\n  %d = sub(%xf, %m)\n  %e = exp(%d)\n"
         "  %s = sum(%e) {axes=[1], keepdim=true}\n  %o = div(%e, %s)\n  %r = cast(%o) {dtype=" +
         dt +
         "}\n"
         "  return %r\n}\n";
}

std::string load_average() {
  double l[3] = {0, 0, 0};
  if (getloadavg(l, 3) != 3) return "unknown";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %.2f %.2f", l[0], l[1], l[2]);
  return buf;
}

double run_ms(const Kernel& k, const std::vector<HostTensor>& in, const std::vector<HostTensor>& out) {
  auto t0 = std::chrono::steady_clock::now();
  k.run(in, out);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// Times of every candidate at one point: `reps` rounds, each running every candidate once (after one warm-up run
/// each: page faults of fresh outputs, compile of the variant). A candidate more than 3x slower than the best after
/// two rounds, and slower than 50 ms, stops there (its median is of those runs; the sweep marks it '~'), which keeps
/// the sweep short without changing any choice within 10%.
std::map<TilingKind, std::vector<double>> time_candidates(const Kernel& k, const std::vector<TilingKind>& kinds,
                                                          const std::vector<HostTensor>& in,
                                                          const std::vector<HostTensor>& out, int reps) {
  std::map<TilingKind, std::vector<double>> t;
  for (TilingKind kd : kinds) {
    force_tiling_kind(kd);
    k.run(in, out);
  }
  std::set<TilingKind> dropped;
  for (int r = 0; r < reps; ++r) {
    for (TilingKind kd : kinds) {
      if (dropped.count(kd)) continue;
      force_tiling_kind(kd);
      t[kd].push_back(run_ms(k, in, out));
    }
    if (r == 1) {
      double best = 1e300;
      for (auto& [kd, v] : t) best = std::min(best, median(v));
      for (auto& [kd, v] : t)
        if (median(v) > 3 * best && median(v) > 50) dropped.insert(kd);
    }
  }
  force_tiling_kind(std::nullopt);
  return t;
}

std::set<int64_t> parse_rows(const std::optional<std::string>& s) {
  std::set<int64_t> out;
  if (!s) return out;
  std::stringstream ss(*s);
  std::string item;
  while (std::getline(ss, item, ',')) out.insert(parse_count(item, "--rows", 1, int64_t{1} << 40));
  return out;
}

}  // namespace

int cmd_tiling_sweep(const Args& args) {
  ParsedArgs a = parse_args(args, {"total", "reps", "threads", "rows", "ops"}, {"explain"});
  if (!a.positional.empty()) throw std::invalid_argument("unexpected argument '" + a.positional[0] + "'");
  const int64_t total =
      a.get("total") ? parse_count(*a.get("total"), "--total", 1, int64_t{1} << 40) : (int64_t{1} << 24);
  const int reps = a.get("reps") ? static_cast<int>(parse_int(*a.get("reps"), "--reps")) : 5;
  if (reps < 1) throw std::invalid_argument("--reps: expected at least 1, got " + std::to_string(reps));
  if (a.get("threads")) set_num_threads(static_cast<int>(parse_count(*a.get("threads"), "--threads", 1, 4096)));
  const std::set<int64_t> only_rows = parse_rows(a.get("rows"));
  const std::string ops = a.get("ops").value_or("sum,softmax");
  const bool explain = a.get("explain").has_value();
  const auto start = std::chrono::steady_clock::now();
  std::printf("tiling sweep: total %lld elements, %d threads, median of %d interleaved runs, load average %s\n",
              static_cast<long long>(total), get_num_threads(), reps, load_average().c_str());
  const TilingKind kinds[] = {TilingKind::Rows, TilingKind::NarrowRows, TilingKind::Split, TilingKind::VectorRows};
  int points = 0, within = 0, within_first = 0;
  std::vector<std::string> misses;
  for (const std::string op : {"sum", "softmax"})
    for (const std::string dt : {"f32", "bf16"}) {
      if (ops.find(op) == std::string::npos) continue;
      auto k = Kernel::compile(parse_graph(graph_text(op, dt)));
      const DType dtype = dt == "f32" ? DType::Float32 : DType::BFloat16;
      std::printf("\n%s %s\n%10s %10s %10s %10s %10s %10s  %-11s %8s\n", op.c_str(), dt.c_str(), "rows", "cols",
                  "rows_ms", "narrow_ms", "split_ms", "vrows_ms", "chosen", "vs best");
      double worst_ratio = 0, worst_speedup = 0;
      int64_t worst_rows = 0;
      for (int64_t rows = 1; rows <= total; rows *= 4) {
        if (!only_rows.empty() && !only_rows.count(rows)) continue;
        const int64_t cols = total / rows;
        HostTensor x = HostTensor::empty(dtype, {rows, cols});
        std::mt19937 rng(static_cast<unsigned>(rows));
        std::normal_distribution<float> nd;
        for (int64_t i = 0; i < rows * cols; ++i) {
          const float v = nd(rng);
          if (dtype == DType::Float32)
            static_cast<float*>(x.data)[i] = v;
          else
            static_cast<uint16_t*>(x.data)[i] = float_to_bf16_bits(v);
        }
        std::vector<HostTensor> in{x};
        std::vector<HostTensor> out;
        for (auto& s : k->output_sizes(in)) out.push_back(HostTensor::empty(dtype, s));
        const TilingDecision dec = k->tiling().decide({rows, cols});
        std::vector<TilingKind> cand;
        for (const TilingCandidate& c : dec.candidates) cand.push_back(c.kind);
        std::map<TilingKind, std::vector<double>> samples;
        std::map<TilingKind, double> t;
        double best = 1e300, chosen = 0;
        bool ok = false;
        // A miss is measured once more with twice the runs (the machine is shared; both results are printed).
        for (int attempt = 0; attempt < 2 && !ok; ++attempt) {
          const int n_reps = attempt ? 2 * reps : reps;
          samples = time_candidates(*k, cand, in, out, n_reps);
          t.clear();
          for (auto& [kind, v] : samples) t[kind] = median(v);
          best = 1e300;
          for (auto& [kind, ms] : t) best = std::min(best, ms);
          chosen = t[dec.pick().kind];
          ok = chosen <= 1.10 * best;
          if (attempt == 0) within_first += ok;
          auto cell = [&](TilingKind kd) {
            char buf[32];
            if (t.count(kd))
              std::snprintf(buf, sizeof buf, "%9.3f%s", t[kd],
                            static_cast<int>(samples[kd].size()) < n_reps ? "~" : " ");
            else
              std::snprintf(buf, sizeof buf, "%10s", "-");
            return std::string(buf);
          };
          std::printf("%10lld %10lld %s %s %s %s  %-11s %7.2fx%s%s\n", static_cast<long long>(rows),
                      static_cast<long long>(cols), cell(kinds[0]).c_str(), cell(kinds[1]).c_str(),
                      cell(kinds[2]).c_str(), cell(kinds[3]).c_str(), tiling_kind_name(dec.pick().kind), chosen / best,
                      ok ? "" : "  (>10%)", attempt ? "  (rerun, 2x runs)" : "");
        }
        ++points;
        within += ok;
        if (explain) std::printf("%21s model: %s\n", "", dec.describe().c_str());
        if (!ok) misses.push_back(op + " " + dt + " rows " + std::to_string(rows));
        const double ratio = t[TilingKind::Rows] / best;
        if (ratio > worst_ratio) {
          worst_ratio = ratio;
          worst_rows = rows;
          worst_speedup = t[TilingKind::Rows] / chosen;
        }
      }
      std::printf(
          "fixed row schedule's worst point: rows %lld x cols %lld (%.2fx slower than the best candidate); "
          "chosen tiling there: %.2fx faster than it\n",
          static_cast<long long>(worst_rows), static_cast<long long>(worst_rows ? total / worst_rows : 0), worst_ratio,
          worst_speedup);
      std::fflush(stdout);
    }
  std::printf(
      "\nchosen within 10%% of the best candidate at %d of %d points after reruns of the misses (%d at the "
      "first measurement; load average %s)\n",
      within, points, within_first, load_average().c_str());
  for (const std::string& m : misses) std::printf("  miss: %s\n", m.c_str());
  // Cost of the tiling function per launch (a dynamic shape, so nothing is folded), over shapes where rows, split
  // (long enough rows) and vector-rows are considered.
  auto k = Kernel::compile(parse_graph(graph_text("sum", "f32")));
  const int n = 200000;
  volatile size_t sink = 0;
  std::vector<std::vector<int64_t>> shapes;
  for (int i = 0; i < 4096; ++i) shapes.push_back({1024 + (i & 4095), 1 + (i * 7 & 255)});
  timespec c0{}, c1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) sink = sink + k->tiling().decide(shapes[static_cast<size_t>(i) & 4095]).chosen;
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  const double cpu_ns = ((c1.tv_sec - c0.tv_sec) * 1e9 + static_cast<double>(c1.tv_nsec - c0.tv_nsec)) / n;
  std::printf(
      "tiling function: %.0f ns per launch wall, %.0f ns of thread CPU time (mean of %d decisions, dynamic "
      "shapes where rows, split and vector-rows are considered)\n",
      ns, cpu_ns, n);
  std::printf("sweep time: %.0f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}

}  // namespace autofuse::cli
