// compile_module: C++ kernel source to a loaded module, through an in-memory map and a content-hash disk cache.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

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

/// Process-wide counters since start or the last reset_cache_stats(): kernel sources compiled (a batch of n sources
/// compiled in one compiler run counts n), loads from disk, modules found already loaded in this process, disk
/// entries found corrupt (bad size/checksum, meta of another key, dlopen failed, or the expected symbol missing) and
/// rebuilt, compiler processes run, and sources compiled but not stored because their entry could not be installed
/// (`not_stored`: e.g. a file where the entry's shard directory should be; the module was loaded from a temporary
/// copy). A lookup counts in exactly one of compiles, disk_hits and memory_hits: one that compiled, then lost the
/// install to another thread or process and loaded that entry instead, is a compile.
struct CacheStats {
  int64_t compiles = 0, disk_hits = 0, memory_hits = 0, rebuilt_corrupt = 0, compiler_runs = 0, not_stored = 0;
};

/// Compiles C++ source into a shared object and loads it. The cache key hashes (SHA-256) everything that affects
/// the binary: the source, the helper headers' names and contents, the compiler's path and `--version`, the flags
/// (kernel_compile_flags()) and the ISA. Lookup order: modules loaded by this process, then the disk cache entry
/// (size, checksum and the key recorded in meta verified, then dlopen, then `symbol` looked up when not empty; an
/// entry failing any check is moved aside, counted in rebuilt_corrupt and rebuilt), then the compiler. Entries are
/// built in a private temporary directory and installed by one atomic rename, so concurrent threads and processes
/// compiling the same source all succeed. An entry that cannot be installed (a file where its shard directory should
/// be, ...) is loaded from the temporary build instead, counted in not_stored, and warned about on stderr once per
/// process and directory. name_hint (sanitised) names the source file, for debugging.
/// AUTOFUSE_FORCE_DISABLE_CACHES=1 skips both caches and compiles afresh.
/// Throws CompileError (compiler output, kept source path), CacheDirError (the cache root or its v1/tmp cannot be
/// used), or ModuleLoadError if the freshly built module does not load or lacks `symbol`.
CompileResult compile_module(const std::string& source, const std::string& name_hint, const std::string& symbol = "");

/// One source for compile_modules. `shared_prefix`: how many leading bytes of `source` are a preamble that other
/// requests may share (0: none); requests whose preambles are byte-identical may be compiled in one translation unit,
/// so the rest of each source must be valid C++ inside a namespace of its own and their extern "C" names distinct.
/// `symbol`: the extern "C" name the module must export ("" : not checked), as compile_module's.
struct ModuleRequest {
  std::string source;
  std::string name_hint;
  size_t shared_prefix = 0;
  std::string symbol;
};

/// compile_modules' outcome for one request: the result, or the exception compile_module would have thrown.
struct ModuleOutcome {
  CompileResult result;
  std::exception_ptr error;
};

/// compile_module for several sources at once, outcomes in request order. Each source keeps its own cache entry,
/// keyed exactly as compile_module keys it, so either function finds what the other built. Sources found in neither
/// cache are compiled on `threads` threads, in batches: requests with the same preamble (shared_prefix) go into at
/// most `threads` translation units, the preamble parsed once per unit, each source's rest in its own namespace
/// (one compiler run per batch instead of per source, and the inline helpers of the preamble are compiled once per
/// unit). The batch's binary is stored, by hard link, as every member's kernel.so (meta records the batch size),
/// so a later process loading any member maps the whole batch once. A batch that fails to compile is retried one
/// source at a time, so each error belongs to the source that caused it. Identical sources are compiled once;
/// sources being compiled by another thread of this process are waited for. CompileResult::seconds is the time of
/// the whole call. cache_stats(): `compiles` counts sources, `compiler_runs` batches.
std::vector<ModuleOutcome> compile_modules(const std::vector<ModuleRequest>& requests, int threads);

/// The cache key compile_module would use for this source now (64 hex chars).
std::string module_cache_key(const std::string& source);

/// The disk entry directory for a key under the current cache_dir() (which may not exist).
std::string module_entry_dir(const std::string& key);

CacheStats cache_stats();
void reset_cache_stats();

/// Forgets the modules loaded by this process (they stay loaded while referenced), so the next compile_module of
/// the same source goes to the disk cache. For tests and benchmarks of the warm path.
void clear_memory_cache();

/// For tests: a function compile_module calls after building an entry in its temporary directory `tmp` and before
/// installing it as `entry` (empty: none, the default). One that creates `entry` itself simulates another process
/// winning the install race. Not thread-safe: set it while no compile runs.
void set_cache_install_hook(std::function<void(const std::string& tmp, const std::string& entry)> hook);

}  // namespace autofuse
