// Launch-time axis merging and the default schedule.
#include "autofuse/schedule/schedule.h"

#include <algorithm>

namespace autofuse {

void merge_axes(const LoopNest& nest, LaunchDomain& d) {
  const int r = nest.rank;
  int t = r - 1;  // the axis the next outer axes merge into
  for (int a = r - 2; a >= 0; --a) {
    const auto ua = static_cast<size_t>(a), ut = static_cast<size_t>(t);
    bool ok = nest.is_reduce[ua] == nest.is_reduce[ut];
    for (size_t k = 0; ok && k < d.strides.size(); ++k) {
      if (d.varies[k][ua] != d.varies[k][ut]) {
        ok = false;
        break;
      }
      if (d.sizes[ua] == 1 || d.sizes[ut] == 1) continue;
      if (d.strides[k][ua] != d.strides[k][ut] * d.sizes[ut]) ok = false;
    }
    if (!ok) {
      t = a;
      continue;
    }
    for (auto& st : d.strides) {
      if (d.sizes[ut] == 1) st[ut] = st[ua];
      st[ua] = 0;
    }
    d.sizes[ut] *= d.sizes[ua];
    d.sizes[ua] = 1;
  }
}

Schedule choose_schedule(const LoopNest& nest, const std::vector<int64_t>& sizes, int lanes) {
  Schedule s;
  const int v = nest.vec_axis();
  int64_t rsize = 1, kouter = 1;
  for (int a = 0; a < nest.rank; ++a) {
    if (nest.is_reduce[static_cast<size_t>(a)])
      rsize *= sizes[static_cast<size_t>(a)];
    else if (a != v || nest.inner_reduction)
      kouter *= sizes[static_cast<size_t>(a)];
  }
  const int64_t passes = std::max(1, nest.num_stages + 1);
  const int64_t per_elem = std::max<int64_t>(1, rsize) * passes;
  if (nest.inner_reduction) {
    s.rows = kouter;
    s.vblock = lanes;
    s.grain = std::max<int64_t>(1, 65536 / per_elem);
  } else {
    const int64_t nv = sizes[static_cast<size_t>(v)];
    const int64_t nv_up = (nv + lanes - 1) / lanes * lanes;
    int64_t vb = (16384 / per_elem + lanes - 1) / lanes * lanes;
    if (!nest.reduce_axes().empty()) {  // whole groups of the grouped column walk (emit_rows.cpp)
      const int64_t group = int64_t{kColumnReduceVectors} * lanes;
      vb = std::max(group, (vb + group - 1) / group * group);
    }
    vb = std::max<int64_t>(lanes, std::min(vb, std::max<int64_t>(lanes, nv_up)));
    s.vblock = vb;
    s.rows = nv == 0 ? 0 : kouter * ((nv + vb - 1) / vb);
    s.grain = std::max<int64_t>(1, 65536 / (vb * per_elem));
  }
  return s;
}

Schedule column_block_schedule(const LoopNest& nest, const std::vector<int64_t>& sizes, const Schedule& s, int lanes,
                               int64_t max_vblock) {
  if (nest.inner_reduction || s.rows <= 0 || s.vblock <= 0) return s;
  const int64_t l = std::max(1, lanes);
  const int64_t cap = std::max<int64_t>(l, max_vblock / l * l);
  if (s.vblock <= cap) return s;
  const int v = nest.vec_axis();
  int64_t kouter = 1;
  for (int a = 0; a < nest.rank; ++a)
    if (!nest.is_reduce[static_cast<size_t>(a)] && a != v) kouter *= sizes[static_cast<size_t>(a)];
  const int64_t nv = sizes[static_cast<size_t>(v)];
  Schedule c = s;
  c.vblock = cap;
  c.rows = kouter * ((nv + cap - 1) / cap);
  c.grain = std::max<int64_t>(1, s.grain * (s.vblock / cap));
  return c;
}

int transpose_tile_axis(const LoopNest& nest, const LaunchDomain& d, const std::vector<bool>& unit, int lanes) {
  if (lanes < 4 || nest.inner_reduction || !nest.reduce_axes().empty()) return -1;
  const auto v = static_cast<size_t>(nest.vec_axis());
  const size_t nops = std::min(unit.size(), d.strides.size());
  auto strided = [&](size_t k) { return !unit[k] && d.varies[k][v]; };
  bool any = false;
  for (size_t k = 0; k < nops; ++k) {
    if (!strided(k)) continue;
    if (static_cast<int>(k) >= nest.num_inputs) return -1;  // a strided output
    any = true;
  }
  if (!any) return -1;
  for (int t = nest.rank - 1; t-- > 0;) {
    const auto ut = static_cast<size_t>(t);
    if (nest.is_reduce[ut] || d.sizes[ut] < 2) continue;
    bool ok = true;
    for (size_t k = 0; k < nops && ok; ++k) ok = !strided(k) || (d.varies[k][ut] && d.strides[k][ut] == 1);
    if (ok) return t;
  }
  return -1;
}

Schedule tile_schedule(const std::vector<int64_t>& sizes, const Schedule& s, int height, int t) {
  Schedule c = s;
  const int64_t nt = sizes[static_cast<size_t>(t)], l = std::max(1, height);
  if (nt <= 0 || s.rows <= 0) return c;
  c.rows = s.rows / nt * ((nt + l - 1) / l);
  c.grain = std::max<int64_t>(1, s.grain / l);
  return c;
}

}  // namespace autofuse
