// Per-op C++ expressions for the CPU emitter, with eager PyTorch's semantics per dtype.
// GCC 12 reports a false -Wrestrict inside std::string concatenation at -O3 (GCC PR 105651).
#pragma GCC diagnostic ignored "-Wrestrict"
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>

#include "autofuse/codegen/cpu/emit.h"
#include "autofuse/ir/tensor.h"
#include "autofuse/support/env.h"

namespace autofuse {

const std::string& af_kernel_header_text() {
  // af_kernel.inc: types, f16/bf16, loads and stores; af_kernel_ops.inc: arithmetic, SLEEF's transcendentals,
  // horizontal combines; af_kernel_exp.inc: exp, division by a row value; af_kernel_math.inc: tanh and erf (they use
  // exp's core). One text, in this order.
  static const char* const base =
#include "autofuse/codegen/cpu/af_kernel.inc"
      ;
  static const char* const ops =
#include "autofuse/codegen/cpu/af_kernel_ops.inc"
      ;
  static const char* const exp =
#include "autofuse/codegen/cpu/af_kernel_exp.inc"
      ;
  static const char* const math =
#include "autofuse/codegen/cpu/af_kernel_math.inc"
      ;
  static const std::string text = std::string(base) + ops + exp + math;
  return text;
}

std::string compute_ctype(DType t) {
  switch (t) {
    case DType::Bool:
      return "uint8_t";
    case DType::UInt8:
      return "uint8_t";
    case DType::Int8:
      return "int8_t";
    case DType::Int16:
      return "int16_t";
    case DType::Int32:
      return "int32_t";
    case DType::Int64:
      return "int64_t";
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32:
      return "float";
    case DType::Float64:
      return "double";
  }
  return "?";
}

std::string storage_ctype(DType t) {
  if (t == DType::Float16) return "_Float16";
  if (t == DType::BFloat16) return "af_bf16";
  return compute_ctype(t);
}

namespace {

std::string float_literal(double v) {
  if (std::isnan(v)) return "__builtin_nan(\"\")";
  if (std::isinf(v)) return v > 0 ? "__builtin_inf()" : "(-__builtin_inf())";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return std::string("(") + buf + ")";
}

std::string call(const std::string& f, const std::string& ct, const std::vector<std::string>& a) {
  std::string s = f + "<" + ct + ">(";
  for (size_t i = 0; i < a.size(); ++i) s += (i ? ", " : "") + a[i];
  return s + ")";
}

}  // namespace

std::string rounded_to(DType t, const std::string& e) {
  if (t == DType::Float16) return "af_rnd_f16(" + e + ")";
  if (t == DType::BFloat16) return "af_rnd_bf16(" + e + ")";
  return e;
}

std::vector<StoreRounds> casts_rounded_by_store(const Graph& g, const LoopNest& nest, const EmitOptions& o) {
  std::vector<StoreRounds> r(g.size(), StoreRounds::No);
  if (o.precision == PrecisionPolicy::EmulateCasts || !env_bool("AUTOFUSE_ROUND_AT_STORE", true)) return r;
  auto half = [](DType t) { return t == DType::BFloat16 || t == DType::Float16; };
  auto copy = [&](const Node& n) {  // x * 1 (the lowering's clone): the value of x, exactly
    if (n.op != OpKind::Mul || !half(n.dtype) || g.node(n.inputs[0]).dtype != n.dtype) return false;
    const Node& c = g.node(n.inputs[1]);
    return c.op == OpKind::Constant && c.dtype == n.dtype && attr_scalar(c.attrs, "value").as_double() == 1.0;
  };
  // only[i]: every use of value i is a real output's store or a copy in r; stored[i]: some such path ends in a store.
  std::vector<bool> stored(g.size(), false), only(g.size(), true);
  const size_t first_outer = nest.operands.size() - (o.outer ? o.outer->reductions.size() : 0);
  for (size_t k = static_cast<size_t>(nest.num_inputs); k < nest.operands.size(); ++k)
    (k < first_outer ? stored : only)[static_cast<size_t>(nest.operands[k])] = k < first_outer;  // partials: a use
  for (size_t i = g.size(); i-- > 0;) {  // every use of value i comes after it
    const Node& n = g.node(static_cast<ValueId>(i));
    if (only[i] && stored[i] && n.op == OpKind::Cast && half(n.dtype)) r[i] = StoreRounds::Cast;
    if (only[i] && stored[i] && copy(n)) r[i] = StoreRounds::Copy;
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      const auto in = static_cast<size_t>(n.inputs[j]);
      if (r[i] == StoreRounds::Copy && j == 0)
        stored[in] = true;
      else
        only[in] = false;
    }
  }
  return r;
}

std::string splat_literal(const Scalar& s, DType t) {
  const std::string ct = compute_ctype(t);
  std::string lit;
  if (t == DType::Bool) {
    lit = (s.is_int ? s.i != 0 : s.f != 0.0) ? "1" : "0";
  } else if (is_float(t)) {
    lit = float_literal(round_to_dtype(s.as_double(), t));
  } else {
    // A float value on an integer dtype truncates toward zero as eager and the interpreter do (cast_float_to_int);
    // the verifier admits only finite values in the dtype's range (ops.cpp), so the int64 cast is exact. (Going
    // through round_to_dtype would give 0 for |value| >= 9.2e18, short of int64's range.)
    const bool in_int64 = std::isfinite(s.f) && s.f >= -0x1p63 && s.f < 0x1p63;
    int64_t iv = s.is_int ? s.i : in_int64 ? static_cast<int64_t>(s.f) : std::numeric_limits<int64_t>::min();
    char buf[64];
    std::snprintf(buf, sizeof buf, "(int64_t)0x%" PRIx64 "ull", static_cast<uint64_t>(iv));
    lit = buf;
  }
  return "af_splat<" + ct + ">((" + ct + ")" + lit + ")";
}

std::string op_expression(const Graph& g, const Node& n, const std::vector<std::string>& a, PrecisionPolicy p,
                          const std::string& rcp, ValueBound arg_bound) {
  const DType in_t = n.inputs.empty() ? n.dtype : g.node(n.inputs[0]).dtype;
  const std::string ct = compute_ctype(in_t);
  const std::string oct = compute_ctype(n.dtype);
  const bool fl = is_float(in_t);
  const bool bl = in_t == DType::Bool;
  // Implicit rounding after the op (the policy's), and the explicit rounding of a cast node (always).
  auto r = [&](const std::string& e) { return rounded_to(implicit_rounding_dtype(n.dtype, p), e); };
  auto rc = [&](const std::string& e) { return rounded_to(n.dtype, e); };
  switch (n.op) {
    case OpKind::Constant:
    case OpKind::Full:
      return splat_literal(attr_scalar(n.attrs, "value"), n.dtype);
    case OpKind::Exp:
      return r((arg_bound == ValueBound::NonPositive ? "af_exp_nonpos(" : "af_exp(") + a[0] + ")");
    case OpKind::Exp2:
      return r("af_exp2(" + a[0] + ")");
    case OpKind::Expm1:
      return r("af_expm1(" + a[0] + ")");
    case OpKind::Log:
      return r("af_log(" + a[0] + ")");
    case OpKind::Log2:
      return r("af_log2(" + a[0] + ")");
    case OpKind::Log10:
      return r("af_log10(" + a[0] + ")");
    case OpKind::Log1p:
      return r("af_log1p(" + a[0] + ")");
    case OpKind::Sqrt:
      return r("af_sqrt(" + a[0] + ")");
    case OpKind::Rsqrt:
      return r(call("af_rsqrt", ct, a));
    case OpKind::Reciprocal:
      return r("(af_splat<" + ct + ">(1) / " + a[0] + ")");
    case OpKind::Sin:
      return r("af_sin(" + a[0] + ")");
    case OpKind::Cos:
      return r("af_cos(" + a[0] + ")");
    case OpKind::Tan:
      return r("af_tan(" + a[0] + ")");
    case OpKind::Tanh:
      return r("af_tanh(" + a[0] + ")");
    case OpKind::Sigmoid:
      return r(call("af_sigmoid", ct, a));
    case OpKind::Erf:
      return r("af_erf(" + a[0] + ")");
    case OpKind::Abs:
      return r(call("af_abs", ct, a));
    case OpKind::Neg:
      return r(call("af_neg", ct, a));
    case OpKind::Relu:
      return r(call("af_relu", ct, a));
    case OpKind::Floor:
      return r(call("af_floor", ct, a));
    case OpKind::Ceil:
      return r(call("af_ceil", ct, a));
    case OpKind::Round:
      return r(call("af_round", ct, a));
    case OpKind::Trunc:
      return r(call("af_trunc", ct, a));
    case OpKind::Sign:
      return r(call("af_sign", ct, a));
    case OpKind::IsNan:
      return fl ? call("af_isnan", ct, a) : "vec<uint8_t>{}";
    case OpKind::IsInf:
      return fl ? call("af_isinf", ct, a) : "vec<uint8_t>{}";
    case OpKind::IsFinite:
      return fl ? call("af_isfinite", ct, a) : "af_splat<uint8_t>(1)";
    case OpKind::LogicalNot:
      return "af_bool(" + a[0] + " == 0)";
    case OpKind::BitwiseNot:
      return bl ? "(" + a[0] + " ^ 1)" : "(~" + a[0] + ")";
    case OpKind::Add:
      return r(call("af_add", ct, a));
    case OpKind::Sub:
      return r(call("af_sub", ct, a));
    case OpKind::Mul:
      return r(bl ? "(" + a[0] + " & " + a[1] + ")" : call("af_mul", ct, a));
    case OpKind::Div:
      if (!rcp.empty() && ct == "float")
        return r((arg_bound == ValueBound::Unit ? "af_div_rcp_unit(" : "af_div_rcp(") + a[0] + ", " + a[1] + ", " +
                 rcp + ")");
      return r("(" + a[0] + " / " + a[1] + ")");
    case OpKind::FloorDiv:
      return r(call("af_floordiv", ct, a));
    case OpKind::Remainder:
      return r(call("af_rem", ct, a));
    case OpKind::Fmod:
      return r(call("af_fmod", ct, a));
    case OpKind::Pow:
      return r(fl ? "af_pow(" + a[0] + ", " + a[1] + ")" : call("af_powi", ct, a));
    case OpKind::Maximum:
      return r(call("af_max", ct, a));
    case OpKind::Minimum:
      return r(call("af_min", ct, a));
    // eager's fmax/fmin keep the first operand on a tie of -0.0 and +0.0, except for bfloat16 (the second): measured
    // with torch 2.13 for 0-d, short and vectorized tensors alike (tests/python/test_hard_inputs.py, signed zero ties)
    case OpKind::Fmax:
      return r(call(in_t == DType::BFloat16 ? "af_fmax_b" : "af_fmax", ct, a));
    case OpKind::Fmin:
      return r(call(in_t == DType::BFloat16 ? "af_fmin_b" : "af_fmin", ct, a));
    case OpKind::Atan2:
      return r("af_atan2(" + a[0] + ", " + a[1] + ")");
    case OpKind::Eq:
      return "af_bool(" + a[0] + " == " + a[1] + ")";
    case OpKind::Ne:
      return "af_bool(" + a[0] + " != " + a[1] + ")";
    case OpKind::Lt:
      return "af_bool(" + a[0] + " < " + a[1] + ")";
    case OpKind::Le:
      return "af_bool(" + a[0] + " <= " + a[1] + ")";
    case OpKind::Gt:
      return "af_bool(" + a[0] + " > " + a[1] + ")";
    case OpKind::Ge:
      return "af_bool(" + a[0] + " >= " + a[1] + ")";
    case OpKind::LogicalAnd:
      return "(af_nz<" + ct + ">(" + a[0] + ") & af_nz<" + ct + ">(" + a[1] + "))";
    case OpKind::LogicalOr:
      return "(af_nz<" + ct + ">(" + a[0] + ") | af_nz<" + ct + ">(" + a[1] + "))";
    case OpKind::LogicalXor:
      return "(af_nz<" + ct + ">(" + a[0] + ") ^ af_nz<" + ct + ">(" + a[1] + "))";
    case OpKind::BitwiseAnd:
      return "(" + a[0] + " & " + a[1] + ")";
    case OpKind::BitwiseOr:
      return "(" + a[0] + " | " + a[1] + ")";
    case OpKind::BitwiseXor:
      return "(" + a[0] + " ^ " + a[1] + ")";
    case OpKind::Shl:
      return call("af_shl", ct, a);
    case OpKind::Shr:
      return call("af_shr", ct, a);
    case OpKind::Fma:  // one rounding (an FMA instruction, af_kernel_ops.inc), as eager's addcmul
      return r(call("af_fma", ct, a));
    case OpKind::Where:
      return "af_sel<" + oct + ">(" + a[0] + ", " + a[1] + ", " + a[2] + ")";
    case OpKind::Clamp: {
      std::string e = a[0];
      const bool lo = has_attr(n.attrs, "min"), hi = has_attr(n.attrs, "max");
      // A NaN bound makes every element NaN (eager, the interpreter); the compares below would ignore it.
      const auto nan_attr = [&](const char* k) { return std::isnan(attr_scalar(n.attrs, k).as_double()); };
      if (fl && ((lo && nan_attr("min")) || (hi && nan_attr("max"))))
        return r(splat_literal(Scalar::of_float(std::numeric_limits<double>::quiet_NaN()), in_t));
      if (lo && hi)
        e = "af_clamp<" + ct + ">(" + e + ", " + splat_literal(attr_scalar(n.attrs, "min"), in_t) + ", " +
            splat_literal(attr_scalar(n.attrs, "max"), in_t) + ")";
      else if (lo)
        e = "af_clamp_lo<" + ct + ">(" + e + ", " + splat_literal(attr_scalar(n.attrs, "min"), in_t) + ")";
      else if (hi)
        e = "af_clamp_hi<" + ct + ">(" + e + ", " + splat_literal(attr_scalar(n.attrs, "max"), in_t) + ")";
      return r(e);
    }
    case OpKind::Cast: {
      if (n.dtype == DType::Bool) return "af_nz<" + ct + ">(" + a[0] + ")";
      if (ct == oct) return rc(a[0]);
      return rc("__builtin_convertvector(" + a[0] + ", vec<" + oct + ">)");
    }
    case OpKind::BroadcastTo:
      return a[0];
    default:
      return "";
  }
}

std::string horizontal_reduction(OpKind op, const std::string& ctype, const std::string& acc, const std::string& idx) {
  const std::string args = "<" + ctype + ">(" + acc;
  switch (op) {
    case OpKind::Sum:
    case OpKind::Mean:
    case OpKind::Var:
      return "af_hsum" + args + ")";
    case OpKind::Prod:
      return "af_hprod" + args + ")";
    case OpKind::Amax:
      return "af_hmax" + args + ")";
    case OpKind::Amin:
      return "af_hmin" + args + ")";
    case OpKind::Any:
      return "af_hor" + args + ")";
    case OpKind::All:
      return "af_hand" + args + ")";
    case OpKind::Argmax:
    case OpKind::Argmin:
      return "af_harg" + args + ", " + idx + ", " + (op == OpKind::Argmax ? "true" : "false") + ")";
    default:
      return "";
  }
}

}  // namespace autofuse

namespace autofuse {

bool is_cascade_sum(OpKind k, DType in) {
  return (k == OpKind::Sum || k == OpKind::Mean || k == OpKind::Var) && is_float(in);
}

std::string reduction_acc_ctype(const Graph& g, const Node& n) {
  const DType in = g.node(n.inputs[0]).dtype;
  switch (n.op) {
    case OpKind::Sum:
    case OpKind::Prod:
      return is_float(in) ? compute_ctype(in) : "int64_t";
    case OpKind::Any:
    case OpKind::All:
      return "uint8_t";
    default:
      return compute_ctype(in);
  }
}

/// Float sums fold their f32 block partials into f64, so a long row's error stays at the block level (blk * AF_W
/// elements) instead of growing with the row.
std::string reduction_main_ctype(const Graph& g, const Node& n) {
  const std::string at = reduction_acc_ctype(g, n);
  return is_cascade_sum(n.op, g.node(n.inputs[0]).dtype) && at == "float" ? "double" : at;
}

std::vector<bool> divisors_with_reciprocal(const Graph& g, const LoopNest& nest) {
  std::vector<bool> rcp(g.size(), false);
  if (!nest.inner_reduction) return rcp;
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.node(static_cast<ValueId>(i));
    if (n.op != OpKind::Div || n.inputs.size() != 2) continue;
    const ValueId b = n.inputs[1];
    if (nest.values[i].kept || !nest.values[static_cast<size_t>(b)].kept) continue;
    if (compute_ctype(g.node(b).dtype) == "float") rcp[static_cast<size_t>(b)] = true;
  }
  return rcp;
}

std::string reduction_init(const Graph& g, const Node& n) {
  const std::string at = reduction_acc_ctype(g, n);
  const bool bl = g.node(n.inputs[0]).dtype == DType::Bool;
  switch (n.op) {
    case OpKind::Prod:
    case OpKind::All:
      return "af_splat<" + at + ">(1)";
    case OpKind::Amax:
    case OpKind::Argmax:
      return "af_splat<" + at + ">(af_tmin<" + at + ">())";
    case OpKind::Amin:
    case OpKind::Argmin:
      return bl ? "af_splat<uint8_t>(1)" : "af_splat<" + at + ">(af_tmax<" + at + ">())";
    default:
      return "vec<" + at + ">{}";
  }
}

std::string reduction_update(const Node& n, const std::string& at, const std::string& acc, const std::string& x,
                             const std::string& mu, bool mean_pass) {
  switch (n.op) {
    case OpKind::Sum:
    case OpKind::Mean:
      return "af_add<" + at + ">(" + acc + ", " + x + ")";
    case OpKind::Var:
      return mean_pass ? acc + " + " + x : acc + " + (" + x + " - " + mu + ") * (" + x + " - " + mu + ")";
    case OpKind::Prod:
      return "af_mul<" + at + ">(" + acc + ", " + x + ")";
    case OpKind::Amax:
      return "af_max<" + at + ">(" + acc + ", " + x + ")";
    case OpKind::Amin:
      return "af_min<" + at + ">(" + acc + ", " + x + ")";
    case OpKind::Any:
      return "(" + acc + " | " + x + ")";
    case OpKind::All:
      return "(" + acc + " & " + x + ")";
    default:
      return acc;
  }
}

bool has_row_chains(OpKind k, DType in) {
  return is_cascade_sum(k, in) || ((k == OpKind::Amax || k == OpKind::Amin) && in != DType::Bool);
}

}  // namespace autofuse
