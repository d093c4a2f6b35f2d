// Python bindings of the runtime (owner: runtime; kernel bindings, if any, by codegen): cache statistics, the
// thread count, the host ISA, the machine model, and compile_module for tests and tools.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>
#include <utility>

#include "autofuse/ir/tensor_overlap.h"
#include "autofuse/runtime/host_gather.h"
#include "autofuse/runtime/host_openmp.h"
#include "autofuse/runtime/huge_pages.h"
#include "autofuse/runtime/runtime.h"
#include "autofuse/support/env.h"
#include "autofuse/tiling/machine.h"
#include "bindings.h"
#include "tensor_convert.h"

namespace autofuse::bindings {
namespace {

/// A module compiled from Python: the loaded object plus how it was obtained.
struct PyCompiledModule {
  std::shared_ptr<Module> module;
  bool cache_hit = false;
  double seconds = 0;
};

nb::dict machine_dict(const MachineInfo& mi) {
  nb::dict d;
  d["cpu_model"] = mi.cpu_model;
  d["logical_cpus"] = mi.logical_cpus;
  d["physical_cores"] = mi.physical_cores;
  d["l1d_bytes"] = mi.l1d_bytes;
  d["l2_bytes"] = mi.l2_bytes;
  d["l3_bytes"] = mi.l3_bytes;
  d["cache_line_bytes"] = mi.cache_line_bytes;
  d["isa"] = mi.isa;
  d["simd_bytes"] = mi.simd_bytes;
  d["probe_threads"] = mi.probe_threads;
  d["read_gbps"] = mi.read_gbps;
  d["write_gbps"] = mi.write_gbps;
  d["copy_gbps"] = mi.copy_gbps;
  d["l1_read_gbps"] = mi.l1_read_gbps;
  d["l2_read_gbps"] = mi.l2_read_gbps;
  d["read1_gbps"] = mi.read1_gbps;
  d["bandwidth_source"] = mi.bandwidth_source;
  return d;
}

}  // namespace

void bind_runtime(nb::module_& m) {
  nb::exception<CompileError>(m, "CompileError", PyExc_RuntimeError);
  nb::exception<CacheDirError>(m, "CacheDirError", PyExc_RuntimeError);
  nb::exception<ModuleLoadError>(m, "ModuleLoadError", PyExc_RuntimeError);

  nb::class_<CacheStats>(m, "CacheStats", "Kernel cache counters since start or reset_cache_stats()")
      .def_ro("compiles", &CacheStats::compiles, "kernel sources compiled (a batch of n counts n)")
      .def_ro("compiler_runs", &CacheStats::compiler_runs, "C++ compiler processes run (one per batch)")
      .def_ro("disk_hits", &CacheStats::disk_hits, "modules loaded from the disk cache")
      .def_ro("memory_hits", &CacheStats::memory_hits, "modules already loaded in this process")
      .def_ro("rebuilt_corrupt", &CacheStats::rebuilt_corrupt,
              "disk entries found corrupt (size, checksum, key, dlopen or the expected symbol) and rebuilt")
      .def_ro("not_stored", &CacheStats::not_stored,
              "sources compiled but not stored (their entry could not be installed): loaded from a temporary copy")
      .def("as_dict",
           [](const CacheStats& s) {
             nb::dict d;
             d["compiles"] = s.compiles;
             d["disk_hits"] = s.disk_hits;
             d["memory_hits"] = s.memory_hits;
             d["rebuilt_corrupt"] = s.rebuilt_corrupt;
             d["compiler_runs"] = s.compiler_runs;
             d["not_stored"] = s.not_stored;
             return d;
           })
      .def("__repr__", [](const CacheStats& s) {
        return "CacheStats(compiles=" + std::to_string(s.compiles) + ", disk_hits=" + std::to_string(s.disk_hits) +
               ", memory_hits=" + std::to_string(s.memory_hits) +
               ", rebuilt_corrupt=" + std::to_string(s.rebuilt_corrupt) +
               ", compiler_runs=" + std::to_string(s.compiler_runs) + ", not_stored=" + std::to_string(s.not_stored) +
               ")";
      });
  m.def("cache_stats", &cache_stats, "Kernel cache counters (compiles, disk_hits, memory_hits, rebuilt_corrupt)");
  m.def("reset_cache_stats", &reset_cache_stats, "Zero the kernel cache counters");
  m.def("clear_memory_cache", &clear_memory_cache,
        "Forget the modules this process loaded, so the next compile of the same source reads the disk cache");
  m.def("cache_dir", &cache_dir, "The kernel cache directory (created, mode 0700); raises CacheDirError if unsafe");
  m.def("machine_dir", &machine_dir,
        "Where machine-model probe results are kept (created, mode 0700); raises CacheDirError if unsafe");

  m.def("set_num_threads", &set_num_threads, nb::arg("n"),
        "Threads the kernel launcher's parallel_for uses, caller included (the backend passes "
        "torch.get_num_threads())");
  m.def("get_num_threads", &get_num_threads, "Threads the kernel launcher's parallel_for uses");
  m.def(
      "threads_backend", [] { return std::string(host_gomp_parallel() != nullptr ? "openmp" : "pool"); },
      "Where parallel_for runs its chunks: 'openmp' (the GNU OpenMP team already loaded by torch, shared with "
      "ATen) or 'pool' (the launcher's own threads: no OpenMP loaded, AUTOFUSE_THREADS=pool, or a forked child)");
  m.def("host_isa", &host_isa, "Kernel ISA: 'avx512', 'avx2' or 'scalar' (AUTOFUSE_ISA overrides the CPU probe)");
  m.def("kernel_compile_flags", &kernel_compile_flags, "The compiler flags kernels are built with");

  // Environment variables (support/env.h): the Python package reads its AUTOFUSE_* variables through these, so a bad
  // value warns once per process on stderr whichever side reads it first.
  m.def("env_bool", &env_bool, nb::arg("name"), nb::arg("fallback"),
        "Boolean variable: unset/empty -> fallback; 1/true/yes/on or 0/false/no/off; anything else warns once and "
        "gives fallback");
  m.def(
      "env_int",
      [](const std::string& name, int64_t lo, int64_t hi, const std::string& instead) {
        return env_int(name.c_str(), lo, hi, instead);
      },
      nb::arg("name"), nb::arg("lo"), nb::arg("hi"), nb::arg("instead"),
      "Integer variable in [lo, hi]: unset/empty -> None; a bad value warns once (naming `instead`) -> None");
  m.def(
      "env_choice",
      [](const std::string& name, const std::vector<std::string>& choices, const std::string& instead) {
        return env_choice(name.c_str(), choices, instead);
      },
      nb::arg("name"), nb::arg("choices"), nb::arg("instead"),
      "One of `choices` (lower-case, compared ignoring case): unset/empty -> None; another value warns once -> None");
  m.def("env_warn", &env_warn, nb::arg("name"), nb::arg("value"), nb::arg("problem"), nb::arg("instead"),
        "Warn once per (name, value) on stderr: \"autofuse: warning: NAME='VALUE' PROBLEM; using INSTEAD\"");
  m.def("check_environment", &check_environment,
        "Check every AUTOFUSE_* variable of fixed form (booleans, counts, choices); bad values warn once");
  m.def("cpu_count", &cpu_count, "CPUs this process may run on (sched_getaffinity)");

  m.def(
      "machine_info", [](bool reprobe) { return machine_dict(reprobe ? reprobe_machine() : machine_info()); },
      nb::arg("reprobe") = false,
      "The machine model as a dict: topology, cache sizes, ISA, and bandwidths in GB/s (measured once per machine "
      "and cached on disk; reprobe=True measures again)");

  nb::class_<PyCompiledModule>(m, "CompiledModule", "A C++ source compiled and loaded by compile_module")
      .def_ro("cache_hit", &PyCompiledModule::cache_hit)
      .def_ro("seconds", &PyCompiledModule::seconds)
      .def_prop_ro("path", [](const PyCompiledModule& c) { return c.module->path(); })
      .def(
          "symbol_address",
          [](const PyCompiledModule& c, const std::string& name) {
            return reinterpret_cast<uintptr_t>(c.module->symbol(name));
          },
          nb::arg("name"), "Address of an exported symbol (for ctypes); raises RuntimeError if absent");
  m.def(
      "compile_module",
      [](const std::string& source, const std::string& name_hint, const std::string& symbol) {
        CompileResult r = compile_module(source, name_hint, symbol);
        return PyCompiledModule{r.module, r.cache_hit, r.seconds};
      },
      nb::arg("source"), nb::arg("name_hint") = "kernel", nb::arg("symbol") = "",
      "Compile C++ source to a loaded module through the kernel cache; raises CompileError with the compiler's "
      "output. symbol: an extern \"C\" name the module must export (a cache entry lacking it is rebuilt; a fresh "
      "build lacking it raises ModuleLoadError)");
  m.def(
      "advise_huge_pages",
      [](uintptr_t ptr, int64_t nbytes) { return advise_huge_pages(reinterpret_cast<void*>(ptr), nbytes); },
      nb::arg("ptr"), nb::arg("nbytes"),
      "Advise the 2 MiB-aligned part of [ptr, ptr + nbytes) as transparent huge pages (madvise MADV_HUGEPAGE) "
      "before its first write; returns the bytes advised, 0 when AUTOFUSE_HUGE_PAGES=0, THP is off, the range holds "
      "no aligned huge page or madvise fails (runtime/huge_pages.h). Never raises; the data is not changed.");
  m.def(
      "huge_page_min_bytes", [] { return kHugePageMinBytes; },
      "The smallest buffer (bytes) the generated program advises as huge pages (32 MiB, glibc's largest mmap "
      "threshold)");
  m.def(
      "gather_rows",
      [](nb::handle table, nb::handle indices, nb::handle out) {
        HostTensor t = to_host_tensor(table, /*writable=*/false, "table");
        HostTensor i = to_host_tensor(indices, /*writable=*/false, "indices");
        HostTensor o = to_host_tensor(out, /*writable=*/true, "out");
        // Rows are read while others are written: no in-place form is safe (ir/tensor_overlap.h)
        for (const auto& [name, src] : {std::pair<const char*, const HostTensor*>{"table", &t}, {"indices", &i}})
          if (memory_overlap(o, *src) != Overlap::None)
            throw nb::value_error(("gather_rows: out " + o.describe() + " shares memory with " + name + " " +
                                   src->describe() + "; write to a separate tensor")
                                      .c_str());
        try {
          gather_rows(t, i, o);
        } catch (const std::out_of_range& e) {
          throw nb::index_error(e.what());
        }
      },
      nb::arg("table"), nb::arg("indices"), nb::arg("out"),
      "aten.embedding's forward into a caller-allocated tensor: out[i..., :] = table[indices[i...], :] "
      "(runtime/host_gather.h). table: 2-d [V, D]; indices: int64/int32, any shape; out: indices.shape + (D,), the "
      "table's dtype; any strides. Raises IndexError('index out of range in self: ...', eager's text) before writing "
      "when an index is outside [0, V), ValueError for a rank / dtype / size mismatch or an out sharing memory with "
      "table or indices.");
}

}  // namespace autofuse::bindings
