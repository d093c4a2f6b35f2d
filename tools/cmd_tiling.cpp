// `autofuse tiling-sweep`: the reduction sweep of issue 5. For rows x cols = total (rows = 1, 4, 16, ... total), for
// sum(-1) and softmax(-1) in f32 and bf16: the median time of every tiling candidate (forced), which one the tiling
// function chooses, whether that is within 10% of the best, and the speedup of the choice over the fixed row
// schedule at that schedule's worst point. Also the tiling function's cost per launch. A printed benchmark, not a
// test: figures vary with the machine's load.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
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
  return "graph softmax_" + dt + "(%x: " + dt + "[s0, s1]) {\n  %xf = cast(%x) {dtype=f32}\n"
         "  %m = amax(%xf) {axes=[1], keepdim=true}\n  %d = sub(%xf, %m)\n  %e = exp(%d)\n"
         "  %s = sum(%e) {axes=[1], keepdim=true}\n  %o = div(%e, %s)\n  %r = cast(%o) {dtype=" + dt + "}\n"
         "  return %r\n}\n";
}

double median_ms(const Kernel& k, const std::vector<HostTensor>& in, const std::vector<HostTensor>& out, int reps) {
  k.run(in, out);  // warm-up: page faults of fresh outputs, compile of the stride variant
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    k.run(in, out);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int cmd_tiling_sweep(const Args& args) {
  ParsedArgs a = parse_args(args, {"total", "reps", "threads"}, {});
  if (!a.positional.empty()) throw std::invalid_argument("unexpected argument '" + a.positional[0] + "'");
  const int64_t total = a.get("total") ? std::stoll(*a.get("total")) : (int64_t{1} << 24);
  const int reps = a.get("reps") ? std::stoi(*a.get("reps")) : 5;
  if (a.get("threads")) set_num_threads(std::stoi(*a.get("threads")));
  std::printf("tiling sweep: total %lld elements, %d threads, median of %d runs\n", static_cast<long long>(total),
              get_num_threads(), reps);
  const TilingKind kinds[] = {TilingKind::Rows, TilingKind::NarrowRows, TilingKind::Split, TilingKind::VectorRows};
  int points = 0, within = 0;
  for (const std::string op : {"sum", "softmax"})
    for (const std::string dt : {"f32", "bf16"}) {
      auto k = Kernel::compile(parse_graph(graph_text(op, dt)));
      const DType dtype = dt == "f32" ? DType::Float32 : DType::BFloat16;
      std::printf("\n%s %s\n%10s %10s %10s %10s %10s %10s  %-11s %8s\n", op.c_str(), dt.c_str(), "rows", "cols",
                  "rows_ms", "narrow_ms", "split_ms", "vrows_ms", "chosen", "vs best");
      double worst_ratio = 0, worst_speedup = 0;
      int64_t worst_rows = 0;
      for (int64_t rows = 1; rows <= total; rows *= 4) {
        const int64_t cols = total / rows;
        HostTensor x = HostTensor::empty(dtype, {rows, cols});
        std::mt19937 rng(static_cast<unsigned>(rows));
        std::normal_distribution<float> nd;
        for (int64_t i = 0; i < rows * cols; ++i) {
          const float v = nd(rng);
          if (dtype == DType::Float32) static_cast<float*>(x.data)[i] = v;
          else static_cast<uint16_t*>(x.data)[i] = float_to_bf16_bits(v);
        }
        std::vector<HostTensor> in{x};
        std::vector<HostTensor> out;
        for (auto& s : k->output_sizes(in)) out.push_back(HostTensor::empty(dtype, s));
        const TilingDecision dec = k->tiling().decide({rows, cols});
        std::map<TilingKind, double> t;
        for (const TilingCandidate& c : dec.candidates) {
          force_tiling_kind(c.kind);
          t[c.kind] = median_ms(*k, in, out, reps);
        }
        force_tiling_kind(std::nullopt);
        double best = 1e300;
        for (auto& [kind, ms] : t) best = std::min(best, ms);
        const double chosen = t[dec.pick().kind];
        const bool ok = chosen <= 1.10 * best;
        ++points;
        within += ok;
        auto cell = [&](TilingKind kd) {
          static char buf[32];
          if (t.count(kd)) std::snprintf(buf, sizeof buf, "%10.3f", t[kd]);
          else std::snprintf(buf, sizeof buf, "%10s", "-");
          return std::string(buf);
        };
        std::printf("%10lld %10lld %s %s %s %s  %-11s %7.2fx%s\n", static_cast<long long>(rows),
                    static_cast<long long>(cols), cell(kinds[0]).c_str(), cell(kinds[1]).c_str(),
                    cell(kinds[2]).c_str(), cell(kinds[3]).c_str(), tiling_kind_name(dec.pick().kind), chosen / best,
                    ok ? "" : "  (>10%)");
        const double ratio = t[TilingKind::Rows] / best;
        if (ratio > worst_ratio) {
          worst_ratio = ratio;
          worst_rows = rows;
          worst_speedup = t[TilingKind::Rows] / chosen;
        }
      }
      std::printf("fixed row schedule's worst point: rows %lld (%.2fx slower than the best); chosen tiling there: "
                  "%.2fx faster than it\n",
                  static_cast<long long>(worst_rows), worst_ratio, worst_speedup);
    }
  std::printf("\nchosen within 10%% of the best candidate at %d of %d points\n", within, points);
  // Cost of the tiling function per launch (a dynamic shape, so nothing is folded).
  auto k = Kernel::compile(parse_graph(graph_text("sum", "f32")));
  const int n = 200000;
  volatile size_t sink = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) sink = sink + k->tiling().decide({1 + (i & 1023), 4096}).chosen;
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
  std::printf("tiling function: %.0f ns per launch (mean of %d decisions, dynamic shape)\n", ns, n);
  return 0;
}

}  // namespace autofuse::cli
