// The reference interpreter: runs a Graph on host tensors with eager PyTorch's semantics, op by op. It is the golden
// model every compiled kernel is checked against, so it favours exactness and clarity over speed.
//
// Arithmetic is carried out in float64 for floating dtypes and in int64 (two's complement, wrapping) for integer and
// bool dtypes, except that a floating prod multiplies in the compute type (f32 for f16/bf16/f32), as kernels do and
// eager does for f32, so a row whose product overflows and then meets a zero is NaN as there (interp_reduce.cpp).
// After each node the result is rounded to the node's dtype, as eager rounds after each op. For f16/bf16 nodes the
// rounding follows the precision policy (ir/precision.h): under EmulateCasts the interpreter rounds
// f64 -> f32 -> f16/bf16 after every node (eager's value whenever the f32 result is correctly rounded); under the
// default Float32Inside it rounds f16/bf16 nodes to f32 only, as one kernel computing the whole graph does, and rounds
// to f16/bf16 at the graph's outputs, at explicit casts and at source nodes. Where eager's own result depends on how it
// is computed (see interp_scalar.h: the sign of a zero from maximum/minimum, reductions in another summation order,
// SLEEF's transcendental functions), the interpreter gives the mathematically best answer and the tests allow that
// freedom.
//
// Errors are IRError. Run-time errors name the node in the form `%v = op(%a, %b): what went wrong`, e.g. an integer
// division by zero (eager raises ZeroDivisionError), amax/amin/argmax/argmin over zero elements (eager raises), a
// slice whose bounds are out of range for the actual sizes, or an extern node (the interpreter cannot run it).
#pragma once

#include <cstdint>
#include <vector>

#include "autofuse/ir/bind_symbols.h"
#include "autofuse/ir/graph.h"
#include "autofuse/ir/precision.h"
#include "autofuse/ir/symbolic.h"
#include "autofuse/ir/tensor.h"

namespace autofuse {

/// Bind the graph's size symbols from the actual input tensors: one tensor per graph input, in Graph::inputs() order,
/// with the shared steps of ir/bind_symbols.h (bare symbols, then linear forms k*s + c; then every input dimension
/// must evaluate to the tensor's size). Throws IRError naming the input when the input count, a rank, a dtype or a
/// size conflicts, or when a symbol the graph evaluates (symbols_needed_to_run: not a symbol only in an input's
/// `strides` hint) cannot be determined from the input sizes, naming the symbol and the input dim that uses it.
/// `given` (may be null): values of symbols the input sizes do not determine (a reproducer's `--shape`, a kernel's
/// given symbols), seeded before the steps, so the input sizes are checked against them.
Bindings bind_symbols(const Graph& g, const std::vector<HostTensor>& inputs, const Bindings* given = nullptr);

/// The concrete sizes of every graph output under the bindings, in Graph::outputs() order.
/// Throws IRError when a size evaluates negative or a symbol is unbound.
std::vector<std::vector<int64_t>> output_sizes(const Graph& g, const Bindings& b);

/// Check that every node's sizes are >= 0 under the bindings: throws IRError naming the first node in graph order
/// whose size evaluates negative (`%y: size s0 - 10 evaluates to -7 < 0`) or cannot be evaluated. Sizes that are
/// provably >= 0 are not evaluated; a node with a size using a symbol `b` does not bind is skipped (a concat kernel
/// binds only the symbols its launch needs).
void check_sizes(const Graph& g, const Bindings& b);

/// How the interpreter computes.
struct InterpretOptions {
  /// Rounding of f16/bf16 nodes; the default follows AUTOFUSE_EMULATE_PRECISION_CASTS as kernels do (read when the
  /// options object is made; throws std::invalid_argument for a bad value).
  PrecisionPolicy precision = precision_policy_from_env();
};

/// Run the graph. Inputs may have any strides (including 0 for expanded dims). Returns one new contiguous tensor per
/// graph output, owning its storage. Throws IRError (see the header comment). `given`: as for bind_symbols.
std::vector<HostTensor> interpret(const Graph& g, const std::vector<HostTensor>& inputs,
                                  const InterpretOptions& options = {}, const Bindings* given = nullptr);

/// Run the graph and write the outputs into caller-allocated tensors of any strides (they must have the output's
/// dtype and sizes; checked, IRError otherwise). Outputs must not overlap the inputs or each other.
/// `given`: as for bind_symbols.
void interpret_into(const Graph& g, const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs,
                    const InterpretOptions& options = {}, const Bindings* given = nullptr);

}  // namespace autofuse
