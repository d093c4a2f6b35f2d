#include "autofuse/fusion/cost.h"

#include <stdexcept>

namespace autofuse {

Bindings representative_binding(const Graph& g, int64_t size) {
  Bindings b;
  for (const auto& s : g.symbols()) b[s] = size;
  return b;
}

int64_t value_bytes(const Graph& g, ValueId v, const Bindings& b) {
  const Node& n = g.node(v);
  int64_t count = 1;
  for (const auto& d : n.shape) {
    int64_t x;
    try {
      x = d.eval(b);
    } catch (const std::exception&) {
      x = 1024;
    }
    // saturate: these are cost estimates summed over a graph, and a representative size may overflow int64
    if (__builtin_mul_overflow(count, x < 0 ? 0 : x, &count) || count > kMaxValueBytes) return kMaxValueBytes;
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(count, static_cast<int64_t>(dtype_size(n.dtype)), &bytes) || bytes > kMaxValueBytes)
    return kMaxValueBytes;
  return bytes;
}

int op_compute_weight(OpKind op) {
  if (is_transcendental(op)) return 8;
  switch (op) {
    case OpKind::Input:
    case OpKind::Constant:
    case OpKind::Full:
    case OpKind::Iota:
    case OpKind::BroadcastTo:
      return 0;
    case OpKind::Div:
    case OpKind::Sqrt:
    case OpKind::Rsqrt:
    case OpKind::Reciprocal:
    case OpKind::FloorDiv:
    case OpKind::Remainder:
    case OpKind::Fmod:
      return 4;
    default:
      return 1;
  }
}

}  // namespace autofuse
