// Helpers for the interpreter's GoogleTests: build small tensors from value lists, read results back, and run one op.
#pragma once

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "autofuse/ir/graph.h"
#include "autofuse/ir/interpreter.h"
#include "autofuse/ir/tensor.h"

namespace autofuse::testing {

/// The message of the IRError f() throws, or "(no error)" when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const IRError& e) {
    return e.what();
  }
  return "(no error)";
}

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// A contiguous tensor holding `vals` (row-major), converted to dtype t as eager stores values.
inline HostTensor tensor(DType t, std::vector<int64_t> sizes, const std::vector<double>& vals) {
  HostTensor h = HostTensor::empty(t, sizes);
  std::vector<int64_t> idx(sizes.size(), 0);
  for (double v : vals) {
    if (is_float(t))
      h.set_double(idx, v);
    else
      h.set_int(idx, static_cast<int64_t>(v));
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  return h;
}

/// 1-d tensor of integer values (exact for all of int64).
inline HostTensor itensor(DType t, const std::vector<int64_t>& vals) {
  HostTensor h = HostTensor::empty(t, {static_cast<int64_t>(vals.size())});
  for (size_t k = 0; k < vals.size(); ++k) h.set_int({static_cast<int64_t>(k)}, vals[k]);
  return h;
}

/// Every element in row-major order, as double.
inline std::vector<double> values(const HostTensor& h) {
  std::vector<double> out;
  const int64_t n = h.numel();
  std::vector<int64_t> idx(h.sizes.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    out.push_back(h.get_double(idx));
    for (size_t d = h.sizes.size(); d-- > 0;) {
      if (++idx[d] < h.sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

/// Every element in row-major order, as int64.
inline std::vector<int64_t> ivalues(const HostTensor& h) {
  std::vector<int64_t> out;
  const int64_t n = h.numel();
  std::vector<int64_t> idx(h.sizes.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    out.push_back(h.get_int(idx));
    for (size_t d = h.sizes.size(); d-- > 0;) {
      if (++idx[d] < h.sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

/// Static shape of a host tensor, as IR sizes.
inline Shape shape_of(const HostTensor& h) {
  Shape s;
  for (int64_t v : h.sizes) s.push_back(Expr(v));
  return s;
}

/// Run `op(inputs...)` with attrs on the given tensors (graph inputs take the tensors' dtypes and static shapes).
inline HostTensor run_op(OpKind op, const std::vector<HostTensor>& ins, Attrs attrs = {}) {
  Graph g("t");
  std::vector<ValueId> ids;
  const char* names[] = {"a", "b", "c", "d"};
  for (size_t k = 0; k < ins.size(); ++k) ids.push_back(g.add_input(names[k], ins[k].dtype, shape_of(ins[k])));
  ValueId y = g.add(op, ids, std::move(attrs), "y");
  g.set_outputs({y});
  return interpret(g, ins).at(0);
}

/// Bitwise equality of doubles, so NaN == NaN and -0.0 != +0.0.
inline bool same_bits(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, sizeof a) == 0;
}

}  // namespace autofuse::testing
