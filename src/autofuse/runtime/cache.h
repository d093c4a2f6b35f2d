// compile_module: C++ kernel source to a loaded module, through an in-memory map and a content-hash disk cache.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "autofuse/runtime/compiler.h"
#include "autofuse/runtime/module.h"

namespace autofuse {

/// What compile_module returns: the loaded module, whether it came from a cache (memory or disk), and the seconds
/// the whole call took (hashing, compiling if needed, loading).
struct CompileResult {
  std::shared_ptr<Module> module;
  bool cache_hit = false;
  double seconds = 0;
};

/// Process-wide counters since start or the last reset_cache_stats(): compiler runs, loads from disk, modules
/// found already loaded in this process, and disk entries found corrupt (bad size/checksum, or dlopen failed)
/// and rebuilt.
struct CacheStats {
  int64_t compiles = 0, disk_hits = 0, memory_hits = 0, rebuilt_corrupt = 0;
};

/// Compiles C++ source into a shared object and loads it. The cache key hashes (SHA-256) everything that affects
/// the binary: the source, the helper headers' names and contents, the compiler's path and `--version`, the flags
/// (kernel_compile_flags()) and the ISA. Lookup order: modules loaded by this process, then the disk cache entry
/// (size and checksum verified, then dlopen; a bad entry is removed and rebuilt), then the compiler. Entries are
/// built in a private temporary directory and installed by one atomic rename, so concurrent threads and processes
/// compiling the same source all succeed. name_hint (sanitised) names the source file, for debugging.
/// AUTOFUSE_FORCE_DISABLE_CACHES=1 skips both caches and compiles afresh.
/// Throws CompileError (compiler output, kept source path), CacheDirError, or std::runtime_error if loading fails.
CompileResult compile_module(const std::string& source, const std::string& name_hint);

/// The cache key compile_module would use for this source now (64 hex chars).
std::string module_cache_key(const std::string& source);

/// The disk entry directory for a key under the current cache_dir() (which may not exist).
std::string module_entry_dir(const std::string& key);

CacheStats cache_stats();
void reset_cache_stats();

/// Forgets the modules loaded by this process (they stay loaded while referenced), so the next compile_module of
/// the same source goes to the disk cache. For tests and benchmarks of the warm path.
void clear_memory_cache();

}  // namespace autofuse
