// Kernel::run for kernels with outer (cross-row) reductions (schedule/outer_reduce.h): the rows are split into chunks
// whose number depends on the sizes only; each chunk runs the generated row loop with its own partials; the partials
// are then combined in chunk order, rounded to each reduction's dtype, and the epilogue runs on the host.
#include <cmath>
#include <cstring>
#include <limits>

#include "autofuse/codegen/cpu/emit.h"
#include "autofuse/codegen/kernel.h"
#include "autofuse/codegen/kernel_variant.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/runtime/thread_pool.h"
#include "autofuse/schedule/schedule.h"

namespace autofuse {
namespace {

/// At most this many chunks (partial sets) per call, and at most this many partial elements (8 bytes each) in all.
constexpr int64_t kMaxChunks = 64;
constexpr int64_t kPartialBudget = int64_t{1} << 22;
/// A chunk should carry at least this many element-operations (rows x reduced elements x passes).
constexpr int64_t kChunkWork = 32768;

/// Chunks for `rows` rows: a function of the sizes only (never of the thread count), so results are reproducible.
int64_t chunk_count(int64_t rows, int64_t work_per_row, int64_t partials_per_chunk) {
  const int64_t min_rows = std::max<int64_t>(1, kChunkWork / std::max<int64_t>(1, work_per_row));
  int64_t c = std::min(kMaxChunks, (rows + min_rows - 1) / min_rows);
  c = std::min(c, std::max<int64_t>(1, kPartialBudget / std::max<int64_t>(1, partials_per_chunk)));
  return std::max<int64_t>(1, std::min(c, rows));
}

/// The bytes of v at p.
template <class T>
void put(char* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

/// Store v (already combined) into element `off` (elements) of a tensor of dtype t, rounded as eager stores it.
void store_double(void* base, int64_t off, DType t, double v) {
  char* p = static_cast<char*>(base) + off * dtype_size(t);
  switch (t) {
    case DType::Float16:
      return put(p, float_to_half_bits(static_cast<float>(v)));
    case DType::BFloat16:
      return put(p, float_to_bf16_bits(static_cast<float>(v)));
    case DType::Float32:
      return put(p, static_cast<float>(v));
    case DType::Float64:
      return put(p, v);
    default:
      throw IRError("cross-row reduction: float partials for a " + std::string(dtype_name(t)) + " result");
  }
}

/// Store an integer result (two's-complement wrap-around to the dtype; bool: != 0).
void store_int(void* base, int64_t off, DType t, int64_t v) {
  char* p = static_cast<char*>(base) + off * dtype_size(t);
  switch (t) {
    case DType::Bool:
      return put(p, static_cast<uint8_t>(v != 0));
    case DType::UInt8:
      return put(p, static_cast<uint8_t>(v));
    case DType::Int8:
      return put(p, static_cast<int8_t>(v));
    case DType::Int16:
      return put(p, static_cast<int16_t>(v));
    case DType::Int32:
      return put(p, static_cast<int32_t>(v));
    case DType::Int64:
      return put(p, v);
    default:
      return store_double(base, off, t, static_cast<double>(v));
  }
}

}  // namespace

void Kernel::run_outer(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs) const {
  const OuterPlan& pl = *outer_;
  Bindings b = bind(inputs);
  const size_t nout = graph_.outputs().size();
  if (outputs.size() != nout)
    throw IRError("kernel " + name_ + ": expected " + std::to_string(nout) + " outputs, got " +
                  std::to_string(outputs.size()));
  for (size_t i = 0; i < nout; ++i) {
    const Node& nd = graph_.node(graph_.outputs()[i]);
    if (outputs[i].dtype != nd.dtype)
      throw IRError("kernel " + name_ + ": output " + std::to_string(i) + " has dtype " +
                    std::string(dtype_name(outputs[i].dtype)) + ", expected " + std::string(dtype_name(nd.dtype)));
    if (outputs[i].sizes != eval_shape(nd.shape, b))
      throw IRError("kernel " + name_ + ": output " + std::to_string(i) + " has sizes " + outputs[i].describe() +
                    ", expected " + shape_str(nd.shape));
  }
  const int r = nest_.rank;
  const size_t ni = static_cast<size_t>(nest_.num_inputs), nreal = static_cast<size_t>(pl.num_real_outputs);
  const size_t nops = nest_.operands.size();
  std::vector<int64_t> sizes(static_cast<size_t>(r));
  bool empty = false;
  for (int a = 0; a < r; ++a) {
    sizes[static_cast<size_t>(a)] = nest_.domain[static_cast<size_t>(a)].eval(b);
    empty = empty || sizes[static_cast<size_t>(a)] == 0;
  }
  // An empty domain (no rows, or empty rows): nothing to stream; the interpreter gives every output its exact value
  // (empty sums 0, empty means NaN) at a cost proportional to the outputs.
  if (empty) {
    interpret_into(graph_, inputs, outputs, InterpretOptions{precision_}, given_bindings());
    return;
  }
  // Operand k's tensor for the real operands; the outer partials are laid out row-major over R (full) or scalar.
  std::vector<int> real_out(nreal, -1);
  for (size_t i = 0; i < nout; ++i)
    if (pl.output_sources[i].kind == OuterOutputSource::Main)
      real_out[static_cast<size_t>(pl.output_sources[i].index)] = static_cast<int>(i);
  int64_t rsize = 1, rows_total = 1;
  for (int a : pl.reduce_axes) rsize *= sizes[static_cast<size_t>(a)];
  for (int a : pl.kept_axes) rows_total *= sizes[static_cast<size_t>(a)];
  LaunchDomain d;
  d.sizes = sizes;
  std::vector<void*> data(nops, nullptr);
  for (size_t k = 0; k < nops; ++k) {
    const ValuePlacement& vp = nest_.values[static_cast<size_t>(nest_.operands[k])];
    std::vector<int64_t> st(static_cast<size_t>(r), 0);
    if (k < ni + nreal) {
      const HostTensor& t = k < ni ? inputs[k] : outputs[static_cast<size_t>(real_out[k - ni])];
      for (size_t j = 0; j < vp.axis_of_dim.size(); ++j) {
        const int a = vp.axis_of_dim[j];
        if (vp.varies[static_cast<size_t>(a)]) st[static_cast<size_t>(a)] = t.strides[j];
      }
      data[k] = t.data;
    } else if (pl.reductions[k - ni - nreal].full) {
      int64_t s = 1;
      for (size_t j = pl.reduce_axes.size(); j-- > 0;) {
        const auto a = static_cast<size_t>(pl.reduce_axes[j]);
        st[a] = vp.varies[a] ? s : 0;
        s *= sizes[a];
      }
    }
    d.strides.push_back(std::move(st));
    d.varies.push_back(vp.varies);
  }
  for (ValueId it : nest_.iotas) {
    const ValuePlacement& vp = nest_.values[static_cast<size_t>(it)];
    std::vector<int64_t> st(static_cast<size_t>(r), 0);
    for (int a = 0; a < r; ++a)
      if (vp.varies[static_cast<size_t>(a)]) st[static_cast<size_t>(a)] = 1;
    d.strides.push_back(std::move(st));
    d.varies.push_back(vp.varies);
  }
  merge_axes(nest_, d);
  const int v = nest_.vec_axis();
  std::vector<bool> unit(nops, true);
  for (size_t k = 0; k < nops; ++k)
    if (d.varies[k][static_cast<size_t>(v)])
      unit[k] = d.strides[k][static_cast<size_t>(v)] == 1 || d.sizes[static_cast<size_t>(v)] <= 1;
  // The row schedule (a split of the reduced axis would need the partials of both levels).
  const TilingDecision dec = tiling_.decide(d.sizes);
  Schedule s = dec.pick().schedule;
  for (const TilingCandidate& c : dec.candidates)
    if (c.kind == TilingKind::Rows) s = c.schedule;
  const int64_t rows = s.rows;
  if (rows != rows_total)
    throw IRError("kernel " + name_ + ": internal error: the row schedule has " + std::to_string(rows) +
                  " rows, the domain " + std::to_string(rows_total));

  // Partials: per reduction, chunks x elements of 8 bytes, initialised to the reduction's identity.
  const size_t nred = pl.reductions.size();
  std::vector<int64_t> elems(nred), offset(nred);
  int64_t per_chunk = 0;
  for (size_t i = 0; i < nred; ++i) {
    elems[i] = pl.reductions[i].full ? rsize : 1;
    offset[i] = per_chunk;
    per_chunk += elems[i];
  }
  const int64_t passes = std::max(1, nest_.num_stages + 1);
  const int64_t chunks = chunk_count(rows, std::max<int64_t>(1, rsize) * passes, per_chunk);
  std::vector<uint64_t> part(static_cast<size_t>(chunks * per_chunk));
  for (size_t i = 0; i < nred; ++i) {
    const OuterReduction& red = pl.reductions[i];
    uint64_t init = 0;
    if (red.op == OpKind::Amax || red.op == OpKind::Amin) {
      const bool mx = red.op == OpKind::Amax;
      if (red.integer) {
        int64_t x = mx ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
        std::memcpy(&init, &x, 8);
      } else {
        double x = mx ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
        std::memcpy(&init, &x, 8);
      }
    }
    for (int64_t c = 0; c < chunks; ++c) std::fill_n(part.begin() + c * per_chunk + offset[i], elems[i], init);
  }
  std::vector<int64_t> flat(nops * static_cast<size_t>(r));
  for (size_t k = 0; k < nops; ++k)
    for (int a = 0; a < r; ++a)
      flat[k * static_cast<size_t>(r) + static_cast<size_t>(a)] = d.strides[k][static_cast<size_t>(a)];
  auto var = variant(unit);
  const KernelFn fn = var->fn;
  KernelStatus status{0};
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    std::vector<void*> ptrs = data;
    for (int64_t c = c0; c < c1; ++c) {
      for (size_t i = 0; i < nred; ++i) ptrs[ni + nreal + i] = part.data() + c * per_chunk + offset[i];
      const int64_t rb = rows * c / chunks, re = rows * (c + 1) / chunks;
      note_kernel_status(status,
                         fn(d.sizes.data(), flat.data(), ptrs.data(), rb, re, s.vblock, s.blk, s.launch_flags()));
    }
  });
  check_kernel_status(status);

  // Combine in chunk order, round to each reduction's dtype (contiguous, in its own shape).
  std::vector<HostTensor> results;
  for (size_t i = 0; i < nred; ++i) {
    const OuterReduction& red = pl.reductions[i];
    const Node& nd = graph_.node(red.node);
    HostTensor t = HostTensor::empty(nd.dtype, eval_shape(nd.shape, b));
    for (int64_t e = 0; e < elems[i]; ++e) {
      const uint64_t* q = part.data() + offset[i] + e;
      if (red.integer) {
        int64_t acc = 0;
        for (int64_t c = 0; c < chunks; ++c) {
          int64_t x;
          std::memcpy(&x, q + c * per_chunk, 8);
          if (c == 0)
            acc = x;
          else if (red.op == OpKind::Amax)
            acc = std::max(acc, x);
          else if (red.op == OpKind::Amin)
            acc = std::min(acc, x);
          else
            acc = static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(x));
        }
        store_int(t.data, e, nd.dtype, acc);
      } else {
        double acc = 0;
        for (int64_t c = 0; c < chunks; ++c) {
          double x;
          std::memcpy(&x, q + c * per_chunk, 8);
          if (c == 0 || std::isnan(x))
            acc = x;
          else if (std::isnan(acc))
            continue;
          else if (red.op == OpKind::Amax)
            acc = std::max(acc, x);
          else if (red.op == OpKind::Amin)
            acc = std::min(acc, x);
          else
            acc += x;
        }
        if (red.op == OpKind::Mean) acc /= static_cast<double>(rows_total);
        store_double(t.data, e, nd.dtype, acc);
      }
    }
    results.push_back(std::move(t));
  }
  // Outputs that are reductions: strided copies; the epilogue's outputs: the interpreter.
  std::vector<HostTensor> epi_in = results, epi_out;
  for (int gi : pl.epilogue_graph_inputs) epi_in.push_back(inputs[static_cast<size_t>(gi)]);
  for (size_t i = 0; i < nout; ++i) {
    const OuterOutputSource& src = pl.output_sources[i];
    if (src.kind == OuterOutputSource::Epilogue) epi_out.push_back(outputs[i]);
    if (src.kind != OuterOutputSource::Reduction) continue;
    const HostTensor& from = results[static_cast<size_t>(src.index)];
    const HostTensor& to = outputs[i];
    const int64_t esz = dtype_size(to.dtype), n = from.numel();
    for (int64_t e = 0; e < n; ++e) {
      int64_t off = 0, rest = e;
      for (size_t j = to.sizes.size(); j-- > 0;) {
        off += (rest % to.sizes[j]) * to.strides[j];
        rest /= to.sizes[j];
      }
      std::memcpy(static_cast<char*>(to.data) + off * esz, static_cast<const char*>(from.data) + e * esz,
                  static_cast<size_t>(esz));
    }
  }
  if (!epi_out.empty()) interpret_into(pl.epilogue, epi_in, epi_out, InterpretOptions{precision_}, given_bindings());
}

}  // namespace autofuse
