// Python bindings of the IR: DType and the op table (the Graph builder, parse and verify follow).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "autofuse/ir/dtype.h"
#include "autofuse/ir/ops.h"
#include "bindings.h"

namespace autofuse::bindings {

void bind_ir(nb::module_& m) {
  nb::enum_<DType>(m, "DType", "Element type of an IR value (IR text names: bool, u8, ..., f64)")
      .value("bool", DType::Bool)
      .value("uint8", DType::UInt8)
      .value("int8", DType::Int8)
      .value("int16", DType::Int16)
      .value("int32", DType::Int32)
      .value("int64", DType::Int64)
      .value("float16", DType::Float16)
      .value("bfloat16", DType::BFloat16)
      .value("float32", DType::Float32)
      .value("float64", DType::Float64);
  m.def(
      "op_names",
      [] {
        std::vector<std::string> names;
        for (const OpInfo& o : all_ops()) names.emplace_back(o.name);
        return names;
      },
      "Names of every IR op, in op-table order.");
}

}  // namespace autofuse::bindings
