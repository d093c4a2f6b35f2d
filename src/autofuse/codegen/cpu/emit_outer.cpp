// Emission of outer (cross-row) reduction accumulations (schedule/outer_reduce.h): each chunk of rows adds its rows'
// values into its own partials, f64 for float inputs and int64 (two's-complement wrap-around) for integer / bool ones.
// Summation within a chunk is sequential in f64, as the interpreter sums; the launcher combines chunks in order.
#include "autofuse/codegen/cpu/emit.h"

namespace autofuse {

const std::string& outer_helpers_text() {
  static const std::string text = R"AFOUTER(
// ---- outer (cross-row) reductions: per-chunk partials P (double or int64_t), n lanes of x ----
template <class P, class V> inline void af_oacc_sum(P* __restrict q, const V& x, int64_t n) {
  if constexpr (af_is_float<P>()) {
    if (n == AF_W) { for (int l = 0; l < AF_W; ++l) q[l] += (P)x[l]; }
    else { for (int64_t l = 0; l < n; ++l) q[l] += (P)x[l]; }
  } else {
    for (int64_t l = 0; l < n; ++l) q[l] = (P)((uint64_t)q[l] + (uint64_t)(int64_t)x[l]);
  }
}
// NaN propagates: once a partial is NaN it stays NaN; a NaN input replaces it.
template <class P, class V> inline void af_oacc_max(P* __restrict q, const V& x, int64_t n) {
  for (int64_t l = 0; l < n; ++l) { P v = (P)x[l]; q[l] = (v != v || v > q[l]) ? v : q[l]; }
}
template <class P, class V> inline void af_oacc_min(P* __restrict q, const V& x, int64_t n) {
  for (int64_t l = 0; l < n; ++l) { P v = (P)x[l]; q[l] = (v != v || v < q[l]) ? v : q[l]; }
}
)AFOUTER";
  return text;
}

std::string outer_operand_decl(const OuterReduction& r, size_t k) {
  const std::string t = r.integer ? "int64_t" : "double", ks = std::to_string(k);
  return t + "* __restrict p" + ks + " = (" + t + "*)data[" + ks + "];  // cross-row partials of %" +
         std::to_string(r.node);
}

std::string outer_accumulate(const OuterReduction& r, const std::string& ptr, const std::string& var,
                             const std::string& lanes) {
  const char* f = r.op == OpKind::Amax ? "af_oacc_max" : r.op == OpKind::Amin ? "af_oacc_min" : "af_oacc_sum";
  return std::string(f) + "(" + ptr + ", " + var + ", " + lanes + ");  // cross-row " +
         (r.op == OpKind::Mean ? "sum (mean)" : std::string(op_info(r.op).name));
}

}  // namespace autofuse
