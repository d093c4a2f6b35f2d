// C++ source emission for one kernel on x86-64 CPUs: explicit SIMD through GCC vector extensions, AF_W lanes per
// value, the helpers of af_kernel*.inc (embedded in every source, so kernels compile with no include path).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "autofuse/ir/graph.h"
#include "autofuse/ir/precision.h"
#include "autofuse/schedule/loop_nest.h"
#include "autofuse/schedule/outer_reduce.h"

namespace autofuse {

/// What one compiled variant of a kernel is specialised on (never the sizes).
struct EmitOptions {
  int lanes = 16;  ///< AF_W: 16 (avx512), 8 (avx2), 1 (scalar)
  /// Per operand (LoopNest::operands order): true when its stride along the vectorized axis is 1 (or it does not
  /// vary along it), so whole vectors load/store contiguously; false means strided lane-by-lane access.
  std::vector<bool> unit_inner;
  std::string func_name = "af_kernel";
  /// Where f16/bf16 values are rounded (ir/precision.h). Written into the source's first line, so the two policies
  /// never share a cached binary.
  PrecisionPolicy precision = PrecisionPolicy::Float32Inside;
  /// Outer (cross-row) reductions (schedule/outer_reduce.h), or null. Their operands are the last ones of the nest:
  /// pointers to the calling chunk's partials (f64 or int64), accumulated where the reduced value is computed.
  const OuterPlan* outer = nullptr;
  /// The transposed-tile loop (emit_tiles.cpp), or -1: a domain axis t (not the vector axis, kept) along which every
  /// operand read lane by lane (unit_inner false) has stride 1. Elementwise kernels only (no reduction, no outer
  /// partials); every lane-by-lane operand must be an input. Rows are then tiles of tile_height() indices along t by
  /// vblock elements of the vector axis; such an operand is loaded as vectors along t and transposed in registers.
  int tile_axis = -1;
};

/// The kernel entry point every generated source exports (extern "C"):
///   int64_t NAME(const int64_t* sizes,    // r domain sizes (after launch-time axis merging)
///             const int64_t* strides,  // operand k, axis a at [k * r + a], in elements
///             void* const* data,       // operand base pointers (inputs, then outputs)
///             int64_t row_begin, int64_t row_end,  // the rows (see kernel_rows) this call computes
///             int64_t vblock,          // elements of the vectorized axis per row, when it is kept (multiple of AF_W)
///             int64_t blk,             // cascade-summation block: inner iterations summed before folding
///             int64_t lflags);         // launch flags: AF_LF_STREAM (1) = non-temporal whole-vector output
///                                      // stores (af_sto in af_kernel.inc; schedule.h kLaunchStreamStores),
///                                      // AF_LF_FAR (2) = L2 prefetch two rows ahead (kLaunchPrefetchFar)
///   returns AF_STATUS_OK (0), or AF_STATUS_NO_MEMORY (tiling/launch.h kKernelStatusNoMemory) when the heap block of
///   a row stash could not be allocated (nothing of the call's rows written then; the launcher throws std::bad_alloc).
using KernelFn = int64_t (*)(const int64_t*, const int64_t*, void* const*, int64_t, int64_t, int64_t, int64_t, int64_t);

/// Whether a variant reads or writes some operand lane by lane (stride along the vector axis other than 1) in a kernel
/// whose vector axis is kept (no inner reduction). Such variants number their rows column-block-major (vector block
/// outermost) and expect a schedule from column_block_schedule (schedule.h).
bool strided_vector_operand(const LoopNest& nest, const EmitOptions& o);

/// Whether operand k is read through the transposed-tile loop of variant o (EmitOptions::tile_axis): an input read
/// lane by lane that varies along the vector axis.
bool tile_transposed_operand(const LoopNest& nest, const EmitOptions& o, size_t k);

/// Bytes of one column of a transposed operand that a tile reads at once (a cache line).
inline constexpr int kTileLineBytes = 64;
/// Bytes of the scratch that holds one column chunk of a transposed operand, transposed (th rows of chunk columns in
/// the compute type): a third to a half of a 32-48 KiB L1D, so the tile's rows then stream through it.
inline constexpr int kTileChunkBytes = 16384;
/// The rows (indices along the tile axis) of one tile of the transposed-tile loop of variant o: AF_W times the
/// blocks that make the widest-needed column read kTileLineBytes (2 for 16 bf16 lanes, 1 for f32, 4 for bool).
int tile_height(const Graph& g, const LoopNest& nest, const EmitOptions& o);

/// The full source of one kernel variant (helper text included).
std::string emit_cpu_kernel(const Graph& g, const LoopNest& nest, const EmitOptions& o);

/// The text of the helper header embedded at the top of every kernel source.
const std::string& af_kernel_header_text();

// ---- outer (cross-row) reductions (emit_outer.cpp) ----
/// Helper functions of kernels with outer reductions (appended after af_kernel_header_text()).
const std::string& outer_helpers_text();
/// Declaration of operand k's pointer, the partials of outer reduction r ("double* __restrict pK = ...").
std::string outer_operand_decl(const OuterReduction& r, size_t k);
/// The statement adding value `var` (a vec of the input's compute type) at `ptr` (partials + offset): `lanes` lanes
/// ("n" in a full pass, "1" for a kept value, whose lanes are all equal).
std::string outer_accumulate(const OuterReduction& r, const std::string& ptr, const std::string& var,
                             const std::string& lanes);

// ---- the pass plan of a row kernel (row_passes.cpp) ----
/// The reductions accumulating in pass p (1-based) of each row, in graph order, each with a flag: true for a var's
/// first (mean) pass, which runs one pass before its stage.
std::vector<std::pair<ValueId, bool>> pass_reductions(const Graph& g, const LoopNest& nest, int p);
/// Per value of g: whether pass p computes it per element (a full value stored in p, an input of a reduction
/// accumulating in p, or what those are computed from). With `stash_pass` (per value: the pass that stores it in the
/// row stash, 0 if none), values stashed in an earlier pass are leaves (reloaded, their inputs not needed).
std::vector<bool> full_values_needed(const Graph& g, const LoopNest& nest, int p, const std::vector<int>* stash_pass);
/// The row stash plan of a multi-pass row kernel (`num_passes` passes; only when the vector axis is the only reduce
/// axis): per value of g, the pass (1-based) that stores it into the row stash, 0 if none. A value is stashed when
/// its computation includes a transcendental function, it is a float, and a later pass needs it (that pass then
/// reloads it instead of recomputing it, bit-identical).
std::vector<int> plan_row_stash(const Graph& g, const LoopNest& nest, int num_passes);
/// Per value of g: the stash slot of a stashed value (slots numbered from 0), -1 for the others. A value reuses the
/// slot of an earlier stashed value of the same C++ type that no pass after its own store pass reloads (in the store
/// pass itself, the earlier value's load at a row position precedes the later value's store there: values are
/// emitted in graph order). bf16 softmax: the widened input (stored in pass 1, reloaded in pass 2) and exp (stored
/// in pass 2) share one slot, halving the stash (fewer L1 misses).
std::vector<int> plan_stash_slots(const Graph& g, const LoopNest& nest, const std::vector<int>& stash_pass,
                                  int num_passes);
/// The C++ declarations of the row stash (none when nothing is stashed): the `stash_bytes` stack buffer, `rn_pad`, the
/// stash `af_stash` (that buffer, or af_heap_stash's block `af_stash_heap` for rows whose slots do not fit it; the
/// kernel returns AF_STATUS_NO_MEMORY before any row when that allocation fails), its size `af_stash_cap` in bytes
/// and one pointer `st<id>` per stashed value.
std::vector<std::string> stash_declarations(const Graph& g, const LoopNest& nest, const std::vector<int>& stash_pass,
                                            int num_passes, int64_t stash_bytes);
/// Per value of g: true for a row maximum (amax, float, inner reduction, not an output) whose accumulator may ignore
/// NaN (af_max_nonan: one vmaxps instead of two compares and a select). Sound when every use of m = amax(x) is
/// x - m and every output computed from those differences also depends, through NaN-propagating float ops (add, sub,
/// mul, div, neg, exp, log, float casts), on a row sum of them: a NaN in the row then reaches that sum and every
/// such output is NaN, whatever m is, as in eager, where m itself is NaN (softmax, log-softmax).
/// +inf / -inf rows keep the exact maximum (vmaxps is exact on non-NaN inputs).
std::vector<bool> row_max_without_nan_select(const Graph& g, const LoopNest& nest);
/// What the emitter can prove about a float value's elements (softmax_value_bounds).
enum class ValueBound : uint8_t {
  None,
  NonPositive,  ///< every element is <= 0 or NaN
  Unit,         ///< every element is in [0, 1] or NaN
};
/// Per value of g: NonPositive for `sub(x, m)` with m = `amax(x)` keeping its reduced axes (each element of x is at
/// most the max of a set of elements holding it: <= 0, or NaN when m or x is NaN or inf - inf; this holds for the
/// NaN-ignoring row max too, and under either precision policy: rounding keeps the sign), Unit for `exp` of a
/// NonPositive value (exp(x) <= 1 for x <= 0; our exp returns exactly 1 at 0 and never exceeds it below).
/// Used to drop exp's clamp (af_exp_nonpos) and to check a softmax numerator's range with one compare
/// (af_div_rcp_unit); both give the same bits as the general helpers on such values.
std::vector<ValueBound> softmax_value_bounds(const Graph& g);
/// Per value of g: for an exp e of a NonPositive value (bounds[e] == Unit) that a div node divides by s = sum(e) (a
/// row sum of e itself whose reciprocal the emitter computes: rcp[s]), that s; -1 otherwise. In the pipelined row
/// loop (emit_pipeline.cpp) the emitter then keeps a per-row flag for s: the pass summing e computes it with
/// af_exp_nonpos_m (a running maximum over its arguments' bits), the flag is "every e is 0 or >= 2^-60, and s is in
/// range", and the steady steps run a copy of the column loop in which e / s is af_div_rcp_row without the range test
/// of af_div_rcp_unit when the flags of the rows being divided are set (session 13; the same quotients).
std::vector<ValueId> row_flag_sums(const Graph& g, const std::vector<bool>& rcp, const std::vector<ValueBound>& bounds);

// ---- per-op pieces (emit_ops.cpp) ----
/// Whether a reduction op over inputs of dtype `in` sums floats in a cascade (f32 block partials folded into f64).
bool is_cascade_sum(OpKind k, DType in);
/// Whether var `var`'s second pass also sums the deviations d = x - mu (the corrected two-pass, emit_reduce.cpp):
/// not for the values of a float16 / bfloat16 tensor (its own, or widened by a cast), whose float32 block partials
/// in the mean pass are exact wherever the correction would matter (values within a few binades: 8 or 11 significant
/// bits plus 4 for the 16 terms of a partial), so the mean is already exact to float32 rounding there.
bool needs_deviation_sum(const Graph& g, ValueId var);
/// C++ element type of reduction node n's vector accumulator (int64_t for integer sums/products, uint8_t for
/// any/all, else the input's compute type), and of its row-level accumulator (double for cascade float sums).
std::string reduction_acc_ctype(const Graph& g, const Node& n);
std::string reduction_main_ctype(const Graph& g, const Node& n);
/// C++ type values of dtype t are computed in (uint8_t for bool, float for f16/bf16/f32, ...).
std::string compute_ctype(DType t);
/// C++ type of t in memory (_Float16 for f16, af_bf16 for bf16, uint8_t for bool).
std::string storage_ctype(DType t);
/// A C++ expression of type vec<compute_ctype(t)> holding the scalar rounded to t, splatted.
std::string splat_literal(const Scalar& s, DType t);
/// The expression computing node `n` from the variables named by `arg` (one per input); nullopt-like empty string
/// for ops the caller handles itself (input, reduce, iota). f16/bf16 results are rounded to their dtype at casts and
/// constants always, and after every other op only under PrecisionPolicy::EmulateCasts.
/// `rcp`, for a div node, names the reciprocal of its divisor (see divisors_with_reciprocal): af_div_rcp instead of /
/// (af_div_rcp_unit when `arg_bound`, the bound of the first input, is Unit). An exp of a NonPositive input is
/// af_exp_nonpos.
std::string op_expression(const Graph& g, const Node& n, const std::vector<std::string>& arg, PrecisionPolicy p,
                          const std::string& rcp = "", ValueBound arg_bound = ValueBound::None);
/// Per value of g: whether it is a divisor computed once per row (kept, f32/f16/bf16, so computed in f32) of some
/// div node that is computed per element (full), in a kernel whose vector axis is reduced. The emitter declares
/// `x<id>_r = 1.0f / x<id>` with it and those divisions become af_div_rcp (af_kernel.inc: the same correctly rounded
/// quotient without the divider).
std::vector<bool> divisors_with_reciprocal(const Graph& g, const LoopNest& nest);
/// The initial value of reduction n's vector accumulator (0, 1, -inf/+inf or the type's min/max), a C++ expression.
std::string reduction_init(const Graph& g, const Node& n);
/// The expression folding vector `x` into accumulator `acc` (element type `at`) for reduction n (sum/mean add, prod
/// multiplies, amax/amin with af_max/af_min's NaN rules, any/all or/and; var adds x, or (x - mu)^2 with `mu` its
/// mean when not `mean_pass`). Argmax/argmin are emitted by the caller (they also update an index vector).
std::string reduction_update(const Node& n, const std::string& at, const std::string& acc, const std::string& x,
                             const std::string& mu, bool mean_pass);
/// Whether an inner (along-the-row) reduction of op k over inputs of dtype `in` accumulates in several independent
/// chains (`kRowChains` accumulators, vector j of a row into chain j mod kRowChains, folded in a fixed order at the
/// end of a block or row): float sums (any order is within the cascade's error bound; the fold order is fixed, so
/// results do not depend on threads) and amax/amin (exact; NaN propagates through the fold). Prod, argmax/argmin and
/// any/all keep one chain.
bool has_row_chains(OpKind k, DType in);
/// Accumulator chains per chained row reduction; the row loop is unrolled by as many vectors (emit_kernel.cpp).
inline constexpr int kRowChains = 4;
/// Vectors per unrolled group of a row-loop pass without accumulator chains that computes a transcendental function
/// or prefetches the next row (emitter.h emit_pass_loops): two halve the loop's overhead and prefetches for one more
/// copy of the body.
inline constexpr int kPairCopies = 2;
/// `e` (a vec<float> expression) rounded to t when t is f16/bf16 (af_rnd_f16 / af_rnd_bf16), else `e` unchanged.
std::string rounded_to(DType t, const std::string& e);
/// What casts_rounded_by_store found for a value.
enum class StoreRounds : uint8_t {
  No,
  Cast,  ///< a cast to f16 / bf16 whose value is left unrounded: its stores round it
  Copy,  ///< `x * 1` (constant 1 of x's f16 / bf16 dtype, the lowering's clone) on such a cast's way to its stores
};
/// Per value of g: Cast for a cast to f16 / bf16 whose only uses are stores of outputs of that dtype (real output
/// operands of `nest`; an outer reduction's partials are a use, as is any other node reading it), directly or through
/// copies `x * 1` (Copy: x * 1 is x exactly for every float, NaN payload included), under the Float32Inside policy.
/// The emitter then leaves the cast's value unrounded (the f32 vector it converts) and the stores round: af_st / af_stu
/// / af_sto / af_stn narrow f32 to f16 / bf16 with round-to-nearest-even (bf16 NaN quieted, its upper payload kept),
/// which is what af_rnd_f16 / af_rnd_bf16 do. Same bits: RNE to a format F returns a member of F, and RNE of a member
/// of F is that member, so rounding twice to F equals rounding once; af_bf16_bits on its own NaN result (quiet bit set,
/// low half zero) returns it again. (Not under EmulateCasts, nor with AUTOFUSE_ROUND_AT_STORE=0, the A/B switch: then
/// every cast rounds in registers, as before session 11.)
std::vector<StoreRounds> casts_rounded_by_store(const Graph& g, const LoopNest& nest, const EmitOptions& o);
/// The scalar that folds the lanes of vector accumulator `acc` (element type `ctype`) of reduction `op`: af_hsum for
/// sum/mean/var, af_hprod, af_hmax, af_hmin, af_hor (any), af_hand (all); argmax/argmin fold `acc` with the index
/// vector `idx` (first index, NaN wins). "" for ops that are not reductions.
std::string horizontal_reduction(OpKind op, const std::string& ctype, const std::string& acc, const std::string& idx);

}  // namespace autofuse
