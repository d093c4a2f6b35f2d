// The interpreter's reductions: sum, prod, amax, amin, argmax, argmin, mean, var, any, all over any set of axes,
// with keepdim. Floating sum, mean and var accumulate in float64 (sum and mean with Neumaier's compensated summation,
// var in two passes); floating prod accumulates in the input's compute type (dtype.h compute_dtype: f32 for
// f16/bf16/f32, f64 for f64), one rounding per multiplication in element order, as kernels multiply: a row
// whose running product overflows to inf and then meets a zero is NaN (inf * 0), where an f64 product would be 0, and
// one that overflows f32 and comes back into range is inf. Integer sum and prod wrap in int64. The result is rounded
// once, to the output dtype (f16/bf16 outputs: to f32 under the Float32Inside precision policy, see ir/precision.h).
// Kernels and eager multiply in other orders (SIMD lanes, then across lanes), so whether an overflow meets a zero
// first can differ between them for rows whose product overflows; like a sum's rounding, that freedom is the tests'.
#include <algorithm>
#include <cmath>
#include <string>

#include "autofuse/ir/interp_scalar.h"
#include "autofuse/ir/interp_value.h"

namespace autofuse::interp {

namespace {

/// Neumaier's compensated sum of a sequence; falls back to the plain sum once it is not finite (inf, NaN), where the
/// compensation term would turn into NaN.
struct CompensatedSum {
  double sum = 0, comp = 0;
  void add(double x) {
    const double t = sum + x;
    if (std::fabs(sum) >= std::fabs(x))
      comp += (sum - t) + x;
    else
      comp += (x - t) + sum;
    sum = t;
  }
  double value() const { return std::isfinite(sum) ? sum + comp : sum; }
};

/// argmax/argmin order: is a strictly better than the best so far? NaN beats everything; the first NaN stays.
bool better_f(OpKind op, double a, double best) {
  if (std::isnan(best)) return false;
  if (std::isnan(a)) return true;
  return op == OpKind::Argmax ? a > best : a < best;
}

}  // namespace

Value eval_reduce(const NodeContext& c, const std::vector<const Value*>& in) {
  const Value& x = *in[0];
  const OpKind op = c.node.op;
  const std::vector<int64_t> axes = normalize_axes(attr_ints(c.node.attrs, "axes"), x.sizes.size());
  std::vector<int64_t> reduced(x.sizes.size(), 0);
  if (axes.empty())
    std::fill(reduced.begin(), reduced.end(), 1);
  else
    for (int64_t a : axes) reduced[a] = 1;

  // Split the input's index space into kept axes (one output element each) and reduced axes (row-major order).
  const std::vector<int64_t> st = row_major_strides(x.sizes);
  std::vector<int64_t> kept_sizes, kept_strides, red_sizes, red_strides;
  for (size_t d = 0; d < x.sizes.size(); ++d) {
    (reduced[d] ? red_sizes : kept_sizes).push_back(x.sizes[d]);
    (reduced[d] ? red_strides : kept_strides).push_back(st[d]);
  }
  int64_t count = 1;
  for (int64_t s : red_sizes) count *= s;
  std::vector<int64_t> red_offsets;
  red_offsets.reserve(static_cast<size_t>(count));
  for_each_index(red_sizes, {red_strides}, [&](int64_t, const int64_t* o) { red_offsets.push_back(o[0]); });

  const bool needs_elements = op == OpKind::Amax || op == OpKind::Amin || op == OpKind::Argmax || op == OpKind::Argmin;
  if (needs_elements && count == 0)
    c.fail("reduction over zero elements has no identity (eager raises: expected a non-empty reduction dim)");

  Value out = Value::zeros(c.node.dtype, c.out_sizes);
  int64_t var_correction = op == OpKind::Var ? attr_int(c.node.attrs, "correction") : 0;

  for_each_index(kept_sizes, {kept_strides}, [&](int64_t k, const int64_t* base_p) {
    const int64_t base = base_p[0];
    auto xf = [&](int64_t r) { return x.f[base + red_offsets[r]]; };
    auto xi = [&](int64_t r) { return x.i[base + red_offsets[r]]; };
    switch (op) {
      case OpKind::Sum:
      case OpKind::Mean:
      case OpKind::Var:
        if (x.is_float()) {
          CompensatedSum s;
          for (int64_t r = 0; r < count; ++r) s.add(xf(r));
          const double n = static_cast<double>(count);
          double v = s.value();
          if (op == OpKind::Mean) v /= n;
          if (op == OpKind::Var) {
            const double mean = v / n;
            CompensatedSum sq;
            for (int64_t r = 0; r < count; ++r) sq.add((xf(r) - mean) * (xf(r) - mean));
            v = sq.value() / std::max(0.0, n - static_cast<double>(var_correction));
          }
          out.f[k] = round_float(v, c.round_dtype(out.dtype));
        } else {
          uint64_t s = 0;
          for (int64_t r = 0; r < count; ++r) s += static_cast<uint64_t>(xi(r));
          out.i[k] = static_cast<int64_t>(s);
        }
        break;
      case OpKind::Prod:
        if (x.is_float()) {
          // In the compute type, as kernels accumulate (see the header comment): an f32 product of two f32 values is
          // their exact f64 product rounded once to f32.
          const DType acc = compute_dtype(x.dtype);
          double p = 1;
          for (int64_t r = 0; r < count; ++r) p = round_float(p * xf(r), acc);
          out.f[k] = round_float(p, c.round_dtype(out.dtype));
        } else {
          uint64_t p = 1;
          for (int64_t r = 0; r < count; ++r) p *= static_cast<uint64_t>(xi(r));
          out.i[k] = static_cast<int64_t>(p);
        }
        break;
      case OpKind::Amax:
      case OpKind::Amin:
        if (x.is_float()) {
          double m = xf(0);
          for (int64_t r = 1; r < count; ++r) m = op == OpKind::Amax ? maximum_f(m, xf(r)) : minimum_f(m, xf(r));
          out.f[k] = m;
        } else {
          int64_t m = xi(0);
          for (int64_t r = 1; r < count; ++r) m = op == OpKind::Amax ? std::max(m, xi(r)) : std::min(m, xi(r));
          out.i[k] = m;
        }
        break;
      case OpKind::Argmax:
      case OpKind::Argmin: {
        int64_t best = 0;
        for (int64_t r = 1; r < count; ++r) {
          const bool better = x.is_float()           ? better_f(op, xf(r), xf(best))
                              : op == OpKind::Argmax ? xi(r) > xi(best)
                                                     : xi(r) < xi(best);
          if (better) best = r;
        }
        out.i[k] = best;
        break;
      }
      case OpKind::Any:
      case OpKind::All: {
        const bool want = op == OpKind::Any;  // any: stop at the first true; all: at the first false
        bool found = false;
        for (int64_t r = 0; r < count && !found; ++r) found = ((x.is_float() ? xf(r) != 0.0 : xi(r) != 0) == want);
        out.i[k] = want ? found : !found;
        break;
      }
      default:
        c.fail("the interpreter has no reduction rule for this op");
    }
  });
  return out;
}

}  // namespace autofuse::interp
