// Python bindings of the reference interpreter (owner: infra). Filled in once ir/interpreter.h is on main.
#include "bindings.h"

namespace autofuse::bindings {

void bind_interpreter(nb::module_& m) { (void)m; }

}  // namespace autofuse::bindings
