"""What the backend says when a whole graph falls back to eager, and what it does with torch.compile's ``options`` and
``mode`` (review 16a F6, F7)."""
import logging
import warnings

import pytest
import torch

import autofuse
from autofuse import _core, backend


def _fallback_warnings(fn, *args):
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.compile(fn, backend="autofuse")(*args)
    torch.testing.assert_close(got, fn(*args))
    torch._dynamo.reset()
    return [str(w.message) for w in caught if "autofuse:" in str(w.message)]


def _f(x):
    return torch.tanh(x) * 2 + 1


@pytest.mark.parametrize("stage, error, expect", [
    ("plan", lambda: _core.VerifyError("%v1 = add: size symbol s9 is not bound"),
     "autofuse: tracing to ATen succeeded, but the graph could not be lowered to the Autofuse IR "
     "(VerifyError: %v1 = add: size symbol s9 is not bound)"),
    ("plan", lambda: autofuse.CompileError("c++ failed"),
     "autofuse: the graph's kernels could not be compiled (CompileError: c++ failed)"),
    ("program", lambda: RuntimeError("no program"),
     "autofuse: the graph's runner program could not be built (RuntimeError: no program)"),
])
def test_fallback_message_names_the_failed_stage_once(monkeypatch, caplog, stage, error, expect):
    """F6: failures of our own lowering, fusion or kernels were reported as "the graph could not be traced to ATen"
    (tracing had succeeded), once by warnings.warn and again by a WARNING on the "autofuse" logger (stderr through
    logging's last-resort handler)."""
    monkeypatch.delenv("AUTOFUSE_STRICT", raising=False)

    def fail(*a, **k):
        raise error()

    monkeypatch.setattr(backend, "plan" if stage == "plan" else "build_program", fail)
    with caplog.at_level(logging.WARNING, logger="autofuse"):
        msgs = _fallback_warnings(_f, torch.randn(4, 8))
    assert msgs == [expect + "; it runs eagerly (AUTOFUSE_STRICT=1 raises instead)"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "runs eagerly" in r.getMessage()]


def test_tracing_failure_still_says_tracing(monkeypatch):
    """An exception from AOTAutograd itself (here: its call) keeps the tracing message."""
    monkeypatch.delenv("AUTOFUSE_STRICT", raising=False)
    import torch._dynamo.backends.common as common

    def broken(**kw):
        def compiler(gm, example_inputs):
            raise ValueError("trace failed")

        return compiler

    monkeypatch.setattr(common, "aot_autograd", broken)
    msgs = _fallback_warnings(_f, torch.randn(4, 8))
    assert msgs == ["autofuse: the graph could not be traced to ATen (ValueError: trace failed); it runs eagerly "
                    "(AUTOFUSE_STRICT=1 raises instead)"]


@pytest.mark.parametrize("kwargs, named", [
    ({"options": {"strict": True, "bogus_option": 1}}, "options bogus_option, strict (Autofuse takes none)"),
    ({"mode": "max-autotune"}, "mode='max-autotune' (an Inductor mode; Autofuse has none)"),
])
def test_compile_options_and_mode_are_rejected(kwargs, named):
    """F7: torch.compile(backend="autofuse", options=..., mode=...) ignored both silently; Inductor raises for an
    unknown option. Autofuse documents none, so any one raises, naming it (at the first call: Dynamo hands them to
    the backend then; it wraps the error in BackendCompilerFailed)."""
    torch._dynamo.reset()
    c = torch.compile(_f, backend="autofuse", **kwargs)
    with pytest.raises(Exception, match="autofuse: unexpected torch.compile ") as err:
        c(torch.randn(4, 4))
    assert named in str(err.value) and "AUTOFUSE_" in str(err.value)
    torch._dynamo.reset()


@pytest.mark.parametrize("kwargs", [{"mode": "default"}, {"options": {}}])
def test_default_mode_and_empty_options_compile(kwargs):
    torch._dynamo.reset()
    n0 = len(backend.RECORDS)
    x = torch.randn(4, 4)
    got = torch.compile(_f, backend="autofuse", **kwargs)(x)
    torch.testing.assert_close(got, _f(x))
    assert len(backend.RECORDS) > n0
    torch._dynamo.reset()
