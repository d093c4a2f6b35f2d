// Python bindings of the reference interpreter. The Python side (autofuse.ir.interpret) passes an allocator so that
// outputs are created by the caller's framework (torch.empty / numpy.empty) and filled in place by interpret_into.
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "autofuse/ir/graph.h"
#include "autofuse/ir/interpreter.h"
#include "bindings.h"
#include "tensor_convert.h"

namespace autofuse::bindings {

namespace {

// Run g on inputs; allocate(sizes: list[int], dtype: DType) creates each output. Returns the outputs.
nb::list interpret_with(const Graph& g, nb::handle inputs, nb::callable allocate) {
  std::vector<HostTensor> in = to_host_tensors(inputs, /*writable=*/false, "input");
  Bindings b = bind_symbols(g, in);
  std::vector<std::vector<int64_t>> sizes = output_sizes(g, b);
  nb::list outs;
  std::vector<HostTensor> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    nb::object t = allocate(sizes[i], g.node(g.outputs()[i]).dtype);
    std::string label = "output " + std::to_string(i) + " (from the allocator)";
    out.push_back(to_host_tensor(t, /*writable=*/true, label.c_str()));
    outs.append(t);
  }
  check_disjoint_operands(in, out, "interpret_with");  // an allocator that returned an input or one tensor twice
  {
    nb::gil_scoped_release unlocked;
    interpret_into(g, in, out);
  }
  return outs;
}

}  // namespace

void bind_interpreter(nb::module_& m) {
  m.def("interpret_with", &interpret_with, nb::arg("graph"), nb::arg("inputs"), nb::arg("allocate"),
        "Run the reference interpreter. inputs: one tensor/array per graph input (any strides). allocate(sizes, "
        "dtype) must return a new writable tensor for each output; the outputs are returned filled. Raises IRError "
        "on a shape conflict or a run-time error, ValueError when an allocated output shares memory with another "
        "output or (other than as the very same view) an input; autofuse.interpret() is the friendly form.");
  m.def(
      "output_sizes",
      [](const Graph& g, nb::handle inputs) {
        return output_sizes(g, bind_symbols(g, to_host_tensors(inputs, false, "input")));
      },
      nb::arg("graph"), nb::arg("inputs"), "Concrete sizes of each graph output for these inputs.");
  m.def(
      "bind_symbols",
      [](const Graph& g, nb::handle inputs) { return bind_symbols(g, to_host_tensors(inputs, false, "input")); },
      nb::arg("graph"), nb::arg("inputs"), "The size symbols' values implied by the inputs, as a dict.");
}

}  // namespace autofuse::bindings
