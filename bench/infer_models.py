"""End-to-end inference bench of the demo's models (eager / Inductor / Autofuse, interleaved, medians).

A thin wrapper: ``python bench/infer_models.py [options]`` is ``python -m autofuse.bench.infer [options]``
(python/autofuse/bench/infer.py documents the method and options). On a shared machine set
``AUTOFUSE_TIMING_LOCK=PATH`` so that the timing windows do not overlap others' builds (python/autofuse/bench/timing.py).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from autofuse.bench.infer import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
