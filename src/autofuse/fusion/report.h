// The fusion report: every fusion decision and every refusal, with a reason code and a sentence, and the memory
// traffic of each kernel fused vs unfused.
//
// Byte figures are evaluated at a representative binding (every size symbol = FusionReport::kRepresentativeSize,
// unless the caller supplies its own), because shapes are symbolic; the report says which binding it used.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autofuse/ir/symbolic.h"

namespace autofuse {

/// Reason codes for refusing to fuse (and the code "FUSED" for an accepted merge). One sentence in
/// FusionDecision::message says what exactly was refused, naming values and axes.
namespace nf {
inline constexpr const char* kFused = "FUSED";
inline constexpr const char* kCycle =
    "NF-CYCLE";  ///< the merge would create a cycle (through an extern, a host step or another kernel)
inline constexpr const char* kReduceAxes = "NF-REDUCE-AXES";  ///< the two sides reduce over different axis sets
inline constexpr const char* kDomain =
    "NF-DOMAIN";  ///< iteration spaces do not match (sizes differ, or an output is not of the domain)
inline constexpr const char* kKeptMix = "NF-KEPT-MIX";  ///< a keepdim=false reduction result meets a full-domain value
inline constexpr const char* kSize = "NF-SIZE";         ///< the group would exceed the node cap
inline constexpr const char* kInputs = "NF-INPUTS";     ///< the group would exceed the input cap
inline constexpr const char* kExtern = "NF-EXTERN";     ///< an extern call is never fused
inline constexpr const char* kLayout =
    "NF-LAYOUT";  ///< a layout op (reshape, permute, slice, concat) runs as a host step
inline constexpr const char* kRecompute =
    "NF-RECOMPUTE";  ///< a value with several consumer groups is too costly to recompute: materialized
inline constexpr const char* kCodegen = "NF-CODEGEN";  ///< the code generator refuses the merged kernel
}  // namespace nf

/// One decision about a pair of groups (or about a single node, where `b` is empty).
struct FusionDecision {
  std::string code;           ///< nf::kFused or an NF-... reason code
  std::string message;        ///< one sentence: what was refused and why, naming values, shapes and axes
  std::string a, b;           ///< the groups (or nodes, as "%name") concerned, by name
  int64_t benefit_bytes = 0;  ///< memory traffic the merge saves (or would have saved), at the representative binding
};

/// Memory traffic of one step of the fused graph.
struct KernelTraffic {
  std::string group;        ///< group name
  std::string kind;         ///< "kernel", "extern" or "host"
  int num_nodes = 0;        ///< ops computed in the group (recomputed copies included)
  int64_t bytes_fused = 0;  ///< bytes read + written by the group as one step
  int64_t bytes_unfused =
      0;  ///< bytes read + written if its ops ran one by one (each op reads its inputs, writes its output)
};

/// Everything fusion decided, for humans and tests.
struct FusionReport {
  static constexpr int64_t kRepresentativeSize = 1024;
  Bindings binding;                      ///< the representative binding the byte figures were evaluated at
  std::vector<FusionDecision> merges;    ///< accepted merges, in the order taken (greedy by benefit)
  std::vector<FusionDecision> refusals;  ///< refused merges and single-node refusals
  std::vector<KernelTraffic> steps;      ///< one row per group, topological order
  int num_kernels = 0, num_externs = 0, num_host = 0;
  int64_t total_bytes_fused = 0;    ///< sum of steps' bytes_fused
  int64_t total_bytes_unfused = 0;  ///< sum of steps' bytes_unfused
  int64_t bytes_saved() const { return total_bytes_unfused - total_bytes_fused; }

  /// All reason codes present among the refusals (sorted, unique).
  std::vector<std::string> refusal_codes() const;
  /// True if some refusal carries the code.
  bool refused_with(const std::string& code) const;
  /// Multi-line text form: counts, the binding, per-step traffic table, merges, refusals, total saved.
  std::string str() const;
};

/// "1.50 MiB", "512 B": a byte count for humans.
std::string format_bytes(int64_t bytes);

}  // namespace autofuse
