"""Set-up shared by every Python test suite (tests/python, tests/conformance).

The backend's AOTAutograd cache (python/autofuse/aot_cache.py) is off by default in tests: many tests compile the same
function in several tests or test runs and inspect what the backend lowered (``GraphRecord.lowered``), which a cache
hit does not redo. tests/python/test_backend_aot_cache.py switches it on (AUTOFUSE_AOT_CACHE=1) in the processes it
starts. Set AUTOFUSE_AOT_CACHE=1 in the environment to run the whole suite with the cache on.
"""

import os

os.environ.setdefault("AUTOFUSE_AOT_CACHE", "0")
