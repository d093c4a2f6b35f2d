// The tiled launcher (see launch.h).
#include "autofuse/tiling/launch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

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

/// Adds (Sum; Mean: times len / extent, the slice's share of the reduced axis) or folds (Amax, Amin) the `n` partials
/// of one slice, stored in dtype t at p, into acc[0, n), element by element; `first`: the slice is the first (max / min
/// start from it). NaN propagates through max / min (std::max would drop a NaN on either side): nan[e] records it.
template <class T, class Load>
void fold_partials(const unsigned char* p, int64_t n, OpKind op, double len, double extent, bool first, double* acc,
                   char* nan, Load load) {
  const T* q = reinterpret_cast<const T*>(p);
  if (op == OpKind::Sum) {
    for (int64_t e = 0; e < n; ++e) acc[e] += static_cast<double>(load(q[e]));
  } else if (op == OpKind::Mean) {
    for (int64_t e = 0; e < n; ++e) acc[e] += static_cast<double>(load(q[e])) * len / extent;
  } else {
    const bool mx = op == OpKind::Amax;
    for (int64_t e = 0; e < n; ++e) {
      const double v = static_cast<double>(load(q[e]));
      if (std::isnan(v)) nan[e] = 1;
      acc[e] = first ? v : mx ? std::max(acc[e], v) : std::min(acc[e], v);
    }
  }
}

void fold_slice(DType t, const unsigned char* p, int64_t n, OpKind op, double len, double extent, bool first,
                double* acc, char* nan) {
  switch (t) {
    case DType::Float32:
      return fold_partials<float>(p, n, op, len, extent, first, acc, nan, [](float v) { return v; });
    case DType::Float64:
      return fold_partials<double>(p, n, op, len, extent, first, acc, nan, [](double v) { return v; });
    case DType::Float16:
      return fold_partials<uint16_t>(p, n, op, len, extent, first, acc, nan, half_bits_to_float);
    case DType::BFloat16:
      return fold_partials<uint16_t>(p, n, op, len, extent, first, acc, nan, bf16_bits_to_float);
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

/// One output of a split call: its dtype, the kept axes it varies along (its partials are contiguous over them, the
/// innermost last), its element count and the byte offset of its partials in the scratch buffer (slice 0's; slice p's
/// follow at p * count * esize).
struct SplitOut {
  DType dtype = DType::Float32;
  int esize = 4;
  std::vector<size_t> axes;
  int64_t count = 1;
  size_t at = 0;
};

/// The calling thread's buffers for split calls, reused from call to call (a launch allocates nothing once they have
/// grown; kernels may run on several threads at once, each with its own).
struct SplitScratch {
  std::vector<SplitOut> outs;
  std::vector<unsigned char> partials;
  std::vector<int64_t> sizes, flat;
  std::vector<void*> ptrs;
  std::vector<double> acc;
  std::vector<char> nan;
  std::vector<int64_t> index;
};

void launch_split(const Graph& g, const LoopNest& nest, TiledKernelFn fn, const LaunchDomain& d,
                  const std::vector<void*>& data, const TilingCandidate& c) {
  thread_local SplitScratch sc;
  const size_t nops = nest.operands.size(), ni = static_cast<size_t>(nest.num_inputs), r = d.sizes.size();
  const size_t ax = static_cast<size_t>(c.split_axis);
  const int64_t extent = d.sizes[ax];
  const int64_t chunk = c.slice > 0 ? c.slice : (extent + c.splits - 1) / c.splits;
  const int64_t parts = (extent + chunk - 1) / chunk;
  // Per output: the kept axes it varies along and its place in the partials buffer.
  sc.outs.resize(nops - ni);
  size_t bytes = 0;
  for (size_t j = 0; j < nops - ni; ++j) {
    SplitOut& o = sc.outs[j];
    const size_t k = ni + j;
    o.dtype = g.node(nest.operands[k]).dtype;
    o.esize = dtype_size(o.dtype);
    o.axes.clear();
    o.count = 1;
    for (size_t a = 0; a < r; ++a)
      if (d.varies[k][a] && !nest.is_reduce[a] && d.sizes[a] > 1) {
        o.axes.push_back(a);
        o.count *= d.sizes[a];
      }
    o.at = bytes;
    bytes += static_cast<size_t>(parts * o.count * o.esize + 63) / 64 * 64;
  }
  if (sc.partials.size() < bytes) sc.partials.resize(bytes);
  // Flat strides, the outputs re-pointed at their contiguous partials.
  sc.flat.resize(nops * r);
  for (size_t k = 0; k < nops; ++k)
    for (size_t a = 0; a < r; ++a) sc.flat[k * r + a] = d.strides[k][a];
  for (size_t j = 0; j < nops - ni; ++j) {
    const size_t k = ni + j;
    for (size_t a = 0; a < r; ++a) sc.flat[k * r + a] = 0;
    int64_t st = 1;
    for (size_t i = sc.outs[j].axes.size(); i-- > 0;) {
      sc.flat[k * r + sc.outs[j].axes[i]] = st;
      st *= d.sizes[sc.outs[j].axes[i]];
    }
  }
  // Per slice: sizes and data pointers.
  sc.sizes.resize(static_cast<size_t>(parts) * r);
  sc.ptrs.resize(static_cast<size_t>(parts) * nops);
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t b = p * chunk, len = std::min(chunk, extent - b);
    int64_t* sz = sc.sizes.data() + p * static_cast<int64_t>(r);
    std::copy(d.sizes.begin(), d.sizes.end(), sz);
    sz[ax] = len;
    void** pp = sc.ptrs.data() + p * static_cast<int64_t>(nops);
    for (size_t k = 0; k < ni; ++k) {
      const int64_t off = d.varies[k][ax] ? b * d.strides[k][ax] : 0;
      const int es = dtype_size(g.node(nest.operands[k]).dtype);
      pp[k] = static_cast<unsigned char*>(data[k]) + off * es;
    }
    for (size_t j = 0; j < nops - ni; ++j)
      pp[ni + j] = sc.partials.data() + sc.outs[j].at + p * sc.outs[j].count * sc.outs[j].esize;
  }
  // The slice schedule (made for the first, longest slice) fits every slice: rows do not depend on the reduced
  // extent, and vblock / blk only affect speed. Each slice's partials are the same whichever thread runs it.
  const Schedule s = c.schedule;
  const int64_t* sizes = sc.sizes.data();
  const int64_t* flat = sc.flat.data();
  void* const* ptrs = sc.ptrs.data();
  KernelStatus status{0};
  parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      note_kernel_status(status, fn(sizes + p * static_cast<int64_t>(r), flat, ptrs + p * static_cast<int64_t>(nops), 0,
                                    s.rows, s.vblock, s.blk,
                                    0));  // partials: small, read back at once (no streaming stores)
  });
  check_kernel_status(status);
  // Combine into the real outputs: slice by slice in slice order (the order is fixed by the sizes: the thread count
  // only decides which thread ran which slices), in double, rounded once to the output dtype.
  for (size_t j = 0; j < nops - ni; ++j) {
    const SplitOut& o = sc.outs[j];
    const size_t k = ni + j;
    const OpKind op = g.node(nest.operands[k]).op;
    sc.acc.assign(static_cast<size_t>(o.count), 0.0);
    sc.nan.assign(static_cast<size_t>(o.count), 0);
    for (int64_t p = 0; p < parts; ++p) {
      const double len = static_cast<double>(std::min(chunk, extent - p * chunk));
      fold_slice(o.dtype, sc.partials.data() + o.at + p * o.count * o.esize, o.count, op, len,
                 static_cast<double>(extent), p == 0, sc.acc.data(), sc.nan.data());
    }
    // NaN where a max / min saw one; then the stores, walking the output's axes as an odometer (innermost fastest).
    for (int64_t e = 0; e < o.count; ++e)
      if (sc.nan[static_cast<size_t>(e)]) sc.acc[static_cast<size_t>(e)] = std::numeric_limits<double>::quiet_NaN();
    const size_t na = o.axes.size();
    sc.index.assign(na, 0);
    unsigned char* base = static_cast<unsigned char*>(data[k]);
    int64_t off = 0;
    for (int64_t e = 0; e < o.count; ++e) {
      store_elem(base + off * o.esize, o.dtype, sc.acc[static_cast<size_t>(e)]);
      for (size_t i = na; i-- > 0;) {
        const size_t a = o.axes[i];
        off += d.strides[k][a];
        if (++sc.index[i] < d.sizes[a]) break;
        off -= d.sizes[a] * d.strides[k][a];
        sc.index[i] = 0;
      }
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
  KernelStatus status{0};
  parallel_for(s.rows, s.grain, [&](int64_t b0, int64_t b1) {
    note_kernel_status(status, fn(sz, st, dp, b0, b1, s.vblock, s.blk, s.launch_flags()));
  });
  check_kernel_status(status);
}

void check_kernel_status(const KernelStatus& status) {
  const int64_t rc = status.load();
  if (rc == 0) return;
  if (rc == kKernelStatusNoMemory) throw std::bad_alloc();
  throw std::runtime_error("autofuse: a kernel returned the unknown status " + std::to_string(rc));
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
    KernelStatus status{0};
    parallel_for(c.schedule.rows, std::max<int64_t>(1, c.schedule.grain), [&c, &status](int64_t b0, int64_t b1) {
      note_kernel_status(status, c.fn(c.sizes, c.strides, c.data, b0, b1, c.schedule.vblock, c.schedule.blk,
                                      c.schedule.launch_flags()));
    });
    check_kernel_status(status);
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
  KernelStatus status{0};
  parallel_for(most, cgrain, [&calls, &status, most, step](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; b += step) {
      const int64_t e = std::min(b1, b + step);
      for (const RowLaunch& c : calls) {
        const int64_t rows = c.schedule.rows;
        if (rows <= 0) continue;
        // rows * b in 128 bits: both are row counts, whose product may pass 2^63.
        const int64_t lo = static_cast<int64_t>(static_cast<__int128>(rows) * b / most);
        const int64_t hi = static_cast<int64_t>(static_cast<__int128>(rows) * e / most);
        if (lo < hi)
          note_kernel_status(status, c.fn(c.sizes, c.strides, c.data, lo, hi, c.schedule.vblock, c.schedule.blk,
                                          c.schedule.launch_flags()));
      }
    }
  });
  check_kernel_status(status);
}

}  // namespace autofuse
