"""Debug dumps of what the backend compiled.

Switched on by ``AUTOFUSE_DEBUG_DIR=DIR``, or by the original Autofuse's form
``AUTOFUSE_DFX_FLAGS="--codegen_compile_debug=true;--debug_dir=DIR"``: there codegen_compile_debug=true is the switch
and debug_dir only says where (./autofuse_debug when absent); ``--codegen_compile_debug=false`` or a debug_dir alone
dumps nothing (the latter warns once), and so keeps the AOTAutograd cache on (aot_cache.enabled). With ``TORCH_COMPILE_DEBUG=1`` the same folders are also written under torch's
debug directory (``torch_compile_debug/run_.../autofuse/``).

Layout, per FX graph ``<graph>``::

    DIR/<graph>/summary.txt            lowered ATen ops, fallbacks with reasons, steps, the generated program
    DIR/<graph>/lowered.txt            the whole lowered IR (externs included)
    DIR/<graph>/autofused_<ops>_<hash>/   one folder per kernel:
        kernel.af      the kernel's IR (Autofuse IR text)
        graph.dot/svg  a picture of the fused subgraph (svg rendered by graphviz `dot` when installed)
        source.cpp     the generated C++ source (kernels compiled natively)
        tiling.txt     the tiling decisions the kernel reports
        repro.af + repro.sh   a standalone reproducer: `autofuse run repro.af --shape s0=N ...`
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import warnings
from typing import List, Optional

from .env import dfx_debug_on, dfx_flags
from .lowering import DTYPE_TO_IR
from .native import group_ir_text


def debug_dirs() -> List[str]:
    """Directories to dump into (possibly none), from the environment."""
    dirs = []
    d = os.environ.get("AUTOFUSE_DEBUG_DIR")
    if d:
        dirs.append(d)
    opts = dfx_flags()  # bad parts, and a debug_dir alone, warn once (env.py)
    if dfx_debug_on(opts):  # the switch; debug_dir only says where (the original Autofuse's semantics)
        dirs.append(opts.get("debug_dir") or "autofuse_debug")
    if os.environ.get("TORCH_COMPILE_DEBUG", "") not in ("", "0"):
        try:
            from torch._dynamo.utils import get_debug_dir

            dirs.append(os.path.join(get_debug_dir(), "autofuse"))
        except Exception:
            dirs.append(os.path.join("torch_compile_debug", "autofuse"))
    return list(dict.fromkeys(dirs))


def kernel_folder_name(ops: List[str], ir_text: str) -> str:
    """``autofused_<first ops>_<hash>``: the original's naming of per-kernel debug folders."""
    uniq = list(dict.fromkeys(o for o in ops if o not in ("constant",)))
    h = hashlib.sha256(ir_text.encode()).hexdigest()[:10]
    return "autofused_" + "_".join(uniq[:4]) + "_" + h


def _cli_path() -> str:
    """The autofuse CLI for reproducers: on PATH, else the checkout's build/release/autofuse (make build), else the
    bare name."""
    found = shutil.which("autofuse")
    if found:
        return found
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cand = os.path.join(root, "build", "release", "autofuse")
    return cand if os.access(cand, os.X_OK) else "autofuse"


def _dot(record, step) -> str:
    lg = record.lowered
    lines = ["digraph kernel {", "  rankdir=TB; node [shape=box, fontname=monospace];"]
    inside = set(step.nodes)
    for i in step.inputs:
        n = lg.nodes[i]
        lines.append(f'  n{i} [label="{n.name}: {DTYPE_TO_IR[n.dtype]} (input)", style=dashed];')
    for i in step.nodes:
        n = lg.nodes[i]
        style = ", style=filled, fillcolor=lightblue" if i in step.outputs else ""
        lines.append(f'  n{i} [label="{n.name} = {n.op}: {DTYPE_TO_IR[n.dtype]}"{style}];')
        for j in n.inputs:
            if j in inside or j in step.inputs:
                lines.append(f"  n{j} -> n{i};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _ir_symbols(ir: str, graph_symbols) -> Optional[set]:
    """The size symbols of a kernel's IR text, read as ``autofuse run`` reads it (a kernel's IR: its output sizes and
    the symbols --shape gives may be bound nowhere else), or None when it cannot be parsed here (no native module)."""
    try:
        from . import _core as core  # type: ignore

        return set(core.parse(ir, "kernel.af", output_shapes_bind=True, given_symbols=list(graph_symbols)).symbols)
    except Exception:  # noqa: BLE001 - a debug aid: the caller then passes the graph's symbols
        return None


def _example_bindings(record, ir: str) -> str:
    """``--shape SYM=N`` for the symbols of the kernel IR ``ir`` the graph's example call bound (``autofuse run``
    rejects a symbol its file does not have: a kernel of a dynamic graph uses only some of the graph's symbols)."""
    vals = record.example_bindings
    if not vals:
        return ""
    graph_symbols = record.lowered.sym_sources
    own = _ir_symbols(ir, graph_symbols)
    keep = own if own is not None else graph_symbols
    return " ".join(f"--shape {k}={v}" for k, v in vals.items() if k in keep)


def dump_record(record, root: str) -> str:
    """Write the debug folders of one compiled graph under ``root``; returns the graph's folder."""
    lg = record.lowered
    gdir = os.path.join(root, record.name)
    os.makedirs(gdir, exist_ok=True)
    summary = [f"graph {record.name} ({record.kind}), mode {record.mode}, "
               f"compile {record.compile_seconds * 1e3:.1f} ms"]
    if record.reason:
        summary.append(f"reason: {record.reason}")
    if lg is not None:
        summary.append("lowered ATen ops:")
        summary += [f"  {op} x{n}" for op, n in sorted(lg.lowered_ops.items())]
        summary.append("fallbacks:")
        summary += [f"  Fallback {op}: {reason}" for op, reason in lg.fallbacks] or ["  (none)"]
        summary.append("steps:")
        summary += [f"  {s.kind} {s.name}: {len(s.nodes)} node(s)" for s in record.steps]
        _write(os.path.join(gdir, "lowered.txt"), lg.ir_text() + "\n")
    if record.fusion_report:
        summary += ["fusion report:", record.fusion_report]
    summary += ["program:", record.program_source]
    _write(os.path.join(gdir, "summary.txt"), "\n".join(summary) + "\n")
    if lg is None:
        return gdir
    for s in record.kernels:
        ir = s.info.get("ir") or group_ir_text(lg, s) or "\n".join(lg.ir_text().splitlines()[i] for i in s.nodes)
        shape_args = _example_bindings(record, ir)
        ops = [lg.nodes[i].op for i in s.nodes]
        kdir = os.path.join(gdir, kernel_folder_name(ops, ir))
        os.makedirs(kdir, exist_ok=True)
        _write(os.path.join(kdir, "kernel.af"), ir + "\n")
        _write(os.path.join(kdir, "repro.af"), ir + "\n")
        _write(os.path.join(kdir, "repro.sh"), f"#!/bin/sh\n# replays this kernel on random inputs against the "
               f"interpreter (AUTOFUSE_CLI overrides the autofuse CLI found when the dump was written)\n"
               f"\"${{AUTOFUSE_CLI:-{_cli_path()}}}\" run \"$(dirname \"$0\")/repro.af\" {shape_args}\n")
        src = s.info.get("source")
        if src:
            _write(os.path.join(kdir, "source.cpp"), src)
        _write(os.path.join(kdir, "tiling.txt"), s.info.get("tiling", "tiling: chosen at launch from the actual "
                                                               "sizes (no static decision recorded)\n"))
        dot = _dot(record, s)
        _write(os.path.join(kdir, "graph.dot"), dot)
        if shutil.which("dot"):
            subprocess.run(["dot", "-Tsvg", "-o", os.path.join(kdir, "graph.svg"), os.path.join(kdir, "graph.dot")],
                           check=False, capture_output=True, timeout=30)
    return gdir


def _origin(root: str) -> str:
    """The environment variable a debug directory of debug_dirs() came from, for messages."""
    if root == os.environ.get("AUTOFUSE_DEBUG_DIR"):
        return "AUTOFUSE_DEBUG_DIR"
    if os.environ.get("AUTOFUSE_DFX_FLAGS"):
        return "AUTOFUSE_DFX_FLAGS"
    return "TORCH_COMPILE_DEBUG"


def maybe_dump(record) -> None:
    """Dump ``record`` into every configured debug directory (no-op when none is configured). A directory that
    cannot be written (a path under a regular file, no permission, a full disk) gives a warning, not an error."""
    for root in debug_dirs():
        try:
            dump_record(record, root)
        except OSError as e:  # a debug aid must not change what runs: the compiled graph is kept
            warnings.warn(f"autofuse: could not write the debug dump of {record.name} into {root!r} "
                          f"(from {_origin(root)}; {type(e).__name__}: {e}); the compiled graph runs as usual")
