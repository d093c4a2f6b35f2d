// Kernel::compile_many_plain (compile_many for graphs without concat; kernel_concat.cpp splits the others): a
// graph's kernels compiled together, several per compiler run (runtime compile_modules).
#include <cstdint>
#include <exception>

#include "autofuse/codegen/cpu/emit.h"
#include "autofuse/codegen/kernel.h"
#include "autofuse/codegen/kernel_variant.h"
#include "autofuse/runtime/cache.h"

namespace autofuse {
namespace {

/// Whether g only copies its inputs (every other node a broadcast_to). Such a group is how a non-contiguous view (a
/// transposed key in attention) is made contiguous, so its first call reads strided inputs: the variant for that is
/// compiled with the batch instead of alone on the first call (a few ms of a batch against ~0.1 s).
bool copies_only(const Graph& g) {
  if (g.inputs().empty() || g.size() == g.inputs().size()) return false;
  for (const Node& n : g.nodes())
    if (n.op != OpKind::Input && n.op != OpKind::BroadcastTo) return false;
  return true;
}

}  // namespace

std::vector<Kernel::Compiled> Kernel::compile_many_plain(const std::vector<Graph>& graphs, int threads) {
  std::vector<Compiled> out(graphs.size());
  std::vector<VariantSource> sources(graphs.size());
  std::vector<std::vector<bool>> units(graphs.size());
  std::vector<int> tiles(graphs.size(), -1);
  std::vector<ModuleRequest> requests;
  std::vector<size_t> request_of(graphs.size(), SIZE_MAX);
  // Speculative variants (copies_only): kernel index, stride class, sources, request index.
  struct Extra {
    size_t kernel;
    std::vector<bool> unit;
    int tile;
    VariantSource vs;
    size_t request;
  };
  std::vector<Extra> extras;
  const std::string& header = af_kernel_header_text();
  for (size_t i = 0; i < graphs.size(); ++i) {
    try {
      out[i].kernel = build(graphs[i]);
      units[i] = out[i].kernel->default_unit_inner();
      tiles[i] = out[i].kernel->default_tile_axis(units[i]);
      sources[i] = out[i].kernel->variant_source(units[i], false, tiles[i]);
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
    const size_t prefix = at == std::string::npos ? 0 : at + header.size();
    requests.push_back(ModuleRequest{src, graphs[i].name(), prefix, sources[i].func});
    Kernel& k = *out[i].kernel;
    if (!k.outer_ && k.nest_.rank >= 2 && copies_only(graphs[i])) {
      std::vector<bool> strided = units[i];
      for (int in = 0; in < k.nest_.num_inputs; ++in) strided[static_cast<size_t>(in)] = false;
      // A transpose of the last two axes (the common copy), read through the tile loop (schedule.h
      // transpose_tile_axis finds that axis at launch when the input has stride 1 along it).
      const int tile = k.lanes_ >= 4 && k.nest_.reduce_axes().empty() ? k.nest_.rank - 2 : -1;
      if (strided != units[i]) {
        try {
          VariantSource vs = k.variant_source(strided, false, tile);
          requests.push_back(ModuleRequest{vs.compiled, graphs[i].name() + "_strided", prefix, vs.func});
          extras.push_back(Extra{i, strided, tile, std::move(vs), requests.size() - 1});
        } catch (const std::exception&) {
          // only a head start: the variant is compiled on first use as usual
        }
      }
    }
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
      k.source_ = k.add_variant(units[i], false, std::move(sources[i]), std::move(jit), tiles[i])->source;
    } catch (...) {
      out[i].kernel = nullptr;
      out[i].error = std::current_exception();
    }
  }
  for (Extra& e : extras) {
    const ModuleOutcome& m = built[e.request];
    if (m.error || !out[e.kernel].kernel) continue;  // compiled on first use instead, where its error is reported
    JitKernel jit;
    jit.module = std::shared_ptr<void>(m.result.module, m.result.module.get());
    jit.entry = m.result.module->find_symbol(e.vs.func);
    jit.cache_hit = m.result.cache_hit;
    if (jit.entry != nullptr) out[e.kernel].kernel->add_variant(e.unit, false, std::move(e.vs), std::move(jit), e.tile);
  }
  return out;
}

}  // namespace autofuse
