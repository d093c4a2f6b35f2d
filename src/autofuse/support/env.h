// Environment variables: one parser per kind of value, shared by every stage and by the Python package (through
// autofuse._core), so every variable of README's table follows one rule.
//
// The rule: unset or empty means the default. A value that is not valid for its variable warns once per process
// and per (variable, value) on stderr -- "autofuse: warning: AUTOFUSE_X='bad' is not ...; using ..." naming the
// variable, the bad value, what is expected and what is used instead -- and the default is used. No bad value is an
// error (a typo in a debugging switch must not stop a model); AUTOFUSE_STRICT does not change this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace autofuse {

/// A boolean variable. Unset or empty: `fallback`. "1", "true", "yes", "on" (any case): true; "0", "false", "no",
/// "off": false. Anything else warns (see the file comment) and gives `fallback`.
bool env_bool(const char* name, bool fallback);

/// An integer variable that must lie in [lo, hi]. Unset or empty: nullopt. A decimal integer in range (surrounding
/// spaces allowed): its value. Anything else (text, trailing junk, out of range, overflow) warns, with `instead`
/// naming what the caller uses then (e.g. "the CPU count (16)"), and gives nullopt.
std::optional<int64_t> env_int(const char* name, int64_t lo, int64_t hi, const std::string& instead);

/// A variable whose value must be one of `choices` (lower-case; the value is compared ignoring case, as booleans are).
/// Unset or empty: nullopt. One of them: that choice. Anything else warns, with `instead` naming what is used then, and
/// gives nullopt.
std::optional<std::string> env_choice(const char* name, const std::vector<std::string>& choices,
                                      const std::string& instead);

/// Prints "autofuse: warning: NAME='VALUE' PROBLEM; using INSTEAD" to stderr, once per process for each
/// (NAME, VALUE) pair (later calls with the same pair print nothing). Thread-safe. For parsers outside this file
/// (the Python package's AUTOFUSE_DFX_FLAGS) so their warnings read the same and are not repeated.
void env_warn(const std::string& name, const std::string& value, const std::string& problem,
              const std::string& instead);

/// Reads every AUTOFUSE_* variable of README's environment table that has a fixed form (booleans, counts, choices)
/// with the parsers above, so a bad value warns at start-up (the CLI's main and `import autofuse` call it) rather
/// than when, or only if, a code path reads it. The directory variables are checked where they are used (they are
/// created on demand), AUTOFUSE_EXTRA_CXXFLAGS by the compiler (its error names the flag).
void check_environment();

/// The default thread count without AUTOFUSE_NUM_THREADS: the CPUs this process may run on (sched_getaffinity),
/// else std::thread::hardware_concurrency(), at least 1.
int cpu_count();

}  // namespace autofuse
