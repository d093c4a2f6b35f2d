// Python bindings of a compiled kernel (codegen/kernel.h): compile one kernel graph, run it on torch tensors or numpy
// arrays in place, read its generated source. This is the hot path of the torch backend: one call per kernel launch.
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "attr_convert.h"
#include "autofuse/codegen/kernel.h"
#include "bindings.h"
#include "tensor_convert.h"

namespace autofuse::bindings {

namespace {

/// A graph's failure in Kernel.compile_many: raise_() raises it as Kernel.compile would have (same Python type).
struct KernelFailure {
  std::exception_ptr error;
};

/// The values of k's symbols from a Python mapping {name: int}: every given symbol (KeyError naming the kernel and
/// the symbol when one is missing) and any other symbol of k's graph it holds (Kernel::run takes those as given too);
/// names k does not use are not read. TypeError when a value is not an int.
Bindings given_bindings(const Kernel& k, nb::handle given) {
  Bindings b;
  const bool mapping = PyMapping_Check(given.ptr()) != 0;
  for (const std::string& s : k.given_symbols()) {
    nb::str key(s.c_str());
    if (!mapping || !PyMapping_HasKey(given.ptr(), key.ptr()))
      throw nb::key_error(("kernel " + k.name() + ": `given` has no value for size symbol " + s).c_str());
    b[s] = to_int64(given[key], "kernel " + k.name() + ": `given` value of size symbol " + s);
  }
  if (!mapping) return b;
  for (const std::string& s : k.symbols()) {
    nb::str key(s.c_str());
    if (!b.count(s) && PyMapping_HasKey(given.ptr(), key.ptr()))
      b[s] = to_int64(given[key], "kernel " + k.name() + ": `given` value of size symbol " + s);
  }
  return b;
}

}  // namespace

void bind_kernel(nb::module_& m) {
  nb::class_<KernelFailure>(m, "KernelFailure", "A kernel of Kernel.compile_many that did not compile")
      .def(
          "raise_", [](const KernelFailure& f) { std::rethrow_exception(f.error); },
          "Raise the error (IRError, CompileError, ...) Kernel.compile would have raised for this graph");
  nb::class_<Kernel>(m, "Kernel",
                     "One fusion group compiled to native code. Sizes and strides are call arguments: one compiled "
                     "kernel serves every size of its shape class.")
      .def_static(
          "compile",
          [](const Graph& g) {
            // The GIL is released while the C++ compiler runs, so the torch backend compiles a graph's kernels on
            // several Python threads at once (python/autofuse/native.py).
            nb::gil_scoped_release unlocked;
            return Kernel::compile(g);
          },
          nb::arg("graph"),
          "Compile a kernel graph (elementwise, broadcast_to, source and reduce ops sharing one reduction axis set). "
          "Raises IRError naming the reason when the graph is not one kernel, CompileError when the C++ compiler "
          "fails. Releases the GIL while compiling (thread-safe: the runtime's cache serializes identical sources).")
      .def_static(
          "compile_many",
          [](const std::vector<Graph>& graphs, int threads) {
            std::vector<Kernel::Compiled> done;
            {
              nb::gil_scoped_release unlocked;
              done = Kernel::compile_many(graphs, threads);
            }
            nb::list out;
            for (auto& c : done) {
              if (c.kernel)
                out.append(nb::cast(c.kernel));
              else
                out.append(nb::cast(KernelFailure{c.error}));
            }
            return out;
          },
          nb::arg("graphs"), nb::arg("threads"),
          "Compile several kernel graphs; returns per graph a Kernel or a KernelFailure (call raise_() to raise its "
          "error). The uncached sources are compiled `threads` at a time, several kernels per C++ compiler run, and "
          "identical kernels once (codegen/kernel.h Kernel::compile_many). Releases the GIL.")
      .def(
          "run",
          [](const Kernel& k, nb::handle inputs, nb::handle outputs, nb::handle given) {
            // Borrowed views: `inputs` / `outputs` hold the tensors for the whole call.
            std::vector<HostTensor> in = to_host_tensors(inputs, /*writable=*/false, "input", /*borrow=*/true);
            std::vector<HostTensor> out = to_host_tensors(outputs, /*writable=*/true, "output", /*borrow=*/true);
            check_disjoint_operands(in, out, "kernel", k.name());
            const bool has_given = !given.is_none();
            Bindings b = has_given ? given_bindings(k, given) : Bindings{};
            nb::gil_scoped_release unlocked;
            k.run(in, out, has_given ? &b : nullptr);
          },
          nb::arg("inputs"), nb::arg("outputs"), nb::arg("given") = nb::none(),
          "Compute the outputs in place. inputs: one tensor/array per graph input (any strides, 0 for expanded dims); "
          "outputs: caller-allocated tensors of output_sizes(inputs) (any strides); given: a dict of symbol values "
          "holding at least given_symbols; any other symbol of the kernel in it is taken as given too and the "
          "input sizes are checked against it (names the kernel does not use are ignored). An output may be an input "
          "itself (the same data pointer, dtype, sizes and strides: computed in place) but must not otherwise share "
          "memory with an input or another output. Raises IRError on a dtype or size mismatch, a missing given "
          "symbol or a given value the input sizes contradict; ValueError naming the two operands when an output "
          "overlaps an input or another output (\"output 0 overlaps input 0 (partially) ...\").")
      .def(
          "output_sizes",
          [](const Kernel& k, nb::handle inputs, nb::handle given) {
            std::vector<HostTensor> in = to_host_tensors(inputs, false, "input");
            if (given.is_none()) return k.output_sizes(in);
            Bindings b = given_bindings(k, given);
            return k.output_sizes(in, &b);
          },
          nb::arg("inputs"), nb::arg("given") = nb::none(),
          "Concrete sizes of each output for these inputs (given: as for run).")
      .def(
          "time_stages",
          [](const Kernel& k, nb::handle inputs, nb::handle outputs, int reps) {
            // Per stage, the median over `reps` runs of its duration in ns: "convert" (Python tensors to HostTensor
            // views, inputs and outputs), then Kernel::run's stages (codegen/kernel.h LaunchStages).
            if (reps < 1) throw nb::value_error("time_stages: reps must be >= 1");
            using clock = std::chrono::steady_clock;
            auto ns = [](clock::time_point a, clock::time_point b) {
              return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
            };
            std::map<std::string, std::vector<double>> t;
            LaunchStages st;
            for (int i = 0; i < reps; ++i) {
              auto c0 = clock::now();
              std::vector<HostTensor> in = to_host_tensors(inputs, /*writable=*/false, "input", /*borrow=*/true);
              std::vector<HostTensor> out = to_host_tensors(outputs, /*writable=*/true, "output", /*borrow=*/true);
              check_disjoint_operands(in, out, "kernel", k.name());
              auto c1 = clock::now();
              st = LaunchStages{};
              record_launch_stages(&st);
              try {
                k.run(in, out);
              } catch (...) {
                record_launch_stages(nullptr);
                throw;
              }
              record_launch_stages(nullptr);
              t["convert"].push_back(ns(c0, c1));
              t["run"].push_back(static_cast<double>(st.done - st.start));
              if (st.bound != 0) {
                t["bind"].push_back(static_cast<double>(st.bound - st.start));
                t["tiling"].push_back(static_cast<double>(st.tiled - st.bound));
                t["variant"].push_back(static_cast<double>(st.variant - st.tiled));
                t["launch"].push_back(static_cast<double>(st.done - st.variant));
              }
            }
            nb::dict d;
            for (auto& [name, v] : t) {
              std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
              d[name.c_str()] = v[v.size() / 2];
            }
            return d;
          },
          nb::arg("inputs"), nb::arg("outputs"), nb::arg("reps") = 1000,
          "Per-call overhead breakdown (median ns per stage over reps runs): convert (tensor views), bind (symbols "
          "and operand checks), tiling (axis merging and the tiling decision), variant (stride-class lookup), launch "
          "(thread-pool hand-off and the kernel body), run (all of Kernel::run). For measurement only.")
      .def_prop_ro("given_symbols", &Kernel::given_symbols,
                   "Size symbols the input sizes do not determine, whose values run()/output_sizes() take from `given` "
                   "(empty for most kernels)")
      .def_prop_ro("source", &Kernel::source, "The generated C++ source of the first compiled variant")
      .def_prop_ro("name", &Kernel::name, "The kernel's name (from its ops)")
      .def_prop_ro(
          "graph", [](const Kernel& k) { return k.graph(); }, "The kernel graph (a copy)")
      .def_prop_ro("lanes", &Kernel::lanes, "Vector lanes of the generated code (1: scalar)")
      .def_prop_ro("num_variants", &Kernel::num_variants, "Stride-class variants compiled so far");
}

}  // namespace autofuse::bindings
