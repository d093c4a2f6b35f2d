// The nanobind extension autofuse._core: one binding function per area, each in its own bind_<area>.cpp,
// all called by module.cpp.
#pragma once

#include <nanobind/nanobind.h>

namespace autofuse::bindings {

namespace nb = nanobind;

/// DType, Graph builder and introspection, parse, verify, print (bind_ir.cpp; owner: infra).
void bind_ir(nb::module_& m);
/// tensor_view(): the zero-copy HostTensor view of a Python tensor, for tests (bind_tensor.cpp; owner: infra).
void bind_tensor(nb::module_& m);
/// interpret(graph, inputs) on torch tensors / numpy arrays (bind_interpreter.cpp; owner: infra).
void bind_interpreter(nb::module_& m);
/// Kernel compilation, cache statistics, threads (bind_runtime.cpp; owner: runtime/codegen).
void bind_runtime(nb::module_& m);
/// Kernel: compile a kernel graph, run it on tensors (bind_kernel.cpp; owner: codegen).
void bind_kernel(nb::module_& m);
/// fuse(), CompiledGraph (bind_fusion.cpp; owner: fusion).
void bind_fusion(nb::module_& m);

}  // namespace autofuse::bindings
