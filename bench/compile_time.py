"""Compile-time bench from the command line: ``python bench/compile_time.py [--patterns ...]``.

The same as ``python -m autofuse.bench --compile``: cold (caches disabled), first (empty caches) and warm (new
process, caches populated) compile time per pattern, Inductor and Autofuse, each in a fresh process.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from autofuse.bench.__main__ import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(["--compile"] + sys.argv[1:]))
