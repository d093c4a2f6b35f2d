"""The demo's acceptance summary (python/autofuse/demo.py): a compile-time probe that crashed fails the demo."""

import math

import pytest

from autofuse import demo


def _result(**probes):
    good = {"model": "llama", "fp32_rel": 1e-7, "bf16_af_err": 1e-3, "bf16_eager_err": 1e-3, "grad_rel": 1e-7}
    return {**good, **probes}


def test_crashed_probe_fails_the_demo(capsys):
    """Review, session 28: the warm start's probe crashed on transformers 5.25's LLaMA; the summary printed its nan
    figures under a benchmark FAIL and the demo passed (exit 0). A crash is now a failing criterion."""
    crashed = {"first": math.nan, "backend": math.nan, "cxx": math.nan, "compiles": math.nan, "failed": 1.0}
    assert demo.summary([_result(autofuse_warm=crashed)], None, inductor=False) is False
    out = capsys.readouterr().out
    assert "FAIL  llama compile-time probes ran without an error (failed: autofuse_warm)" in out


def test_clean_probes_pass(capsys):
    fine = {"first": 1.0, "backend": 0.5, "cxx": 0.3, "compiles": 4.0, "err": 3e-7}
    assert demo.summary([_result(autofuse_warm=fine)], None, inductor=False) is True
    out = capsys.readouterr().out
    assert "PASS  llama compile-time probes ran without an error\n" in out
    assert "PASS  llama compile-time probes' logits within 0.0001 relative of eager (3.00e-07)" in out


@pytest.mark.parametrize("err", [0.9, math.nan])
def test_probe_with_wrong_logits_fails_the_demo(err, capsys):
    """Review, session 28: summary() never read a probe's error against eager, so a warm start that ran a stale
    package (wrong logits) passed."""
    wrong = {"first": 1.0, "backend": 0.5, "cxx": 0.3, "compiles": 4.0, "pkg_hit": 1.0, "err": err}
    assert demo.summary([_result(autofuse_warm=wrong)], None, inductor=False) is False
    assert "FAIL  llama compile-time probes' logits within 0.0001 relative of eager" in capsys.readouterr().out
