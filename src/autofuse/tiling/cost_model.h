// The tiling cost model: an estimate, in nanoseconds, of one kernel call under one tiling candidate, from the machine
// model (tiling/machine.h). A roofline per thread (Williams, Waterman, Patterson, "Roofline: an insightful visual
// performance model", CACM 2009): time = max(bytes moved / bandwidth of the level they come from, vector operations /
// vector throughput), taken for the busiest thread (imbalance), plus the cost of the parallel launch and, for split
// reductions, of the combine step.
#pragma once

#include <cstdint>
#include <string>

namespace autofuse {

struct MachineInfo;

/// Machine figures the cost model uses. Bandwidths in bytes per nanosecond (= GB/s).
struct CostParams {
  int threads = 1;              ///< threads parallel_for uses (get_num_threads())
  int lanes = 16;               ///< f32 vector lanes of the generated code
  int64_t l1_bytes = 32 << 10;  ///< L1d of one core
  int64_t l2_bytes = 1 << 20;   ///< L2 of one core
  int64_t l3_bytes = 16 << 20;  ///< last level, total
  double l1_gbps = 100;         ///< one core reading from L1
  double l2_gbps = 50;          ///< one core reading from L2
  double dram_gbps = 10;        ///< all probe threads reading from DRAM
  int dram_threads = 1;         ///< threads the DRAM figure was measured with
  /// One thread reading from DRAM (MachineInfo::read1_gbps); 0 when unknown: the aggregate is then assumed to
  /// scale linearly with threads up to dram_threads.
  double dram1_gbps = 0;
  double vec_ops_per_ns = 3;       ///< vector operations per ns per core (assumed: 1 per cycle at 3 GHz)
  double transcendental_ops = 20;  ///< vector operations per exp/log/tanh/... (polynomial + range reduction)
  double launch_ns = 3000;         ///< one parallel_for launch with workers waking up
  /// Per row and pass of an inner reduction: row index decomposition, the masked tail, the horizontal reduction
  /// through f64 and the kept store. Calibrated on the sweep (tools/cmd_tiling.cpp): sum over 1M x 16 and 4M x 4 with
  /// the row schedule costs 50-150 ns per row and thread more than the same bytes in long rows (softmax: 200-400 ns
  /// per row and pass), so 300 ops (100 ns at the assumed 3 ops/ns) per row and pass.
  double row_overhead_ops = 300;
  /// Vector-op equivalents per element loaded or stored lane by lane (a strided vector-rows access: a scalar load
  /// and a lane insert). A micro-benchmark of af_ldn on an L2-resident [rows, 4..64] f32 buffer gave about 0.7 ns
  /// per element (2 ops), but inside the vector-rows kernels of the quiet sweep of 2026-11-29 13:40 (sum f32,
  /// 1M x 16 and 256K x 64, 2 threads) a gathered element cost 1.8 ns of thread time: 5 ops, which also moves the
  /// rows / vector-rows crossover to between 16 and 64 columns, where the sweep measured it.
  double lane_access_ops = 5;

  /// Figures from a machine model (measured bandwidths; the defaults above where a figure is 0) and a thread count.
  static CostParams from_machine(const MachineInfo& m, int threads, int lanes);
  std::string describe() const;
};

/// What one kernel call does, in the merged launch domain.
struct WorkShape {
  int64_t rows = 0;           ///< independent rows (the schedule's row count for one whole call)
  int64_t row_elems = 0;      ///< full-domain elements one row covers (reduced extent x vector block)
  int64_t reduce_extent = 1;  ///< elements reduced per output element (1 when there is no reduction)
  bool inner_reduction = false;
  int passes = 1;              ///< passes over a row (reduction stages + the final pass)
  double in_bytes = 4;         ///< bytes read per full-domain element (inputs that vary along the reduction)
  double out_bytes = 4;        ///< bytes written per full-domain element (full-domain outputs)
  double ops = 1;              ///< vector operations per element per pass (elementwise nodes)
  double transcendentals = 0;  ///< transcendental nodes per element
  double lane_loads = 0;       ///< operands per element read lane by lane in every pass (strided vector-rows gathers)
  double lane_stores = 0;      ///< outputs per element written lane by lane in the final pass
};

/// Estimated nanoseconds for `w` spread over `tasks` parallel tasks of `rows_per_task` rows (the busiest thread runs
/// ceil(tasks / threads) of them), plus the launch when more than one thread works. Errors: none (degenerate inputs
/// give 0).
double estimate_rows_ns(const WorkShape& w, int64_t tasks, int64_t rows_per_task, const CostParams& p);

/// Estimated nanoseconds of a two-phase split reduction: `splits` tasks each reduce 1/splits of the reduced extent of
/// every row into partials (one launch), then one thread combines splits x outputs partials.
double estimate_split_ns(const WorkShape& w, int64_t splits, int64_t out_elems, double out_elem_bytes,
                         const CostParams& p);

}  // namespace autofuse
