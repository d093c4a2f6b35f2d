// The tiled launcher (see launch.h).
#include "autofuse/tiling/launch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "autofuse/ir/tensor.h"
#include "autofuse/runtime/thread_pool.h"

namespace autofuse {

std::vector<int64_t> flat_launch_strides(const LaunchDomain& d, size_t nops) {
  const size_t r = d.sizes.size();
  std::vector<int64_t> flat(nops * r);
  for (size_t k = 0; k < nops; ++k)
    for (size_t a = 0; a < r; ++a) flat[k * r + a] = d.strides[k][a];
  return flat;
}

namespace {

double load_elem(const void* p, DType t) {
  switch (t) {
    case DType::Float32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::Float64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::Float16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return half_bits_to_float(b);
    }
    case DType::BFloat16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return bf16_bits_to_float(b);
    }
    default:
      throw IRError("split reduction: output dtype " + std::string(dtype_name(t)) + " is not a float type");
  }
}

void store_elem(void* p, DType t, double v) {
  switch (t) {
    case DType::Float32: {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      return;
    }
    case DType::Float64:
      std::memcpy(p, &v, 8);
      return;
    case DType::Float16: {
      uint16_t b = float_to_half_bits(static_cast<float>(v));
      std::memcpy(p, &b, 2);
      return;
    }
    case DType::BFloat16: {
      uint16_t b = float_to_bf16_bits(static_cast<float>(v));
      std::memcpy(p, &b, 2);
      return;
    }
    default:
      throw IRError("split reduction: output dtype " + std::string(dtype_name(t)) + " is not a float type");
  }
}

void launch_split(const Graph& g, const LoopNest& nest, TiledKernelFn fn, const LaunchDomain& d,
                  const std::vector<void*>& data, const TilingCandidate& c) {
  const size_t nops = nest.operands.size(), ni = static_cast<size_t>(nest.num_inputs), r = d.sizes.size();
  const size_t ax = static_cast<size_t>(c.split_axis);
  const int64_t extent = d.sizes[ax];
  const int64_t chunk = (extent + c.splits - 1) / c.splits;
  const int64_t parts = (extent + chunk - 1) / chunk;
  // Per output: the kept axes it varies along (partials are contiguous over them) and the partial buffer.
  struct Out {
    DType dtype;
    int esize;
    std::vector<size_t> axes;
    int64_t count;
    std::vector<unsigned char> buf;
  };
  std::vector<Out> outs;
  for (size_t k = ni; k < nops; ++k) {
    const Node& nd = g.node(nest.operands[k]);
    Out o;
    o.dtype = nd.dtype;
    o.esize = dtype_size(nd.dtype);
    o.count = 1;
    for (size_t a = 0; a < r; ++a)
      if (d.varies[k][a] && !nest.is_reduce[a] && d.sizes[a] > 1) {
        o.axes.push_back(a);
        o.count *= d.sizes[a];
      }
    o.buf.resize(static_cast<size_t>(parts * o.count * o.esize));
    outs.push_back(std::move(o));
  }
  // Per slice: sizes, strides (outputs re-pointed at their contiguous partials), data pointers, schedule.
  std::vector<std::vector<int64_t>> sizes(static_cast<size_t>(parts), d.sizes);
  const std::vector<int64_t> flat_base = flat_launch_strides(d, nops);
  std::vector<int64_t> flat = flat_base;
  for (size_t j = 0; j < outs.size(); ++j) {
    const size_t k = ni + j;
    for (size_t a = 0; a < r; ++a) flat[k * r + a] = 0;
    int64_t st = 1;
    for (size_t i = outs[j].axes.size(); i-- > 0;) {
      flat[k * r + outs[j].axes[i]] = st;
      st *= d.sizes[outs[j].axes[i]];
    }
  }
  std::vector<std::vector<void*>> ptrs(static_cast<size_t>(parts), data);
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t b = p * chunk, len = std::min(chunk, extent - b);
    sizes[static_cast<size_t>(p)][ax] = len;
    for (size_t k = 0; k < ni; ++k) {
      const int64_t off = d.varies[k][ax] ? b * d.strides[k][ax] : 0;
      const int es = dtype_size(g.node(nest.operands[k]).dtype);
      ptrs[static_cast<size_t>(p)][k] = static_cast<unsigned char*>(data[k]) + off * es;
    }
    for (size_t j = 0; j < outs.size(); ++j)
      ptrs[static_cast<size_t>(p)][ni + j] = outs[j].buf.data() + p * outs[j].count * outs[j].esize;
  }
  // The slice schedule (made for the first, longest slice) fits every slice: rows do not depend on the reduced
  // extent, and vblock / blk only affect speed.
  const Schedule s = c.schedule;
  parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      fn(sizes[static_cast<size_t>(p)].data(), flat.data(), ptrs[static_cast<size_t>(p)].data(), 0, s.rows, s.vblock,
         s.blk, 0);  // partials: small, read back at once (no streaming stores)
    }
  });
  // Combine into the real outputs.
  for (size_t j = 0; j < outs.size(); ++j) {
    const Out& o = outs[j];
    const size_t k = ni + j;
    const OpKind op = g.node(nest.operands[k]).op;
    for (int64_t e = 0; e < o.count; ++e) {
      double acc = 0;
      bool nan = false;
      for (int64_t p = 0; p < parts; ++p) {
        const double v = load_elem(o.buf.data() + (p * o.count + e) * o.esize, o.dtype);
        if (std::isnan(v)) nan = true;
        const double len = static_cast<double>(std::min(chunk, extent - p * chunk));
        if (op == OpKind::Sum)
          acc += v;
        else if (op == OpKind::Mean)
          acc += v * len / static_cast<double>(extent);
        else if (op == OpKind::Amax)
          acc = p == 0 ? v : std::max(acc, v);
        else
          acc = p == 0 ? v : std::min(acc, v);
      }
      if (nan && (op == OpKind::Amax || op == OpKind::Amin)) acc = std::numeric_limits<double>::quiet_NaN();
      // Output offset: decompose e over the output's axes (innermost last) with the real strides.
      int64_t off = 0, rest = e;
      for (size_t i = o.axes.size(); i-- > 0;) {
        const size_t a = o.axes[i];
        off += (rest % d.sizes[a]) * d.strides[k][a];
        rest /= d.sizes[a];
      }
      store_elem(static_cast<unsigned char*>(data[k]) + off * o.esize, o.dtype, acc);
    }
  }
}

}  // namespace

void launch_tiled(const Graph& g, const LoopNest& nest, TiledKernelFn fn, const LaunchDomain& d,
                  const std::vector<void*>& data, const TilingCandidate& c) {
  if (c.schedule.rows <= 0) return;
  if (c.kind == TilingKind::Split) {
    launch_split(g, nest, fn, d, data, c);
    return;
  }
  const size_t nops = nest.operands.size();
  const std::vector<int64_t> flat = flat_launch_strides(d, nops);
  const Schedule s = c.schedule;
  const int64_t* sz = d.sizes.data();
  const int64_t* st = flat.data();
  void* const* dp = data.data();
  parallel_for(s.rows, s.grain,
               [&](int64_t b0, int64_t b1) { fn(sz, st, dp, b0, b1, s.vblock, s.blk, s.launch_flags()); });
}

void launch_rows_together(const std::vector<RowLaunch>& calls) {
  // No per-launch storage (this runs on every launch, launch-cache hits included).
  size_t live = 0;
  int64_t total = 0, most = 0, grain = 0, vmax = 1;
  const RowLaunch* only = nullptr;
  for (const RowLaunch& c : calls) {
    if (c.schedule.rows <= 0) continue;
    ++live;
    only = &c;
    total += c.schedule.rows;
    most = std::max(most, c.schedule.rows);
    grain = grain == 0 ? c.schedule.grain : std::min(grain, c.schedule.grain);
    vmax = std::max(vmax, c.schedule.vblock);
  }
  if (live == 0) return;
  if (live == 1) {
    const RowLaunch& c = *only;
    parallel_for(c.schedule.rows, std::max<int64_t>(1, c.schedule.grain), [&c](int64_t b0, int64_t b1) {
      c.fn(c.sizes, c.strides, c.data, b0, b1, c.schedule.vblock, c.schedule.blk, c.schedule.launch_flags());
    });
    return;
  }
  // Several calls (the segments of a concat kernel): the common index space [0, most); index b starts row
  // rows_j * b / most of call j, so a range of indices covers the same fraction of every call's rows. A chunk walks
  // its range in blocks of about kInterleaveElems elements per call, running every call's rows of a block before the
  // next block: the segments of one output row follow each other while their shared inputs (rotary: both halves of
  // x read by both segments) are still in L1, instead of one thread streaming all of segment 0 and another all of
  // segment 1, each reading every input line from the last-level cache.
  const int64_t step = std::max<int64_t>(1, kInterleaveElems / vmax);
  // Tasks of at least `grain` rows in all, as before: `grain` rows are grain * most / total common indices.
  const int64_t cgrain = std::max<int64_t>(1, (grain * most + total - 1) / total);
  parallel_for(most, cgrain, [&calls, most, step](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; b += step) {
      const int64_t e = std::min(b1, b + step);
      for (const RowLaunch& c : calls) {
        const int64_t rows = c.schedule.rows;
        if (rows <= 0) continue;
        // rows * b in 128 bits: both are row counts, whose product may pass 2^63.
        const int64_t lo = static_cast<int64_t>(static_cast<__int128>(rows) * b / most);
        const int64_t hi = static_cast<int64_t>(static_cast<__int128>(rows) * e / most);
        if (lo < hi)
          c.fn(c.sizes, c.strides, c.data, lo, hi, c.schedule.vblock, c.schedule.blk, c.schedule.launch_flags());
      }
    }
  });
}

}  // namespace autofuse
