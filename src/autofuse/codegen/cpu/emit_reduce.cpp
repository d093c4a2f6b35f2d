// The CPU emitter's reduction accumulators: the update of each accumulator per vector, and the reduced values after
// a pass (horizontal sums, the mean's and var's divisions, the corrected two-pass var and its paired means).
//
// var and std of float32 / float64 values (not of float16 / bfloat16 ones: needs_deviation_sum) use the corrected
// two-pass formula (Chan, Golub and LeVeque, "Algorithms for computing the sample variance: analysis and
// recommendations", The American Statistician 37(3), 1983, eq. 1.7): the mean pass gives mu,
// the second pass sums d = x - mu and d^2, and var = (sum d^2 - (sum d)^2 / n) / (n - correction), clamped at 0; the
// mean a layer_norm centres with (a mean of the same input, ValuePlacement::var_of_mean) is mu + (sum d) / n. On data
// whose values are all equal, every d is the same exact difference (the f32 mean's rounding error), so the two terms
// cancel exactly and the mean is the value itself: var / std 0 and layer_norm's centred row 0, as eager's Welford
// gives (docs/precision.md).
// GCC 12 reports a false -Wrestrict inside std::string concatenation at -O3 (GCC PR 105651).
#pragma GCC diagnostic ignored "-Wrestrict"
#include "autofuse/codegen/cpu/emitter.h"

namespace autofuse {
using cpu_emit::Emitter;

bool needs_deviation_sum(const Graph& g, ValueId var) {
  auto half = [](DType t) { return t == DType::Float16 || t == DType::BFloat16; };
  const Node& x = g.node(g.node(var).inputs[0]);
  return !(half(x.dtype) || (x.op == OpKind::Cast && half(g.node(x.inputs[0]).dtype)));
}

void Emitter::emit_accumulate(ValueId id, bool mean_pass, bool cascade, bool tail, const std::string& rl, int chain) {
  const Node& nd = g_.node(id);
  const DType in_t = g_.node(nd.inputs[0]).dtype;
  const std::string at = acc_type(nd), ct = compute_ctype(in_t);
  const std::string x = "x" + s(static_cast<int64_t>(nd.inputs[0]));
  const std::string sid = s(static_cast<int64_t>(id));
  const std::vector<std::string> names = acc_names(id, mean_pass);
  auto target = [&](const std::string& base) {
    const std::string t0 = (cascade && is_cascade(nd.op, in_t)) ? "b" + base : base;
    return chain_name(t0, has_row_chains(nd.op, in_t) ? chain : 0);
  };
  const std::string tgt = target(names[0]);
  std::string xv = x;
  if ((nd.op == OpKind::Sum || nd.op == OpKind::Prod) && at != ct)
    xv = "__builtin_convertvector(" + x + ", vec<int64_t>)";
  if (nd.op == OpKind::Any || nd.op == OpKind::All) xv = "af_nz<" + ct + ">(" + x + ")";
  const std::string mask = "af_nlanes<" + at + ">(n)";
  if (nd.op == OpKind::Argmax || nd.op == OpKind::Argmin) {
    const std::string idx =
        inner_ ? "(af_splat<int64_t>(" + rl + ") + af_iota<int64_t>())" : "af_splat<int64_t>(" + rl + ")";
    open("");
    line("mask_t<" + at + "> m = af_argbetter<" + at + ">(" + xv + ", " + tgt + ", " +
         (nd.op == OpKind::Argmax ? "true" : "false") + ");");
    if (tail) line("m &= " + mask + ";");
    line(tgt + " = m ? " + xv + " : " + tgt + ";");
    line("ai" + sid + " = __builtin_convertvector(m, vec<int64_t>) ? " + idx + " : ai" + sid + ";");
    close();
    return;
  }
  std::vector<std::pair<std::string, std::string>> updates;  // (accumulator, new value)
  updates.emplace_back(tgt, nonan_max_[static_cast<size_t>(id)]
                                ? "af_max_nonan<" + at + ">(" + tgt + ", " + xv + ")"
                                : reduction_update(nd, at, tgt, xv, "mu" + sid, mean_pass));
  if (names.size() > 1) {  // a var's sum of the deviations d (acc_names)
    const std::string td = target(names[1]);
    updates.emplace_back(td, "af_add_fma<" + at + ">(" + td + ", " + xv + " - mu" + sid + ")");
  }
  for (auto& [acc, nv] : updates) {
    if (tail)
      line(acc + " = af_selm<" + at + ">(" + mask + ", " + nv + ", " + acc + ");");
    else
      line(acc + " = " + nv + ";");
  }
}

void Emitter::finalize(int p, const std::vector<std::pair<ValueId, bool>>& accs) {
  for (auto& [id, mp] : accs) {
    const Node& nd = g_.node(id);
    const std::string at = main_type(nd), sid = s(static_cast<int64_t>(id));
    const std::string nm = (mp ? "am" : "a") + sid;
    const bool is_arg = nd.op == OpKind::Argmax || nd.op == OpKind::Argmin;
    const std::string rt = is_arg ? "int64_t" : at;
    // The row's (inner) or the lanes' (outer reduction) result of accumulator `acc`.
    auto reduced = [&](const std::string& acc) {
      return inner_ ? "af_splat<" + rt + ">(" + horizontal_reduction(nd.op, at, acc, "ai" + sid) + ")"
                    : (is_arg ? "ai" + sid : acc);
    };
    std::string e = reduced(nm);
    const std::string rn = "af_splat<" + at + ">((" + at + ")rn)";
    if (mp) {
      const std::string ct = acc_type(nd);
      std::string mu = "(" + e + " / " + rn + ")";
      if (ct != at) mu = "__builtin_convertvector(" + mu + ", vec<" + ct + ">)";
      line("const vec<" + ct + "> mu" + sid + " = " + mu + ";");
      continue;
    }
    if (nd.op == OpKind::Mean) e = "(" + e + " / " + rn + ")";
    if (nd.op == OpKind::Var) {
      const bool dev = needs_deviation_sum(g_, id);
      const std::string c = s(attr_int(nd.attrs, "correction")), sd = dev ? reduced("ad" + sid) : "";
      // In the main type (f64 for f32 data); af_var_sum keeps a NaN and clamps at 0.
      if (dev) e = "af_var_sum<" + at + ">(" + e + ", " + sd + ", " + rn + ")";
      e = "(" + e + " / af_splat<" + at + ">((" + at + ")(rn - " + c + " > 0 ? rn - " + c + " : 0)))";
      std::string mu = "mu" + sid;
      if (acc_type(nd) != at) mu = "__builtin_convertvector(" + mu + ", vec<" + at + ">)";
      for (size_t m = 0; m < g_.size(); ++m)
        if (val(static_cast<ValueId>(m)).var_of_mean == id) {
          const Node& mn = g_.node(static_cast<ValueId>(m));
          std::string me = dev ? "af_var_mean<" + at + ">(" + mu + ", " + sd + ", " + rn + ")" : mu;
          if (compute_ctype(mn.dtype) != at)
            me = "__builtin_convertvector(" + me + ", vec<" + compute_ctype(mn.dtype) + ">)";
          red_value_[static_cast<ValueId>(m)] = rounded_to(implicit_rounding_dtype(mn.dtype, o_.precision), me);
        }
    }
    const std::string oct = compute_ctype(nd.dtype);
    if (oct != rt) e = "__builtin_convertvector(" + e + ", vec<" + oct + ">)";
    red_value_[id] = rounded_to(implicit_rounding_dtype(nd.dtype, o_.precision), e);
  }
  (void)p;
}

}  // namespace autofuse
