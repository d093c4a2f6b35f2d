"""bench/kernel_bandwidth.py end to end on tiny sizes: every row carries its copy fraction and its in-cache ceiling.

Figures are not asserted (the bench is printed, never a timed test); the test checks that the bench runs, that its
JSON rows are complete and self-consistent, and that the ceiling measurement leaves autofuse's thread count as it was.
"""
import importlib.util
import json
import math
import os

import pytest

torch = pytest.importorskip("torch")
from autofuse import _core  # noqa: E402

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "kernel_bandwidth.py")


def load_bench():
    spec = importlib.util.spec_from_file_location("kernel_bandwidth", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_rows_carry_copy_fraction_and_ceiling(tmp_path):
    kb = load_bench()
    threads = _core.get_num_threads()
    rc = kb.main(["--kernels", "add", "softmax", "--dtypes", "fp32", "bf16", "--traffic-mb", "1", "--reps", "2",
                  "--cache-reps", "3", "--no-compile-times", "--out", str(tmp_path)])
    assert rc == 0
    assert _core.get_num_threads() == threads
    (path,) = list(tmp_path.glob("kernel_bandwidth-*.json"))
    doc = json.loads(path.read_text())
    assert doc["cache_reps"] == 3
    assert [(r["kernel"], r["dtype"]) for r in doc["rows"]] == [
        ("add", "fp32"), ("softmax", "fp32"), ("add", "bf16"), ("softmax", "bf16")]
    for r in doc["rows"]:
        assert r["gbps"] > 0 and r["copy_gbps"] > 0
        assert len(r["kernel_all_s"]) == len(r["copy_all_s"]) == 2
        assert r["ceiling_gbps"] > 0
        if math.isfinite(r["ceiling_gbps"]):
            assert r["ceiling_frac_of_copy"] == pytest.approx(r["ceiling_gbps"] / r["copy_gbps"])
    add = doc["rows"][0]
    assert add["max_abs_err_vs_torch"] == 0.0


def test_ceiling_restores_the_thread_count_after_an_error():
    kb = load_bench()
    threads = _core.get_num_threads()

    class Broken:
        def output_sizes(self, ins):
            return [list(ins[0].shape)]

        def run(self, ins, outs):
            assert _core.get_num_threads() == 1  # measured on one thread
            raise RuntimeError("kernel failed")

    with pytest.raises(RuntimeError, match="kernel failed"):
        kb.cache_ceiling_gbps(Broken(), "add", "fp32", 12.0, threads, 3, torch)
    assert _core.get_num_threads() == threads
