// The reference interpreter's driver: binding sizes, reading inputs, running nodes in order (freeing each value after
// its last use), and writing outputs. The ops themselves are in interp_elementwise/layout/reduce.cpp.
#include "autofuse/ir/interpreter.h"

#include <cstring>
#include <map>
#include <set>
#include <string>

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

/// Read a strided host tensor into a contiguous Value.
Value read_tensor(const HostTensor& t) {
  Value v = Value::zeros(t.dtype, t.sizes);
  const int64_t es = dtype_size(t.dtype);
  const char* base = static_cast<const char*>(t.data);
  interp::for_each_index(t.sizes, {t.strides}, [&](int64_t k, const int64_t* o) {
    const char* p = base + o[0] * es;
    switch (t.dtype) {
      case DType::Bool: v.i[k] = load<uint8_t>(p) != 0; break;
      case DType::UInt8: v.i[k] = load<uint8_t>(p); break;
      case DType::Int8: v.i[k] = load<int8_t>(p); break;
      case DType::Int16: v.i[k] = load<int16_t>(p); break;
      case DType::Int32: v.i[k] = load<int32_t>(p); break;
      case DType::Int64: v.i[k] = load<int64_t>(p); break;
      case DType::Float16: v.f[k] = half_bits_to_float(load<uint16_t>(p)); break;
      case DType::BFloat16: v.f[k] = bf16_bits_to_float(load<uint16_t>(p)); break;
      case DType::Float32: v.f[k] = load<float>(p); break;
      case DType::Float64: v.f[k] = load<double>(p); break;
    }
  });
  return v;
}

/// Write a Value (already rounded to its dtype) into a strided host tensor of the same dtype and sizes.
void write_tensor(const Value& v, const HostTensor& t) {
  const int64_t es = dtype_size(t.dtype);
  char* base = static_cast<char*>(t.data);
  interp::for_each_index(t.sizes, {t.strides}, [&](int64_t k, const int64_t* o) {
    char* p = base + o[0] * es;
    switch (t.dtype) {
      case DType::Bool: store<uint8_t>(p, v.i[k] != 0); break;
      case DType::UInt8: store<uint8_t>(p, static_cast<uint8_t>(v.i[k])); break;
      case DType::Int8: store<int8_t>(p, static_cast<int8_t>(v.i[k])); break;
      case DType::Int16: store<int16_t>(p, static_cast<int16_t>(v.i[k])); break;
      case DType::Int32: store<int32_t>(p, static_cast<int32_t>(v.i[k])); break;
      case DType::Int64: store<int64_t>(p, v.i[k]); break;
      case DType::Float16: store<uint16_t>(p, float_to_half_bits(static_cast<float>(v.f[k]))); break;
      case DType::BFloat16: store<uint16_t>(p, float_to_bf16_bits(static_cast<float>(v.f[k]))); break;
      case DType::Float32: store<float>(p, static_cast<float>(v.f[k])); break;
      case DType::Float64: store<double>(p, v.f[k]); break;
    }
  });
}

/// Solve size == expr for its single unbound symbol when expr is k*s + c with k != 0 (checked by evaluating at
/// s = 0 and s = 1, then verifying). Returns true and binds the symbol on success.
bool try_solve(const Expr& e, int64_t size, Bindings& b) {
  std::string unbound;
  for (const auto& s : e.symbols()) {
    if (b.count(s)) continue;
    if (!unbound.empty()) return false;
    unbound = s;
  }
  if (unbound.empty()) return false;
  Bindings t = b;
  try {
    t[unbound] = 0;
    const int64_t c = e.eval(t);
    t[unbound] = 1;
    const int64_t k = e.eval(t) - c;
    if (k == 0 || (size - c) % k != 0) return false;
    const int64_t v = (size - c) / k;
    if (v < 0) return false;
    t[unbound] = v;
    if (e.eval(t) != size) return false;
    b[unbound] = v;
    return true;
  } catch (const std::exception&) {
    return false;
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

Bindings bind_symbols(const Graph& g, const std::vector<HostTensor>& inputs) {
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
  Bindings b;
  // Bare symbols first, then linear forms, until nothing changes.
  for (size_t k = 0; k < ins.size(); ++k) {
    const Node& n = g.node(ins[k]);
    for (size_t d = 0; d < n.shape.size(); ++d) {
      const Expr& e = n.shape[d];
      if (e.kind() != Expr::Kind::Sym) continue;
      auto [it, fresh] = b.emplace(e.name(), inputs[k].sizes[d]);
      if (!fresh && it->second != inputs[k].sizes[d])
        throw IRError(input_label(n) + ": dim " + std::to_string(d) + " binds " + e.name() + " = " +
                      std::to_string(inputs[k].sizes[d]) + ", but it is already " + std::to_string(it->second));
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = 0; k < ins.size(); ++k) {
      const Node& n = g.node(ins[k]);
      for (size_t d = 0; d < n.shape.size(); ++d) changed |= try_solve(n.shape[d], inputs[k].sizes[d], b);
    }
  }
  for (const std::string& s : g.symbols())
    if (!b.count(s)) throw IRError("graph " + g.name() + ": symbol " + s + " is not determined by the input sizes");
  for (size_t k = 0; k < ins.size(); ++k) {
    const Node& n = g.node(ins[k]);
    for (size_t d = 0; d < n.shape.size(); ++d) {
      const int64_t want = n.shape[d].eval(b);
      if (want != inputs[k].sizes[d])
        throw IRError(input_label(n) + ": dim " + std::to_string(d) + " has size " +
                      std::to_string(inputs[k].sizes[d]) + ", expected " + n.shape[d].str() + " = " +
                      std::to_string(want));
    }
  }
  return b;
}

std::vector<std::vector<int64_t>> output_sizes(const Graph& g, const Bindings& b) {
  std::vector<std::vector<int64_t>> out;
  for (ValueId v : g.outputs()) out.push_back(eval_sizes(g.node(v), b));
  return out;
}

namespace {

/// Run every node; return the outputs' values (in Graph::outputs() order).
std::vector<Value> run(const Graph& g, const std::vector<HostTensor>& inputs, const Bindings& b) {
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
    interp::NodeContext c{g, node, b, eval_sizes(node, b)};
    if (node.op == OpKind::Input) {
      vals[id] = read_tensor(inputs[next_input++]);
      continue;
    }
    std::vector<const Value*> in;
    for (ValueId v : node.inputs) in.push_back(&vals[v]);
    switch (node.info().category) {
      case OpCategory::Source:
      case OpCategory::Elementwise: vals[id] = interp::eval_elementwise(c, in); break;
      case OpCategory::Broadcast:
      case OpCategory::Layout: vals[id] = interp::eval_layout(c, in); break;
      case OpCategory::Reduce: vals[id] = interp::eval_reduce(c, in); break;
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

std::vector<HostTensor> interpret(const Graph& g, const std::vector<HostTensor>& inputs) {
  const Bindings b = bind_symbols(g, inputs);
  std::vector<Value> vals = run(g, inputs, b);
  std::vector<HostTensor> out;
  for (const Value& v : vals) {
    HostTensor t = HostTensor::empty(v.dtype, v.sizes);
    write_tensor(v, t);
    out.push_back(std::move(t));
  }
  return out;
}

void interpret_into(const Graph& g, const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs) {
  const Bindings b = bind_symbols(g, inputs);
  if (outputs.size() != g.outputs().size())
    throw IRError("graph " + g.name() + " has " + std::to_string(g.outputs().size()) + " outputs, got " +
                  std::to_string(outputs.size()) + " output tensors");
  const auto sizes = output_sizes(g, b);
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Node& n = g.node(g.outputs()[k]);
    if (outputs[k].dtype != n.dtype || outputs[k].sizes != sizes[k] || outputs[k].strides.size() != sizes[k].size())
      throw IRError("output " + std::to_string(k) + " (%" + n.name + "): expected " +
                    std::string(dtype_name(n.dtype)) + sizes_str(sizes[k]) +
                    ", got " + outputs[k].describe());
  }
  std::vector<Value> vals = run(g, inputs, b);
  for (size_t k = 0; k < outputs.size(); ++k) write_tensor(vals[k], outputs[k]);
}

}  // namespace autofuse
