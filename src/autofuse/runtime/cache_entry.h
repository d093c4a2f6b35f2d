// Kernel cache entries on disk (runtime/cache.cpp): their paths, their meta file and its verification, and loading
// a module that must export given symbols. Internal to the cache; not part of runtime.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "autofuse/runtime/module.h"

namespace autofuse {

/// The layout version: everything the cache writes lives under <cache_dir>/v1.
inline constexpr const char* kCacheLayout = "v1";

/// Removes a file or directory tree, ignoring errors.
void remove_tree(const std::string& path);

/// The entry directory of `key` under the cache root `dir`: v1/kernels/<key[0:2]>/<key>.
std::string entry_dir_in(const std::string& dir, const std::string& key);

/// The directory under `dir` that holds `key`'s entry (its shard, v1/kernels/<key[0:2]>).
std::string shard_dir_in(const std::string& dir, const std::string& key);

/// An entry's meta file: binary size and checksum (verified on load), the source's file name, how many kernel
/// sources the binary was compiled from (1, or the size of its batch: compile_modules), and the entry's key.
std::string meta_text(const std::string& binary, const std::string& source_name, const std::string& key,
                      size_t batch = 1);

/// Why `path` in the cache must not be trusted, or "" when it may (or does not exist): a symbolic link, or owned by
/// a user other than the effective one. The cache root is checked for its owner and for group / other write access
/// when it is opened (cache_dir.cpp), so no one else can reach below it now; this catches what another user put
/// there while it was open (a root that was 0777 for a while and then fixed with chmod 700, as the refusal message
/// advises). File modes are not checked: below a private root they do not matter, and a umask of 002 gives kernels
/// group write.
std::string untrusted_reason(const std::string& path);

/// True if entry/kernel.so matches the size and checksum recorded in entry/meta and the meta's key is `key` (meta
/// of another key's entry copied here is caught before its binary is loaded). A meta without a key line (written
/// before keys were recorded) passes that check; the symbol check after loading (load_with_symbols) still applies.
bool verify_entry(const std::string& entry, const std::string& key);

/// Loads the shared object at `path` and checks that it exports `symbols`. dlopen hands back an object this process
/// already loaded under the same path, and dlclose need not unload one (an object with unique symbols stays), so
/// after a bad entry was loaded, moved aside and rebuilt the same path may still give the old object: a module that
/// lacks a symbol is loaded once more through a fresh hard link (a copy where links fail) in `dir`/v1/tmp, which
/// dlopen maps anew. Throws ModuleLoadError when the object does not load or that one lacks a symbol too.
std::shared_ptr<Module> load_with_symbols(const std::string& dir, const std::string& path,
                                          const std::vector<std::string>& symbols);

/// Loads the kernel.so of the build directory `tmp` under a name of its own (dlopen would return an object already
/// loaded under a reused path), checks `symbols` as load_with_symbols, and removes `tmp` (the mapping outlives the
/// files), also when it throws.
std::shared_ptr<Module> load_from_temp(const std::string& dir, const std::string& tmp,
                                       const std::vector<std::string>& symbols);

/// The first of v1, v1/kernels and the shard of `key` under `dir` that exists but is not a directory (the path that
/// keeps `key`'s entry from being installed); "" when none is.
std::string blocking_path(const std::string& dir, const std::string& key);

/// " (PATH is not a directory)" for blocking_path(dir, key); "" when that is empty. For the message when an entry
/// cannot be installed.
std::string blocking_file_note(const std::string& dir, const std::string& key);

}  // namespace autofuse
