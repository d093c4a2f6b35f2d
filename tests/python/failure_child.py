"""Child process of test_failure_paths.py: compiles a small model with the autofuse backend under whatever
environment the test set (a missing or failing compiler, a corrupt cache, debug dumps) and prints one JSON line:
whether the output equals eager's (``ok``), the exception if compiling or running raised (``err``), the warnings,
the mode of every compiled graph, the kernel steps that got a compiled kernel, and the kernel cache's counters.

The model: tanh -> mm -> softmax, so one graph has two kernels split by an extern (compiled as one batch)."""

import json
import warnings

import torch

import autofuse
from autofuse import backend


def model(x, w):
    return torch.softmax(torch.tanh(x) @ w, -1) * 2


def main() -> None:
    torch.manual_seed(0)
    x, w = torch.randn(8, 16), torch.randn(16, 32)
    ok, err = None, None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = torch.compile(model, backend="autofuse")(x, w)
            ok = bool(torch.allclose(out, model(x, w), rtol=1e-5, atol=1e-6))
        except Exception as e:  # noqa: BLE001 - reported to the test, which decides
            err = f"{type(e).__name__}: {e}"[:2000]
    stats = autofuse.cache_stats() if hasattr(autofuse, "cache_stats") else None
    print(json.dumps({
        "ok": ok, "err": err,
        "warnings": [str(m.message)[:1000] for m in caught if "autofuse" in str(m.message)],
        "modes": [r.mode for r in backend.RECORDS],
        "compiled": [s.name for r in backend.RECORDS for s in r.kernels if s.kernel is not None],
        "fallen_back": [s.name for r in backend.RECORDS for s in r.kernels if s.kernel is None],
        "stats": {k: getattr(stats, k) for k in ("compiles", "disk_hits", "rebuilt_corrupt", "compiler_runs")
                  if hasattr(stats, k)},
    }))


if __name__ == "__main__":
    main()
