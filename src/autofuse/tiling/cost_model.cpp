// The roofline cost model of tiling candidates (see cost_model.h for the formula and its source).
#include "autofuse/tiling/cost_model.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "autofuse/tiling/machine.h"

namespace autofuse {

CostParams CostParams::from_machine(const MachineInfo& m, int threads, int lanes) {
  CostParams p;
  p.threads = std::max(1, threads);
  p.lanes = std::max(1, lanes);
  if (m.l1d_bytes > 0) p.l1_bytes = m.l1d_bytes;
  if (m.l2_bytes > 0) p.l2_bytes = m.l2_bytes;
  if (m.l3_bytes > 0) p.l3_bytes = m.l3_bytes;
  if (m.l1_read_gbps > 0) p.l1_gbps = m.l1_read_gbps;
  if (m.l2_read_gbps > 0) p.l2_gbps = m.l2_read_gbps;
  if (m.read_gbps > 0) {
    p.dram_gbps = m.read_gbps;
    p.dram_threads = std::max(1, m.probe_threads);
    p.dram1_gbps = m.read1_gbps;
  }
  return p;
}

std::string CostParams::describe() const {
  std::ostringstream o;
  o << "threads " << threads << ", lanes " << lanes << ", L1 " << l1_bytes << " B @ " << l1_gbps << " GB/s, L2 "
    << l2_bytes << " B @ " << l2_gbps << " GB/s, L3 " << l3_bytes << " B, DRAM " << dram_gbps << " GB/s over "
    << dram_threads << " thread(s), " << vec_ops_per_ns << " vector ops/ns, launch " << launch_ns << " ns";
  return o.str();
}

namespace {

/// Bytes per ns one of `active` threads gets from DRAM. With the one-thread figure measured: each thread gets at most
/// that, and the active threads share the aggregate (min(one, all / active): the usual shape of a STREAM-style
/// scaling curve; McCalpin, "Memory Bandwidth and Machine Balance", 1995). Without it: the aggregate scales linearly
/// up to the thread count it was measured with and is shared beyond that.
double dram_per_thread(const CostParams& p, int64_t active) {
  const double a = static_cast<double>(std::max<int64_t>(1, active));
  if (p.dram1_gbps > 0) return std::min(p.dram1_gbps, p.dram_gbps / a);
  const double agg = p.dram_gbps * std::min(a, static_cast<double>(p.dram_threads)) / p.dram_threads;
  return agg / a;
}

/// Nanoseconds of one row on one of `active` threads: per-row roofline max(memory, compute).
double row_ns(const WorkShape& w, int64_t active, int64_t total_rows, const CostParams& p) {
  if (w.row_elems <= 0) return 0;
  const double elems = static_cast<double>(w.row_elems);
  const double ws = elems * w.in_bytes;  // the row's re-read working set
  const double total_in = ws * static_cast<double>(total_rows);
  // First pass: from DRAM unless each active thread's share of the input stays in half its L2. The last-level cache
  // is not counted on: in a VM the OS reports the host's (480 MiB on the sweep machine) while the probe measured DRAM
  // speed over 256 MiB buffers that would "fit" in it, and the sweep's 32-64 MiB inputs stream at DRAM speed too.
  const double share = total_in / static_cast<double>(std::max<int64_t>(1, active));
  const double first_bw = share <= 0.5 * static_cast<double>(p.l2_bytes) ? p.l2_gbps : dram_per_thread(p, active);
  double reread_bw = dram_per_thread(p, active);
  if (ws <= 0.5 * static_cast<double>(p.l1_bytes))
    reread_bw = p.l1_gbps;
  else if (ws <= 0.5 * static_cast<double>(p.l2_bytes))
    reread_bw = p.l2_gbps;
  const double mem = ws / first_bw + (w.passes - 1) * ws / reread_bw + elems * w.out_bytes / dram_per_thread(p, active);
  // Compute: vector iterations (an inner reduction rounds its row up to whole vectors), each costing the pass's
  // operations, plus the per-row horizontal reduction.
  const double iters = w.inner_reduction ? std::ceil(elems / p.lanes) : elems / p.lanes;
  double ops = iters * w.passes * (w.ops + w.transcendentals * p.transcendental_ops);
  if (w.inner_reduction) ops += p.row_overhead_ops * w.passes;
  ops += elems * (w.lane_loads * w.passes + w.lane_stores) * p.lane_access_ops;
  return std::max(mem, ops / p.vec_ops_per_ns);
}

}  // namespace

double estimate_rows_ns(const WorkShape& w, int64_t tasks, int64_t rows_per_task, const CostParams& p) {
  if (w.rows <= 0 || tasks <= 0) return 0;
  const int64_t active = std::min<int64_t>(p.threads, tasks);
  const int64_t waves = (tasks + active - 1) / active;
  const double busiest_rows = static_cast<double>(std::min<int64_t>(w.rows, waves * rows_per_task));
  return busiest_rows * row_ns(w, active, w.rows, p) + (active > 1 ? p.launch_ns : 0);
}

double estimate_split_ns(const WorkShape& w, int64_t splits, int64_t out_elems, double out_elem_bytes,
                         const CostParams& p) {
  if (splits <= 1)
    return estimate_rows_ns(w, std::min<int64_t>(w.rows, p.threads), (w.rows + p.threads - 1) / p.threads, p);
  WorkShape part = w;
  part.row_elems = std::max<int64_t>(1, (w.row_elems + splits - 1) / splits);
  part.reduce_extent = std::max<int64_t>(1, (w.reduce_extent + splits - 1) / splits);
  // Each task runs every row over its slice: splits x rows slice-rows in all, w.rows per task.
  part.rows = w.rows * splits;
  const double phase1 = estimate_rows_ns(part, splits, w.rows, p);
  // Combine: one thread reads splits x out_elems partials (from cache) and converts them: about 1 ns each, plus the
  // allocation of the partial buffers (~1 us).
  const double n = static_cast<double>(splits) * static_cast<double>(out_elems);
  const double combine = n * out_elem_bytes / p.l2_gbps + n * 1.0 + 1000.0;
  return phase1 + combine;
}

}  // namespace autofuse
