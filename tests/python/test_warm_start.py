"""Warm starts that skip Dynamo's tracing (python/autofuse/warm_start.py), checked across new processes.

A small model (Linear -> GELU -> LayerNorm -> softmax, defined in a module file written to the test's directory so
that a test can change its code; its forward is decorated the way transformers decorates every model's forward)
is compiled with ``backend="autofuse"`` and ``AUTOFUSE_WARM_START=1`` in processes sharing one
TORCHINDUCTOR_CACHE_DIR and AUTOFUSE_CACHE_DIR. A cold process must store one package; a warm one must load it
(Dynamo's counter ``dynamo_cache_hit``), trace nothing (Dynamo's ``bytecode_tracing`` timer absent), compile no C++
and give bitwise the cold outputs (and gradients, for a training step). A changed input shape, dtype, grad mode,
model code or weight shape must not run the stale entry (the output must match eager's of the changed program), nor
may another class whose forward has the same decorator (torch's own key is the same for both); a corrupted entry
must be skipped with a warning and written again; AUTOFUSE_FORCE_DISABLE_CACHES=1 must neither load nor store;
another backend must neither be served our package nor have its own stored.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
import torch

from autofuse import backend
from child_snippets import RUN_STEP

pytestmark = pytest.mark.skipif(not backend.has_native_kernels(),
                                reason="needs the native kernel compiler (autofuse._core.Kernel)")

MODEL = '''
import functools

import torch


def returns_tensor(func):
    """A decorator like transformers' (can_return_tuple): every decorated forward shares the wrapper's code."""

    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        return func(self, *args, **kwargs)

    return wrapper


class Net(torch.nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.lin = torch.nn.Linear(features, hidden)
        self.norm = torch.nn.LayerNorm(hidden)

    @returns_tensor
    def forward(self, x):
        return torch.softmax(self.norm(torch.nn.functional.gelu(self.lin(x))) * 2.0, -1)


class Other(Net):
    @returns_tensor
    def forward(self, x):
        return torch.sigmoid(self.norm(self.lin(x)))
'''

CHILD = r'''
import json, sys, warnings
sys.path.insert(0, sys.argv[1])
import torch
import autofuse
from autofuse import backend, warm_start
from torch._dynamo.utils import compile_times, counters
import wsmodel

cfg = json.loads(sys.argv[2])
dtype = getattr(torch, cfg.get("dtype", "float32"))
torch.manual_seed(0)
model = getattr(wsmodel, cfg.get("cls", "Net"))(cfg.get("features", 16), cfg.get("hidden", 48)).to(dtype)
x = torch.randn(*cfg.get("shape", [4, 16]), dtype=dtype)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    compiled = torch.compile(model, backend=cfg.get("backend", "autofuse"))
    train = cfg.get("train")
''' + textwrap.indent(RUN_STEP, "    ") + r'''torch.save(result, cfg["out"])
heads, values = compile_times(repr="csv", aggregate=True)
times = dict(zip(heads, values))
print("RESULT " + json.dumps({
    "enabled": warm_start.enabled(),
    "stats": warm_start.stats(),
    "trace": float(times.get("bytecode_tracing", 0.0)),
    "cached": [r.cached for r in backend.RECORDS],
    "compiles": autofuse._core.cache_stats().compiles,
    "max_err": float((y.detach().double() - y_ref.detach().double()).abs().max()),
    "warnings": [str(w.message) for w in caught if "warm start" in str(w.message)],
}))
'''


def _write_model(tmp: pathlib.Path, source: str = MODEL) -> None:
    (tmp / "src").mkdir(exist_ok=True)
    (tmp / "src" / "wsmodel.py").write_text(source)


def _run(tmp: pathlib.Path, name: str, **cfg) -> dict:
    """Run CHILD in a new process (caches under ``tmp``, warm start on unless ``env`` says otherwise); returns its
    RESULT record plus the tensors it saved."""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp / "inductor"), AUTOFUSE_CACHE_DIR=str(tmp / "autofuse"),
               AUTOFUSE_AOT_CACHE="1", AUTOFUSE_WARM_START="1")
    for k in ("AUTOFUSE_FORCE_DISABLE_CACHES", "TORCHINDUCTOR_FORCE_DISABLE_CACHES", "TORCH_CACHING_PRECOMPILE"):
        env.pop(k, None)
    env.update(cfg.pop("env", {}))
    cfg["out"] = str(tmp / f"{name}.pt")
    r = subprocess.run([sys.executable, "-c", CHILD, str(tmp / "src"), json.dumps(cfg)], capture_output=True,
                       text=True, env=env, timeout=600)
    assert r.returncode == 0, f"{name}: exit {r.returncode}\n{r.stderr[-3000:]}"
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    res = json.loads(line[len("RESULT "):])
    res["tensors"] = torch.load(cfg["out"])
    return res


def _store(tmp: pathlib.Path) -> pathlib.Path:
    return tmp / "inductor" / "autofuse-dynamo"


def _assert_traced_and_right(res: dict, tol: float = 1e-5) -> None:
    """The process traced the frame afresh (no stale package ran) and its output matches eager's."""
    assert res["trace"] > 0, res
    assert res["stats"].get("dynamo_cache_hit", 0) == 0 or res["trace"] > 0
    assert res["max_err"] <= tol, res


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    """One cold process (inference) whose caches the warm cases copy."""
    tmp = tmp_path_factory.mktemp("warm_start")
    _write_model(tmp)
    return tmp, _run(tmp, "cold")


def _copy(cold_dir: pathlib.Path, tmp: pathlib.Path) -> pathlib.Path:
    import shutil

    for sub in ("inductor", "autofuse", "src"):
        shutil.copytree(cold_dir / sub, tmp / sub)
    return tmp


def test_cold_process_stores_one_package(cold):
    tmp, res = cold
    assert res["enabled"] and res["stats"]["saved"] >= 1 and res["stats"].get("dynamo_cache_miss") == 1, res
    assert res["trace"] > 0 and res["max_err"] <= 1e-5
    assert len(list(_store(tmp).glob("*/entry"))) == 1


def test_warm_process_skips_tracing_with_equal_outputs(cold, tmp_path):
    tmp = _copy(cold[0], tmp_path)
    warm = _run(tmp, "warm")
    assert warm["stats"].get("dynamo_cache_hit") == 1, warm
    assert warm["trace"] == 0, "Dynamo traced the frame although its package was stored"
    assert warm["cached"] == [True] and warm["compiles"] == 0, warm
    assert torch.equal(warm["tensors"]["y"], cold[1]["tensors"]["y"])


@pytest.mark.parametrize("name,cfg", [("shape", {"shape": [6, 16]}), ("dtype", {"dtype": "float64"}),
                                      ("weights", {"hidden": 40}), ("grad_mode", {"train": True})])
def test_changed_input_or_model_is_traced_again(cold, tmp_path, name, cfg):
    tmp = _copy(cold[0], tmp_path)
    res = _run(tmp, name, **cfg)
    _assert_traced_and_right(res)


def test_changed_model_code_is_traced_again(cold, tmp_path):
    tmp = _copy(cold[0], tmp_path)
    _write_model(tmp, MODEL.replace("* 2.0", "* 3.0"))  # same lines, other code
    res = _run(tmp, "code")
    _assert_traced_and_right(res)
    assert not torch.equal(res["tensors"]["y"], cold[1]["tensors"]["y"])


def test_corrupted_package_is_skipped_and_rewritten(cold, tmp_path):
    tmp = _copy(cold[0], tmp_path)
    (entry,) = _store(tmp).glob("*/entry")
    entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])
    res = _run(tmp, "corrupt")
    assert any("unreadable" in w for w in res["warnings"]), res["warnings"]
    _assert_traced_and_right(res)
    assert torch.equal(res["tensors"]["y"], cold[1]["tensors"]["y"])
    again = _run(tmp, "after_corrupt")
    assert again["stats"].get("dynamo_cache_hit") == 1 and again["trace"] == 0, again
    assert torch.equal(again["tensors"]["y"], cold[1]["tensors"]["y"])


def test_force_disable_caches_bypasses(cold, tmp_path):
    tmp = _copy(cold[0], tmp_path)
    before = sorted(p.name for p in _store(tmp).iterdir())
    res = _run(tmp, "disabled", env={"AUTOFUSE_FORCE_DISABLE_CACHES": "1"})
    assert not res["enabled"] and res["stats"]["saved"] == 0, res
    _assert_traced_and_right(res)
    assert sorted(p.name for p in _store(tmp).iterdir()) == before


def test_other_backend_is_neither_served_nor_stored(cold, tmp_path):
    tmp = _copy(cold[0], tmp_path)
    before = sorted(p.name for p in _store(tmp).iterdir())
    res = _run(tmp, "aot_eager", backend="aot_eager")
    assert res["stats"].get("dynamo_cache_hit", 0) == 0 and res["stats"]["rejected"] >= 1, res
    _assert_traced_and_right(res)
    assert sorted(p.name for p in _store(tmp).iterdir()) == before


def test_training_step_warm_equals_cold(tmp_path):
    _write_model(tmp_path)
    c = _run(tmp_path, "train_cold", train=True)
    w = _run(tmp_path, "train_warm", train=True)
    assert w["stats"].get("dynamo_cache_hit") == 1 and w["trace"] == 0, w
    assert set(c["tensors"]) == set(w["tensors"]) and len(c["tensors"]) == 5
    for k, v in c["tensors"].items():
        assert torch.equal(v, w["tensors"][k]), k


def test_package_key_tells_decorated_functions_apart():
    import functools

    from autofuse.warm_start import package_key

    def deco(func):
        @functools.wraps(func)
        def wrapper(*args):
            return func(*args)

        return wrapper

    def f(x):
        return x + 1

    def g(x):
        return x + 2

    wf, wg = deco(f), deco(g)
    assert wf.__code__ is wg.__code__  # torch's own key (name, first line) is the same for both
    assert package_key(f) == package_key(f) and package_key(f) != package_key(g)
    assert package_key(wf) != package_key(wg)


def test_same_decorator_other_class_is_not_served(cold, tmp_path):
    tmp = _copy(cold[0], tmp_path)
    res = _run(tmp, "other", cls="Other")
    assert res["stats"].get("dynamo_cache_hit", 0) == 0, res
    _assert_traced_and_right(res)


def _decorate(func):
    import functools

    @functools.wraps(func)
    def wrapper(*args):
        return func(*args)

    return wrapper


@_decorate
def decorated(x):
    return x + 1


def test_guard_pickler_stores_decorated_function_by_reference():
    from autofuse.warm_start import _guarded_pickler, resolve_wrapped

    fallback = []
    reduce = _guarded_pickler(lambda self, obj: fallback.append(obj) or NotImplemented)
    inner = decorated.__wrapped__
    fn, args = reduce(None, inner)
    assert fn is resolve_wrapped and args == (__name__, "decorated", 1)
    assert resolve_wrapped(*args) is inner
    assert reduce(None, _decorate) is NotImplemented and fallback == [_decorate]  # resolvable: torch's reducer


def test_package_key_follows_globals_and_closures_chosen_by_configuration():
    """Dynamo's identity guards on globals and closure cells are dropped under caching precompile, so the key must
    tell apart a function whose global name or closure cell is bound to another function at start-up."""
    from autofuse.warm_start import package_key

    src = "def act_gelu(y):\n    return torch.nn.functional.gelu(y)\n" \
          "def act_relu(y):\n    return torch.relu(y)\n" \
          "def f(x):\n    return ACT(x) * 2\n"
    keys = []
    for choice in ("act_gelu", "act_relu", "act_gelu"):
        scope = {"torch": torch}
        exec(src, scope)  # noqa: S102 - a module body of the test's own
        scope["ACT"] = scope[choice]
        keys.append(package_key(scope["f"]))
    assert keys[0] == keys[2] and keys[0] != keys[1]

    def make(act):
        def f(x):
            return act(x) * 2

        return f

    assert package_key(make(torch.relu)) != package_key(make(torch.tanh))
    assert package_key(make(torch.relu)) == package_key(make(torch.relu))


CONFIG_CHILD = r'''
import json, sys, torch, autofuse
autofuse.enable_warm_start()
def act_gelu(y): return torch.nn.functional.gelu(y)
def act_relu(y): return torch.relu(y)
ACT = {"gelu": act_gelu, "relu": act_relu}[sys.argv[1]]
def f(x): return ACT(x) * 2
x = torch.linspace(-3, 3, 8)
got = torch.compile(f, backend="autofuse")(x)
print(json.dumps({"err": (got - f(x)).abs().max().item(), "stats": autofuse.warm_start.stats()}))
'''


def test_global_chosen_by_configuration_is_not_served_a_stale_package(tmp_path):
    """A new process whose global ``ACT`` is bound to another function than the stored package's must trace afresh
    (found by the session-4 review: it silently ran the stored GELU graph for ReLU)."""
    script = tmp_path / "config_child.py"
    script.write_text(CONFIG_CHILD)
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "ti"), AUTOFUSE_CACHE_DIR=str(tmp_path / "af"),
               AUTOFUSE_AOT_CACHE="1")
    for k in ("AUTOFUSE_FORCE_DISABLE_CACHES", "TORCHINDUCTOR_FORCE_DISABLE_CACHES", "TORCH_CACHING_PRECOMPILE"):
        env.pop(k, None)
    runs = []
    for choice in ("gelu", "relu", "relu"):
        out = subprocess.run([sys.executable, str(script), choice], env=env, capture_output=True, text=True,
                             timeout=600, check=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    assert all(r["err"] < 1e-5 for r in runs), runs
    assert runs[0]["stats"]["saved"] == 1, runs
    assert runs[1]["stats"].get("dynamo_cache_hit", 0) == 0, runs  # relu: not gelu's package
    assert runs[2]["stats"].get("dynamo_cache_hit", 0) == 1, runs  # relu again: its own package


MODEL_LOCAL_CLASS = '''
import torch


def _make():
    class Func:  # a class defined inside a function, as transformers 5.25's LLaMA rotary embedding
        def __call__(self, y):
            return torch.sin(y) * 2.0

    return Func()


class Net(torch.nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.lin = torch.nn.Linear(features, hidden)
        self.f = _make()

    def forward(self, x):
        return torch.softmax(self.f(self.lin(x)), -1)
'''


def test_object_of_a_local_class_is_compiled_without_a_package(tmp_path):
    """Review, session 28: a type guard on an object whose class is local to a function cannot be stored; torch 2.13
    raised a TypeError out of guard building and the first call died (InternalTorchDynamoError; transformers 5.25's
    LLaMA). The frame now runs without a package, and a second process traces it again, equal to eager both times."""
    _write_model(tmp_path, MODEL_LOCAL_CLASS)
    first = _run(tmp_path, "first")
    _assert_traced_and_right(first)
    second = _run(tmp_path, "second")
    _assert_traced_and_right(second)
