"""Which library kernel runs an fp32 linear layer: ATen's ``mm``/``addmm`` or oneDNN's inner product, chosen by a
measurement on this machine.

A linear layer is an extern call (matmuls stay whole, decompositions.py). ATen's fp32 ``mm``/``addmm`` on x86 run
the BLAS that PyTorch's wheels link (MKL's sgemm); ``torch.ops.mkldnn._linear_pointwise`` (the op Inductor emits for
linear layers under ``freezing``) runs oneDNN's inner product on the same OpenMP threads. Which one is faster depends
on the CPU. On session 10's machine (AMD EPYC, Zen 5, 2 threads, torch 2.13.0) oneDNN took 0.35-0.57 of addmm's time
for GPT-2's layer shapes (M = 1, 32, 512 rows; K x N = 768 x 2304, 3072 x 768, 768 x 50257), with the weight given
either as (N, K) or as a transposed (K, N) tensor. Elsewhere BLAS may win, so ``choice()`` measures both once per
machine on two layer shapes and keeps the answer (a small JSON file in the machine directory, keyed by the CPU's
model string and torch's version); ``AUTOFUSE_MATMUL=aten`` or ``onednn`` forces one.

The probe runs on one thread. What differs between the two libraries is per core (the instruction set and blocking
each uses on this CPU), and one thread measures it robustly while other processes run: with two threads on the
2-core machine next to another busy process, every GEMM waited in OpenMP's barrier for a descheduled thread (a
0.23 ms 32x768x768 GEMM took 7.7-8.2 ms in both libraries), while one thread still read 410 against 231 us and
5.8 against 2.7 ms (session 10, load 2.3).

Numerics: both are fp32 GEMMs that add the K products in different orders. Against an fp64 reference, (4, 32, 768) x
(768, 256): oneDNN's max error is 6.5e-7 of the output's largest magnitude, ATen's 3.7e-7 (tests/python/
test_extern_matmul.py bounds it against eager).

bfloat16: where ATen's own bf16 matmul runs on oneDNN (``torch.ops.mkldnn._is_mkldnn_bf16_supported()``), oneDNN's
linear gave the same bits as ATen's ``addmm``/``mm`` on every shape tried (M = 1, 7, 32, 33, 512; K up to 3072; with
and without bias) and took 0.91-0.97 of its time on GPT-2's layer shapes with a bias (ATen's addmm writes the bias
into the output first; the vocabulary matmul, without bias: 0.99-1.02), so bf16 layers use it whenever
AUTOFUSE_MATMUL is not ``aten``, without a probe.

What oneDNN's op needs, found by testing it (torch 2.13): the bias None or a contiguous 1-D tensor (a stride-0
expanded bias reads past its storage); K > 0 (an empty reduction fails to create the primitive); float32 or
bfloat16 (float16 is refused on CPUs without AVX512-FP16). program_linear.py emits it only under those conditions.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import tempfile
import time
from typing import Any, Dict, List, Optional

import torch

log = logging.getLogger("autofuse")

#: oneDNN's linear (input (..., K), weight (N, K) of any strides, bias (N,) contiguous or None) -> (..., N)
#: contiguous; the C++ operator itself (no OpOverload frame). None when this torch has no oneDNN.
def mkldnn_op(name: str):
    """The C++ operator ``torch.ops.mkldnn.<name>.default`` (no OpOverload frame), or None when this torch has no
    oneDNN or no such op."""
    try:
        if torch.backends.mkldnn.is_available():
            return getattr(torch.ops.mkldnn, name).default._op
    except (AttributeError, RuntimeError):  # a torch build without the mkldnn ops
        pass
    return None


ONEDNN_LINEAR = mkldnn_op("_linear_pointwise")

#: Layer shapes (M, K, N) the probe times (a 1x32-token and a 4x128-token transformer layer of width 768).
PROBE_SHAPES = ((32, 768, 768), (512, 768, 768))
#: oneDNN is chosen when its fastest round is below this fraction of ATen's on every probe shape.
PROBE_MARGIN = 0.9
PROBE_ROUNDS = 9
#: A probe whose median round is more than this many times its fastest (another process took the cores) decides
#: for this process only and is not stored.
PROBE_NOISE = 1.5
_CHOICE: List[Dict[str, Any]] = []  # the process's decision once made (probe result, or the forced value)


def _cpu_model() -> str:
    """The CPU's model string and family/model numbers (/proc/cpuinfo), or the platform's processor string."""
    fields: Dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("vendor_id", "cpu family", "model", "model name") and key not in fields:
                    fields[key] = value.strip()
                if not line.strip() and fields:
                    break
    except OSError:
        import platform

        return platform.processor() or "unknown"
    return " / ".join(fields.get(k, "?") for k in ("vendor_id", "cpu family", "model", "model name"))


def _time_us(fn) -> float:
    """Microseconds one call of fn takes."""
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e6


def probe() -> Dict[str, Any]:
    """Times ATen's ``addmm(b, x, w.t())`` against oneDNN's linear on each of PROBE_SHAPES (fp32, random operands,
    one thread, torch's thread count restored after; two warm-up calls each, then PROBE_ROUNDS alternating rounds;
    the fastest round of each, in microseconds) and returns {"choice": "onednn" | "aten", "shapes": [[M, K, N,
    aten_us, onednn_us], ...], "noisy": bool, ...}. About 0.12 s (session 10's Zen 5, idle). Runs on real tensors even
    when called under a tensor-subclass mode (choice() is first called while the backend compiles, inside
    AOTAutograd's FakeTensorMode, where a "GEMM" is shape bookkeeping: ~0.1 ms for any size; review finding,
    session 10). Raises nothing: when oneDNN fails or disagrees with addmm (more than 1e-4 of the output's scale),
    the answer is ATen, with the reason in "error", and it is marked noisy (not stored)."""
    out: Dict[str, Any] = {"cpu": _cpu_model(), "torch": torch.__version__, "threads": 1, "shapes": [],
                           "choice": "aten"}
    if ONEDNN_LINEAR is None:
        out["error"] = "this torch has no oneDNN (torch.backends.mkldnn.is_available() is False)"
        return out
    from torch.utils._python_dispatch import _disable_current_modes

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: see the module doc
    try:
        with _disable_current_modes(), torch.no_grad():
            _time_shapes(out)
    except RuntimeError as e:  # oneDNN could not create or run the primitive on this CPU, or the check failed
        out["error"] = f"oneDNN linear failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
        out["choice"], out["noisy"] = "aten", True
    finally:
        torch.set_num_threads(threads)
    return out


def _time_shapes(out: Dict[str, Any]) -> None:
    """probe()'s measurement: fills out["shapes"], out["choice"] and out["noisy"]. Raises RuntimeError when the
    operands are not real tensors or oneDNN's result is not addmm's."""
    gen = torch.Generator().manual_seed(0)
    faster, noisy = True, False
    for m, k, n in PROBE_SHAPES:
        x = torch.randn(m, k, generator=gen)
        w = torch.randn(n, k, generator=gen)
        b = torch.randn(n, generator=gen)
        wt = w.t()
        if type(x) is not torch.Tensor:  # still under a tensor subclass mode: nothing real to time
            raise RuntimeError(f"the probe's operands are {type(x).__name__}, not real tensors")
        ref, got = torch.addmm(b, x, wt), ONEDNN_LINEAR(x, w, b, "none", [], "")
        err = ((got - ref).abs().max() / ref.abs().max()).item()
        if not err < 1e-4:  # fp32 GEMMs of K = 768 agree to ~1e-6 of the output's scale
            raise RuntimeError(f"oneDNN's linear differs from addmm by {err:.2e} of the output's scale")

        def aten():
            torch.addmm(b, x, wt)

        def onednn():
            ONEDNN_LINEAR(x, w, b, "none", [], "")

        for _ in range(2):
            aten()
            onednn()
        a, o = [], []
        for _ in range(PROBE_ROUNDS):
            a.append(_time_us(aten))
            o.append(_time_us(onednn))
        am, om = min(a), min(o)  # the minimum: other processes only ever add time
        out["shapes"].append([m, k, n, round(am, 1), round(om, 1)])
        faster = faster and om < PROBE_MARGIN * am
        noisy = noisy or statistics.median(a) > PROBE_NOISE * am or statistics.median(o) > PROBE_NOISE * om
    out["choice"] = "onednn" if faster else "aten"
    out["noisy"] = noisy


def _cache_path() -> Optional[str]:
    """The probe's file in the machine directory, or None when that directory cannot be used."""
    try:
        from . import _core

        d = _core.machine_dir()
    except Exception as e:  # noqa: BLE001 (CacheDirError, or a _core without machine_dir)
        log.info("autofuse: linear-kernel choice not cached (%s)", e)
        return None
    import hashlib

    key = hashlib.sha256(f"{_cpu_model()}|{torch.__version__}".encode()).hexdigest()[:16]
    return os.path.join(d, f"matmul-{key}.json")


def _load(path: str) -> Optional[Dict[str, Any]]:
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("choice") not in ("aten", "onednn"):
        return None
    shapes = data.get("shapes")
    ok = isinstance(shapes, list) and all(
        isinstance(r, list) and len(r) == 5 and all(isinstance(v, (int, float)) for v in r) for r in shapes)
    return data if ok else None  # a damaged file is measured again and rewritten


def _store(path: str, data: Dict[str, Any]) -> None:
    """Writes the probe result atomically (a temporary file renamed over the path); failures are only logged."""
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".matmul-", suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except OSError as e:
        log.info("autofuse: could not store the linear-kernel choice in %s (%s)", path, e)


def choice() -> Dict[str, Any]:
    """The fp32 linear kernel of this process (decided once): ``AUTOFUSE_MATMUL`` when it is ``aten`` or
    ``onednn`` (``onednn`` without oneDNN in this torch falls back to ``aten``, with the reason), else (``auto``, the
    default) the cached probe result, else a new probe (stored). Returns the probe dict (module doc); its
    "source" says which: "env", "cache <path>" or "probe"."""
    if _CHOICE:
        return _CHOICE[0]
    forced = _setting()
    if forced != "auto":
        res: Dict[str, Any] = {"choice": forced, "source": "env", "shapes": []}
        if forced == "onednn" and ONEDNN_LINEAR is None:
            res["choice"] = "aten"
            res["error"] = "AUTOFUSE_MATMUL=onednn, but this torch has no oneDNN"
    else:
        path = _cache_path()
        res = _load(path) if path else None
        if res is not None:
            res["source"] = f"cache {path}"
        else:
            res = probe()
            res["source"] = "probe"
            if path and not res.get("noisy"):  # a disturbed measurement decides for this process only
                _store(path, {k: v for k, v in res.items() if k != "source"})
        if res["choice"] == "onednn" and ONEDNN_LINEAR is None:  # a cache file from another torch build
            res["choice"] = "aten"
    # INFO when this process measured (news); a cached or forced choice at DEBUG: every first compile asks for the
    # choice (the compiled-graph caches' key, aot_cache.version_tag), graphs without a linear layer too (review,
    # session 28: the line at INFO looked like a statement about such a graph)
    level = logging.INFO if res["source"] == "probe" else logging.DEBUG
    if log.isEnabledFor(level):
        log.log(level, "autofuse: fp32 linear layers run on %s (%s; %s)", res["choice"], res["source"],
                ", ".join(f"{m}x{k}x{n}: aten {a} us, onednn {o} us" for m, k, n, a, o in res.get("shapes", [])))
    _CHOICE.append(res)
    return res


def _setting() -> str:
    """AUTOFUSE_MATMUL: "auto" (unset, empty or a bad value, warned once), "aten" or "onednn"."""
    from .env import env_choice

    return env_choice("AUTOFUSE_MATMUL", ("auto", "aten", "onednn"), "auto")


def _bf16_on_onednn() -> bool:
    """Whether ATen's own bfloat16 matmuls run on oneDNN on this CPU (torch's mkldnn bf16 check)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def use_onednn(dtype: torch.dtype) -> bool:
    """Whether a linear layer of this output dtype runs on oneDNN's linear: float32 when choice() says so;
    bfloat16 unless AUTOFUSE_MATMUL=aten, where ATen's own bf16 matmul runs on oneDNN too (module doc)."""
    if ONEDNN_LINEAR is None or not torch.backends.mkldnn.enabled:  # torch.backends.mkldnn.flags(enabled=False)
        return False
    if dtype == torch.float32:
        return choice()["choice"] == "onednn"
    if dtype == torch.bfloat16:
        return _setting() != "aten" and _bf16_on_onednn()
    return False


def reset() -> None:
    """Forgets the decisions made in this process (tests; AUTOFUSE_MATMUL is read again at the next choice())."""
    _CHOICE.clear()


def cache_key() -> str:
    """What the compiled programs depend on here, for the compiled-graph caches' version tag (aot_cache.py): the
    library kernel of fp32 and of bf16 linear layers (AUTOFUSE_MATMUL, the probe's answer, torch's mkldnn switch)
    and whether inference graphs pack their weights (AUTOFUSE_PREPACK, weight_pack.py)."""
    from . import weight_pack

    return f"matmul fp32={'onednn' if use_onednn(torch.float32) else 'aten'} " \
           f"bf16={'onednn' if use_onednn(torch.bfloat16) else 'aten'} prepack={int(weight_pack.enabled())}"
