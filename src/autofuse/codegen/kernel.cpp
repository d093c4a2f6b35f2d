// Kernel: loop nest + per-stride-class compiled variants + the launcher (binding sizes, merging axes, scheduling).
#include "autofuse/codegen/kernel.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>

#include "autofuse/codegen/cpu/emit.h"
#include "autofuse/codegen/cpu/jit.h"
#include "autofuse/codegen/kernel_concat.h"
#include "autofuse/codegen/kernel_variant.h"
#include "autofuse/ir/bind_symbols.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/runtime/hash.h"
#include "autofuse/schedule/schedule.h"
#include "autofuse/tiling/launch.h"
#include "autofuse/tiling/rows_vector.h"

namespace autofuse {

std::optional<std::string> kernel_unsupported_reason(const Graph& g) {
  if (has_concat(g)) {
    std::string split_why;
    auto split = plan_concat_split(g, &split_why);
    if (!split) return split_why;
    for (size_t j = 0; j < split->segments.size(); ++j)
      if (auto w = kernel_unsupported_reason(split->segments[j].graph))
        return "concat segment " + std::to_string(j) + ": " + *w;
    return std::nullopt;
  }
  auto why = loop_nest_unsupported_reason(g);
  if (!why) return why;
  std::string outer_why;
  if (plan_outer_reductions(g, &outer_why)) return std::nullopt;
  return *why + " (nor as a kernel with cross-row reductions: " + outer_why + ")";
}

namespace {

thread_local LaunchStages* t_stages = nullptr;

/// The `given` bindings of the Kernel::run / output_sizes call running on this thread (null outside one): read by
/// Kernel::bind, which every run path (ordinary, outer reductions) calls on the calling thread.
thread_local const Bindings* t_given = nullptr;

/// Sets t_given for one call and restores the previous value (calls do not nest today; restoring keeps it exact).
struct GivenScope {
  const Bindings* saved;
  explicit GivenScope(const Bindings* g) : saved(t_given) { t_given = g; }
  ~GivenScope() { t_given = saved; }
  GivenScope(const GivenScope&) = delete;
  GivenScope& operator=(const GivenScope&) = delete;
};

inline void stamp(int64_t LaunchStages::*field) { stamp_launch_stage(field); }

/// g with positional names (graph "k", node i "v<i>"): what the compiled source is emitted from, so that it depends
/// on the kernel's structure alone and identical groups of one model (its repeated layers) share one compiled module.
/// Node ids are unchanged, so the loop nest and the outer plan stay valid for the copy.
Graph positional_copy(const Graph& g) {
  Graph c = g;
  c.set_name("k");
  for (size_t i = 0; i < c.size(); ++i) c.mutable_node(static_cast<ValueId>(i)).name = "v" + std::to_string(i);
  return c;
}

}  // namespace

void record_launch_stages(LaunchStages* s) { t_stages = s; }

void stamp_launch_stage(int64_t LaunchStages::*field) {
  if (t_stages != nullptr)
    t_stages->*field =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
}

Kernel::Kernel(const Graph& g, LoopNest nest, std::shared_ptr<const OuterPlan> outer)
    : graph_(g), outer_(std::move(outer)), nest_(std::move(nest)) {
  name_ = g.name();
  const std::set<std::string> syms = g.symbols();
  symbols_.assign(syms.begin(), syms.end());
  lanes_ = jit_lanes();
  precision_ = precision_policy_from_env();
  tiling_ = TilingFunction(body(), nest_, lanes_);
}

std::shared_ptr<Kernel> Kernel::build(const Graph& g) {
  // A concat kernel checks only what its own launch evaluates (build_concat: refused when its inputs cannot bind it);
  // each segment is built here.
  if (has_concat(g)) return build_concat(g);
  // Symbols the inputs cannot bind (an output [s0, s1, 32] from an input [s0*s1, 32]) are given by the caller.
  std::vector<std::string> given = unbound_symbols(g, symbols_needed_to_run(g));
  std::shared_ptr<Kernel> k;
  if (loop_nest_unsupported_reason(g)) {
    std::string why;
    auto plan = plan_outer_reductions(g, &why);
    if (!plan) throw IRError(*kernel_unsupported_reason(g));
    LoopNest nest = plan->nest;
    k.reset(new Kernel(g, std::move(nest), std::make_shared<const OuterPlan>(std::move(*plan))));
  } else {
    k.reset(new Kernel(g, build_loop_nest(g)));
  }
  k->given_symbols_ = std::move(given);
  return k;
}

std::vector<bool> Kernel::default_unit_inner() const {
  // Unit-stride innermost, unless an input declares other strides.
  std::vector<bool> unit(nest_.operands.size(), true);
  for (int i = 0; i < nest_.num_inputs; ++i) {
    const Node& nd = body().node(nest_.operands[static_cast<size_t>(i)]);
    if (has_attr(nd.attrs, "strides") && !nd.shape.empty()) {
      const auto& st = attr_shape(nd.attrs, "strides");
      if (!st.empty() && st.back().as_const() != std::optional<int64_t>(1)) unit[static_cast<size_t>(i)] = false;
    }
  }
  return unit;
}

int Kernel::default_tile_axis(const std::vector<bool>& unit) const {
  if (outer_ || lanes_ < 4 || !nest_.reduce_axes().empty()) return -1;
  const int v = nest_.vec_axis();
  int tile = -1;
  for (int i = 0; i < nest_.num_inputs; ++i) {
    if (unit[static_cast<size_t>(i)]) continue;
    const ValuePlacement& vp = nest_.values[static_cast<size_t>(nest_.operands[static_cast<size_t>(i)])];
    const Node& nd = body().node(nest_.operands[static_cast<size_t>(i)]);
    if (!vp.varies[static_cast<size_t>(v)] || !has_attr(nd.attrs, "strides")) continue;
    const auto& st = attr_shape(nd.attrs, "strides");
    int axis = -1;  // the innermost axis (not the vector axis) along which the declared stride is 1
    for (size_t j = st.size(); j-- > 0 && axis < 0;) {
      const int a = j < vp.axis_of_dim.size() ? vp.axis_of_dim[j] : -1;
      if (a >= 0 && a != v && vp.varies[static_cast<size_t>(a)] && st[j].as_const() == std::optional<int64_t>(1))
        axis = a;
    }
    if (axis < 0 || (tile >= 0 && axis != tile)) return -1;
    tile = axis;
  }
  return tile;
}

std::shared_ptr<Kernel> Kernel::compile(const Graph& g) {
  std::shared_ptr<Kernel> k = build(g);
  if (k->concat_) return compile_concat_parts(std::move(k));
  const std::vector<bool> unit = k->default_unit_inner();
  k->source_ = k->variant(unit, false, k->default_tile_axis(unit))->source;
  return k;
}

size_t Kernel::num_variants() const {
  if (concat_) {
    size_t n = 0;
    for (const auto& p : concat_->parts) n += p->num_variants();
    return n;
  }
  std::lock_guard<std::mutex> l(mu_);
  return variants_.size();
}

Kernel::VariantSource Kernel::variant_source(const std::vector<bool>& unit_inner, bool rows_vector,
                                             int tile_axis) const {
  EmitOptions o;
  o.tile_axis = tile_axis;
  o.lanes = lanes_;
  o.unit_inner = unit_inner;
  o.precision = precision_;
  o.outer = outer_.get();
  const LoopNest* nest = rows_vector ? (outer_ ? nullptr : tiling_.rows_vector_nest()) : &nest_;
  if (!nest) throw IRError("kernel " + name_ + ": no vector-rows variant (not an inner reduction with a kept axis)");
  // The entry point is named by a hash of the positional source, so identical kernels get identical sources (one
  // compile, one cache entry) and different kernels different symbols (several can share one shared object).
  const Graph canon = positional_copy(body());
  o.func_name = "af_entry";
  VariantSource vs;
  const std::string placeholder = emit_cpu_kernel(canon, *nest, o);
  vs.func = "af_" + sha256_hex(placeholder).substr(0, 20);
  o.func_name = vs.func;
  // The compiled source is the placeholder one with its one `extern "C" int64_t af_entry(` renamed (emitting it again
  // cost ~2M of a warm Kernel::compile's 18.5M instructions for an f32 add, session 22); the header never names
  // af_entry.
  const std::string decl = "extern \"C\" int64_t af_entry(";
  const size_t at = placeholder.find(decl);
  if (at == std::string::npos || placeholder.find(decl, at + 1) != std::string::npos)
    throw IRError("kernel " + name_ + ": the emitted source does not declare af_entry exactly once");
  vs.compiled = placeholder;
  vs.compiled.replace(at, decl.size(), "extern \"C\" int64_t " + vs.func + "(");
  vs.readable = emit_cpu_kernel(body(), *nest, o);
  return vs;
}

std::shared_ptr<const Kernel::Variant> Kernel::add_variant(const std::vector<bool>& unit_inner, bool rows_vector,
                                                           VariantSource vs, JitKernel jit, int tile_axis) const {
  std::lock_guard<std::mutex> l(mu_);
  const auto key = std::make_tuple(rows_vector, unit_inner, tile_axis);
  auto it = variants_.find(key);
  if (it != variants_.end()) return it->second;  // another thread finished the same variant first
  auto v = std::make_shared<Variant>();
  v->source = std::move(vs.readable);
  v->jit = std::move(jit);
  v->fn = reinterpret_cast<KernelFn>(v->jit.entry);
  variants_[key] = v;
  return v;
}

std::shared_ptr<const Kernel::Variant> Kernel::variant(const std::vector<bool>& unit_inner, bool rows_vector,
                                                       int tile_axis) const {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = variants_.find(std::make_tuple(rows_vector, unit_inner, tile_axis));
    if (it != variants_.end()) return it->second;
  }
  VariantSource vs = variant_source(unit_inner, rows_vector, tile_axis);
  JitKernel jit = jit_compile(vs.compiled, vs.func, name_);
  return add_variant(unit_inner, rows_vector, std::move(vs), std::move(jit), tile_axis);
}

Bindings Kernel::given_seed() const {
  Bindings seed;
  for (const std::string& s : given_symbols_) {
    auto it = t_given != nullptr ? t_given->find(s) : Bindings::const_iterator{};
    if (t_given == nullptr || it == t_given->end()) {
      throw IRError("kernel " + name_ + ": size symbol " + s +
                    " is not determined by the input sizes and its value was not given (Kernel::run's `given` "
                    "bindings; the kernel's given symbols are its caller's to pass)");
    }
    seed[s] = it->second;
  }
  if (t_given == nullptr) return seed;
  // Any other symbol of the kernel the caller gives is taken as given too: solving an input size for it is right
  // only for a size symbol (>= 0), while a scalar argument's symbol may be negative (x[n:] reads an input of size
  // -n; the build-time trial, at positive values, found -n determines n).
  for (const std::string& s : symbols_)
    if (auto it = t_given->find(s); it != t_given->end()) seed.emplace(s, it->second);
  return seed;
}

Bindings Kernel::bind(const std::vector<HostTensor>& inputs) const {
  const size_t ni = static_cast<size_t>(nest_.num_inputs);
  if (inputs.size() != ni)
    throw IRError("kernel " + name_ + ": expected " + std::to_string(ni) + " inputs, got " +
                  std::to_string(inputs.size()));
  std::vector<ShapeArg> args(ni);
  for (size_t i = 0; i < ni; ++i) {
    const Node& nd = body().node(nest_.operands[i]);
    const HostTensor& t = inputs[i];
    if (t.dtype != nd.dtype)
      throw IRError("kernel " + name_ + ": input %" + nd.name + " has dtype " + std::string(dtype_name(t.dtype)) +
                    ", expected " + std::string(dtype_name(nd.dtype)));
    if (t.sizes.size() != nd.shape.size())
      throw IRError("kernel " + name_ + ": input %" + nd.name + " has rank " + std::to_string(t.sizes.size()) +
                    ", expected " + std::to_string(nd.shape.size()));
    args[i] = ShapeArg{&nd, &t.sizes};
  }
  // Every input dim must evaluate (need = null), against the symbols the caller gives (given_seed).
  const Bindings seed = given_seed();
  try {
    Bindings b = bind_shape_symbols(args, nullptr, seed.empty() ? nullptr : &seed);
    check_sizes(graph_, b);  // a value of negative size (full {shape=[s0 - 10]} for s0 = 3)
    return b;
  } catch (const IRError& e) {
    throw IRError("kernel " + name_ + ": " + e.what());
  }
}

const Bindings* Kernel::given_bindings() const { return t_given; }

const Bindings* Kernel::exchange_given(const Bindings* g) {
  const Bindings* saved = t_given;
  t_given = g;
  return saved;
}

std::vector<std::vector<int64_t>> Kernel::output_sizes(const std::vector<HostTensor>& inputs,
                                                       const Bindings* given) const {
  GivenScope scope(given);  // a concat kernel's given symbols too (bind_concat reads them through given_seed)
  if (concat_) return concat_output_sizes(inputs);
  Bindings b = bind(inputs);
  std::vector<std::vector<int64_t>> out;
  for (ValueId o : graph_.outputs()) out.push_back(eval_shape(graph_.node(o).shape, b));
  return out;
}

void Kernel::run(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs,
                 const Bindings* given) const {
  stamp(&LaunchStages::start);
  GivenScope scope(given);
  // A kernel with given symbols is not replayed from the launch cache (its key is the operands' layout alone). A
  // caller's `given` values of other symbols are compared with the cached launch's bindings (run_cached).
  if (!outer_ && given_symbols_.empty() && run_cached(inputs, outputs)) {
    stamp(&LaunchStages::done);
    return;
  }
  if (concat_) {
    run_concat(inputs, outputs);  // the segments' own runs record their stages; `done` is the whole call's end
    stamp(&LaunchStages::done);
    return;
  }
  if (outer_) {
    run_outer(inputs, outputs);
    stamp(&LaunchStages::done);
    return;
  }
  Prepared p;
  if (!prepare(inputs, outputs, &p)) return;
  if (given_symbols_.empty()) store_launch(inputs, outputs, launch_entry(p));
  launch_tiled(graph_, p.rows_vector ? *tiling_.rows_vector_nest() : nest_, p.variant->fn, p.domain, p.data,
               p.candidate);
  stamp(&LaunchStages::done);
}

bool Kernel::prepare(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs, Prepared* p) const {
  Bindings b = bind(inputs);
  const size_t nops = nest_.operands.size();
  const size_t ni = static_cast<size_t>(nest_.num_inputs);
  if (outputs.size() != nops - ni)
    throw IRError("kernel " + name_ + ": expected " + std::to_string(nops - ni) + " outputs, got " +
                  std::to_string(outputs.size()));
  const int r = nest_.rank;
  LaunchDomain& d = p->domain;
  d = LaunchDomain{};
  d.sizes.resize(static_cast<size_t>(r));
  for (int a = 0; a < r; ++a) d.sizes[static_cast<size_t>(a)] = nest_.domain[static_cast<size_t>(a)].eval(b);
  std::vector<void*>& data = p->data;
  data.assign(nops, nullptr);
  for (size_t k = 0; k < nops; ++k) {
    const HostTensor& t = k < ni ? inputs[k] : outputs[k - ni];
    const ValueId id = nest_.operands[k];
    const Node& nd = graph_.node(id);
    const ValuePlacement& vp = nest_.values[static_cast<size_t>(id)];
    if (k >= ni) {
      if (t.dtype != nd.dtype)
        throw IRError("kernel " + name_ + ": output " + std::to_string(k - ni) + " has dtype " +
                      std::string(dtype_name(t.dtype)) + ", expected " + std::string(dtype_name(nd.dtype)));
      if (t.sizes != eval_shape(nd.shape, b))
        throw IRError("kernel " + name_ + ": output " + std::to_string(k - ni) + " has sizes " + t.describe() +
                      ", expected " + shape_str(nd.shape));
    }
    std::vector<int64_t> st(static_cast<size_t>(r), 0);
    for (size_t j = 0; j < vp.axis_of_dim.size(); ++j) {
      const int a = vp.axis_of_dim[j];
      if (vp.varies[static_cast<size_t>(a)]) st[static_cast<size_t>(a)] = t.strides[j];
    }
    d.strides.push_back(std::move(st));
    d.varies.push_back(vp.varies);
    data[k] = t.data;
  }
  for (ValueId it : nest_.iotas) {
    const ValuePlacement& vp = nest_.values[static_cast<size_t>(it)];
    std::vector<int64_t> st(static_cast<size_t>(r), 0);
    for (int a = 0; a < r; ++a)
      if (vp.varies[static_cast<size_t>(a)]) st[static_cast<size_t>(a)] = 1;
    d.strides.push_back(std::move(st));
    d.varies.push_back(vp.varies);
  }
  // A kept axis of size 0 with outputs that do not vary along it (and so still have elements): run that axis once,
  // pointing every empty operand at a zeroed scratch with zero strides. Only values that vary along the axis read
  // those operands, and they only feed the empty outputs. Reduced axes of size 0 need nothing: their loops are empty.
  static thread_local std::vector<int64_t> scratch(256, 0);
  // A reduced axis of size 0 leaves the loops over R empty, so full outputs (those varying along R) are never written
  // even when they still have elements (they do not vary along the empty axis itself; fuzz seeds 777461, 777567).
  // There is nothing to reduce in that case, so the reference interpreter computes the outputs (exact semantics of
  // every op and of each empty reduction; cost proportional to the outputs only).
  bool empty_reduce_axis = false;
  for (int a = 0; a < r; ++a)
    if (nest_.is_reduce[static_cast<size_t>(a)] && d.sizes[static_cast<size_t>(a)] == 0) empty_reduce_axis = true;
  if (empty_reduce_axis) {
    for (size_t k = ni; k < nops; ++k)
      if (!nest_.values[static_cast<size_t>(nest_.operands[k])].kept && outputs[k - ni].numel() > 0) {
        interpret_into(graph_, inputs, outputs, InterpretOptions{precision_}, given_bindings());
        return false;
      }
  }
  bool empty_kept_axis = false;
  for (int a = 0; a < r; ++a)
    if (!nest_.is_reduce[static_cast<size_t>(a)] && d.sizes[static_cast<size_t>(a)] == 0) empty_kept_axis = true;
  if (empty_kept_axis) {
    bool any_output = false;
    for (const HostTensor& t : outputs) any_output = any_output || t.numel() > 0;
    if (!any_output) return false;
    for (int a = 0; a < r; ++a)
      if (!nest_.is_reduce[static_cast<size_t>(a)] && d.sizes[static_cast<size_t>(a)] == 0)
        d.sizes[static_cast<size_t>(a)] = 1;
    for (size_t k = 0; k < nops; ++k) {
      const HostTensor& t = k < ni ? inputs[k] : outputs[k - ni];
      if (t.numel() != 0) continue;
      std::fill(scratch.begin(), scratch.end(), 0);
      data[k] = scratch.data();
      std::fill(d.strides[k].begin(), d.strides[k].end(), 0);
    }
  }
  stamp(&LaunchStages::bound);
  merge_axes(nest_, d);
  const TilingDecision dec = tiling_.decide(d.sizes);
  stamp(&LaunchStages::tiled);
  if (dec.pick().schedule.rows <= 0) return false;
  // Vector-rows: the same call in the permuted axis order of its own variant (tiling/rows_vector.h).
  const bool rows_vector = dec.pick().kind == TilingKind::VectorRows;
  if (rows_vector) permute_launch_domain(d, *tiling_.rows_vector_perm());
  const int v = nest_.vec_axis();
  std::vector<bool> unit(nops, true);
  for (size_t k = 0; k < nops; ++k)
    if (d.varies[k][static_cast<size_t>(v)])
      unit[k] = d.strides[k][static_cast<size_t>(v)] == 1 || d.sizes[static_cast<size_t>(v)] <= 1;
  // Operands read through a transpose of an elementwise kernel: the transposed-tile loop (emit_tiles.cpp).
  const int tile_axis = outer_ || rows_vector ? -1 : transpose_tile_axis(nest_, d, unit, lanes_);
  auto var = variant(unit, rows_vector, tile_axis);
  stamp(&LaunchStages::variant);
  TilingCandidate c = dec.pick();
  EmitOptions eo;
  eo.unit_inner = unit;
  // Lane-by-lane operands along the kept vector axis: the column-block schedule. Vector-rows keeps the schedule its
  // estimate was made for (its variant numbers rows either way; any vblock is valid for both numberings).
  if (tile_axis >= 0) {
    eo.lanes = lanes_;
    eo.tile_axis = tile_axis;
    c.schedule = tile_schedule(d.sizes, c.schedule, tile_height(body(), nest_, eo), tile_axis);
  } else if (c.kind != TilingKind::Split && !rows_vector && strided_vector_operand(nest_, eo)) {
    c.schedule = column_block_schedule(nest_, d.sizes, c.schedule, lanes_);
  }
  p->candidate = c;
  p->rows_vector = rows_vector;
  p->variant = std::move(var);
  p->bindings = std::move(b);
  return true;
}

}  // namespace autofuse
