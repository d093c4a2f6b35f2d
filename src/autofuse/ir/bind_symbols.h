// Binding size symbols from actual tensor sizes: the one set of steps the interpreter (bind_symbols), a kernel's
// launch (Kernel::bind, concat kernels) and a kernel's compile-time check (can its launch bind what it needs?) share.
//
// Steps, over the declared shapes of the inputs against the actual sizes:
//  1. every dim whose size expression is a bare symbol binds it (two dims binding one symbol to different sizes is a
//     conflict: IRError naming the input and dim);
//  2. every dim of the form k*s + c (k != 0) with one unbound symbol s is solved for s, repeated until nothing
//     changes (s1 - 2 after a convolution, 2*s + 1); other forms (floordiv, mod, min, max, products of symbols) only
//     check, never bind;
//  3. every dim whose symbols are now all bound must evaluate to its actual size (IRError naming input and dim).
// A symbol used only in other forms, or only in an input's `strides` hint, stays unbound; the callers decide which
// symbols they need (the symbols their run evaluates) and report the first one missing, naming where it appears.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "autofuse/ir/graph.h"
#include "autofuse/ir/symbolic.h"

namespace autofuse {

/// One declared input shape against the actual sizes of the tensor given for it. Both pointers must outlive the call;
/// the ranks must be equal (callers check rank first, with their own message).
struct ShapeArg {
  const Node* node = nullptr;                   ///< the input node: its shape is solved, its name labels errors
  const std::vector<int64_t>* sizes = nullptr;  ///< the actual sizes, one per dim of node->shape
};

/// Steps 1-3 above. `need` lists the symbols the caller's run evaluates: when one of them stays unbound, throws
/// IRError(unbound_symbol_message(...)); when `need` is null, every input dim must evaluate (a dim with an unbound
/// symbol throws the same message for that symbol). Conflicts and size mismatches throw IRError with messages of
/// the form "input %x: dim 1 binds s0 = 4, but it is already 3" and "input %y: dim 0 has size 8, expected
/// 2*s0 + 1 = 9" (callers prefix their own context when they catch it). Sizes 0 and 1 bind like any other size.
/// `seed` (may be null): values the caller already knows (a kernel's given symbols, Kernel::run), bound before step 1
/// and checked like any other binding.
Bindings bind_shape_symbols(const std::vector<ShapeArg>& args, const std::set<std::string>* need,
                            const Bindings* seed = nullptr);

/// The message for symbol `s` missing from the bindings: "size symbol s is not determined by the input sizes", then
/// where it appears: "; input %x dim 2 is s1 - floordiv(s1, 2) (size 23), which does not determine it (...)" for the
/// first input dim that uses it, or "; no input's size uses it" (a symbol only in strides or in the graph's body). The
/// actual size in parentheses only when with_sizes (not for unbound_symbol_reason's trial sizes).
std::string unbound_symbol_message(const std::vector<ShapeArg>& args, const std::string& s, bool with_sizes = true);

/// Solve `size == e` for e's single unbound symbol when e is k*s + c (k != 0) and the solution is a whole number
/// >= 0; binds it in b and returns true, else returns false and leaves b unchanged (step 2).
bool solve_linear_size(const Expr& e, int64_t size, Bindings& b);

/// The symbols that running g evaluates: those of every node's shape and attributes except the `strides` hint of
/// input nodes (kernels and the interpreter read the actual strides of the tensors, never the declared ones).
std::set<std::string> symbols_needed_to_run(const Graph& g);

/// Whether a launch of a graph with inputs `g.inputs()` binds every symbol of `need` from its input sizes, decided
/// once on a trial assignment of distinct sizes (1009 + 37 i, so that no two symbols coincide) with the steps above.
/// Returns nullopt when it does, else the unbound_symbol_message of the first symbol it does not. Used at compile
/// time, so that a kernel that could not bind a symbol at launch is refused before its first run.
std::optional<std::string> unbound_symbol_reason(const Graph& g, const std::set<std::string>& need);

/// The symbols of `need` that a launch of g cannot bind from its input sizes (same trial as unbound_symbol_reason),
/// in name order; empty when it binds them all. A kernel with such symbols takes their values from its caller
/// (Kernel::given_symbols: e.g. s0 of an output [s0, s1, 32] whose only input is [s0*s1, 32]).
std::vector<std::string> unbound_symbols(const Graph& g, const std::set<std::string>& need);

}  // namespace autofuse
