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
    count *= x < 0 ? 0 : x;
  }
  return count * dtype_size(n.dtype);
}

int op_compute_weight(OpKind op) {
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
    case OpKind::Exp:
    case OpKind::Exp2:
    case OpKind::Expm1:
    case OpKind::Log:
    case OpKind::Log2:
    case OpKind::Log10:
    case OpKind::Log1p:
    case OpKind::Sin:
    case OpKind::Cos:
    case OpKind::Tan:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::Erf:
    case OpKind::Pow:
    case OpKind::Atan2:
      return 8;
    default:
      return 1;
  }
}

}  // namespace autofuse
