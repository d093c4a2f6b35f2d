#include "autofuse/runtime/cache_entry.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "autofuse/runtime/cache_dir.h"
#include "autofuse/runtime/hash.h"

namespace autofuse {
namespace {

/// Whether `m` exports every name in `symbols`.
bool has_symbols(const Module& m, const std::vector<std::string>& symbols) {
  for (const std::string& name : symbols)
    if (m.find_symbol(name) == nullptr) return false;
  return true;
}

}  // namespace

void remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

std::string entry_dir_in(const std::string& dir, const std::string& key) {
  return dir + "/" + kCacheLayout + "/kernels/" + key.substr(0, 2) + "/" + key;
}

std::string meta_text(const std::string& binary, const std::string& source_name, const std::string& key, size_t batch) {
  return "size " + std::to_string(binary.size()) + "\nchecksum " + std::to_string(checksum64(binary)) + "\nsource " +
         source_name + "\nbatch " + std::to_string(batch) + "\nkey " + key + "\n";
}

std::string untrusted_reason(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return "";
  if (S_ISLNK(st.st_mode)) return "is a symbolic link";
  if (st.st_uid != ::geteuid())
    return "is owned by uid " + std::to_string(st.st_uid) + ", not by the current user (uid " +
           std::to_string(::geteuid()) + ")";
  return "";
}

bool verify_entry(const std::string& entry, const std::string& key) {
  for (const char* part : {"", "/meta", "/kernel.so"})
    if (!untrusted_reason(entry + part).empty()) return false;
  std::string meta, binary;
  if (!read_file(entry + "/meta", &meta) || !read_file(entry + "/kernel.so", &binary)) return false;
  std::string expect_size = "size " + std::to_string(binary.size()) + "\n";
  std::string expect_sum = "checksum " + std::to_string(checksum64(binary)) + "\n";
  if (meta.rfind(expect_size, 0) != 0 || meta.find(expect_sum) != expect_size.size()) return false;
  const size_t at = meta.find("\nkey ");
  if (at == std::string::npos) return true;
  const size_t end = meta.find('\n', at + 5);
  return end != std::string::npos && meta.compare(at + 5, end - (at + 5), key) == 0;
}

std::shared_ptr<Module> load_with_symbols(const std::string& dir, const std::string& path,
                                          const std::vector<std::string>& symbols) {
  std::shared_ptr<Module> m = Module::load(path);
  if (has_symbols(*m, symbols)) return m;
  m.reset();
  const std::string alias = dir + "/" + kCacheLayout + "/tmp/alias-" + unique_suffix() + ".so";
  if (::link(path.c_str(), alias.c_str()) != 0) {
    std::string binary;
    if (!read_file(path, &binary)) throw ModuleLoadError("cannot read kernel module " + path);
    write_file(alias, binary);
  }
  try {
    m = Module::load(alias);
  } catch (...) {
    ::unlink(alias.c_str());
    throw;
  }
  ::unlink(alias.c_str());  // the mapping outlives the name
  for (const std::string& name : symbols)
    if (m->find_symbol(name) == nullptr)
      throw ModuleLoadError("kernel module " + path + " has no symbol '" + name + "'");
  return m;
}

std::shared_ptr<Module> load_from_temp(const std::string& dir, const std::string& tmp,
                                       const std::vector<std::string>& symbols) {
  const std::string so = tmp + "/kernel-" + unique_suffix() + ".so";
  std::shared_ptr<Module> m;
  try {
    if (::rename((tmp + "/kernel.so").c_str(), so.c_str()) != 0)
      throw ModuleLoadError("cannot rename " + tmp + "/kernel.so to " + so + ": " + std::strerror(errno));
    m = load_with_symbols(dir, so, symbols);
  } catch (...) {
    remove_tree(tmp);
    throw;
  }
  remove_tree(tmp);
  return m;
}

std::string shard_dir_in(const std::string& dir, const std::string& key) {
  const std::string entry = entry_dir_in(dir, key);
  return entry.substr(0, entry.rfind('/'));
}

std::string blocking_path(const std::string& dir, const std::string& key) {
  const std::string shard = shard_dir_in(dir, key);
  for (const std::string& p : {dir + "/" + kCacheLayout, dir + "/" + kCacheLayout + "/kernels", shard}) {
    struct stat st;
    if (::lstat(p.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) return p;
  }
  return "";
}

std::string blocking_file_note(const std::string& dir, const std::string& key) {
  const std::string p = blocking_path(dir, key);
  return p.empty() ? "" : " (" + p + " is not a directory)";
}

}  // namespace autofuse
