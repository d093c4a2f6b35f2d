// Kernel::compile_many: a graph's kernels compiled together, several per compiler run (runtime compile_modules).
#include <cstdint>
#include <exception>

#include "autofuse/codegen/cpu/emit.h"
#include "autofuse/codegen/kernel.h"
#include "autofuse/codegen/kernel_variant.h"
#include "autofuse/runtime/cache.h"

namespace autofuse {

std::vector<Kernel::Compiled> Kernel::compile_many(const std::vector<Graph>& graphs, int threads) {
  std::vector<Compiled> out(graphs.size());
  std::vector<VariantSource> sources(graphs.size());
  std::vector<std::vector<bool>> units(graphs.size());
  std::vector<ModuleRequest> requests;
  std::vector<size_t> request_of(graphs.size(), SIZE_MAX);
  const std::string& header = af_kernel_header_text();
  for (size_t i = 0; i < graphs.size(); ++i) {
    try {
      out[i].kernel = build(graphs[i]);
      units[i] = out[i].kernel->default_unit_inner();
      sources[i] = out[i].kernel->variant_source(units[i], false);
    } catch (...) {
      out[i].kernel = nullptr;
      out[i].error = std::current_exception();
      continue;
    }
    // Everything up to the end of the helper header is the same for every kernel of one lane count and precision
    // policy: the preamble a batch parses once.
    const std::string& src = sources[i].compiled;
    const size_t at = src.find(header);
    request_of[i] = requests.size();
    requests.push_back(ModuleRequest{src, graphs[i].name(), at == std::string::npos ? 0 : at + header.size()});
  }
  std::vector<ModuleOutcome> built = compile_modules(requests, threads);
  for (size_t i = 0; i < graphs.size(); ++i) {
    if (request_of[i] == SIZE_MAX) continue;
    try {
      const ModuleOutcome& m = built[request_of[i]];
      if (m.error) std::rethrow_exception(m.error);
      JitKernel jit;
      jit.entry = m.result.module->symbol(sources[i].func);
      jit.module = std::shared_ptr<void>(m.result.module, m.result.module.get());
      jit.cache_hit = m.result.cache_hit;
      Kernel& k = *out[i].kernel;
      k.source_ = k.add_variant(units[i], false, std::move(sources[i]), std::move(jit))->source;
    } catch (...) {
      out[i].kernel = nullptr;
      out[i].error = std::current_exception();
    }
  }
  return out;
}

}  // namespace autofuse
