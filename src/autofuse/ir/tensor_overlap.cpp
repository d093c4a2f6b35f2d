// Memory overlap between tensor views; see tensor_overlap.h.
#include "autofuse/ir/tensor_overlap.h"

#include <algorithm>
#include <numeric>

#include "autofuse/ir/dtype.h"

namespace autofuse {

namespace {

intptr_t address(const HostTensor& t) { return reinterpret_cast<intptr_t>(t.data); }

bool same_view(const HostTensor& a, const HostTensor& b) {
  if (a.data != b.data || a.dtype != b.dtype || a.sizes != b.sizes || a.strides.size() != a.sizes.size() ||
      b.strides.size() != b.sizes.size())
    return false;
  for (size_t d = 0; d < a.sizes.size(); ++d)
    if (a.sizes[d] > 1 && a.strides[d] != b.strides[d]) return false;  // a dim of size 1 reaches one element either way
  return true;
}

// n / d rounded down and up, for d > 0.
int64_t floor_div(int64_t n, int64_t d) { return n / d - (n % d != 0 && n < 0 ? 1 : 0); }
int64_t ceil_div(int64_t n, int64_t d) { return n / d + (n % d != 0 && n > 0 ? 1 : 0); }

// The gcd test: every element of a starts at a.data plus a multiple of g (the gcd of both views' byte strides), every
// element of b at b.data plus one, so b's starts sit at r + m * g from a's for integers m (r = (b.data - a.data) mod
// g). Elements of ea and eb bytes overlap only when some start difference lies in (-eb, ea). True when none can.
bool gcd_separates(const HostTensor& a, const HostTensor& b) {
  int64_t g = 0;
  for (const HostTensor* t : {&a, &b})
    for (size_t d = 0; d < t->sizes.size(); ++d)
      if (t->sizes[d] > 1) g = std::gcd(g, t->strides[d] * dtype_size(t->dtype));
  if (g <= 0) return false;
  const int64_t ea = dtype_size(a.dtype), eb = dtype_size(b.dtype);
  const int64_t r = ((static_cast<int64_t>(address(b) - address(a)) % g) + g) % g;
  return r >= ea && g - r >= eb;
}

// One term of the difference of two views' element offsets: a coefficient k in [lo, hi] times a stride (> 0).
struct Term {
  int64_t stride, lo, hi;
};

enum class Solved { No, Yes, Unknown };

// Whether sum(k * stride) == target has a solution with each k in its term's range. Decided when the terms nest
// (below each stride, the smaller terms together reach fewer values than the stride: then at most one k fits at each
// level, found from the largest stride down); Unknown when they do not.
Solved solve_nested(std::vector<Term>& terms, int64_t target) {
  std::sort(terms.begin(), terms.end(), [](const Term& x, const Term& y) { return x.stride < y.stride; });
  std::vector<Term> merged;  // one term per stride: the ranges of equal strides add up
  for (const Term& t : terms) {
    if (!merged.empty() && merged.back().stride == t.stride) {
      merged.back().lo += t.lo;
      merged.back().hi += t.hi;
    } else {
      merged.push_back(t);
    }
  }
  std::vector<int64_t> below_lo(merged.size() + 1, 0), below_hi(merged.size() + 1, 0);
  for (size_t d = 0; d < merged.size(); ++d) {
    below_lo[d + 1] = below_lo[d] + merged[d].lo * merged[d].stride;
    below_hi[d + 1] = below_hi[d] + merged[d].hi * merged[d].stride;
  }
  int64_t rest = target;
  for (size_t d = merged.size(); d-- > 0;) {
    const Term& t = merged[d];
    if (below_hi[d] - below_lo[d] >= t.stride) return Solved::Unknown;
    const int64_t kmin = std::max(t.lo, ceil_div(rest - below_hi[d], t.stride));
    const int64_t kmax = std::min(t.hi, floor_div(rest - below_lo[d], t.stride));
    if (kmin > kmax) return Solved::No;
    rest -= kmin * t.stride;  // the only k that fits (the smaller terms reach less than one stride)
  }
  return rest == 0 ? Solved::Yes : Solved::No;
}

// The exact test for views of one element size whose data pointers are a whole number of elements apart: an element
// a.data + sum(i * sa) (elements) is one of b's, b.data + sum(j * sb), when sum(i * sa) - sum(j * sb) equals their
// distance. Negative strides are turned positive around the dim's last element; stride-0 dims reach one element.
Solved shared_element(const HostTensor& a, const HostTensor& b) {
  const int64_t e = dtype_size(a.dtype);
  const int64_t bytes = static_cast<int64_t>(address(b) - address(a));
  if (dtype_size(b.dtype) != e || bytes % e != 0) return Solved::Unknown;
  int64_t target = bytes / e;
  std::vector<Term> terms;
  for (int side = 0; side < 2; ++side) {
    const HostTensor& t = side == 0 ? a : b;
    for (size_t d = 0; d < t.sizes.size(); ++d) {
      const int64_t n = t.sizes[d], s = t.strides[d];
      if (n < 2 || s == 0) continue;
      const int64_t shift = s < 0 ? (n - 1) * s : 0;  // the dim's lowest element, from the data pointer
      target += side == 0 ? -shift : shift;
      terms.push_back(side == 0 ? Term{std::llabs(s), 0, n - 1} : Term{std::llabs(s), -(n - 1), 0});
    }
  }
  return solve_nested(terms, target);
}

}  // namespace

bool element_span(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t& lo, int64_t& hi) {
  lo = hi = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) {
      lo = hi = 0;
      return false;
    }
    const int64_t reach = (sizes[d] - 1) * strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  return true;
}

ByteExtent byte_extent(const HostTensor& t) {
  const intptr_t p = address(t);
  int64_t lo = 0, hi = 0;
  if (!element_span(t.sizes, t.strides, lo, hi)) return ByteExtent{p, p};
  const int64_t e = dtype_size(t.dtype);
  return ByteExtent{p + static_cast<intptr_t>(lo * e), p + static_cast<intptr_t>(hi * e + e)};
}

Overlap memory_overlap(const HostTensor& a, const HostTensor& b) {
  const ByteExtent x = byte_extent(a), y = byte_extent(b);
  if (x.empty() || y.empty() || x.hi <= y.lo || y.hi <= x.lo) return Overlap::None;
  if (same_view(a, b)) return Overlap::Same;
  if (gcd_separates(a, b) || shared_element(a, b) == Solved::No) return Overlap::None;
  return Overlap::Partial;
}

std::string operand_overlap_error(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs) {
  if (outputs.empty()) return "";
  // Extents first (no allocation once grown); the finer tests run only for pairs whose extents intersect.
  thread_local std::vector<ByteExtent> ext;
  ext.clear();
  for (const HostTensor& t : outputs) ext.push_back(byte_extent(t));
  for (const HostTensor& t : inputs) ext.push_back(byte_extent(t));
  auto meet = [](const ByteExtent& x, const ByteExtent& y) {
    return !x.empty() && !y.empty() && x.lo < y.hi && y.lo < x.hi;
  };
  const size_t no = outputs.size();
  auto pair = [](const HostTensor& x, const HostTensor& y) {
    return " (" + x.describe() + " and " + y.describe() + ")";
  };
  for (size_t o = 0; o < no; ++o) {
    for (size_t p = 0; p < o; ++p) {
      if (!meet(ext[o], ext[p])) continue;
      const Overlap v = memory_overlap(outputs[o], outputs[p]);
      if (v == Overlap::Same)
        return "output " + std::to_string(o) + " is the same memory as output " + std::to_string(p) +
               pair(outputs[o], outputs[p]) + "; give each output a tensor of its own";
      if (v == Overlap::Partial)
        return "output " + std::to_string(o) + " overlaps output " + std::to_string(p) + " (partially)" +
               pair(outputs[o], outputs[p]) + "; write to a separate tensor";
    }
    for (size_t i = 0; i < inputs.size(); ++i)
      if (meet(ext[o], ext[no + i]) && memory_overlap(outputs[o], inputs[i]) == Overlap::Partial)
        return "output " + std::to_string(o) + " overlaps input " + std::to_string(i) + " (partially)" +
               pair(outputs[o], inputs[i]) +
               "; write to a separate tensor (an output may be the input itself, with the same sizes and strides)";
  }
  return "";
}

}  // namespace autofuse
