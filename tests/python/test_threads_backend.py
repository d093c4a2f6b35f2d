"""parallel_for on the host's OpenMP team (src/autofuse/runtime/host_openmp.h): with torch imported the launcher
shares torch's GNU OpenMP runtime; AUTOFUSE_THREADS=pool keeps the own pool. Both give eager's results on kernels
large enough to run in parallel. Each mode runs in a new process (the choice is made once per process)."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
core = pytest.importorskip("autofuse._core")

SCRIPT = r"""
import torch, autofuse
from autofuse import _core
torch.set_num_threads(2)
torch.manual_seed(0)
x = torch.randn(1 << 21)
s = torch.randn(4096, 1024)
f = torch.compile(lambda a: (a * 2 + 1).sin(), backend="autofuse")
g = torch.compile(lambda a: torch.softmax(a, -1), backend="autofuse")
assert (f(x) - (x * 2 + 1).sin()).abs().max() < 1e-6
assert (g(s) - torch.softmax(s, -1)).abs().max() < 1e-6
print("BACKEND", _core.threads_backend())
"""


def _run(mode):
    env = dict(os.environ, AUTOFUSE_THREADS=mode, AUTOFUSE_NUM_THREADS="2")
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.split("BACKEND")[-1].strip()


def test_openmp_team_when_torch_has_one():
    import torch

    if "openmp" not in torch.__config__.parallel_info().lower():
        pytest.skip("this torch build does not use OpenMP")
    assert _run("auto") == "openmp"


def test_pool_forced():
    assert _run("pool") == "pool"
