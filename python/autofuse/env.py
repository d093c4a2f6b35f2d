"""The package's AUTOFUSE_* environment variables, read through the C++ parsers (src/autofuse/support/env.h).

One rule for every variable of README's table: unset or empty is the default; a bad value (``AUTOFUSE_STRICT=maybe``,
``AUTOFUSE_NUM_THREADS=-1``) prints one warning on stderr -- ``autofuse: warning: NAME='VALUE' is not ...; using ...``
-- once per process for each (variable, value), whether C++ or Python reads it first, and the default is used.
``import autofuse`` checks them all once (``check_environment``), so a typo shows at start-up.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional

from autofuse import _core

if not hasattr(_core, "env_bool"):
    raise ImportError(f"autofuse._core ({_core.__file__}) is older than the Python package (it lacks the environment "
                      "parsers of src/autofuse/support/env.h); rebuild it with `make build`")

#: Keys AUTOFUSE_DFX_FLAGS understands (the original Autofuse's form of the debug dump; debug.py).
DFX_KEYS = ("codegen_compile_debug", "debug_dir")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def env_bool(name: str, default: bool) -> bool:
    """A boolean variable: 1/true/yes/on or 0/false/no/off (any case); unset/empty or bad (warned once): default."""
    return _core.env_bool(name, default)


def env_int(name: str, lo: int, hi: int, instead: str) -> Optional[int]:
    """An integer variable in [lo, hi]; None when unset/empty or bad (warned once, naming ``instead``)."""
    return _core.env_int(name, lo, hi, instead)


def env_choice(name: str, choices, default: str) -> str:
    """A variable whose value is one of ``choices`` (compared ignoring case); unset/empty or bad (warned once):
    ``default``."""
    got = _core.env_choice(name, list(choices), default)
    return default if got is None else got


def cpu_count() -> int:
    """CPUs this process may run on (the default of the thread-count variables)."""
    return _core.cpu_count()


def dfx_flags() -> Dict[str, str]:
    """AUTOFUSE_DFX_FLAGS (``"--codegen_compile_debug=true;--debug_dir=DIR"``, ``;`` or ``,`` separated) as
    {key: value}. A part that is not ``--KEY=VALUE`` with a known key, or a codegen_compile_debug that is not a
    boolean, warns once and is ignored. As in the original Autofuse, codegen_compile_debug switches the dump on and
    debug_dir only says where it goes: a debug_dir without codegen_compile_debug warns once that nothing is dumped
    (an explicit ``--codegen_compile_debug=false`` does not warn)."""
    raw = os.environ.get("AUTOFUSE_DFX_FLAGS", "")
    opts: Dict[str, str] = {}
    bad: List[str] = []
    for part in raw.replace(",", ";").split(";"):
        part = part.strip()
        if not part:
            continue
        key, eq, value = part.lstrip("-").partition("=")
        key, value = key.strip(), value.strip()
        if not eq or key not in DFX_KEYS or (key == "codegen_compile_debug" and value.lower() not in _TRUE + _FALSE):
            bad.append(part)
            continue
        opts[key] = value
    if bad:
        _core.env_warn("AUTOFUSE_DFX_FLAGS", raw,
                       f"has parts that are not --codegen_compile_debug=BOOL or --debug_dir=DIR ({', '.join(bad)})",
                       "the other parts" if opts else "no debug dump")
    if opts.get("debug_dir") and "codegen_compile_debug" not in opts:
        _core.env_warn("AUTOFUSE_DFX_FLAGS", raw,
                       "names --debug_dir without --codegen_compile_debug=true (debug_dir only says where the dump "
                       "goes; codegen_compile_debug switches it on)", "no debug dump")
    return opts


def dfx_debug_on(opts: Dict[str, str]) -> bool:
    """Whether the parsed AUTOFUSE_DFX_FLAGS switch the dump on (``--codegen_compile_debug=true``; its directory is
    ``--debug_dir``, else ./autofuse_debug)."""
    return opts.get("codegen_compile_debug", "").lower() in _TRUE


#: Every AUTOFUSE_* variable the package, its tests, benches and scripts read (README's table and the developer
#: ones). Any other AUTOFUSE_* name in the environment is most likely a typo (AUTOFUSE_STRCT=1): warned about once.
KNOWN = frozenset("""
    AOT_CACHE ATTENTION_REWRITE BENCH_DIR BENCH_TRACEBACK CACHE_DIR CLI COMPILE_THREADS CONCAT_FUZZ_GRAPHS CONFORMANCE CONFORMANCE_LOG
    DEBUG DEBUG_DIR DFX_FLAGS EMULATE_PRECISION_CASTS EXP_SWEEP_STEP EXTRA_CXXFLAGS FORCE_DISABLE_CACHES FUSE_CONCAT
    FUSION_SEED FUZZ FUZZ_CASES_PER_GRAPH FUZZ_GRAPHS FUZZ_SEED FUZZ_VERBOSE HARD_CASES HARD_SEED HUGE_PAGES ISA
    KERNEL_INCLUDE_DIR MACHINE_DIR MATH_SWEEP_STEP MATMUL NO_BANDWIDTH_PROBE NUM_THREADS OUTER_SEED PREPACK PROBE_MB PROFILE
    PROFILE_BANDWIDTH_GBS PYTHON_OUTPUT_DIR REPROBE ROUND_AT_STORE SOURCE_DIR STANDIN STRICT TESTS_BIN TEST_ONLY_VARIABLE TEST_SEED
    THREADS TIMING_LOCK TORCH_DIRECT WARM_START
""".split())

_UNKNOWN_WARNED: set = set()


def check_unknown_variables(environ=None) -> List[str]:
    """Warn once (stderr, like the bad-value warnings) for each AUTOFUSE_* variable that is set but not in KNOWN,
    naming the closest known name when there is one; returns the unknown names."""
    import difflib
    import sys

    environ = os.environ if environ is None else environ
    unknown = sorted(k for k in environ if k.startswith("AUTOFUSE_") and k[len("AUTOFUSE_"):] not in KNOWN)
    for name in unknown:
        if name in _UNKNOWN_WARNED:
            continue
        _UNKNOWN_WARNED.add(name)
        close = difflib.get_close_matches(name[len("AUTOFUSE_"):], sorted(KNOWN), n=1, cutoff=0.75)
        hint = f" (did you mean AUTOFUSE_{close[0]}?)" if close else ""
        print(f"autofuse: warning: {name} is set but is not a variable Autofuse reads{hint}; it is ignored",
              file=sys.stderr)
    return unknown


def check_environment() -> None:
    """Check every AUTOFUSE_* variable of fixed form now (C++ side) and AUTOFUSE_DFX_FLAGS: bad values warn once;
    unknown AUTOFUSE_* names (typos) warn once too."""
    _core.check_environment()
    dfx_flags()
    check_unknown_variables()
