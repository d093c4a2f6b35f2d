// The random kernel-graph generator of kernel_test_util.h (no tests here).
#include <algorithm>
#include <functional>
#include <limits>

#include "autofuse/codegen/kernel.h"
#include "kernel_test_util.h"

namespace autofuse::kernel_testing {
namespace {

/// A generated value and whether the kernel computes it bit-exactly like the interpreter.
struct V {
  ValueId id;
  bool exact;
};

/// Builds one random graph; elementwise steps keep every pool value in the chain dtype T.
class Gen {
 public:
  Gen(std::mt19937_64& rng) : rng_(rng), g_("fuzz") {}

  RandomGraph build() {
    const int r = pick(std::vector<int>{0, 1, 1, 2, 2, 2, 3, 3, 4}, rng_);
    for (int i = 0; i < r; ++i) full_.push_back(coin(rng_, 0.1) ? Expr(1) : Expr::sym("s" + std::to_string(i)));
    t_ = pick(std::vector<DType>{DType::Float32, DType::Float32, DType::Float32, DType::Float32, DType::Float16,
                                 DType::BFloat16, DType::Float64, DType::Int32, DType::Int64, DType::Int8, DType::Int16,
                                 DType::UInt8, DType::Bool},
              rng_);
    pool_.push_back({g_.add_input("x0", t_, full_), true});
    const int extra = uni(rng_, 0, 2);
    for (int i = 0; i < extra; ++i) {
      Shape s;
      const int drop = coin(rng_, 0.25) ? uni(rng_, 0, r) : 0;
      for (int d = drop; d < r; ++d) s.push_back(coin(rng_, 0.3) ? Expr(1) : full_[static_cast<size_t>(d)]);
      pool_.push_back({g_.add_input("x" + std::to_string(i + 1), t_, s), true});
    }
    const int steps = uni(rng_, 1, 5);
    for (int i = 0; i < steps; ++i) step();
    std::vector<V> outs;
    double cast_tol = -1;
    if (r >= 1 && coin(rng_, 0.6)) reduction_phase(outs);
    outs.push_back(pool_.back());
    if (coin(rng_, 0.3)) outs.push_back(pick(pool_, rng_));
    // Occasionally cast an output to another dtype (never float -> integer: NaN/inf have no defined value there).
    if (coin(rng_, 0.2)) {
      V& o = outs[0];
      DType from = g_.node(o.id).dtype;
      DType to = pick(std::vector<DType>{DType::Float32, DType::Float16, DType::BFloat16, DType::Float64, DType::Bool,
                                         DType::Int32},
                      rng_);
      if (!(is_float(from) && is_integer(to))) {
        o = {g_.cast(o.id, to), o.exact};
        cast_tol = std::max(default_tolerance(from), default_tolerance(to));
      }
    }
    RandomGraph rg{std::move(g_), {}, {}};
    std::vector<ValueId> ids;
    for (const V& v : outs) {
      ids.push_back(v.id);
      rg.exact.push_back(v.exact);
      rg.tol.push_back(rg.tol.empty() ? cast_tol : -1.0);
    }
    rg.graph.set_outputs(ids);
    return rg;
  }

 private:
  ValueId add(OpKind op, std::vector<ValueId> in, Attrs a = {}) { return g_.add(op, std::move(in), std::move(a)); }
  ValueId cst(double v) {
    return g_.constant(is_float(t_) ? Scalar::of_float(v) : Scalar::of_int(static_cast<int64_t>(v)), t_);
  }
  ValueId abs1(ValueId x) { return add(OpKind::Add, {add(OpKind::Abs, {x}), cst(1)}); }

  void step() {
    V a = pick(pool_, rng_), b = pick(pool_, rng_);
    const bool ex = a.exact && b.exact;
    if (t_ == DType::Bool) {
      OpKind op = pick(std::vector<OpKind>{OpKind::LogicalAnd, OpKind::LogicalOr, OpKind::LogicalXor,
                                           OpKind::BitwiseAnd, OpKind::BitwiseOr, OpKind::BitwiseXor, OpKind::Eq,
                                           OpKind::Ne, OpKind::Maximum, OpKind::Minimum, OpKind::Mul},
                       rng_);
      if (coin(rng_, 0.15))
        pool_.push_back({add(OpKind::LogicalNot, {a.id}), true});
      else if (coin(rng_, 0.15))
        pool_.push_back({add(OpKind::Where, {a.id, b.id, pick(pool_, rng_).id}), true});
      else
        pool_.push_back({add(op, {a.id, b.id}), true});
      return;
    }
    const bool fl = is_float(t_);
    const int kind = uni(rng_, 0, fl ? 9 : 8);
    switch (kind) {
      case 0:
      case 1: {
        if (fl && coin(rng_, 0.2)) {  // fma: one rounding in kernels (an FMA instruction) and in the interpreter
          const V c = pick(pool_, rng_);
          pool_.push_back({add(OpKind::Fma, {a.id, b.id, c.id}), ex && c.exact});
          break;
        }
        OpKind op = pick(std::vector<OpKind>{OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Maximum, OpKind::Minimum,
                                             OpKind::Fmax, OpKind::Fmin},
                         rng_);
        pool_.push_back({add(op, {a.id, b.id}), ex});
        break;
      }
      case 2: {
        OpKind op = pick(std::vector<OpKind>{OpKind::Neg, OpKind::Abs, OpKind::Relu}, rng_);
        pool_.push_back({add(op, {a.id}), a.exact});
        break;
      }
      case 3: {  // comparisons feed where; only on exact values (an ulp could flip them otherwise)
        if (!ex) {
          pool_.push_back({add(OpKind::Neg, {a.id}), a.exact});
          break;
        }
        OpKind cmp =
            pick(std::vector<OpKind>{OpKind::Lt, OpKind::Le, OpKind::Gt, OpKind::Ge, OpKind::Eq, OpKind::Ne}, rng_);
        pool_.push_back({add(OpKind::Where, {add(cmp, {a.id, b.id}), a.id, b.id}), true});
        break;
      }
      case 4: {
        Attrs at;
        if (coin(rng_, 0.7)) at["min"] = fl ? Scalar::of_float(-0.5) : Scalar::of_int(t_ == DType::UInt8 ? 3 : -5);
        if (coin(rng_, 0.7)) at["max"] = fl ? Scalar::of_float(0.75) : Scalar::of_int(t_ == DType::UInt8 ? 30 : 6);
        if (fl && coin(rng_, 0.3)) {  // a special bound: NaN makes every element NaN, an infinity clamps nothing
          const double inf = std::numeric_limits<double>::infinity();
          const double v = pick(std::vector<double>{std::numeric_limits<double>::quiet_NaN(), inf, -inf}, rng_);
          at[coin(rng_, 0.5) ? "min" : "max"] = Scalar::of_float(v);
        }
        pool_.push_back({add(OpKind::Clamp, {a.id}, at), a.exact});
        break;
      }
      case 5: {  // division-like ops with a nonzero divisor
        if (fl) {
          if (!ex || coin(rng_, 0.4)) {
            pool_.push_back({add(OpKind::Div, {a.id, abs1(b.id)}), ex});
            break;
          }
          OpKind op = pick(std::vector<OpKind>{OpKind::FloorDiv, OpKind::Remainder, OpKind::Fmod}, rng_);
          pool_.push_back({add(op, {a.id, abs1(b.id)}), ex});
        } else {
          OpKind op = pick(std::vector<OpKind>{OpKind::FloorDiv, OpKind::Remainder, OpKind::Fmod}, rng_);
          pool_.push_back({add(op, {a.id, add(OpKind::BitwiseOr, {b.id, cst(1)})}), true});
        }
        break;
      }
      case 6: {
        if (fl) {
          if (!a.exact) {
            pool_.push_back({add(OpKind::Abs, {a.id}), false});
            break;
          }
          OpKind op =
              pick(std::vector<OpKind>{OpKind::Floor, OpKind::Ceil, OpKind::Round, OpKind::Trunc, OpKind::Sign}, rng_);
          pool_.push_back({add(op, {a.id}), true});
        } else {
          OpKind op = pick(std::vector<OpKind>{OpKind::BitwiseAnd, OpKind::BitwiseOr, OpKind::BitwiseXor}, rng_);
          pool_.push_back({coin(rng_, 0.2) ? add(OpKind::BitwiseNot, {a.id}) : add(op, {a.id, b.id}), true});
        }
        break;
      }
      case 7: {
        if (fl) {
          pool_.push_back(
              {add(OpKind::Where,
                   {add(pick(std::vector<OpKind>{OpKind::IsNan, OpKind::IsFinite}, rng_), {a.id}), b.id, a.id}),
               ex});
        } else if (t_ != DType::UInt8 && coin(rng_, 0.5)) {
          pool_.push_back({add(pick(std::vector<OpKind>{OpKind::Shl, OpKind::Shr}, rng_),
                               {a.id, add(OpKind::BitwiseAnd, {b.id, cst(7)})}),
                           true});
        } else {
          pool_.push_back({add(OpKind::Pow, {a.id, add(OpKind::BitwiseAnd, {b.id, cst(3)})}), true});
        }
        break;
      }
      case 8: {
        if (!fl) {
          pool_.push_back({add(OpKind::Sign, {a.id}), true});
          break;
        }
        pool_.push_back({transcendental(a.id, b.id), false});
        break;
      }
      default:
        pool_.push_back({transcendental(a.id, b.id), false});
        break;
    }
  }

  /// A well-conditioned transcendental expression of a (and b): bounded arguments, no poles.
  ValueId transcendental(ValueId a, ValueId b) {
    switch (uni(rng_, 0, 16)) {
      case 0:
        return add(OpKind::Exp, {add(OpKind::Tanh, {a})});
      case 1:
        return add(OpKind::Tanh, {a});
      case 2:
        return add(OpKind::Sigmoid, {a});
      case 3:
        return add(OpKind::Sin, {a});
      case 4:
        return add(OpKind::Cos, {a});
      case 5:
        return add(OpKind::Erf, {a});
      case 6:
        return add(OpKind::Log, {abs1(a)});
      case 7:
        return add(OpKind::Log1p, {add(OpKind::Abs, {a})});
      case 8:
        return add(OpKind::Log2, {abs1(a)});
      case 9:
        return add(OpKind::Log10, {abs1(a)});
      case 10:
        return add(OpKind::Sqrt, {add(OpKind::Abs, {a})});
      case 11:
        return add(OpKind::Rsqrt, {abs1(a)});
      case 12:
        return add(OpKind::Reciprocal, {abs1(a)});
      case 13:
        return add(OpKind::Expm1, {add(OpKind::Tanh, {a})});
      case 14:
        return add(OpKind::Exp2, {add(OpKind::Tanh, {a})});
      case 15:
        return add(OpKind::Atan2, {a, b});
      default:
        return add(OpKind::Pow, {abs1(a), add(OpKind::Tanh, {b})});
    }
  }

  /// Values whose shape is the full domain (so they vary along every reduced axis).
  std::vector<V> full_values() const {
    std::vector<V> out;
    for (const V& v : pool_)
      if (g_.node(v.id).shape == full_) out.push_back(v);
    return out;
  }

  V reduce(V x, bool keepdim, bool allow_float_sums = true) {
    const DType t = g_.node(x.id).dtype;
    std::vector<OpKind> ops;
    if (is_float(t)) {
      ops = {OpKind::Amax, OpKind::Amin, OpKind::Any, OpKind::All};
      if (allow_float_sums) ops.insert(ops.end(), {OpKind::Sum, OpKind::Sum, OpKind::Mean, OpKind::Var});
      if (x.exact) ops.insert(ops.end(), {OpKind::Argmax, OpKind::Argmin});
    } else if (t == DType::Bool) {
      ops = {OpKind::Any, OpKind::All, OpKind::Sum, OpKind::Amax, OpKind::Amin, OpKind::Argmax, OpKind::Argmin};
    } else {
      ops = {OpKind::Sum,    OpKind::Prod,   OpKind::Amax, OpKind::Amin,
             OpKind::Argmax, OpKind::Argmin, OpKind::Any,  OpKind::All};
    }
    OpKind op = pick(ops, rng_);
    Attrs at{{"axes", axes_}, {"keepdim", keepdim}};
    if (op == OpKind::Var) at["correction"] = static_cast<int64_t>(uni(rng_, 0, 1));
    ValueId id = add(op, {x.id}, at);
    bool exact = x.exact && !(is_float(t) && (op == OpKind::Sum || op == OpKind::Mean || op == OpKind::Var));
    return {id, exact};
  }

  void reduction_phase(std::vector<V>& outs) {
    const int r = static_cast<int>(full_.size());
    axes_.clear();
    if (!coin(rng_, 0.2)) {
      for (int d = 0; d < r; ++d)
        if (coin(rng_, 0.5)) axes_.push_back(d);
      if (axes_.empty()) axes_.push_back(uni(rng_, 0, r - 1));
    }
    const bool keepdim = coin(rng_, 0.65);
    if (keepdim && is_float(t_) && coin(rng_, 0.3)) {  // the whole softmax
      V x = pick(full_values(), rng_);
      ValueId m = add(OpKind::Amax, {x.id}, {{"axes", axes_}, {"keepdim", true}});
      ValueId e = add(OpKind::Exp, {add(OpKind::Sub, {x.id, m})});
      ValueId s = add(OpKind::Sum, {e}, {{"axes", axes_}, {"keepdim", true}});
      pool_.push_back({add(OpKind::Div, {e, s}), false});
      if (coin(rng_, 0.3)) outs.push_back({s, false});
      return;
    }
    V red = reduce(pick(full_values(), rng_), keepdim);
    if (coin(rng_, 0.3)) outs.push_back(red);
    if (coin(rng_, 0.3)) outs.push_back(reduce(pick(full_values(), rng_), keepdim));
    V rt = red;
    if (g_.node(red.id).dtype != t_)
      rt = {g_.cast(red.id, t_), red.exact && !(is_float(g_.node(red.id).dtype) && !is_float(t_))};
    if (!keepdim) {
      if (coin(rng_, 0.5)) rt = {add(t_ == DType::Bool ? OpKind::LogicalNot : OpKind::Abs, {rt.id}), rt.exact};
      outs.push_back(rt);
      return;
    }
    // Epilogue: combine with a full value, maybe a second reduction level over the same axes.
    V x = pick(full_values(), rng_);
    OpKind comb = t_ == DType::Bool
                      ? OpKind::LogicalXor
                      : pick(std::vector<OpKind>{OpKind::Sub, OpKind::Add, OpKind::Mul, OpKind::Maximum}, rng_);
    pool_.push_back({add(comb, {x.id, rt.id}), x.exact && rt.exact});
    if (coin(rng_, 0.5)) step();
    if (coin(rng_, 0.4)) {
      std::vector<V> fv = full_values();
      V red2 = reduce(fv.back(), true);
      V r2 = red2;
      if (g_.node(red2.id).dtype != t_)
        r2 = {g_.cast(red2.id, t_), red2.exact && !(is_float(g_.node(red2.id).dtype) && !is_float(t_))};
      pool_.push_back({add(t_ == DType::Bool ? OpKind::LogicalOr : OpKind::Add, {fv.back().id, r2.id}),
                       fv.back().exact && r2.exact});
      if (coin(rng_, 0.3)) outs.push_back(red2);
    }
  }

  std::mt19937_64& rng_;
  Graph g_;
  Shape full_;
  DType t_ = DType::Float32;
  std::vector<V> pool_;
  std::vector<int64_t> axes_;
};

}  // namespace

RandomGraph random_kernel_graph(std::mt19937_64& rng) {
  for (;;) {
    try {
      RandomGraph rg = Gen(rng).build();
      if (!kernel_unsupported_reason(rg.graph)) return rg;
    } catch (const IRError&) {
      // A combination the type rules refuse (e.g. an op a dtype does not support): draw again.
    }
  }
}

}  // namespace autofuse::kernel_testing
