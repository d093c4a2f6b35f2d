// Python bindings of fusion and the driver (owner: fusion). Empty until those stages land.
#include "bindings.h"

namespace autofuse::bindings {

void bind_fusion(nb::module_& m) { (void)m; }

}  // namespace autofuse::bindings
