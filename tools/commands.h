// The `autofuse` command-line tool: subcommand entry points and small helpers they share.
//
// tools/main.cpp holds the subcommand table. Each subcommand is a function `int cmd_X(const Args&)` defined in its own
// tools/cmd_X.cpp (CMake globs tools/*.cpp). The declarations below are weak, so the table can list a subcommand
// whose file is not written yet: the tool then says so instead of failing to link.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autofuse/ir/graph.h"

namespace autofuse::cli {

/// The arguments after the subcommand name, e.g. {"graph.af", "--seed", "3"} for `autofuse interp graph.af --seed 3`.
using Args = std::vector<std::string>;

/// A subcommand: reads Args, writes to stdout/stderr, returns the process exit status (0 ok, 1 failure, 2 usage).
using CommandFn = int (*)(const Args&);

// Subcommands (exit status as above). Defined in tools/cmd_<name>.cpp by the owner named in the table.
[[gnu::weak]] int cmd_print(const Args& args);
[[gnu::weak]] int cmd_check(const Args& args);
[[gnu::weak]] int cmd_interp(const Args& args);
[[gnu::weak]] int cmd_codegen(const Args& args);
[[gnu::weak]] int cmd_run(const Args& args);
[[gnu::weak]] int cmd_fuse(const Args& args);
[[gnu::weak]] int cmd_machine(const Args& args);
[[gnu::weak]] int cmd_cache(const Args& args);
[[gnu::weak]] int cmd_tiling_sweep(const Args& args);  // owner: tiling

/// The whole content of a file, or of stdin when path is "-". Throws std::runtime_error "PATH: cannot read: why".
std::string read_file(const std::string& path);

/// A minimal option scanner over Args: positional arguments, `--flag`, and `--key VALUE` / `--key=VALUE` pairs.
/// Options may repeat (`--shape s0=4 --shape s1=8`). An option in `list_options` also takes the arguments after its
/// value that read as NAME=VALUE, NAME an identifier (`--shape s0=4 s1=8`, the same as repeating it); anything else
/// (a FILE, another option) ends its list. Throws std::invalid_argument naming an option that lacks its value or is
/// not in `known` (options listed in `known_flags` take no value).
struct ParsedArgs {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> options;  ///< (name without "--", value); flags have value ""
  /// Last value of an option, nullopt if absent.
  std::optional<std::string> get(const std::string& name) const;
  /// Every value of a repeated option, in order.
  std::vector<std::string> get_all(const std::string& name) const;
  bool has(const std::string& name) const;
};
ParsedArgs parse_args(const Args& args, const std::vector<std::string>& known_options,
                      const std::vector<std::string>& known_flags = {},
                      const std::vector<std::string>& list_options = {});

/// Parse a decimal integer, throwing std::invalid_argument "WHAT: expected an integer, got 'TEXT'".
int64_t parse_int(const std::string& text, const std::string& what);
/// parse_int for a count option: an integer in [lo, hi]; throws std::invalid_argument
/// "WHAT: expected an integer from LO to HI, got 'TEXT'" otherwise (`--repeat 0` must not run once silently).
int64_t parse_count(const std::string& text, const std::string& what, int64_t lo, int64_t hi);
/// Throws std::invalid_argument "unexpected argument 'X' (one FILE is expected)" when more than one positional
/// argument was given (the subcommands that take one FILE).
void expect_at_most_one_file(const ParsedArgs& a);
/// Throws IRError "FILE: graph 'NAME' has no outputs: `return` needs a value" for a graph without outputs, which the
/// IR allows (a graph under construction) but check and interp refuse like fuse, codegen and run (review, session 28).
void expect_outputs(const Graph& g, const std::string& file);
/// parse_int for --seed: a whole number >= 0; throws std::invalid_argument otherwise.
int64_t parse_seed(const std::string& text);
/// The values of repeated `--shape SYM=N` options as symbol -> size (elements); throws std::invalid_argument naming
/// the option for a pair without '=' or a name, a size that is not an integer >= 0, or a symbol given twice.
std::map<std::string, int64_t> parse_shapes(const std::vector<std::string>& pairs);

}  // namespace autofuse::cli
