// Implementation of kernel_test_util.h (no tests here; linked into the one GoogleTest binary).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <sstream>

#include "autofuse/codegen/kernel.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/printer.h"
#include "kernel_test_util.h"

namespace autofuse::kernel_testing {

namespace {

std::string layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous:
      return "contiguous";
    case Layout::Permuted:
      return "permuted";
    case Layout::Gapped:
      return "gapped";
    case Layout::Expanded:
      return "expanded";
  }
  return "?";
}

}  // namespace

HostTensor make_tensor(DType t, const std::vector<int64_t>& sizes, Layout layout, std::mt19937_64& rng) {
  const size_t r = sizes.size();
  std::vector<int64_t> store = sizes;
  std::vector<int> expanded_dim;
  if (layout == Layout::Expanded) {
    std::vector<int> cand;
    for (size_t d = 0; d < r; ++d)
      if (sizes[d] > 1) cand.push_back(static_cast<int>(d));
    if (!cand.empty()) {
      int d = pick(cand, rng);
      store[static_cast<size_t>(d)] = 1;
      expanded_dim.push_back(d);
    }
  }
  std::vector<size_t> order(r);
  std::iota(order.begin(), order.end(), 0);
  if (layout == Layout::Permuted) std::shuffle(order.begin(), order.end(), rng);
  // Strides for storage order `order` (order[0] outermost).
  std::vector<int64_t> strides(r, 0);
  int64_t acc = layout == Layout::Gapped ? 2 : 1;
  for (size_t j = r; j-- > 0;) {
    size_t d = order[j];
    strides[d] = acc;
    acc *= std::max<int64_t>(1, store[d]) * (layout == Layout::Gapped ? 2 : 1);
  }
  for (int d : expanded_dim) strides[static_cast<size_t>(d)] = 0;
  int64_t span = 1;
  for (size_t d = 0; d < r; ++d)
    if (sizes[d] > 0) span += (sizes[d] - 1) * strides[d];
  HostTensor base = HostTensor::empty(t, {span});
  std::memset(base.data, 0, static_cast<size_t>(span * dtype_size(t)));
  HostTensor v = HostTensor::view(t, base.data, sizes, strides);
  v.owner = base.owner;
  return v;
}

void fill_random(HostTensor& t, std::mt19937_64& rng, bool specials) {
  std::normal_distribution<double> nd;
  const double kSpecial[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(), -0.0, 0.0};
  for_each_multi_index(t.sizes, [&](const std::vector<int64_t>& idx) {
    if (is_float(t.dtype)) {
      double v = nd(rng);
      if (specials && coin(rng, 0.05)) v = kSpecial[uni(rng, 0, 4)];
      t.set_double(idx, v);
    } else if (t.dtype == DType::Bool) {
      t.set_int(idx, uni(rng, 0, 1));
    } else if (t.dtype == DType::UInt8) {
      t.set_int(idx, uni(rng, 0, 40));
    } else {
      t.set_int(idx, uni(rng, -20, 20));
    }
  });
}

double default_tolerance(DType t) { return kernel_tolerance(t); }

std::string compare(const HostTensor& got, const HostTensor& want, double tol) {
  if (got.sizes != want.sizes) return "sizes differ: " + got.describe() + " vs " + want.describe();
  std::string err;
  if (is_float(want.dtype)) {
    double scale = 1;
    for_each_multi_index(want.sizes, [&](const std::vector<int64_t>& i) {
      double w = want.get_double(i);
      if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
    });
    for_each_multi_index(want.sizes, [&](const std::vector<int64_t>& i) {
      if (!err.empty()) return;
      double g = got.get_double(i), w = want.get_double(i);
      bool ok = std::isnan(w)   ? std::isnan(g)
                : std::isinf(w) ? g == w
                                : std::fabs(g - w) <= tol * (std::fabs(w) + scale);
      if (ok) return;
      std::ostringstream o;
      o << "at [";
      for (size_t d = 0; d < i.size(); ++d) o << (d ? ", " : "") << i[d];
      o.precision(17);
      o << "]: got " << g << ", want " << w << " (tol " << tol << ", scale " << scale << ")";
      err = o.str();
    });
  } else {
    for_each_multi_index(want.sizes, [&](const std::vector<int64_t>& i) {
      if (!err.empty()) return;
      int64_t g = got.get_int(i), w = want.get_int(i);
      if (g == w) return;
      std::ostringstream o;
      o << "at [";
      for (size_t d = 0; d < i.size(); ++d) o << (d ? ", " : "") << i[d];
      o << "]: got " << g << ", want " << w;
      err = o.str();
    });
  }
  return err;
}

Bindings random_bindings(const Graph& g, std::mt19937_64& rng) {
  const std::vector<int64_t> small = {0, 1, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33};
  const std::vector<int64_t> large = {64, 100, 129, 255, 1000, 1031, 4096};
  Bindings b;
  for (;;) {
    b.clear();
    double total = 1;
    for (const std::string& s : g.symbols()) {
      int64_t v = coin(rng, 0.75) ? pick(small, rng) : pick(large, rng);
      b[s] = v;
      total *= std::max<int64_t>(1, v);
    }
    if (total <= 300000) return b;
  }
}

std::string run_case(const RandomGraph& rg, const Bindings& b, std::mt19937_64& rng) {
  const Graph& g = rg.graph;
  const bool specials = coin(rng, 0.25);
  std::vector<HostTensor> inputs;
  std::ostringstream desc;
  desc << "sizes {";
  for (auto& [k, v] : b) desc << " " << k << "=" << v;
  desc << " } inputs:";
  for (ValueId in : g.inputs()) {
    const Node& nd = g.node(in);
    Layout l = pick(
        std::vector<Layout>{Layout::Contiguous, Layout::Contiguous, Layout::Permuted, Layout::Gapped, Layout::Expanded},
        rng);
    HostTensor t = make_tensor(nd.dtype, eval_shape(nd.shape, b), l, rng);
    fill_random(t, rng, specials);
    desc << " " << t.describe() << " (" << layout_name(l) << ")";
    inputs.push_back(t);
  }
  desc << (specials ? " with NaN/inf" : "");
  std::vector<HostTensor> want;
  try {
    want = interpret(g, inputs);
  } catch (const IRError& e) {
    // amax/argmax/... over zero elements: eager raises, so there is no reference value to compare with.
    if (std::string(e.what()).find("reduction over zero elements") != std::string::npos) return "";
    throw;
  }
  std::shared_ptr<Kernel> k = Kernel::compile(g);
  std::vector<HostTensor> outs;
  auto sizes = k->output_sizes(inputs);
  for (size_t i = 0; i < sizes.size(); ++i) {
    Layout l = coin(rng, 0.7) ? Layout::Contiguous : (coin(rng, 0.5) ? Layout::Permuted : Layout::Gapped);
    outs.push_back(make_tensor(g.node(g.outputs()[i]).dtype, sizes[i], l, rng));
    desc << " out " << outs.back().describe();
  }
  k->run(inputs, outs);
  if (std::getenv("AUTOFUSE_FUZZ_VERBOSE")) {
    auto dump = [](const char* what, const HostTensor& t) {
      std::fprintf(stderr, "%s %s:", what, t.describe().c_str());
      int64_t shown = 0;
      for_each_multi_index(t.sizes, [&](const std::vector<int64_t>& i) {
        if (shown++ < 12) std::fprintf(stderr, " %g", t.get_double(i));
      });
      std::fprintf(stderr, "\n");
    };
    for (auto& t : inputs) dump("input", t);
    for (auto& t : outs) dump("output", t);
    for (auto& t : want) dump("expected", t);
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    const DType t = g.node(g.outputs()[i]).dtype;
    const double tol = i < rg.tol.size() && rg.tol[i] >= 0 ? rg.tol[i] : default_tolerance(t);
    std::string e = compare(outs[i], want[i], rg.exact[i] ? 0.0 : tol);
    if (!e.empty()) return "output " + std::to_string(i) + " " + e + "; " + desc.str();
  }
  return "";
}

void expect_matches_interpreter(const Kernel& k, const std::vector<HostTensor>& in, const std::string& what) {
  auto got = run_kernel(k, in);
  auto want = interpret(k.graph(), in);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(compare(got[i], want[i], default_tolerance(got[i].dtype)), "") << what << ", output " << i;
}

}  // namespace autofuse::kernel_testing
