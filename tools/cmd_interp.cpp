// `autofuse interp FILE [--seed K] [--shape SYM=N ...]`: run the reference interpreter on seeded random inputs and
// print, per output, its dtype, sizes, min / max / mean over the non-NaN elements and the NaN count.
//
// Symbols without --shape get size 4. Inputs: floats ~ N(0, 1), signed integers uniform in [-10, 10], u8 in
// [0, 20], bool 50/50; inputs declared with strides are laid out with exactly those strides.
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/parser.h"
#include "autofuse/ir/printer.h"
#include "commands.h"

namespace autofuse::cli {

namespace {

constexpr int64_t kDefaultSymbolSize = 4;

// Calls fn(index) for every multi-index of sizes, in row-major order.
template <typename Fn>
void for_each_index(const std::vector<int64_t>& sizes, Fn&& fn) {
  for (int64_t s : sizes) {
    if (s == 0) return;
  }
  std::vector<int64_t> idx(sizes.size(), 0);
  while (true) {
    fn(idx);
    size_t d = sizes.size();
    while (d > 0) {
      --d;
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
      if (d == 0) return;
    }
    if (sizes.empty()) return;
  }
}

// A random input tensor of the node's type under the bindings, with the declared strides if any.
HostTensor random_input(const Node& n, const Bindings& b, std::mt19937_64& rng) {
  std::vector<int64_t> sizes = eval_shape(n.shape, b);
  HostTensor t;
  if (has_attr(n.attrs, "strides")) {
    std::vector<int64_t> strides = eval_shape(attr_shape(n.attrs, "strides"), b);
    int64_t extent = 1;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == 0) extent = 0;
    }
    for (size_t i = 0; i < sizes.size() && extent > 0; ++i) extent += (sizes[i] - 1) * strides[i];
    HostTensor storage = HostTensor::empty(n.dtype, {std::max<int64_t>(extent, 1)});
    t = HostTensor::view(n.dtype, storage.data, sizes, strides);
    t.owner = storage.owner;
  } else {
    t = HostTensor::empty(n.dtype, sizes);
  }
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int64_t> ints(-10, 10), bytes(0, 20), bits(0, 1);
  for_each_index(sizes, [&](const std::vector<int64_t>& idx) {
    switch (n.dtype) {
      case DType::Bool:
        t.set_int(idx, bits(rng));
        break;
      case DType::UInt8:
        t.set_int(idx, bytes(rng));
        break;
      default:
        if (is_float(n.dtype)) {
          t.set_double(idx, normal(rng));
        } else {
          t.set_int(idx, ints(rng));
        }
    }
  });
  return t;
}

void print_summary(const std::string& name, const HostTensor& t) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  int64_t nans = 0, count = 0;
  for_each_index(t.sizes, [&](const std::vector<int64_t>& idx) {
    double v = is_float(t.dtype) ? t.get_double(idx) : static_cast<double>(t.get_int(idx));
    if (std::isnan(v)) {
      ++nans;
      return;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
    ++count;
  });
  std::string sizes;
  for (int64_t s : t.sizes) sizes += (sizes.empty() ? "" : ", ") + std::to_string(s);
  std::printf("%%%s: %s[%s]", name.c_str(), std::string(dtype_name(t.dtype)).c_str(), sizes.c_str());
  if (count > 0) {
    std::printf("  min=%.6g max=%.6g mean=%.6g", lo, hi, sum / static_cast<double>(count));
  } else if (nans > 0) {
    std::printf("  (all %lld elements are NaN)", static_cast<long long>(nans));
  } else {
    std::printf("  empty (0 elements)");
  }
  std::printf("  nan=%lld\n", static_cast<long long>(nans));
}

}  // namespace

int cmd_interp(const Args& args) {
  ParsedArgs a = parse_args(args, {"seed", "shape"}, {}, {"shape"});
  expect_at_most_one_file(a);
  if (a.positional.size() != 1) {
    std::fprintf(stderr, "usage: autofuse interp FILE [--seed K] [--shape SYM=N ...]\n");
    return 2;
  }
  Graph g = parse_graph(read_file(a.positional[0]), a.positional[0]);
  expect_outputs(g, a.positional[0]);
  const uint64_t seed = static_cast<uint64_t>(a.has("seed") ? parse_seed(*a.get("seed")) : 0);

  Bindings b;
  for (const auto& [name, v] : parse_shapes(a.get_all("shape"))) b[name] = v;
  for (const std::string& s : g.symbols()) b.emplace(s, kDefaultSymbolSize);
  for (const auto& [name, v] : b) {
    if (!g.symbols().count(name)) throw std::invalid_argument("--shape: the graph has no symbol '" + name + "'");
  }

  std::printf("seed %llu", static_cast<unsigned long long>(seed));
  for (const auto& [name, v] : b) std::printf(", %s=%lld", name.c_str(), static_cast<long long>(v));
  std::printf("\n");

  check_sizes(g, b);  // a size that evaluates negative (an input's too): an IRError naming the value
  std::mt19937_64 rng(seed);
  std::vector<HostTensor> inputs;
  for (ValueId v : g.inputs()) inputs.push_back(random_input(g.node(v), b, rng));
  // Symbols the input sizes do not determine (f32[s0*s0]) take their --shape value.
  std::vector<HostTensor> outs = interpret(g, inputs, {}, &b);
  for (size_t i = 0; i < outs.size(); ++i) print_summary(g.node(g.outputs()[i]).name, outs[i]);
  return 0;
}

}  // namespace autofuse::cli
