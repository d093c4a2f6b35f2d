#include "autofuse/ir/precision.h"

#include <cstdlib>
#include <stdexcept>

#include "autofuse/support/env.h"

namespace autofuse {

PrecisionPolicy precision_policy_from_env() {
  // a bad value warns once and gives the default, float32 inside kernels (support/env.h)
  return env_bool("AUTOFUSE_EMULATE_PRECISION_CASTS", false) ? PrecisionPolicy::EmulateCasts
                                                             : PrecisionPolicy::Float32Inside;
}

std::string precision_policy_name(PrecisionPolicy p) {
  return p == PrecisionPolicy::EmulateCasts ? "emulate-casts" : "f32-inside";
}

}  // namespace autofuse
