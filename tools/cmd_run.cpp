// `autofuse run FILE [--shape SYM=N ...] [--seed K] [--repeat R]`: compile the graph's kernels, run them on seeded
// random contiguous inputs, compare every output with the reference interpreter, print the maximum absolute and
// relative errors and the compile and run times. Exit status 1 on a mismatch (beyond the dtype's tolerance).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <random>
#include <string>

#include "autofuse/codegen/kernel.h"
#include "autofuse/driver/compiled_graph.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "commands.h"

namespace autofuse::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int cmd_run(const Args& args) {
  ParsedArgs a = parse_args(args, {"shape", "seed", "repeat"}, {}, {"shape"});
  expect_at_most_one_file(a);
  if (a.positional.size() != 1) {
    std::fprintf(stderr, "usage: autofuse run FILE [--shape SYM=N ...] [--seed K] [--repeat R]\n");
    return 2;
  }
  Bindings b;
  for (const auto& [name, v] : parse_shapes(a.get_all("shape"))) b[name] = v;
  // Read as a kernel's IR (what AUTOFUSE_DEBUG_DIR's repro.af holds): a symbol only its outputs' sizes name, or one
  // --shape gives, is the caller's to give (Kernel::given_symbols), here from --shape (else 8 like any other).
  VerifyOptions vo;
  vo.output_shapes_bind = true;
  for (const auto& [name, v] : b) vo.given_symbols.insert(name);
  Graph g = parse_graph(read_file(a.positional[0]), a.positional[0], vo);
  for (const auto& [name, v] : b)
    if (!g.symbols().count(name)) throw std::invalid_argument("--shape: the graph has no symbol '" + name + "'");
  for (const std::string& s : g.symbols()) b.emplace(s, 8);
  check_sizes(g, b);  // a size that evaluates negative: an IRError naming the value, as `interp` reports it
  const uint64_t seed = static_cast<uint64_t>(a.get("seed") ? parse_seed(*a.get("seed")) : 0);
  const int64_t repeat = a.get("repeat") ? parse_count(*a.get("repeat"), "--repeat", 1, 1000000000) : 5;

  // One kernel when the graph is one; otherwise the whole graph through fusion (CompiledGraph: its kernels in order).
  auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<Kernel> k;
  std::optional<CompiledGraph> cg;
  std::string label;
  if (auto why = kernel_unsupported_reason(g)) {
    CompileGraphOptions co;
    co.strict = true;
    co.fusion.given_symbols = vo.given_symbols;  // --shape's symbols, given to the kernels at run (cg->run(.., &b))
    cg = CompiledGraph::compile(g, co);
    size_t kernels = 0;
    for (size_t i = 0; i < cg->fused().groups.size(); ++i) kernels += cg->kernel(i) ? 1 : 0;
    label = "graph " + g.name() + " (not one kernel: " + *why + "; fused into " + std::to_string(kernels) + " kernels)";
  } else {
    k = Kernel::compile(g);
    label = "kernel " + k->name();
  }
  const double compile_s = seconds_since(t0);

  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd;
  std::vector<HostTensor> inputs;
  for (ValueId in : g.inputs()) {
    const Node& n = g.node(in);
    HostTensor t = HostTensor::empty(n.dtype, eval_shape(n.shape, b));
    for_each_multi_index(t.sizes, [&](const std::vector<int64_t>& i) {
      if (is_float(n.dtype))
        t.set_double(i, nd(rng));
      else if (n.dtype == DType::Bool)
        t.set_int(i, static_cast<int64_t>(rng() & 1));
      else
        t.set_int(i, static_cast<int64_t>(rng() % 41) - (n.dtype == DType::UInt8 ? 0 : 20));
    });
    inputs.push_back(t);
  }
  std::vector<HostTensor> outs;
  if (k)
    for (auto& s : k->output_sizes(inputs, &b))
      outs.push_back(HostTensor::empty(g.node(g.outputs()[outs.size()]).dtype, s));
  auto run_once = [&] {
    if (k)
      k->run(inputs, outs, &b);  // b: the --shape values, for symbols the input sizes do not determine
    else
      outs = cg->run(inputs, &b);
  };
  run_once();  // warm-up (and the stride-class variant, if any)
  std::vector<double> times;
  for (int64_t r = 0; r < repeat; ++r) {
    auto t1 = std::chrono::steady_clock::now();
    run_once();
    times.push_back(seconds_since(t1));
  }
  std::sort(times.begin(), times.end());
  std::vector<HostTensor> want = interpret(g, inputs, {}, &b);

  bool ok = true;
  std::printf("%s: compile %.1f ms, run %.3f ms (median of %lld)\n", label.c_str(), compile_s * 1e3,
              times[times.size() / 2] * 1e3, static_cast<long long>(repeat));
  for (size_t o = 0; o < outs.size(); ++o) {
    double max_abs = 0, max_rel = 0;
    bool bad = false;
    int64_t special = 0;  // elements where NaN-ness or an infinity differs (no error figure covers them)
    std::string first;    // the first such element: index, got, want
    const double tol = kernel_tolerance(outs[o].dtype);
    for_each_multi_index(outs[o].sizes, [&](const std::vector<int64_t>& i) {
      double x = outs[o].get_double(i), w = want[o].get_double(i);
      bool differs = false;
      if (std::isnan(w) || std::isnan(x)) {
        differs = std::isnan(w) != std::isnan(x);
      } else if (std::isinf(w) || std::isinf(x)) {
        differs = x != w;
      } else {
        double ae = std::fabs(x - w), re = ae / std::max(std::fabs(w), 1e-30);
        max_abs = std::max(max_abs, ae);
        max_rel = std::max(max_rel, std::min(re, ae));
        if (ae > tol * (std::fabs(w) + 1)) bad = true;
        return;
      }
      if (!differs) return;
      bad = true;
      if (special++ == 0) {
        first = "[";
        for (size_t d = 0; d < i.size(); ++d) first += (d ? ", " : "") + std::to_string(i[d]);
        char buf[96];
        std::snprintf(buf, sizeof buf, "]: got %g, want %g", x, w);
        first += buf;
      }
    });
    std::printf("  output %zu %s: max abs err %.3g, max rel err %.3g  %s\n", o, outs[o].describe().c_str(), max_abs,
                max_rel, bad ? "MISMATCH" : "ok");
    if (special)
      std::printf("    %lld element(s) differ in NaN or infinity, the first at %s\n", static_cast<long long>(special),
                  first.c_str());
    ok = ok && !bad;
  }
  return ok ? 0 : 1;
}

}  // namespace autofuse::cli
