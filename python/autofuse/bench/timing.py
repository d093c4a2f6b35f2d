"""Interleaved timing and an optional machine-wide timing lock, shared by the inference bench and the demo.

``time_interleaved`` runs contenders round-robin (the order rotating every round), so that a change in machine load
hits every contender alike; callers report medians (and minima) of the rounds.

The timing lock is off unless ``AUTOFUSE_TIMING_LOCK=PATH`` is set. Then, on a machine shared by several people who
agree on the protocol, ``build_phase()`` holds a shared ``flock`` on PATH (waiting first while a marker file
``<PATH without extension>.want`` exists: someone is waiting for a quiet window), and ``quiet_window()`` creates
the marker and holds an exclusive ``flock`` on PATH (it waits for every shared holder, and keeps new ones out) for
the duration of a measurement. A process that holds a shared lock from outside (a build wrapper) must not also take
the quiet window: that would wait for itself.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from typing import Callable, Dict, Iterator, List, Optional


def load_average() -> str:
    """The 1, 5 and 15-minute load averages as text ("n/a" where the OS has none)."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def _lock_path() -> Optional[str]:
    p = os.environ.get("AUTOFUSE_TIMING_LOCK", "").strip()
    return p or None


def _want_path(lock: str) -> str:
    return os.path.splitext(lock)[0] + ".want"


@contextlib.contextmanager
def build_phase() -> Iterator[None]:
    """Hold the timing lock shared while compiling / warming up (see module doc); a no-op without
    AUTOFUSE_TIMING_LOCK."""
    lock = _lock_path()
    if lock is None:
        yield
        return
    import fcntl

    while os.path.exists(_want_path(lock)):
        time.sleep(2.0)
    fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


@contextlib.contextmanager
def quiet_window(log: Callable[[str], None] = print) -> Iterator[None]:
    """Hold the timing lock exclusively during a measurement (see module doc), logging the load average at the
    start and end; without AUTOFUSE_TIMING_LOCK it only logs the load."""
    lock = _lock_path()
    if lock is None:
        log(f"[timing] start {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {load_average()} (no lock)")
        yield
        log(f"[timing] end {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {load_average()}")
        return
    import fcntl

    want = _want_path(lock)
    open(want, "w").close()
    fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        log(f"[quiet] start {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {load_average()}")
        yield
        log(f"[quiet] end {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {load_average()}")
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(want)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def time_interleaved(fns: Dict[str, Callable[[], object]], rounds: int, warmup: int = 1,
                     repeat: int = 1) -> Dict[str, List[float]]:
    """Seconds per call of each function, ``rounds`` samples each: after ``warmup`` untimed calls each, every round
    calls each function ``repeat`` times in a row and times the last of them, the functions in an order rotated by
    one every round (round-robin). Returns name -> samples.

    ``repeat=2`` times every function in its own steady state: the untimed call before the timed one leaves the
    caches as a run of that function alone would, where with ``repeat=1`` each call finds what another contender
    left (session 11, BERT bf16 4x128, 2 layers: eager and Inductor took 54-56 ms right after each other and
    60-63 ms right after Autofuse; the cause was not isolated)."""
    names = list(fns)
    for _ in range(warmup):
        for n in names:
            fns[n]()
    ts: Dict[str, List[float]] = {n: [] for n in names}
    for r in range(rounds):
        k = r % len(names)
        for n in names[k:] + names[:k]:
            for _ in range(repeat - 1):
                fns[n]()
            t = time.perf_counter()
            fns[n]()
            ts[n].append(time.perf_counter() - t)
    return ts


def medians(ts: Dict[str, List[float]]) -> Dict[str, float]:
    """Median of each contender's samples (seconds)."""
    return {k: statistics.median(v) for k, v in ts.items()}
