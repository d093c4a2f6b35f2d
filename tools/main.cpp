// The `autofuse` command-line tool: the subcommand table and the dispatcher.
//
//   autofuse <subcommand> [args...]      autofuse help      autofuse <subcommand> --help
//
// To add a subcommand: declare `cmd_X` in commands.h, add a row below, and define it in tools/cmd_X.cpp.
#include <cctype>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>

#include "autofuse/support/env.h"
#include "commands.h"

namespace autofuse::cli {
namespace {

/// One row of the subcommand table.
struct Command {
  const char* name;
  CommandFn fn;  ///< null when the defining file is not part of this build (weak symbol)
  const char* usage;
  const char* summary;
};

/// The subcommand table, in the order `autofuse help` lists it.
const Command kCommands[] = {
    {"print", cmd_print, "print FILE", "parse IR text, verify it, and print it back in canonical form"},
    {"check", cmd_check, "check FILE", "parse and verify IR text; the diagnostic and exit status 1 on error"},
    {"interp", cmd_interp, "interp FILE [--seed K] [--shape SYM=N ...]",
     "run the reference interpreter on seeded random inputs; print a summary of each output"},
    {"fuse", cmd_fuse,
     "fuse FILE [--dot OUT.svg] [--no-vertical] [--no-horizontal] [--no-recompute] [--max-nodes N] [--max-inputs N]",
     "partition a graph into fusion groups and print the fused graph and the fusion report"},
    {"codegen", cmd_codegen, "codegen FILE [--full]",
     "print the generated source of each of the graph's kernels (--full: with the helper header)"},
    {"run", cmd_run, "run FILE [--shape SYM=N ...] [--seed K] [--repeat R]",
     "compile the graph's kernels, run them on random inputs, compare with the interpreter (error, time)"},
    {"machine", cmd_machine, "machine [--reprobe] [--launch]",
     "print the machine model: cores, caches, ISA, measured bandwidths; --launch: parallel_for launch cost"},
    {"cache", cmd_cache, "cache [--bench [--reps N] [--source FILE]]",
     "show the kernel cache; --bench: median cold compile and warm load times"},
    {"tiling-sweep", cmd_tiling_sweep, "tiling-sweep [--total N] [--reps R] [--threads T]",
     "reduction sweep rows x cols (sum, softmax; f32, bf16): time of every tiling candidate and the chosen one"},
};

void print_help(std::FILE* out) {
  std::fprintf(out, "usage: autofuse <subcommand> [args...]\n\nsubcommands:\n");
  for (const Command& c : kCommands) {
    std::fprintf(out, "  %-44s %s%s\n", c.usage, c.summary, c.fn ? "" : " (not built)");
  }
  std::fprintf(out, "\nIR text files use the syntax of src/autofuse/ir/printer.h; FILE '-' reads stdin.\n");
}

}  // namespace

std::string read_file(const std::string& path) {
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw std::runtime_error(path + ": is a directory, expected an IR file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<std::string> ParsedArgs::get(const std::string& name) const {
  std::optional<std::string> v;
  for (const auto& [k, val] : options) {
    if (k == name) v = val;
  }
  return v;
}

std::vector<std::string> ParsedArgs::get_all(const std::string& name) const {
  std::vector<std::string> v;
  for (const auto& [k, val] : options) {
    if (k == name) v.push_back(val);
  }
  return v;
}

bool ParsedArgs::has(const std::string& name) const { return get(name).has_value(); }

namespace {

/// Whether `a` reads as NAME=VALUE with NAME an identifier (a letter or '_', then letters, digits or '_'): a further
/// value of a list option (`--shape s0=3 s1=5`), not a FILE.
bool is_assignment(const std::string& a) {
  const size_t eq = a.find('=');
  if (eq == 0 || eq == std::string::npos || std::isdigit(static_cast<unsigned char>(a[0]))) return false;
  for (size_t i = 0; i < eq; ++i)
    if (!std::isalnum(static_cast<unsigned char>(a[i])) && a[i] != '_') return false;
  return true;
}

}  // namespace

ParsedArgs parse_args(const Args& args, const std::vector<std::string>& known_options,
                      const std::vector<std::string>& known_flags, const std::vector<std::string>& list_options) {
  auto is_in = [](const std::vector<std::string>& v, const std::string& s) {
    for (const auto& x : v) {
      if (x == s) return true;
    }
    return false;
  };
  ParsedArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 3 || a.compare(0, 2, "--") != 0) {
      out.positional.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (is_in(known_flags, name)) {
      if (has_value) throw std::invalid_argument("option --" + name + " takes no value");
      out.options.emplace_back(name, "");
    } else if (is_in(known_options, name)) {
      if (!is_in(list_options, name))  // --seed 1 --seed 2 took the last value silently (review 29)
        for (const auto& [seen, v] : out.options)
          if (seen == name) throw std::invalid_argument("option --" + name + " is given twice");
      if (!has_value) {
        if (i + 1 >= args.size()) throw std::invalid_argument("option --" + name + " needs a value");
        value = args[++i];
      }
      out.options.emplace_back(name, value);
      if (is_in(list_options, name))
        while (i + 1 < args.size() && is_assignment(args[i + 1])) out.options.emplace_back(name, args[++i]);
    } else {
      throw std::invalid_argument("unknown option --" + name);
    }
  }
  return out;
}

std::map<std::string, int64_t> parse_shapes(const std::vector<std::string>& pairs) {
  std::map<std::string, int64_t> out;
  for (const std::string& kv : pairs) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument("--shape: expected SYM=N, got '" + kv + "'");
    std::string name = kv.substr(0, eq);
    int64_t v = parse_int(kv.substr(eq + 1), "--shape " + name);
    if (v < 0) throw std::invalid_argument("--shape " + kv + ": a size must be >= 0");
    if (!out.emplace(name, v).second)
      throw std::invalid_argument("--shape: " + name + " is given twice ('" + kv + "')");
  }
  return out;
}

int64_t parse_int(const std::string& text, const std::string& what) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size()) {
    throw std::invalid_argument(what + ": expected an integer, got '" + text + "'");
  }
  return v;
}

int64_t parse_count(const std::string& text, const std::string& what, int64_t lo, int64_t hi) {
  int64_t v = 0;
  try {
    v = parse_int(text, what);
  } catch (const std::invalid_argument&) {
    v = lo - 1;  // reported below with the range
  }
  if (v < lo || v > hi)
    throw std::invalid_argument(what + ": expected an integer from " + std::to_string(lo) + " to " +
                                std::to_string(hi) + ", got '" + text + "'");
  return v;
}

void expect_at_most_one_file(const ParsedArgs& a) {
  if (a.positional.size() > 1)
    throw std::invalid_argument("unexpected argument '" + a.positional[1] + "' (one FILE is expected)");
}

void expect_outputs(const Graph& g, const std::string& file) {
  if (g.outputs().empty()) throw IRError(file + ": graph '" + g.name() + "' has no outputs: `return` needs a value");
}

int64_t parse_seed(const std::string& text) {
  const int64_t v = parse_int(text, "--seed");
  if (v < 0) throw std::invalid_argument("--seed: expected an integer >= 0, got '" + text + "'");
  return v;
}

}  // namespace autofuse::cli

int main(int argc, char** argv) {
  using namespace autofuse::cli;
  if (argc < 2 || std::strcmp(argv[1], "help") == 0 || std::strcmp(argv[1], "--help") == 0 ||
      std::strcmp(argv[1], "-h") == 0) {
    print_help(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  autofuse::check_environment();  // a bad AUTOFUSE_* value warns once, before any subcommand reads it
  const std::string name = argv[1];
  for (const Command& c : kCommands) {
    if (name != c.name) continue;
    Args args(argv + 2, argv + argc);
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
      std::printf("usage: autofuse %s\n  %s\n", c.usage, c.summary);
      return 0;
    }
    if (!c.fn) {
      std::fprintf(stderr, "autofuse: subcommand '%s' is not part of this build (tools/cmd_%s.cpp is missing)\n",
                   c.name, c.name);
      return 2;
    }
    try {
      return c.fn(args);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "autofuse %s: %s\nusage: autofuse %s\n", c.name, e.what(), c.usage);
      return 2;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr,
                   "autofuse %s: out of memory: the tensors for these sizes do not fit (try smaller --shape "
                   "values)\n",
                   c.name);
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "autofuse %s: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "autofuse: unknown subcommand '%s'\n\n", name.c_str());
  print_help(stderr);
  return 2;
}
