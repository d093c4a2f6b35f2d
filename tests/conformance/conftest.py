"""Shared set-up of the conformance suite: strict backend, Dynamo reset per test, and a count summary.

``AUTOFUSE_CONFORMANCE=full`` (what ``make conformance`` sets) runs every sample of every dtype and direction;
otherwise the fast shard runs (what ``make test`` runs; see test_opinfo.py for what it keeps).
"""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _strict_backend(monkeypatch):
    """AUTOFUSE_STRICT=1 (a graph or kernel fallback raises instead of silently running eager) and a fresh Dynamo."""
    monkeypatch.setenv("AUTOFUSE_STRICT", "1")
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Print one line of counts for the conformance tests (passed / failed / skipped / xfailed / xpassed)."""
    counts = {}
    for key in ("passed", "failed", "error", "skipped", "xfailed", "xpassed"):
        reps = [r for r in terminalreporter.stats.get(key, []) if "conformance" in getattr(r, "nodeid", "")]
        counts[key] = len(reps)
    if any(counts.values()):
        terminalreporter.write_line("conformance counts: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
