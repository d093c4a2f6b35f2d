// A kernel graph compiled to native code: one loop nest, one generated C++ source per stride class, run on host
// tensors of any size of its shape class.
#pragma once

#include <array>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "autofuse/codegen/cpu/jit.h"
#include "autofuse/ir/graph.h"
#include "autofuse/ir/precision.h"
#include "autofuse/ir/tensor.h"
#include "autofuse/schedule/loop_nest.h"
#include "autofuse/schedule/outer_reduce.h"
#include "autofuse/tiling/tiling_function.h"

namespace autofuse {

/// nullopt if g compiles to one kernel; else why not, naming the node (layout ops other than broadcast_to,
/// reductions over different axis sets, extern ops, ...). A graph that is not one loop nest may still be one kernel
/// with outer (cross-row) reductions (schedule/outer_reduce.h); the reason then also says why that split fails.
std::optional<std::string> kernel_unsupported_reason(const Graph& g);

/// Timestamps (std::chrono::steady_clock, ns) of the stages of one Kernel::run on the calling thread, for the
/// per-call overhead measurement (python -m autofuse.bench.overhead): start, after binding the symbols and checking
/// the operands (`bound`), after the launch domain, axis merging and the tiling decision (`tiled`), after the
/// variant lookup (`variant`), and after the launch returned (`done`: thread-pool hand-off plus the kernel body).
/// Kernels with cross-row reductions record only start and done. A call replayed from the launch cache (Kernel::run)
/// records `bound` when its operand layouts matched the cached ones and `tiled` = `variant` when its data pointers
/// are filled in (its tiling and variant were decided by an earlier call).
struct LaunchStages {
  int64_t start = 0, bound = 0, tiled = 0, variant = 0, done = 0;
};

/// Record the stages of every later Kernel::run on this thread into *s (null: stop). Costs one thread-local read
/// per stage when off.
void record_launch_stages(LaunchStages* s);

/// A compiled kernel. Sizes and strides are call arguments: one compiled source serves every size; a new source is
/// compiled (once, then cached) only for a new stride class (which operands are unit-stride along the innermost
/// axis). Thread-safe: run() may be called concurrently.
class Kernel {
 public:
  /// Build the loop nest and compile the variant for contiguous operands (or the strides the graph's inputs
  /// declare). Throws IRError when kernel_unsupported_reason(g) is set, a compile error (std::runtime_error
  /// subclass carrying the compiler output) when the source does not compile.
  static std::shared_ptr<Kernel> compile(const Graph& g);

  /// One graph's outcome in compile_many: the kernel, or the exception Kernel::compile would have thrown.
  struct Compiled {
    std::shared_ptr<Kernel> kernel;
    std::exception_ptr error;
  };
  /// Kernel::compile for several graphs at once, results in order. The sources not yet cached are compiled
  /// `threads` at a time in batches, several kernels per compiler run (runtime/cache.h compile_modules), which costs
  /// far less than one run each; identical kernels (same structure, other names) are compiled once. One graph's
  /// failure (IRError, CompileError) is returned in its slot and does not affect the others.
  static std::vector<Compiled> compile_many(const std::vector<Graph>& graphs, int threads);

  /// Output sizes for these inputs. Throws IRError when an input's dtype, rank or sizes conflict with the graph, when
  /// a given symbol (given_symbols()) is missing from `given`, or when a value's size evaluates negative for them
  /// (`kernel f: %y: size s0 - 10 evaluates to -7 < 0`; run() throws the same).
  std::vector<std::vector<int64_t>> output_sizes(const std::vector<HostTensor>& inputs,
                                                 const Bindings* given = nullptr) const;

  /// Compute the outputs into caller-allocated tensors (any strides; sizes must be output_sizes(inputs)).
  /// Inputs may have any strides (0 for expanded dims). Throws IRError on a dtype/size mismatch. The launches of
  /// the last 4 distinct operand layouts are cached: a call whose operands have the same dtypes, sizes and strides (and
  /// the same thread count) skips binding, checks, tiling decision and variant lookup, and launches with its own data
  /// pointers. `given`: the values of given_symbols(), and optionally of other symbols of the kernel, which are taken
  /// as given too: the input sizes are checked against them, never solved for them (a scalar argument's symbol may be
  /// negative, x[n:] reads an input of size -n; solving only finds sizes >= 0); symbols the kernel does not use are
  /// ignored; a value that disagrees with the input sizes throws IRError ("binds s0 = 4, but it is already 7"), on a
  /// replayed call too (a cached launch serves `given` values only when they equal its own bindings). Calls of a
  /// kernel with given symbols are not cached.
  void run(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs,
           const Bindings* given = nullptr) const;

  /// Size symbols the kernel evaluates but its input sizes do not determine (ir/bind_symbols.h unbound_symbols), in
  /// name order: a backward kernel whose only input is [s0*s1, 32] and whose output is [s0, s1, 32] needs s0 and s1.
  /// The caller passes their values to run() / output_sizes(); without them those throw IRError naming the symbol.
  /// Empty for most kernels. A concat kernel's are those its launch evaluates (output shapes, segment widths, what
  /// its segments cannot bind) that its own input sizes do not determine: cat([x, t.expand(n, -1)]) has no input of
  /// extent n; its segments take such symbols, and their widths, from its bindings.
  const std::vector<std::string>& given_symbols() const { return given_symbols_; }
  /// Every size symbol of the kernel's graph (Graph::symbols), in name order, computed once at construction: a
  /// caller's `given` value of any of them is taken as given (run, given_seed), read on every launch.
  const std::vector<std::string>& symbols() const { return symbols_; }

  /// The source of the first compiled variant (of every segment, one after the other, for a concat kernel).
  const std::string& source() const { return source_; }
  /// A kernel with concats runs as one elementwise kernel per concat segment, all in one parallel launch
  /// (schedule/concat_split.h, kernel_concat.cpp): the number of segments, 0 for an ordinary kernel.
  size_t num_segments() const;
  /// The segments of a kernel with concats (defined in codegen/kernel_concat.h, internal to codegen).
  struct ConcatParts;
  const std::string& name() const { return name_; }
  const Graph& graph() const { return graph_; }
  /// The loop nest of the rows (of outer_plan()->main when the kernel has outer reductions).
  const LoopNest& loop_nest() const { return nest_; }
  /// The f16/bf16 rounding policy the kernel was compiled with (ir/precision.h).
  PrecisionPolicy precision() const { return precision_; }
  /// The split into rows and outer (cross-row) reductions, or null for an ordinary kernel.
  const OuterPlan* outer_plan() const { return outer_.get(); }
  /// Vector lanes of the generated code.
  int lanes() const { return lanes_; }
  /// Number of variants compiled so far (one per stride class seen, per nest: the kernel's and the vector-rows one).
  size_t num_variants() const;
  /// The launch-time tiling function (tiling/): candidates and choice per call.
  const TilingFunction& tiling() const { return tiling_; }

 private:
  struct Variant;
  /// A variant's generated code: `compiled` (emitted with positional names, entry point `func` named by its hash)
  /// is what is compiled and cached; `readable` (the graph's own names in comments) is what source() shows.
  struct VariantSource {
    std::string func, compiled, readable;
  };
  Kernel(const Graph& g, LoopNest nest, std::shared_ptr<const OuterPlan> outer = nullptr);
  /// The Kernel object of g (loop nest or outer plan), nothing compiled. Throws IRError when g is not one kernel.
  static std::shared_ptr<Kernel> build(const Graph& g);
  /// The stride class compile() starts with: unit-stride innermost unless an input declares other strides.
  std::vector<bool> default_unit_inner() const;
  /// The tile axis compile() starts with for that stride class: where every input read lane by lane declares stride 1
  /// along one axis (the innermost such, not the vector axis) of an elementwise kernel, that axis (the launch's
  /// transpose_tile_axis then usually agrees), else -1.
  int default_tile_axis(const std::vector<bool>& unit) const;
  /// Emit a variant's sources (see VariantSource). Throws IRError when rows_vector has no nest. `tile_axis`: the
  /// transposed-tile loop's axis (EmitOptions::tile_axis; schedule.h transpose_tile_axis), -1 for none.
  VariantSource variant_source(const std::vector<bool>& unit_inner, bool rows_vector, int tile_axis = -1) const;
  /// Record a compiled variant (or return the one another thread recorded first).
  std::shared_ptr<const Variant> add_variant(const std::vector<bool>& unit_inner, bool rows_vector, VariantSource vs,
                                             JitKernel jit, int tile_axis = -1) const;
  /// The compiled variant for a stride class (and tile axis), of the kernel's nest or (rows_vector) of the tiling
  /// function's vector-rows nest; compiled on first use.
  std::shared_ptr<const Variant> variant(const std::vector<bool>& unit_inner, bool rows_vector = false,
                                         int tile_axis = -1) const;
  Bindings bind(const std::vector<HostTensor>& inputs) const;
  /// The caller's values (Kernel::run's `given`, this thread's) of the kernel's symbols: every given symbol, which
  /// must be there (IRError naming it otherwise), and any other symbol of the graph present in them. bind() and
  /// bind_concat() seed their bindings with it, so the input sizes are checked against these values, never solved
  /// for them.
  Bindings given_seed() const;
  /// The `given` bindings of the run on this thread (null outside a run, or when none were given): for the
  /// interpreter paths of a run (an empty reduced axis, an outer plan's epilogue).
  const Bindings* given_bindings() const;
  /// Make `g` the `given` bindings of the calls on this thread (what run() does for its call); returns the previous
  /// ones. run_concat gives a segment the parent's bindings this way.
  static const Bindings* exchange_given(const Bindings* g);
  /// One call prepared up to the launch (kernel_variant.h).
  struct Prepared;
  /// run() of an ordinary kernel (no outer reductions, no concat) up to the launch: checks the operands, binds the
  /// sizes, merges axes, decides the tiling, looks up (or compiles) the variant. Returns false when the call is
  /// already complete (nothing to compute, or computed by the interpreter: an empty reduced axis); else fills *p.
  /// Throws IRError on a dtype/size mismatch.
  bool prepare(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs, Prepared* p) const;
  /// A recent call's launch, reused while the operands keep their dtypes, sizes and strides (kernel_variant.h,
  /// kernel_launch_cache.cpp).
  struct CachedLaunch;
  /// Run the call from a cached launch when its operands match one (same dtypes, sizes, strides, thread count, no
  /// forced tiling kind) and the call's `given` values of the kernel's symbols, if any, equal the launch's bindings;
  /// false (nothing done) otherwise.
  bool run_cached(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs) const;
  /// Keep `c` (made for these operands) as the most recent cached launch, unless the call cannot be replayed from
  /// pointers alone (an empty operand: run() may point it at scratch memory) or a tiling kind is forced.
  void store_launch(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs,
                    std::shared_ptr<CachedLaunch> c) const;
  /// The cache entry of one prepared ordinary call (operands unsliced; a Split candidate's too).
  std::shared_ptr<CachedLaunch> launch_entry(const Prepared& p) const;
  /// The graph the loop nest and the emitted source are made of: outer_->main, or graph_.
  const Graph& body() const { return outer_ ? outer_->main : graph_; }
  /// run() for kernels with outer reductions (kernel_outer.cpp).
  void run_outer(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs) const;
  /// The Kernel object of a kernel with concats (segments built, none compiled).
  Kernel(const Graph& g, std::shared_ptr<const ConcatParts> parts);
  static std::shared_ptr<Kernel> build_concat(const Graph& g);
  /// compile() of a built concat kernel: each segment's default variant.
  static std::shared_ptr<Kernel> compile_concat_parts(std::shared_ptr<Kernel> k);
  /// run() and output_sizes() of a kernel with concats (kernel_concat.cpp).
  void run_concat(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs) const;
  std::vector<std::vector<int64_t>> concat_output_sizes(const std::vector<HostTensor>& inputs) const;
  /// The symbols a concat kernel's launch evaluates (ConcatParts::need: output shapes, segment widths, the segments'
  /// given symbols) bound from the parent's input sizes (ir/bind_symbols.h); symbols a segment's own inputs bind are
  /// left to it. Throws IRError.
  Bindings bind_concat(const std::vector<HostTensor>& inputs) const;
  /// compile_many for graphs none of which has a concat (kernel_batch.cpp).
  static std::vector<Compiled> compile_many_plain(const std::vector<Graph>& graphs, int threads);

  Graph graph_;
  std::shared_ptr<const OuterPlan> outer_;
  std::shared_ptr<const ConcatParts> concat_;
  LoopNest nest_;
  std::string name_;
  std::vector<std::string> given_symbols_;  ///< see given_symbols()
  std::vector<std::string> symbols_;        ///< see symbols()
  int lanes_ = 16;
  /// f16/bf16 rounding policy, read from AUTOFUSE_EMULATE_PRECISION_CASTS when the kernel is compiled; every later
  /// variant uses the same one.
  PrecisionPolicy precision_ = PrecisionPolicy::Float32Inside;
  std::string source_;
  TilingFunction tiling_;
  mutable std::mutex mu_;
  /// Compiled variants by (rows_vector, unit_inner, tile_axis).
  mutable std::map<std::tuple<bool, std::vector<bool>, int>, std::shared_ptr<const Variant>> variants_;
  mutable std::mutex launch_mu_;  ///< guards cached_
  /// The launches of the last calls with distinct operand layouts, most recent first (a kernel object can serve
  /// several call sites: a few entries keep them from evicting each other).
  mutable std::array<std::shared_ptr<const CachedLaunch>, 4> cached_;
};

}  // namespace autofuse
