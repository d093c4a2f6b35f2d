"""Set-up shared by every Python test suite (tests/python, tests/conformance).

The backend's AOTAutograd cache (python/autofuse/aot_cache.py) is off by default in tests: many tests compile the same
function in several tests or test runs and inspect what the backend lowered (``GraphRecord.lowered``), which a cache
hit does not redo. tests/python/test_backend_aot_cache.py switches it on (AUTOFUSE_AOT_CACHE=1) in the processes it
starts. Set AUTOFUSE_AOT_CACHE=1 in the environment to run the whole suite with the cache on.

fp32 linear layers run on ATen's matmul in tests (AUTOFUSE_MATMUL=aten) unless a test says otherwise: many tests
compare compiled fp32 models with eager bit for bit or at 1e-6, which holds for ATen's own mm/addmm but not for
oneDNN's linear (another summation order; python/autofuse/extern_matmul.py), which the default ``auto`` picks on
machines where it is faster. tests/python/test_extern_matmul.py tests that path with its own tolerances and
`make demo` runs the real models with the default; tests that compare with ATen's bits (test_program_linear.py)
set `aten` themselves, so the suite also runs with AUTOFUSE_MATMUL=auto.
"""

import os

os.environ.setdefault("AUTOFUSE_AOT_CACHE", "0")
os.environ.setdefault("AUTOFUSE_MATMUL", "aten")
