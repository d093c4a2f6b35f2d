// Kernel's launch cache: a model calls each kernel with the same operand layouts every time, so run() keeps the last
// call's launch (merged domain, tiling decision, variant entry point, per-segment slices of a concat kernel) and a
// call with the same dtypes, sizes and strides only fills in data pointers and launches. This skips symbol binding,
// the operand checks (they passed for these very sizes), axis merging, the tiling decision and the variant lookup:
// the code paths that run cold right after a matmul (docs/demo.md, "Why launches cost more inside a model").
#include <cstring>

#include "autofuse/codegen/kernel.h"
#include "autofuse/codegen/kernel_variant.h"
#include "autofuse/runtime/thread_pool.h"

namespace autofuse {
namespace {

/// The key of a call: the thread count, then per operand (inputs, then outputs) its dtype, rank, sizes and strides.
/// Everything run() derives its launch from except the data pointers. Written into `key` (reused, no allocation
/// once it has grown).
void launch_cache_key(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs,
                      std::vector<int64_t>& key) {
  key.clear();
  key.push_back(get_num_threads());
  key.push_back(static_cast<int64_t>(inputs.size()));
  for (const auto* list : {&inputs, &outputs})
    for (const HostTensor& t : *list) {
      key.push_back(static_cast<int64_t>(t.dtype));
      key.push_back(static_cast<int64_t>(t.sizes.size()));
      key.insert(key.end(), t.sizes.begin(), t.sizes.end());
      key.insert(key.end(), t.strides.begin(), t.strides.end());
    }
}

/// Whether a cached launch may serve a call with the caller's `given` values (null: none): every value given for one
/// of the kernel's `symbols` (the ones Kernel::given_seed reads; other names are ignored, as there) must equal the
/// value the launch was bound with. A value the launch lacks, or a different one, sends the call down the uncached
/// path, which checks it against the input sizes and raises the binding error ("binds s0 = 4, but it is already 7").
bool given_agrees(const std::vector<std::string>& symbols, const Bindings* given, const Bindings& bound) {
  if (given == nullptr || given->empty()) return true;
  for (const std::string& s : symbols) {
    auto g = given->find(s);
    if (g == given->end()) continue;
    auto b = bound.find(s);
    if (b == bound.end() || b->second != g->second) return false;
  }
  return true;
}

}  // namespace

bool Kernel::run_cached(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs) const {
  if (forced_tiling_kind() || forced_stream_stores()) return false;
  thread_local std::vector<int64_t> key;
  launch_cache_key(inputs, outputs, key);
  std::shared_ptr<const CachedLaunch> c;
  {
    std::lock_guard<std::mutex> l(launch_mu_);
    for (const auto& e : cached_)
      if (e && e->key.size() == key.size() &&
          std::memcmp(key.data(), e->key.data(), key.size() * sizeof(int64_t)) == 0) {
        c = e;
        break;
      }
  }
  if (!c || !given_agrees(symbols_, given_bindings(), c->bindings)) return false;
  stamp_launch_stage(&LaunchStages::bound);
  // Data pointers of every call, then the calls: both reused per thread (run() does not nest on one thread).
  thread_local std::vector<void*> ptrs;
  thread_local std::vector<RowLaunch> calls;
  size_t n = 0;
  for (const CachedLaunch::Call& call : c->calls) n += call.src.size();
  ptrs.resize(n);
  calls.clear();
  const size_t ni = inputs.size();
  size_t at = 0;
  for (const CachedLaunch::Call& call : c->calls) {
    RowLaunch r;
    r.fn = call.fn;
    r.sizes = call.sizes.data();
    r.strides = call.strides.data();
    r.data = ptrs.data() + at;
    r.schedule = call.schedule;
    for (size_t k = 0; k < call.src.size(); ++k) {
      const size_t s = static_cast<size_t>(call.src[k]);
      void* base = s < ni ? inputs[s].data : outputs[s - ni].data;
      ptrs[at++] = static_cast<char*>(base) + call.byte_offset[k];
    }
    calls.push_back(r);
  }
  stamp_launch_stage(&LaunchStages::tiled);
  stamp_launch_stage(&LaunchStages::variant);
  if (c->split) {
    thread_local std::vector<void*> data;
    data.assign(ptrs.begin(), ptrs.end());
    launch_tiled(graph_, nest_, c->calls[0].fn, c->domain, data, c->candidate);
    return true;
  }
  launch_rows_together(calls);
  return true;
}

void Kernel::store_launch(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs,
                          std::shared_ptr<CachedLaunch> c) const {
  if (!c || forced_tiling_kind() || forced_stream_stores()) return;
  for (const auto* list : {&inputs, &outputs})
    for (const HostTensor& t : *list)
      if (t.numel() == 0 || t.data == nullptr) return;
  launch_cache_key(inputs, outputs, c->key);
  // Most recent first; the oldest entry drops out.
  std::lock_guard<std::mutex> l(launch_mu_);
  for (size_t i = cached_.size() - 1; i > 0; --i) cached_[i] = std::move(cached_[i - 1]);
  cached_[0] = std::move(c);
}

std::shared_ptr<Kernel::CachedLaunch> Kernel::launch_entry(const Prepared& p) const {
  const LoopNest& nest = p.rows_vector ? *tiling_.rows_vector_nest() : nest_;
  const size_t nops = nest.operands.size();
  auto c = std::make_shared<CachedLaunch>();
  CachedLaunch::Call call;
  call.fn = p.variant->fn;
  call.sizes = p.domain.sizes;
  call.strides = flat_launch_strides(p.domain, nops);
  call.schedule = p.candidate.schedule;
  for (size_t k = 0; k < nops; ++k) {
    call.src.push_back(static_cast<int>(k));
    call.byte_offset.push_back(0);
  }
  c->calls.push_back(std::move(call));
  if (p.candidate.kind == TilingKind::Split) {
    c->split = true;
    c->domain = p.domain;
    c->candidate = p.candidate;
  }
  c->bindings = p.bindings;
  return c;
}

}  // namespace autofuse
