// The reference interpreter's driver: binding sizes, reading inputs, running nodes in order (freeing each value after
// its last use), and writing outputs. The ops themselves are in interp_elementwise/layout/reduce.cpp.
#include "autofuse/ir/interpreter.h"

#include <cstring>
#include <map>
#include <set>
#include <string>

#include "autofuse/ir/bind_symbols.h"
#include "autofuse/ir/interp_value.h"

namespace autofuse {

namespace interp {

int64_t Value::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

Value Value::zeros(DType dtype, std::vector<int64_t> sizes) {
  Value v;
  v.dtype = dtype;
  v.sizes = std::move(sizes);
  const auto n = static_cast<size_t>(v.numel());
  if (v.is_float())
    v.f.assign(n, 0.0);
  else
    v.i.assign(n, 0);
  return v;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& sizes) { return contiguous_strides_i64(sizes); }

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in_sizes, const std::vector<int64_t>& out_sizes) {
  const std::vector<int64_t> st = row_major_strides(in_sizes);
  std::vector<int64_t> out(out_sizes.size(), 0);
  const size_t lead = out_sizes.size() - in_sizes.size();
  for (size_t d = 0; d < in_sizes.size(); ++d) out[lead + d] = in_sizes[d] == 1 ? 0 : st[d];
  return out;
}

std::string NodeContext::describe() const {
  std::string s = "%" + node.name + " = " + std::string(node.info().name) + "(";
  for (size_t i = 0; i < node.inputs.size(); ++i) s += (i ? ", %" : "%") + graph.node(node.inputs[i]).name;
  return s + ")";
}

void NodeContext::fail(const std::string& what) const { throw IRError(describe() + ": " + what); }

}  // namespace interp

namespace {

using interp::Value;

std::string input_label(const Node& n) { return "input %" + n.name; }

std::string sizes_str(const std::vector<int64_t>& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

template <class T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
void store(char* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

/// Call fn(k, offset) for every element of a strided tensor: k its row-major index, offset its position in elements.
/// Contiguous tensors take a plain loop.
template <class F>
void for_each_offset(const HostTensor& t, F&& fn) {
  if (t.is_contiguous()) {
    const int64_t n = t.numel();
    for (int64_t k = 0; k < n; ++k) fn(k, k);
    return;
  }
  interp::for_each_index(t.sizes, {t.strides}, [&](int64_t k, const int64_t* o) { fn(k, o[0]); });
}

/// dst[k] = conv(element k of t), t's storage type T.
template <class T, class W, class Conv>
void read_as(const HostTensor& t, std::vector<W>& dst, Conv conv) {
  const char* base = static_cast<const char*>(t.data);
  for_each_offset(t, [&](int64_t k, int64_t off) { dst[k] = conv(load<T>(base + off * int64_t{sizeof(T)})); });
}

/// Element k of t = conv(src[k]), t's storage type T.
template <class T, class W, class Conv>
void write_as(const std::vector<W>& src, const HostTensor& t, Conv conv) {
  char* base = static_cast<char*>(t.data);
  for_each_offset(t, [&](int64_t k, int64_t off) { store<T>(base + off * int64_t{sizeof(T)}, conv(src[k])); });
}

/// Read a strided host tensor into a contiguous Value.
Value read_tensor(const HostTensor& t) {
  Value v = Value::zeros(t.dtype, t.sizes);
  auto same = [](auto x) { return x; };
  switch (t.dtype) {
    case DType::Bool:
      read_as<uint8_t>(t, v.i, [](uint8_t x) { return int64_t{x != 0}; });
      break;
    case DType::UInt8:
      read_as<uint8_t>(t, v.i, same);
      break;
    case DType::Int8:
      read_as<int8_t>(t, v.i, same);
      break;
    case DType::Int16:
      read_as<int16_t>(t, v.i, same);
      break;
    case DType::Int32:
      read_as<int32_t>(t, v.i, same);
      break;
    case DType::Int64:
      read_as<int64_t>(t, v.i, same);
      break;
    case DType::Float16:
      read_as<uint16_t>(t, v.f, half_bits_to_float);
      break;
    case DType::BFloat16:
      read_as<uint16_t>(t, v.f, bf16_bits_to_float);
      break;
    case DType::Float32:
      read_as<float>(t, v.f, same);
      break;
    case DType::Float64:
      read_as<double>(t, v.f, same);
      break;
  }
  return v;
}

/// Write a Value (already rounded to its dtype) into a strided host tensor of the same dtype and sizes.
void write_tensor(const Value& v, const HostTensor& t) {
  auto narrow = [](auto x) { return x; };
  switch (t.dtype) {
    case DType::Bool:
      write_as<uint8_t>(v.i, t, [](int64_t x) { return static_cast<uint8_t>(x != 0); });
      break;
    case DType::UInt8:
      write_as<uint8_t>(v.i, t, [](int64_t x) { return static_cast<uint8_t>(x); });
      break;
    case DType::Int8:
      write_as<int8_t>(v.i, t, [](int64_t x) { return static_cast<int8_t>(x); });
      break;
    case DType::Int16:
      write_as<int16_t>(v.i, t, [](int64_t x) { return static_cast<int16_t>(x); });
      break;
    case DType::Int32:
      write_as<int32_t>(v.i, t, [](int64_t x) { return static_cast<int32_t>(x); });
      break;
    case DType::Int64:
      write_as<int64_t>(v.i, t, narrow);
      break;
    case DType::Float16:
      write_as<uint16_t>(v.f, t, [](double x) { return float_to_half_bits(static_cast<float>(x)); });
      break;
    case DType::BFloat16:
      write_as<uint16_t>(v.f, t, [](double x) { return float_to_bf16_bits(static_cast<float>(x)); });
      break;
    case DType::Float32:
      write_as<float>(v.f, t, [](double x) { return static_cast<float>(x); });
      break;
    case DType::Float64:
      write_as<double>(v.f, t, narrow);
      break;
  }
}

std::vector<int64_t> eval_sizes(const Node& n, const Bindings& b) {
  std::vector<int64_t> out;
  for (const Expr& e : n.shape) {
    int64_t v = 0;
    try {
      v = e.eval(b);
    } catch (const std::exception& ex) {
      throw IRError("%" + n.name + ": size " + e.str() + " cannot be evaluated: " + ex.what());
    }
    if (v < 0) throw IRError("%" + n.name + ": size " + e.str() + " evaluates to " + std::to_string(v) + " < 0");
    out.push_back(v);
  }
  return out;
}

}  // namespace

Bindings bind_symbols(const Graph& g, const std::vector<HostTensor>& inputs, const Bindings* given) {
  const std::vector<ValueId> ins = g.inputs();
  if (ins.size() != inputs.size())
    throw IRError("graph " + g.name() + " takes " + std::to_string(ins.size()) + " inputs, got " +
                  std::to_string(inputs.size()));
  for (size_t k = 0; k < ins.size(); ++k) {
    const Node& n = g.node(ins[k]);
    const HostTensor& t = inputs[k];
    if (t.dtype != n.dtype)
      throw IRError(input_label(n) + ": expected dtype " + std::string(dtype_name(n.dtype)) + ", got " +
                    std::string(dtype_name(t.dtype)));
    if (t.sizes.size() != n.shape.size())
      throw IRError(input_label(n) + ": expected rank " + std::to_string(n.shape.size()) + " (" + shape_str(n.shape) +
                    "), got rank " + std::to_string(t.sizes.size()) + " (" + t.describe() + ")");
    if (t.strides.size() != t.sizes.size()) throw IRError(input_label(n) + ": tensor has " + t.describe());
  }
  std::vector<ShapeArg> args;
  args.reserve(ins.size());
  for (size_t k = 0; k < ins.size(); ++k) args.push_back(ShapeArg{&g.node(ins[k]), &inputs[k].sizes});
  const std::set<std::string> need = symbols_needed_to_run(g);
  Bindings seed;
  if (given != nullptr)
    for (const auto& [name, v] : *given)
      if (need.count(name)) seed[name] = v;
  return bind_shape_symbols(args, &need, seed.empty() ? nullptr : &seed);
}

void check_sizes(const Graph& g, const Bindings& b) {
  for (const Node& n : g.nodes()) {
    bool check = false, bound = true;
    for (const Expr& e : n.shape) {
      if (provably_nonnegative(e)) continue;  // sizes, their sums and products: most shapes, nothing to evaluate
      check = true;
      for (const std::string& s : e.symbols()) bound = bound && b.count(s) != 0;
    }
    if (check && bound) eval_sizes(n, b);  // throws naming the node
  }
}

std::vector<std::vector<int64_t>> output_sizes(const Graph& g, const Bindings& b) {
  std::vector<std::vector<int64_t>> out;
  for (ValueId v : g.outputs()) out.push_back(eval_sizes(g.node(v), b));
  return out;
}

namespace {

/// Run every node; return the outputs' values (in Graph::outputs() order).
std::vector<Value> run(const Graph& g, const std::vector<HostTensor>& inputs, const Bindings& b, PrecisionPolicy pp) {
  const size_t n = g.size();
  // Remaining uses of each value (graph outputs count as a use that is never released).
  std::vector<int64_t> uses(n, 0);
  for (const Node& node : g.nodes())
    for (ValueId v : node.inputs) ++uses[v];
  for (ValueId v : g.outputs()) uses[v] += 1 << 30;

  std::vector<Value> vals(n);
  size_t next_input = 0;
  for (size_t id = 0; id < n; ++id) {
    const Node& node = g.node(static_cast<ValueId>(id));
    interp::NodeContext c{g, node, b, eval_sizes(node, b), pp};
    if (node.op == OpKind::Input) {
      vals[id] = read_tensor(inputs[next_input++]);
      continue;
    }
    std::vector<const Value*> in;
    for (ValueId v : node.inputs) in.push_back(&vals[v]);
    switch (node.info().category) {
      case OpCategory::Source:
      case OpCategory::Elementwise:
        vals[id] = interp::eval_elementwise(c, in);
        break;
      case OpCategory::Broadcast:
      case OpCategory::Layout:
        vals[id] = interp::eval_layout(c, in);
        break;
      case OpCategory::Reduce:
        vals[id] = interp::eval_reduce(c, in);
        break;
      case OpCategory::Extern:
        c.fail("extern call '" + attr_str(node.attrs, "name") + "' cannot be run by the reference interpreter");
    }
    if (vals[id].sizes != c.out_sizes || vals[id].dtype != node.dtype)
      c.fail("internal error: the interpreter produced " + std::string(dtype_name(vals[id].dtype)) +
             " of the wrong size");
    for (ValueId v : node.inputs)
      if (--uses[v] == 0) vals[v] = Value{};
  }
  std::vector<Value> out;
  for (ValueId v : g.outputs()) out.push_back(vals[v]);
  return out;
}

}  // namespace

std::vector<HostTensor> interpret(const Graph& g, const std::vector<HostTensor>& inputs,
                                  const InterpretOptions& options, const Bindings* given) {
  const Bindings b = bind_symbols(g, inputs, given);
  std::vector<Value> vals = run(g, inputs, b, options.precision);
  std::vector<HostTensor> out;
  for (const Value& v : vals) {
    HostTensor t = HostTensor::empty(v.dtype, v.sizes);
    write_tensor(v, t);
    out.push_back(std::move(t));
  }
  return out;
}

void interpret_into(const Graph& g, const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs,
                    const InterpretOptions& options, const Bindings* given) {
  const Bindings b = bind_symbols(g, inputs, given);
  if (outputs.size() != g.outputs().size())
    throw IRError("graph " + g.name() + " has " + std::to_string(g.outputs().size()) + " outputs, got " +
                  std::to_string(outputs.size()) + " output tensors");
  const auto sizes = output_sizes(g, b);
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Node& n = g.node(g.outputs()[k]);
    if (outputs[k].dtype != n.dtype || outputs[k].sizes != sizes[k] || outputs[k].strides.size() != sizes[k].size())
      throw IRError("output " + std::to_string(k) + " (%" + n.name + "): expected " + std::string(dtype_name(n.dtype)) +
                    sizes_str(sizes[k]) + ", got " + outputs[k].describe());
  }
  std::vector<Value> vals = run(g, inputs, b, options.precision);
  for (size_t k = 0; k < outputs.size(); ++k) write_tensor(vals[k], outputs[k]);
}

}  // namespace autofuse
