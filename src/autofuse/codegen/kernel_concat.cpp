// Kernels with concats (rotary embedding's rotate_half, cos / sin of a doubled frequency table): built, compiled and
// run as one ordinary elementwise kernel per concat segment (schedule/concat_split.h), on slices of the operands, all
// segments in one parallel launch.
#include "autofuse/codegen/kernel_concat.h"

#include <exception>
#include <set>
#include <string>

#include "autofuse/codegen/kernel_variant.h"
#include "autofuse/ir/bind_symbols.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/tiling/launch.h"

namespace autofuse {
namespace {

/// The symbols a concat kernel's own launch evaluates: those of its output shapes and of the segment widths. Symbols
/// used only inside the segments (or only in an input's strides hint) are the segments' business: each segment
/// kernel binds its own inputs.
std::set<std::string> concat_launch_symbols(const Graph& g, const ConcatSplit& split) {
  std::set<std::string> need;
  for (ValueId o : g.outputs())
    for (const Expr& d : g.node(o).shape) d.collect_symbols(need);
  for (const Expr& w : split.widths) w.collect_symbols(need);
  return need;
}

/// concat_launch_symbols and the symbols the segments `parts` take from the parent (their given symbols: a
/// segment whose only input is the broadcast [1, 1, D] of a class token, written [s0, 1, D]), except the segments'
/// width symbols (ConcatSegment::width_symbol), which the parent evaluates from the widths rather than binds.
std::set<std::string> concat_need(const Graph& g, const ConcatSplit& split,
                                  const std::vector<std::shared_ptr<Kernel>>& parts) {
  std::set<std::string> need = concat_launch_symbols(g, split), widths;
  for (const ConcatSegment& s : split.segments)
    if (!s.width_symbol.empty()) widths.insert(s.width_symbol);
  for (const auto& p : parts)
    if (p)
      for (const std::string& sym : p->given_symbols())
        if (!widths.count(sym)) need.insert(sym);
  return need;
}

/// The Kernel::ConcatParts of a split of g whose segment kernels are `parts`.
Kernel::ConcatParts make_parts(const Graph& g, ConcatSplit split, std::vector<std::shared_ptr<Kernel>> parts) {
  Kernel::ConcatParts p;
  p.need = concat_need(g, split, parts);
  std::vector<int64_t> w;
  for (const Expr& e : split.widths)
    if (auto c = e.as_const()) w.push_back(*c);
  if (w.size() == split.widths.size()) p.const_widths = std::move(w);
  p.split = std::move(split);
  p.parts = std::move(parts);
  return p;
}

/// The segment sources one after the other, each under a comment naming the segment.
std::string joined_source(const std::vector<std::shared_ptr<Kernel>>& parts) {
  std::string s;
  for (size_t j = 0; j < parts.size(); ++j)
    s += "// ---- concat segment " + std::to_string(j) + " of " + std::to_string(parts.size()) + " ----\n" +
         parts[j]->source();
  return s;
}

/// t narrowed to [offset, offset + width) along dim (a view: same storage and strides).
HostTensor narrow(const HostTensor& t, int dim, int64_t offset, int64_t width) {
  HostTensor s = t;
  const size_t d = static_cast<size_t>(dim);
  const int64_t bytes = offset * t.strides[d] * dtype_size(t.dtype);
  // An empty tensor may have no storage (null data): nothing is read through it, and null + offset would be UB.
  if (bytes != 0 && t.data != nullptr) s.data = static_cast<char*>(t.data) + bytes;
  s.sizes[d] = width;
  return s;
}

}  // namespace

Kernel::Kernel(const Graph& g, std::shared_ptr<const ConcatParts> parts) : graph_(g), concat_(std::move(parts)) {
  name_ = g.name();
  const std::set<std::string> syms = g.symbols();
  symbols_.assign(syms.begin(), syms.end());
  lanes_ = jit_lanes();
  precision_ = precision_policy_from_env();
  // What the launch needs (output shapes, widths, the segments' given symbols) and the parent's inputs do not bind is
  // the caller's to give, as for an ordinary kernel: cat([x, t.expand(n, -1)]) has the output [s0 + s1, D] and no
  // input of extent s1.
  given_symbols_ = unbound_symbols(g, concat_->need);
}

std::shared_ptr<Kernel> Kernel::build_concat(const Graph& g) {
  std::string why;
  auto split = plan_concat_split(g, &why);
  if (!split) throw IRError("kernel " + g.name() + ": " + why);
  std::vector<std::shared_ptr<Kernel>> parts;
  for (const ConcatSegment& s : split->segments) parts.push_back(build(s.graph));
  // A segment whose own inputs cannot bind a symbol it evaluates takes it from the parent's bindings (run_concat):
  // its width symbol from the parent's width, any other from what the parent binds from its input sizes (review 16a:
  // the class-token segment of ViT's concat) or takes from its caller (review 19: the broadcast mask tokens of MAE).
  auto p = std::make_shared<const ConcatParts>(make_parts(g, std::move(*split), std::move(parts)));
  return std::shared_ptr<Kernel>(new Kernel(g, p));
}

size_t Kernel::num_segments() const { return concat_ ? concat_->parts.size() : 0; }

Bindings Kernel::bind_concat(const std::vector<HostTensor>& inputs) const {
  const std::vector<ValueId> ins = graph_.inputs();
  if (inputs.size() != ins.size())
    throw IRError("kernel " + name_ + ": expected " + std::to_string(ins.size()) + " inputs, got " +
                  std::to_string(inputs.size()));
  std::vector<ShapeArg> args(ins.size());
  for (size_t i = 0; i < ins.size(); ++i) {
    const Node& nd = graph_.node(ins[i]);
    if (inputs[i].sizes.size() != nd.shape.size())
      throw IRError("kernel " + name_ + ": input %" + nd.name + " has rank " + std::to_string(inputs[i].sizes.size()) +
                    ", expected " + std::to_string(nd.shape.size()));
    args[i] = ShapeArg{&nd, &inputs[i].sizes};
  }
  const Bindings seed = given_seed();  // the caller's values of the kernel's symbols (a SymInt argument's)
  try {
    Bindings b = bind_shape_symbols(args, &concat_->need, seed.empty() ? nullptr : &seed);
    check_sizes(graph_, b);  // a value of negative size (full {shape=[s0 - 10]} for s0 = 3)
    return b;
  } catch (const IRError& e) {
    throw IRError("kernel " + name_ + ": " + e.what());
  }
}

std::vector<std::vector<int64_t>> Kernel::concat_output_sizes(const std::vector<HostTensor>& inputs) const {
  const Bindings b = bind_concat(inputs);
  std::vector<std::vector<int64_t>> out;
  for (ValueId o : graph_.outputs()) out.push_back(eval_shape(graph_.node(o).shape, b));
  return out;
}

void Kernel::run_concat(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs) const {
  const ConcatSplit& sp = concat_->split;
  if (inputs.size() != graph_.inputs().size() || outputs.size() != graph_.outputs().size())
    throw IRError("kernel " + name_ + ": expected " + std::to_string(graph_.inputs().size()) + " inputs and " +
                  std::to_string(graph_.outputs().size()) + " outputs, got " + std::to_string(inputs.size()) + " and " +
                  std::to_string(outputs.size()));
  // A segment takes symbols from the parent's bindings when it has given symbols, or when the parent's caller gave
  // values (which then reach every segment through the parent's bindings, Kernel::given_seed).
  const bool caller_gave = given_bindings() != nullptr;
  bool segments_given = caller_gave;
  for (const auto& p : concat_->parts) segments_given = segments_given || !p->given_symbols_.empty();
  Bindings b;  // bind_concat throws, naming the symbol, when a given symbol of the parent was not given
  if (!concat_->const_widths || segments_given || !given_symbols_.empty()) b = bind_concat(inputs);
  std::vector<int64_t> widths;
  if (concat_->const_widths) {
    widths = *concat_->const_widths;
  } else {
    for (const Expr& e : sp.widths) widths.push_back(e.eval(b));
  }
  // Each segment's width symbol takes the width's value (a broadcast-only segment cannot bind it from its inputs).
  for (size_t j = 0; j < sp.segments.size(); ++j)
    if (!sp.segments[j].width_symbol.empty()) b[sp.segments[j].width_symbol] = widths[j];
  // The `given` bindings of a segment's prepare / run on this thread, restored at the end of the scope.
  struct SegmentGiven {
    const Bindings* saved;
    explicit SegmentGiven(const Bindings* g) : saved(exchange_given(g)) {}
    ~SegmentGiven() { exchange_given(saved); }
    SegmentGiven(const SegmentGiven&) = delete;
    SegmentGiven& operator=(const SegmentGiven&) = delete;
  };
  int64_t total = 0;
  for (int64_t w : widths) total += w;
  auto check = [&](const HostTensor& t, int dim, const std::string& what) {
    if (dim >= static_cast<int>(t.sizes.size()) || t.sizes[static_cast<size_t>(dim)] != total)
      throw IRError("kernel " + name_ + ": " + what + " " + t.describe() + " should have size " +
                    std::to_string(total) + " along dim " + std::to_string(dim) + " (the concat axis)");
  };
  for (size_t k = 0; k < outputs.size(); ++k) check(outputs[k], sp.output_dim[k], "output " + std::to_string(k));
  // Each segment is prepared up to its launch here; the row-schedule ones then run as one parallel launch over all
  // their rows (tiling/launch.h launch_rows_together), each with its own vectorized entry point. A segment that
  // cannot join (a split reduction, an outer or concat kernel: none arises from plan_concat_split today) runs alone.
  // The launch is kept for the next calls with the same operand layouts (kernel_launch_cache.cpp): per segment,
  // which parent operand each of its operands slices and at which byte offset; dropped when a segment does not join.
  const size_t nseg = concat_->parts.size(), parent_ni = inputs.size();
  std::vector<Prepared> prep(nseg);
  std::vector<std::vector<int>> src(nseg);
  std::vector<std::vector<int64_t>> byte_off(nseg);
  std::vector<char> ready(nseg, 0);
  bool cacheable = given_symbols_.empty();  // run() does not replay a kernel with given symbols from the cache
  auto slice_offset = [](const HostTensor& t, int dim, int64_t offset) {
    return dim < 0 ? int64_t{0} : offset * t.strides[static_cast<size_t>(dim)] * dtype_size(t.dtype);
  };
  int64_t offset = 0;
  std::vector<HostTensor> in, out;
  for (size_t j = 0; j < nseg; ++j) {
    const ConcatSegment& seg = sp.segments[j];
    if (widths[j] == 0) continue;  // an empty segment writes nothing
    in.clear();
    out.clear();
    for (size_t i = 0; i < seg.parent_input.size(); ++i) {
      const HostTensor& t = inputs[static_cast<size_t>(seg.parent_input[i])];
      const int d = seg.input_dim[i];
      src[j].push_back(seg.parent_input[i]);
      byte_off[j].push_back(slice_offset(t, d, offset));
      if (d < 0) {
        in.push_back(t);
        continue;
      }
      check(t, d, "input " + std::to_string(seg.parent_input[i]));
      in.push_back(narrow(t, d, offset, widths[j]));
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      out.push_back(narrow(outputs[k], sp.output_dim[k], offset, widths[j]));
      src[j].push_back(static_cast<int>(parent_ni + k));
      byte_off[j].push_back(slice_offset(outputs[k], sp.output_dim[k], offset));
    }
    const Kernel& part = *concat_->parts[j];
    const Bindings* part_given = part.given_symbols_.empty() && !caller_gave ? nullptr : &b;
    SegmentGiven given(part_given);
    if (part.outer_ || part.concat_) {
      part.run(in, out, part_given);
      cacheable = false;
    } else if (part.prepare(in, out, &prep[j])) {
      if (prep[j].candidate.kind == TilingKind::Split) {
        launch_tiled(part.graph_, part.nest_, prep[j].variant->fn, prep[j].domain, prep[j].data, prep[j].candidate);
        cacheable = false;
      } else {
        ready[j] = 1;
      }
    } else {
      cacheable = false;  // completed by prepare (empty operands): not replayable from pointers
    }
    offset += widths[j];
  }
  auto entry = std::make_shared<CachedLaunch>();
  entry->bindings = b;  // what a later call's `given` values are compared with (run_cached)
  std::vector<RowLaunch> calls;
  for (size_t j = 0; j < nseg; ++j) {
    if (!ready[j]) continue;
    const Kernel& part = *concat_->parts[j];
    const LoopNest& nest = prep[j].rows_vector ? *part.tiling_.rows_vector_nest() : part.nest_;
    CachedLaunch::Call e;
    e.fn = prep[j].variant->fn;
    e.sizes = prep[j].domain.sizes;
    e.strides = flat_launch_strides(prep[j].domain, nest.operands.size());
    e.schedule = prep[j].candidate.schedule;
    // The segment's operands as prepare() numbers them (nest.operands: its inputs, then its outputs).
    if (src[j].size() != nest.operands.size()) cacheable = false;
    e.src = std::move(src[j]);
    e.byte_offset = std::move(byte_off[j]);
    entry->calls.push_back(std::move(e));
  }
  for (size_t j = 0, c = 0; j < nseg; ++j) {
    if (!ready[j]) continue;
    const CachedLaunch::Call& e = entry->calls[c++];
    RowLaunch r;
    r.fn = e.fn;
    r.sizes = e.sizes.data();
    r.strides = e.strides.data();
    r.data = prep[j].data.data();
    r.schedule = e.schedule;
    calls.push_back(r);
  }
  if (cacheable) store_launch(inputs, outputs, entry);  // a copy: `calls` points into *entry
  launch_rows_together(calls);
}

std::vector<Kernel::Compiled> Kernel::compile_many(const std::vector<Graph>& graphs, int threads) {
  bool any = false;
  for (const Graph& g : graphs) any = any || has_concat(g);
  if (!any) return compile_many_plain(graphs, threads);
  // Every segment of every concat kernel joins the batch as a graph of its own.
  std::vector<Compiled> out(graphs.size());
  std::vector<Graph> flat;
  std::vector<std::vector<size_t>> slots(graphs.size());
  std::vector<std::shared_ptr<Kernel>> shells(graphs.size());
  for (size_t i = 0; i < graphs.size(); ++i) {
    if (!has_concat(graphs[i])) {
      slots[i].push_back(flat.size());
      flat.push_back(graphs[i]);
      continue;
    }
    try {
      shells[i] = build(graphs[i]);  // build checks the symbols first, then build_concat
      for (const ConcatSegment& s : shells[i]->concat_->split.segments) {
        slots[i].push_back(flat.size());
        flat.push_back(s.graph);
      }
    } catch (...) {
      out[i].error = std::current_exception();
    }
  }
  std::vector<Compiled> built = compile_many_plain(flat, threads);
  for (size_t i = 0; i < graphs.size(); ++i) {
    if (out[i].error) continue;
    if (!shells[i]) {
      out[i] = built[slots[i][0]];
      continue;
    }
    std::vector<std::shared_ptr<Kernel>> parts;
    for (size_t s : slots[i]) {
      if (built[s].error && !out[i].error) out[i].error = built[s].error;
      parts.push_back(built[s].kernel);
    }
    if (out[i].error) continue;
    auto p = std::make_shared<const ConcatParts>(make_parts(graphs[i], shells[i]->concat_->split, std::move(parts)));
    out[i].kernel.reset(new Kernel(graphs[i], p));
    out[i].kernel->source_ = joined_source(p->parts);
  }
  return out;
}

std::shared_ptr<Kernel> Kernel::compile_concat_parts(std::shared_ptr<Kernel> k) {
  for (const auto& p : k->concat_->parts) {
    const std::vector<bool> unit = p->default_unit_inner();
    p->source_ = p->variant(unit, false, p->default_tile_axis(unit))->source;
  }
  k->source_ = joined_source(k->concat_->parts);
  return k;
}

}  // namespace autofuse
