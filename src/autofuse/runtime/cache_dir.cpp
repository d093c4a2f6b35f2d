#include "autofuse/runtime/cache_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

namespace autofuse {

void make_private_dirs(const std::string& path) {
  if (path.empty()) throw CacheDirError("empty cache directory path");
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    std::string prefix = path.substr(0, pos);
    if (prefix.empty()) continue;
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      throw CacheDirError("cannot create cache directory " + prefix + ": " + std::strerror(errno));
    }
  }
}

namespace {

/// The per-user cache root: $XDG_CACHE_HOME/autofuse, else $HOME/.cache/autofuse; "" when neither is set.
std::string user_cache_root() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return std::string(xdg) + "/autofuse";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return std::string(home) + "/.cache/autofuse";
  return "";
}

/// `dir` created if missing (mode 0700) and checked: a directory owned by the current user, not writable by group or
/// others. Throws CacheDirError naming the directory otherwise.
std::string checked_private_dir(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    make_private_dirs(dir);
    if (::stat(dir.c_str(), &st) != 0) {
      throw CacheDirError("cannot stat cache directory " + dir + ": " + std::strerror(errno));
    }
  }
  if (!S_ISDIR(st.st_mode)) throw CacheDirError("cache path " + dir + " is not a directory");
  if (st.st_uid != ::geteuid()) {
    throw CacheDirError("refusing cache directory " + dir + ": owned by uid " + std::to_string(st.st_uid) +
                        ", not by the current user (uid " + std::to_string(::geteuid()) +
                        "); set AUTOFUSE_CACHE_DIR to a private directory");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw CacheDirError("refusing cache directory " + dir + ": writable by group or others (mode " +
                        std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                        std::to_string(st.st_mode & 7) + "); run chmod 700 on it or set AUTOFUSE_CACHE_DIR");
  }
  return dir;
}

}  // namespace

std::string cache_dir() {
  if (const char* env = std::getenv("AUTOFUSE_CACHE_DIR"); env != nullptr && *env != '\0') {
    try {
      return checked_private_dir(env);
    } catch (const CacheDirError& e) {  // name the variable the directory came from
      throw CacheDirError(std::string("AUTOFUSE_CACHE_DIR='") + env + "': " + e.what());
    }
  }
  const std::string root = user_cache_root();
  if (root.empty())
    throw CacheDirError("no cache directory: set AUTOFUSE_CACHE_DIR (HOME and XDG_CACHE_HOME are unset)");
  return checked_private_dir(root);
}

std::string machine_dir() {
  if (const char* env = std::getenv("AUTOFUSE_MACHINE_DIR"); env != nullptr && *env != '\0') {
    try {
      return checked_private_dir(env);
    } catch (const CacheDirError& e) {  // name the variable the directory came from
      throw CacheDirError(std::string("AUTOFUSE_MACHINE_DIR='") + env + "': " + e.what());
    }
  }
  const std::string root = user_cache_root();
  return root.empty() ? cache_subdir("machine") : checked_private_dir(root + "/machine");
}

std::string cache_subdir(const std::string& sub) {
  std::string path = cache_dir() + "/" + sub;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) make_private_dirs(path);
  return path;
}

bool read_file(const std::string& path, std::string* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  struct stat st;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) out->reserve(size_t(st.st_size));
  char buf[65536];
  bool ok = true;
  for (;;) {
    ssize_t got = ::read(fd, buf, sizeof buf);
    if (got > 0) {
      out->append(buf, size_t(got));
    } else if (got == 0) {
      break;
    } else if (errno != EINTR) {
      ok = false;
      break;
    }
  }
  ::close(fd);
  return ok;
}

void write_file(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < content.size()) {
    ssize_t put = ::write(fd, content.data() + done, content.size() - done);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) {
      int err = errno;
      ::close(fd);
      throw std::runtime_error("cannot write " + path + ": " + std::strerror(err));
    }
    done += size_t(put);
  }
  if (::close(fd) != 0) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1)) + "-" +
         std::to_string(rng() % 1000000);
}

}  // namespace autofuse
