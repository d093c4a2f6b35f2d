#include "autofuse/runtime/compiler.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>

#include "autofuse/runtime/isa.h"
#include "autofuse/support/env.h"

extern char** environ;

namespace autofuse {
namespace {

std::string join_command(const std::vector<std::string>& argv) {
  std::string out;
  for (auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += a;
  }
  return out;
}

bool is_executable(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

/// The absolute path of an executable named `name`, searched in PATH unless it contains a slash; "" if not found.
std::string find_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return is_executable(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (is_executable(candidate)) return candidate;
  }
  return "";
}

/// The whole content of a small file (a /proc entry, whose size stat reports as 0); false if it cannot be opened.
bool read_small_file(const std::string& path, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  ssize_t got;
  out->clear();
  while ((got = ::read(fd, buf, sizeof buf)) > 0) out->append(buf, static_cast<size_t>(got));
  ::close(fd);
  return true;
}

}  // namespace

CompileError::CompileError(const std::string& summary, std::string compiler_output, std::string source_path,
                           std::string command)
    : std::runtime_error(summary + "\n  command: " + command + "\n  source kept at: " +
                         (source_path.empty() ? "(none)" : source_path) + "\n  compiler output:\n" + compiler_output),
      compiler_output_(std::move(compiler_output)),
      source_path_(std::move(source_path)),
      command_(std::move(command)) {}

namespace {

/// SIGKILL to `pid` and to its descendants (found through /proc/<n>/stat's parent pid, children first): the compiler
/// driver's cc1plus, as and collect2 / ld would otherwise run on, orphaned, after the driver dies.
void kill_process_tree(pid_t pid) {
  std::vector<std::pair<pid_t, pid_t>> procs;  // (pid, parent)
  if (DIR* d = ::opendir("/proc")) {
    while (struct dirent* e = ::readdir(d)) {
      char* end = nullptr;
      const long n = std::strtol(e->d_name, &end, 10);
      if (n <= 0 || *end != '\0') continue;
      std::string stat;
      if (!read_small_file("/proc/" + std::string(e->d_name) + "/stat", &stat)) continue;
      const size_t rp = stat.rfind(')');  // "pid (comm) state ppid ...": comm may hold spaces and parentheses
      if (rp == std::string::npos) continue;
      std::istringstream rest(stat.substr(rp + 1));
      std::string state;
      long ppid = 0;
      if (rest >> state >> ppid) procs.emplace_back(static_cast<pid_t>(n), static_cast<pid_t>(ppid));
    }
    ::closedir(d);
  }
  std::function<void(pid_t)> kill_below = [&](pid_t p) {
    for (auto [child, parent] : procs)
      if (parent == p) kill_below(child);
    ::kill(p, SIGKILL);
  };
  kill_below(pid);
}

}  // namespace

int run_process(const std::vector<std::string>& argv, std::string* output, int64_t timeout_s) {
  output->clear();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return 127;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    *output = "cannot start " + argv[0] + ": " + std::strerror(rc);
    return 127;
  }
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s > 0 ? timeout_s : 0);
  bool timed_out = false;
  for (;;) {
    if (timeout_s > 0) {
      // The deadline is checked before every read, so a compiler that keeps printing cannot outrun it.
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        kill_process_tree(pid);
        break;
      }
      struct pollfd pfd = {fds[0], POLLIN, 0};
      const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
      if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
    }
    ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got > 0) {
      output->append(buf, size_t(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    output->append("\n(stopped after " + std::to_string(timeout_s) + " s: AUTOFUSE_COMPILE_TIMEOUT)\n");
    return kProcessTimedOut;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 127;
}

const CompilerInfo& compiler_info() {
  static std::mutex mu;
  static std::map<std::string, CompilerInfo> by_cxx;  // node-based: references stay valid
  const char* env = std::getenv("CXX");
  std::string cxx = (env != nullptr && *env != '\0') ? env : "g++";
  std::lock_guard<std::mutex> lock(mu);
  auto it = by_cxx.find(cxx);
  if (it != by_cxx.end()) return it->second;

  CompilerInfo info;
  std::istringstream words(cxx);
  std::string w;
  while (words >> w) info.command.push_back(w);
  if (info.command.empty()) info.command.push_back("g++");
  info.path = find_in_path(info.command[0]);
  if (info.path.empty()) {
    throw CompileError("C++ compiler '" + info.command[0] + "' not found in PATH (set CXX to choose one)", "", "", cxx);
  }
  info.command[0] = info.path;
  std::vector<std::string> argv = info.command;
  argv.push_back("--version");
  std::string out;
  int rc = run_process(argv, &out);
  if (rc != 0) throw CompileError("C++ compiler does not run", out, "", join_command(argv));
  info.version = out.substr(0, out.find('\n'));
  // The generated kernels use GCC's vector extensions and target builtins (__builtin_ia32_*, _Float16 on every ISA):
  // clang 14 rejects them for every ISA (review, session 29), so a clang is refused here, once, with a message that
  // says so, instead of failing every kernel's compile with pages of diagnostics.
  std::string lower = out;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("clang") != std::string::npos)
    throw CompileError("C++ compiler '" + cxx + "' is clang (" + info.version +
                           "): Autofuse's generated kernels need GCC (g++ 12 or newer; set CXX to it)",
                       "", "", cxx);
  return by_cxx.emplace(cxx, std::move(info)).first->second;
}

int64_t compile_timeout_seconds() {
  const auto v = env_int("AUTOFUSE_COMPILE_TIMEOUT", 0, 86400, "60 s");
  return v ? *v : 60;
}

void run_compiler(const std::string& source_path, const std::string& output_path,
                  const std::vector<std::string>& include_dirs) {
  const CompilerInfo& cc = compiler_info();
  std::vector<std::string> argv = cc.command;
  for (auto& f : kernel_compile_flag_list()) argv.push_back(f);
  for (auto& dir : include_dirs) argv.push_back("-I" + dir);
  argv.push_back(source_path);
  argv.push_back("-o");
  argv.push_back(output_path);
  for (auto& l : kernel_link_libraries()) argv.push_back(l);
  std::string out;
  const int64_t timeout_s = compile_timeout_seconds();
  int rc = run_process(argv, &out, timeout_s);
  if (rc == kProcessTimedOut)
    throw CompileError("kernel compilation did not finish within " + std::to_string(timeout_s) +
                           " s (AUTOFUSE_COMPILE_TIMEOUT) and was stopped",
                       out, source_path, join_command(argv));
  if (rc != 0) {
    throw CompileError("kernel compilation failed (exit status " + std::to_string(rc) + ")", out, source_path,
                       join_command(argv));
  }
}

std::string kernel_header_source_dir() {
  const char* env = std::getenv("AUTOFUSE_KERNEL_INCLUDE_DIR");
  if (env != nullptr && *env != '\0') return env;
  std::vector<std::string> candidates;
#ifdef AUTOFUSE_SOURCE_DIR
  candidates.push_back(std::string(AUTOFUSE_SOURCE_DIR) + "/src/autofuse");
#endif
  // This file is src/autofuse/runtime/compiler.cpp; CMake passes it by absolute path, so __FILE__ locates the tree.
  std::string self = __FILE__;
  if (auto pos = self.rfind("/runtime/compiler.cpp"); pos != std::string::npos)
    candidates.push_back(self.substr(0, pos));
  // An installed Python package ships the headers in autofuse/include/kernel_support, next to the extension.
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&kernel_header_source_dir), &info) != 0 && info.dli_fname != nullptr) {
    std::string lib = info.dli_fname;
    candidates.push_back(lib.substr(0, lib.rfind('/') + 1) + "include");
  }
  for (auto& root : candidates) {
    for (const char* sub : {"/codegen/cpu", "/runtime/kernel_support", "/kernel_support"}) {
      std::string dir = root + sub;
      if (DIR* d = ::opendir(dir.c_str())) {
        bool has_header = false;
        while (dirent* e = ::readdir(d)) {
          std::string n = e->d_name;
          if (n.rfind("af_", 0) == 0 && n.size() > 5 && n.compare(n.size() - 2, 2, ".h") == 0) has_header = true;
        }
        ::closedir(d);
        if (has_header) return dir;
      }
    }
  }
  return "";
}

}  // namespace autofuse
