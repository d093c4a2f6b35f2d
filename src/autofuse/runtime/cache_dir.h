// The private on-disk cache directory and the small file-system helpers the cache is built from.
#pragma once

#include <stdexcept>
#include <string>

namespace autofuse {

/// The cache directory cannot be used (owned by another user, writable by others, not a directory, not creatable).
class CacheDirError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The root cache directory, created (mode 0700, missing parents too) and checked on every call:
/// $AUTOFUSE_CACHE_DIR, else $XDG_CACHE_HOME/autofuse, else $HOME/.cache/autofuse. Throws CacheDirError when the
/// directory is owned by another user or writable by group or others (anyone could plant code there), or is not a
/// directory. Layout below it: v1/kernels/<key[0:2]>/<key>/ (entries), v1/include/<hash>/ (helper headers),
/// v1/tmp/ (builds in progress), v1/failed/ (sources that did not compile).
std::string cache_dir();

/// Where the machine model's probe results live (tiling/machine.h), created and checked like cache_dir():
/// $AUTOFUSE_MACHINE_DIR, else the per-user root's machine/ ($XDG_CACHE_HOME/autofuse/machine or
/// $HOME/.cache/autofuse/machine) even when AUTOFUSE_CACHE_DIR moves the kernel cache, else cache_dir()/machine.
/// Bandwidth is a fact of the machine, not of a kernel cache: an empty kernel cache does not re-run the probe.
/// Throws CacheDirError.
std::string machine_dir();

/// `cache_dir() + "/" + sub`, creating the subdirectory (mode 0700) if missing. Throws CacheDirError on failure.
std::string cache_subdir(const std::string& sub);

/// mkdir -p with mode 0700 for every directory created. Throws CacheDirError naming the path on failure.
void make_private_dirs(const std::string& path);

/// Whole-file read; false if the file cannot be opened or read.
bool read_file(const std::string& path, std::string* out);
/// Writes a file (truncating), mode 0600. Throws std::runtime_error naming the path on failure.
void write_file(const std::string& path, const std::string& content);
/// A name unique to this process and call, for temporary files: "<pid>-<counter>-<random>".
std::string unique_suffix();

}  // namespace autofuse
