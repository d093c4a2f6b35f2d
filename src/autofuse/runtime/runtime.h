// The runtime's public surface in one include: compile_module and the cache (cache.h), Module (module.h),
// CompileError (compiler.h), host ISA and flags (isa.h), parallel_for and thread count (thread_pool.h).
#pragma once

#include "autofuse/runtime/cache.h"
#include "autofuse/runtime/cache_dir.h"
#include "autofuse/runtime/compiler.h"
#include "autofuse/runtime/isa.h"
#include "autofuse/runtime/module.h"
#include "autofuse/runtime/thread_pool.h"
