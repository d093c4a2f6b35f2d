// `autofuse machine [--reprobe]`: print the machine model (topology, cache sizes, ISA, measured bandwidths).
#include <cstdio>
#include <stdexcept>

#include "autofuse/tiling/machine.h"
#include "commands.h"

namespace autofuse::cli {

int cmd_machine(const Args& args) {
  ParsedArgs a = parse_args(args, {}, {"reprobe"});
  if (!a.positional.empty()) throw std::invalid_argument("unexpected argument '" + a.positional[0] + "'");
  MachineInfo m = a.has("reprobe") ? reprobe_machine() : machine_info();
  std::fputs(describe_machine(m).c_str(), stdout);
  return 0;
}

}  // namespace autofuse::cli
