// The compiler driver: runs the system C++ compiler on a kernel source file and reports its failures.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace autofuse {

/// A kernel failed to compile (or the compiler could not be run). what() holds a one-line summary, the command,
/// the path of the kept source, and the compiler's output; the parts are also available separately.
class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& summary, std::string compiler_output, std::string source_path, std::string command);
  /// Everything the compiler printed (stdout and stderr interleaved).
  const std::string& compiler_output() const { return compiler_output_; }
  /// Where the failing source was kept for inspection ("" if it was never written).
  const std::string& source_path() const { return source_path_; }
  /// The command line that was run.
  const std::string& command() const { return command_; }

 private:
  std::string compiler_output_, source_path_, command_;
};

/// The C++ compiler kernels are built with: the CXX environment variable (which may carry arguments, e.g.
/// "ccache g++") or "g++"; `path` is argv[0] resolved through PATH, `version` the first line of `--version`.
struct CompilerInfo {
  std::vector<std::string> command;  ///< argv prefix: resolved compiler path and CXX's extra words
  std::string path;
  std::string version;
};

/// The compiler for the current value of CXX, probed once per distinct value (runs `--version`, a few ms).
/// Throws CompileError if the compiler cannot be found or run.
const CompilerInfo& compiler_info();

/// Compiles source_path into the shared object output_path with kernel_compile_flag_list(), the given include dirs,
/// then kernel_link_libraries(). Throws CompileError carrying the compiler's output on failure.
void run_compiler(const std::string& source_path, const std::string& output_path,
                  const std::vector<std::string>& include_dirs);

/// The directory holding the kernel helper headers (af_*.h) that generated kernels may include: the environment
/// variable AUTOFUSE_KERNEL_INCLUDE_DIR, else the first of codegen/cpu, runtime/kernel_support (in the source tree
/// this library was built from) and include/kernel_support next to the loaded library (an installed package) that
/// holds an af_*.h file. "" if none does (kernels then compile with no helper include directory).
std::string kernel_header_source_dir();

/// run_process's result for a process stopped at its time limit.
inline constexpr int kProcessTimedOut = -2;

/// Runs argv (argv[0] looked up in PATH) and waits; returns the exit status (128+signal if killed, 127 if it could
/// not be started) and stores stdout and stderr, interleaved, in *output. With timeout_s > 0, a process still running
/// after timeout_s seconds is killed with its descendants (SIGKILL) and kProcessTimedOut is returned.
int run_process(const std::vector<std::string>& argv, std::string* output, int64_t timeout_s = 0);

/// The time limit of one kernel compile, in seconds: AUTOFUSE_COMPILE_TIMEOUT (0 = none; a bad value warns), default
/// 60. A kernel compiles in 0.1-0.5 s; GCC 12 -O2 ran for more than 20 minutes on one generated kernel (review 29),
/// which then never returned to the user's program. A compile stopped at the limit is a CompileError like any other
/// (the backend runs the kernel's ops in ATen with a warning; strict mode raises).
int64_t compile_timeout_seconds();

}  // namespace autofuse
