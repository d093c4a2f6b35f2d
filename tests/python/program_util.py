"""Shared by the generated-program tests: compile a function with the autofuse backend and read back the programs
(backend.RECORDS entries with generated source) that this compile produced."""

from __future__ import annotations

import torch

from autofuse import backend


def compile_recording(fn, dynamic=False):
    """(compiled fn, records()): records() lists the backend's GraphRecords with a program made since this call."""
    torch._dynamo.reset()
    start = len(backend.RECORDS)
    c = torch.compile(fn, backend="autofuse", dynamic=dynamic)
    return c, lambda: [r for r in backend.RECORDS[start:] if r.program_source]
