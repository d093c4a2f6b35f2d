"""Large fresh buffers of the generated program advised as transparent huge pages (runtime/huge_pages.h,
program.py ``_huge_lines``): a graph output of at least 32 MiB gets ``HP(ptr, nbytes)`` right after its allocation, so
the kernel's first writes map 2 MiB pages. Checked through /proc/self/smaps (the mapping holding the output carries
the ``hg`` VmFlag and, once written, AnonHugePages), the program text, and eager's values."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import torch

import autofuse
from autofuse import _core, backend
from program_util import compile_recording

needs_native = pytest.mark.skipif(not backend.has_native_kernels(), reason="needs the native kernel bindings (_core)")
MIN = _core.huge_page_min_bytes()


def _thp_mode() -> str:
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            m = re.search(r"\[(\w+)\]", f.read())
    except OSError:
        return ""
    return m.group(1) if m else ""


needs_thp = pytest.mark.skipif(_thp_mode() not in ("always", "madvise") or os.environ.get("AUTOFUSE_HUGE_PAGES") == "0",
                               reason="transparent huge pages are off on this machine (or AUTOFUSE_HUGE_PAGES=0)")


def _vm_flags(ptr: int) -> str:
    """The VmFlags line of the mapping of this process that holds address ``ptr`` ('' if none)."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", line)
            if m:
                inside = int(m.group(1), 16) <= ptr < int(m.group(2), 16)
            elif inside and line.startswith("VmFlags:"):
                return line.split(":", 1)[1]
    return ""


def test_min_bytes_is_glibc_mmap_threshold_max():
    assert MIN == 32 << 20


def test_advise_returns_aligned_interior():
    buf = torch.empty(12 << 20, dtype=torch.uint8)
    p = buf.data_ptr()
    got = _core.advise_huge_pages(p, buf.numel())
    if _thp_mode() in ("always", "madvise") and os.environ.get("AUTOFUSE_HUGE_PAGES") != "0":
        first = (p + (2 << 20) - 1) // (2 << 20) * (2 << 20)
        last = (p + buf.numel()) // (2 << 20) * (2 << 20)
        assert got == last - first and got >= 8 << 20
    else:
        assert got == 0
    assert _core.advise_huge_pages(0, 1 << 30) == 0  # null
    assert _core.advise_huge_pages(p, 4096) == 0  # no whole aligned huge page
    assert _core.advise_huge_pages(p, -5) == 0


@needs_native
@needs_thp
def test_large_output_is_on_huge_pages_and_correct():
    n = (40 << 20) // 4
    x = torch.randn(n)
    fn = lambda t: torch.sigmoid(t) * 3 - 1  # noqa: E731
    c, records = compile_recording(fn)
    out = c(x)
    src = "".join(r.program_source for r in records())
    assert "HP(" in src and str(n * 4) in src
    assert "hg" in _vm_flags(out.data_ptr() + (n * 4) // 2).split()
    torch.testing.assert_close(out, fn(x), rtol=1e-6, atol=1e-6)
    x2 = torch.randn(n)
    torch.testing.assert_close(c(x2), fn(x2), rtol=1e-6, atol=1e-6)  # a second call, another fresh output


@needs_native
def test_small_output_gets_no_advice():
    fn = lambda t: t * 2 + 1  # noqa: E731
    c, records = compile_recording(fn)
    x = torch.randn(1000, 1000)  # 4 MB
    torch.testing.assert_close(c(x), fn(x))
    assert "HP(" not in "".join(r.program_source for r in records())


@needs_native
@needs_thp
def test_dynamic_shape_tests_its_size_per_call():
    fn = lambda t: t.exp() + t  # noqa: E731
    c, records = compile_recording(fn, dynamic=True)
    small = torch.randn(3, 1000)
    torch.testing.assert_close(c(small), fn(small))
    big = torch.randn((48 << 20) // 4000, 1000)
    out = c(big)
    torch.testing.assert_close(out, fn(big))
    src = "".join(r.program_source for r in records())
    assert re.search(r"if .* >= %d: HP\(" % MIN, src), src
    assert "hg" in _vm_flags(out.data_ptr() + out.numel() * 2).split()


@needs_native
@needs_thp
def test_switched_off_by_environment(tmp_path):
    code = (
        "import re, torch, autofuse\n"
        "from test_program_huge_pages import _vm_flags\n"
        "x = torch.randn((40 << 20) // 4)\n"
        "c = torch.compile(lambda t: t * 2 + 1, backend='autofuse')\n"
        "out = c(x)\n"
        "torch.testing.assert_close(out, x * 2 + 1)\n"
        "print('FLAGS', 'hg' in _vm_flags(out.data_ptr() + (20 << 20)).split())\n"
    )
    path = [os.path.dirname(__file__), os.path.dirname(os.path.dirname(autofuse.__file__))]
    env = dict(os.environ, AUTOFUSE_HUGE_PAGES="0", AUTOFUSE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join(path))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "FLAGS False" in r.stdout, r.stdout + r.stderr
