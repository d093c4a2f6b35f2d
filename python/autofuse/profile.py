"""Profiling mode: per-kernel calls, time, bytes read and written, GB/s and % of the measured copy bandwidth.

Switch it on for a whole process with ``AUTOFUSE_PROFILE=1`` (the table is printed to stderr at exit), or for a
region with the context manager (this module is callable: ``autofuse.profile()`` is ``autofuse.profile.profile()``)::

    import autofuse.profile
    with autofuse.profile() as p:
        model(x)
    print(p.table())          # or p.rows() for a list of dicts

The kernel launcher reports each launch through ``record(name, seconds, bytes_read, bytes_written)``, guarded by
the cheap ``enabled()`` check, or hands the launch to ``launch(name, run, inputs, outputs)`` which times it. Byte
counts are the launch's unique input bytes and its output bytes (each tensor's elements x element size), i.e. the
compulsory traffic, not what the caches actually moved.

Bandwidth reference: ``copy_bandwidth_gbs()`` times a large out-of-place-free copy (``dst.copy_(src)`` with torch
when importable, else numpy), counting read + write bytes, median of several runs; measured once per process
(``AUTOFUSE_PROFILE_BANDWIDTH_GBS`` overrides it). The bench harness uses the same function. The profile's own
table uses ``reference_bandwidth_gbs()``: the machine model's copy bandwidth (probed once per machine on a quiet
moment, ``autofuse machine``) when there is one, so that a table printed at exit under load is not measured against
a copy timed under that load; else the copy measured now.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import statistics
import sys
import threading
import time
import types
from dataclasses import dataclass, field

from .env import env_bool

_ENV_ON = env_bool("AUTOFUSE_PROFILE", False)
_lock = threading.Lock()
_active: list["Profile"] = []  # profiles currently recording: the env-wide one and any open contexts
_enabled = False
#: The same flag in a list slot: what generated programs read before each launch (``PF[0]``: a subscript instead of a
#: Python call to enabled()). Kept equal to ``_enabled`` wherever that changes.
ENABLED = [False]
_bandwidth_cache: float | None = None


def enabled() -> bool:
    """True when some profile is recording; launchers check this before timing anything (a global read)."""
    return _enabled


@dataclass
class KernelStats:
    """Totals for one kernel name: number of calls, seconds summed over calls, bytes read and written summed."""

    calls: int = 0
    seconds: float = 0.0
    bytes_read: int = 0
    bytes_written: int = 0
    min_seconds: float = float("inf")


@dataclass
class Profile:
    """The records of one profiling session, keyed by kernel name (insertion order = first launch order)."""

    kernels: dict[str, KernelStats] = field(default_factory=dict)

    def add(self, name: str, seconds: float, bytes_read: int, bytes_written: int) -> None:
        """Adds one launch of kernel ``name`` taking ``seconds`` and moving the given byte counts."""
        s = self.kernels.get(name)
        if s is None:
            s = self.kernels[name] = KernelStats()
        s.calls += 1
        s.seconds += seconds
        s.bytes_read += int(bytes_read)
        s.bytes_written += int(bytes_written)
        s.min_seconds = min(s.min_seconds, seconds)

    def rows(self, bandwidth_gbs: float | None = None) -> list[dict]:
        """One dict per kernel, slowest total first: kernel, calls, total_ms, mean_us, bytes_read, bytes_written,
        gbs ((read + written) / time, 1e9 bytes/s) and pct_bw (gbs as % of ``bandwidth_gbs``; measured with
        copy_bandwidth_gbs() when None, and only if there is a record)."""
        if bandwidth_gbs is None and self.kernels:
            bandwidth_gbs = reference_bandwidth_gbs()[0]
        out = []
        for name, s in self.kernels.items():
            gbs = (s.bytes_read + s.bytes_written) / s.seconds / 1e9 if s.seconds > 0 else float("nan")
            out.append({"kernel": name, "calls": s.calls, "total_ms": s.seconds * 1e3,
                        "mean_us": s.seconds / s.calls * 1e6, "bytes_read": s.bytes_read,
                        "bytes_written": s.bytes_written, "gbs": gbs,
                        "pct_bw": 100.0 * gbs / bandwidth_gbs if bandwidth_gbs else float("nan")})
        out.sort(key=lambda r: -r["total_ms"])
        return out

    def total_seconds(self) -> float:
        """Seconds summed over every recorded launch."""
        return sum(s.seconds for s in self.kernels.values())

    def table(self, bandwidth_gbs: float | None = None) -> str:
        """The rows() as a fixed-width text table, with the bandwidth reference in the last line."""
        if not self.kernels:
            return "autofuse profile: no kernel launches recorded"
        bw, source = (bandwidth_gbs, "given") if bandwidth_gbs is not None else reference_bandwidth_gbs()
        head = f"{'kernel':<40} {'calls':>7} {'total ms':>10} {'mean us':>10} {'read MB':>9} {'write MB':>9} " \
               f"{'GB/s':>7} {'% bw':>6}"
        lines = ["autofuse profile (per kernel; bytes = unique inputs + outputs)", head, "-" * len(head)]
        for r in self.rows(bw):
            lines.append(f"{r['kernel'][:40]:<40} {r['calls']:>7} {r['total_ms']:>10.3f} {r['mean_us']:>10.2f} "
                         f"{r['bytes_read'] / 1e6:>9.2f} {r['bytes_written'] / 1e6:>9.2f} {r['gbs']:>7.2f} "
                         f"{r['pct_bw']:>6.1f}")
        lines.append(f"total {self.total_seconds() * 1e3:.3f} ms over {sum(s.calls for s in self.kernels.values())} "
                     f"launches; bandwidth reference {bw:.2f} GB/s (copy, read + write; {source})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def record(kernel_name: str, seconds: float, bytes_read: int, bytes_written: int) -> None:
    """Records one launch of ``kernel_name`` (wall seconds, compulsory bytes) in every active profile.

    Thread-safe. A no-op when nothing is recording.
    """
    if not _enabled:
        return
    with _lock:
        for p in _active:
            p.add(kernel_name, seconds, bytes_read, bytes_written)


def _spec(t):
    """(base, (sizes, strides, offset)) when ``t`` is a kernel launch's view spec (src/bindings/tensor_convert.h),
    else None."""
    if isinstance(t, tuple) and len(t) == 2 and hasattr(t[0], "element_size") and isinstance(t[1], tuple):
        return t
    return None


def tensor_bytes(t) -> int:
    """Bytes of a tensor-like: elements x element size for torch tensors and view specs, ``nbytes`` for numpy
    arrays and anything else that has it; 0 for non-tensors (scalars, None)."""
    spec = _spec(t)
    if spec is not None:
        n = 1
        for d in spec[1][0]:
            n *= int(d)
        return n * int(spec[0].element_size())
    if hasattr(t, "element_size") and hasattr(t, "numel"):
        return int(t.numel()) * int(t.element_size())
    return int(getattr(t, "nbytes", 0))


def unique_bytes(tensors) -> int:
    """Sum of tensor_bytes over ``tensors``, counting a tensor seen twice (same data pointer, shape and strides)
    once."""
    seen, total = set(), 0
    for t in tensors:
        key = _identity(t)
        if key in seen:
            continue
        seen.add(key)
        total += tensor_bytes(t)
    return total


def _identity(t):
    spec = _spec(t)
    if spec is not None:
        sizes, strides, offset = spec[1]
        return (spec[0].data_ptr() + offset * spec[0].element_size(), tuple(sizes), tuple(strides))
    if hasattr(t, "data_ptr"):
        return (t.data_ptr(), tuple(t.shape), tuple(t.stride()))
    return id(t)


def launch(kernel_name: str, run, inputs, outputs, *args):
    """Calls ``run(inputs, outputs, *args)``; when profiling, times it and records it with unique_bytes(inputs)
    read and unique_bytes(outputs) written. Returns what ``run`` returns. This is the one-line hook for a
    launcher."""
    if not _enabled:
        return run(inputs, outputs, *args)
    t0 = time.perf_counter()
    result = run(inputs, outputs, *args)
    seconds = time.perf_counter() - t0
    record(kernel_name, seconds, unique_bytes(inputs), unique_bytes(outputs))
    return result


@contextlib.contextmanager
def profile():
    """Context manager that records every kernel launch inside it and yields the Profile (usable after exit)."""
    global _enabled
    p = Profile()
    with _lock:
        _active.append(p)
        _enabled = True
        ENABLED[0] = True
    try:
        yield p
    finally:
        with _lock:
            _active.remove(p)
            _enabled = bool(_active)
            ENABLED[0] = _enabled


def copy_bandwidth_gbs(nbytes: int = 256 << 20, repeats: int = 7) -> float:
    """The machine's copy bandwidth in GB/s (1e9 bytes/s): median over ``repeats`` timed copies of an
    ``nbytes`` buffer into a preallocated one, counting nbytes read + nbytes written. Uses torch (all its
    threads) when importable, else numpy (one thread). Memoised for the default arguments;
    ``AUTOFUSE_PROFILE_BANDWIDTH_GBS`` overrides the measurement."""
    global _bandwidth_cache
    default = nbytes == 256 << 20 and repeats == 7
    if default and _bandwidth_cache is not None:
        return _bandwidth_cache
    env = os.environ.get("AUTOFUSE_PROFILE_BANDWIDTH_GBS")
    if env:
        value = float(env)
    else:
        value = 2 * nbytes / statistics.median(_copy_times(nbytes, repeats)) / 1e9
    if default:
        _bandwidth_cache = value
    return value


def reference_bandwidth_gbs() -> tuple[float, str]:
    """The copy bandwidth (GB/s, read + write counted) the profile table compares kernels with, and where it came
    from: ``AUTOFUSE_PROFILE_BANDWIDTH_GBS`` when set; else the machine model's DRAM copy bandwidth
    (``_core.machine_info``: measured once per machine and kept in ``AUTOFUSE_MACHINE_DIR``) when it is measured;
    else ``copy_bandwidth_gbs()`` now."""
    env = os.environ.get("AUTOFUSE_PROFILE_BANDWIDTH_GBS")
    if env:
        return float(env), "AUTOFUSE_PROFILE_BANDWIDTH_GBS"
    try:
        from . import _core

        mi = _core.machine_info(False)
        if mi.get("copy_gbps", 0) > 0:
            return float(mi["copy_gbps"]), "machine model"
    except Exception:  # noqa: BLE001 - no extension or no model: measure instead
        pass
    return copy_bandwidth_gbs(), "measured now"


def fresh_copy_bandwidth_gbs(nbytes: int = 256 << 20, repeats: int = 7) -> float:
    """Copy bandwidth in GB/s when the destination is allocated by each call (``torch.clone`` of an ``nbytes`` float32
    tensor; nbytes read + nbytes written; median of ``repeats``). This is the ceiling for any out-of-place op in this
    process: at DRAM sizes glibc returns large blocks to the OS on free, so each new output's pages are faulted in
    and zeroed by the kernel on first touch. Requires torch."""
    import torch

    src = torch.ones(nbytes // 4, dtype=torch.float32)
    src.clone()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = src.clone()
        times.append(time.perf_counter() - t0)
        del out
    return 2 * nbytes / statistics.median(times) / 1e9


def _copy_times(nbytes: int, repeats: int) -> list[float]:
    try:
        import torch

        src = torch.ones(nbytes // 4, dtype=torch.float32)
        dst = torch.empty_like(src)
        copy = lambda: dst.copy_(src)  # noqa: E731
    except ImportError:
        import numpy as np

        src = np.ones(nbytes // 4, dtype=np.float32)
        dst = np.empty_like(src)
        copy = lambda: np.copyto(dst, src)  # noqa: E731
    copy()  # fault the pages in
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        copy()
        times.append(time.perf_counter() - t0)
    return times


def _print_at_exit(p: Profile) -> None:
    if p.kernels:
        print(p.table(), file=sys.stderr)


if _ENV_ON:
    _env_profile = Profile()
    _active.append(_env_profile)
    _enabled = True
    ENABLED[0] = True
    atexit.register(_print_at_exit, _env_profile)


class _CallableModule(types.ModuleType):
    """Lets ``autofuse.profile()`` open a profiling region while ``autofuse.profile.record`` etc. stay reachable."""

    def __call__(self):
        return profile()


sys.modules[__name__].__class__ = _CallableModule
