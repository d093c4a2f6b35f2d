"""Argument types shared by the package's command lines (``python -m autofuse.demo``, ``autofuse.bench``, ...)."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """argparse ``type=`` for a count (rounds, layers, threads, batch, sequence length): an integer >= 1. Anything else
    is a usage error naming the value (``--reps 0`` used to run no rounds and fail later, or silently measure
    nothing)."""
    try:
        n = int(text, 10)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return n
