// Kernel::Variant: one compiled stride class of a kernel (shared by kernel.cpp and kernel_outer.cpp).
#pragma once

#include <string>

#include "autofuse/codegen/cpu/emit.h"
#include "autofuse/codegen/cpu/jit.h"
#include "autofuse/codegen/kernel.h"

namespace autofuse {

/// The loaded module of one variant, its entry point and its source.
struct Kernel::Variant {
  JitKernel jit;
  KernelFn fn = nullptr;
  std::string source;
};

}  // namespace autofuse
