#include "autofuse/ir/precision.h"

#include <cstdlib>
#include <stdexcept>

namespace autofuse {

PrecisionPolicy precision_policy_from_env() {
  const char* v = std::getenv("AUTOFUSE_EMULATE_PRECISION_CASTS");
  if (v == nullptr || *v == '\0' || std::string(v) == "0") return PrecisionPolicy::Float32Inside;
  if (std::string(v) == "1") return PrecisionPolicy::EmulateCasts;
  throw std::invalid_argument(std::string("AUTOFUSE_EMULATE_PRECISION_CASTS='") + v +
                              "' is not a precision policy; expected 0 (float32 inside kernels) or 1 (round after "
                              "every op, as eager)");
}

std::string precision_policy_name(PrecisionPolicy p) {
  return p == PrecisionPolicy::EmulateCasts ? "emulate-casts" : "f32-inside";
}

}  // namespace autofuse
