// Entry point of the nanobind extension autofuse._core: calls each area's binding function.
#include "bindings.h"

NB_MODULE(_core, m) {
  m.doc() = "Autofuse C++ core: IR, interpreter, runtime and fusion (see python/autofuse/__init__.py)";
  // Compiled graphs referenced from autograd nodes that are still alive at interpreter exit (a training script's last
  // loss) are never collected; nanobind would list them as leaks on stderr although nothing is lost.
  nanobind::set_leak_warnings(false);
  autofuse::bindings::bind_ir(m);
  autofuse::bindings::bind_tensor(m);
  autofuse::bindings::bind_interpreter(m);
  autofuse::bindings::bind_runtime(m);
  autofuse::bindings::bind_kernel(m);
  autofuse::bindings::bind_fusion(m);
}
