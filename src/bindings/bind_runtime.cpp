// Python bindings of the runtime and kernels (owner: runtime / codegen). Empty until those stages land.
#include "bindings.h"

namespace autofuse::bindings {

void bind_runtime(nb::module_& m) { (void)m; }

}  // namespace autofuse::bindings
