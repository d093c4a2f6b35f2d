"""Warm starts that skip Dynamo's tracing too: torch 2.13's "caching precompile" with entries kept apart for Autofuse.

A new process with populated caches normally still pays Dynamo's bytecode tracing of the model (for the demo's
models about a third of Inductor's warm first call), because Dynamo keeps nothing on disk. torch 2.13 can: with
``torch._dynamo.config.caching_precompile`` each compiled frame is recorded as a ``CompilePackage`` (the frame's
original and transformed bytecode, its serialized guards, the ids of the compiled graphs it calls), the compiled
graphs as ``BundledAOTAutogradCacheArtifact`` (AOTAutograd's bundled cache entry, which for this backend holds our
``AutofuseOutputCode``, see aot_cache.py), and ``torch.compile(model)`` of a later process loads the package and
installs it instead of tracing (torch/_dynamo/eval_frame.py, ``_optimize_catch_errors.__call__``).

Found by experiment (tests/python/test_warm_start.py keeps each finding true): this works for this backend as it is,
outputs bitwise equal to the cold process's; but torch's own store has three problems that ``enable_warm_start``
fixes by installing its own store (``AutofuseDynamoCache``) in place of torch's ``DynamoCache``:

- torch writes the packages only when the user calls ``torch.compiler.save_cache_artifacts()``; ours writes each
  package when Dynamo records it (after every compiled frame), so no call is needed.
- torch keys a package by the function's qualified name and first line only (``CompilePackage.source_id_from_fn``),
  not by the backend: with a shared cache directory ``backend="autofuse"`` silently runs an Inductor package and vice
  versa (measured). Ours lives in its own directory (``<torch cache dir>/autofuse-dynamo``), adds to the key
  a hash of the function's bytecode and Autofuse's ``aot_cache.version_tag()``, stores only packages whose compiled
  graphs are all Autofuse's, refuses to load any other, and looks up only for ``torch.compile(backend="autofuse")``
  (the calling Dynamo context's backend: torch's ``load(fn)`` is not told it, so ``_calling_backend`` finds it).
- a corrupted or foreign entry is skipped with a warning (torch's load already does this for unreadable files); the
  frame is traced afresh and the entry written again.

Guards: under caching precompile Dynamo drops ID_MATCH, CLOSURE_MATCH, WEAKREF_ALIVE and DICT_VERSION guards
(torch/_dynamo/guards.py), since object ids do not survive a process. Tensor guards (shapes, strides, dtypes,
requires_grad of inputs and parameters), grad mode and the other global state stay, and Dynamo itself checks the
source of every inlined function (a change raises "Source code changes detected" and the frame is traced afresh).
The package key (package_key) stands in for the identity guards at ``torch.compile`` time: the functions and
classes the compiled function's closure cells and global names hold are part of it, by code hash or qualified name
(a global chosen by configuration at start-up selects its own package). What is no longer guarded: an object
swapped after ``torch.compile`` (or reached through an attribute chain, ``module.fn``), and the version of dicts
Dynamo read. That is why this is not on
by default: ``caching_precompile`` is process-wide (it also changes what Inductor and every other backend do), and it
trades those guards for the start-up time.

Off (``enable_warm_start`` does nothing and returns False) when ``AUTOFUSE_FORCE_DISABLE_CACHES=1`` or when
Autofuse's AOTAutograd cache is off (``aot_cache.enabled()``), since the compiled graphs are stored through it.
Switch on with ``autofuse.enable_warm_start()`` before ``torch.compile``, or ``AUTOFUSE_WARM_START=1`` in the
environment (read when autofuse is imported).
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import re
import types
import warnings
from typing import Any, Callable, Iterator, Optional

import torch

log = logging.getLogger("autofuse")

#: Directory name under torch's cache directory (``TORCHINDUCTOR_CACHE_DIR``) that holds our packages.
STORE_DIR = "autofuse-dynamo"
#: File written next to a package's ``entry`` when installing it failed: neither loaded nor stored again.
UNLOADABLE = "unloadable"

_STATE = {"enabled": False, "saved": 0, "rejected": 0}


def _without_filename(code: Any) -> Any:
    """``code`` (a SerializedCode) with ``co_filename`` cleared, in nested code objects too."""
    import dataclasses

    consts = tuple(_without_filename(c) if type(c) is type(code) else c for c in code.co_consts)
    return dataclasses.replace(code, co_filename="", co_consts=consts)


def _code_hash(code: Any) -> str:
    """SHA-256 (16 hex digits) of a ``SerializedCode`` (torch/_dynamo/package.py): bytecode, constants (nested code
    objects included), names and line numbers of the function Dynamo compiled; not its file's path, so that a
    project moved or copied elsewhere keeps its entries."""
    return hashlib.sha256(pickle.dumps(_without_filename(code), protocol=4)).hexdigest()[:16]


def _qualified(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"


def _function_parts(fn: Any, depth: int) -> Iterator[str]:
    """What identifies a function beyond torch's source id: its bytecode's hash, the class of the object a bound
    method belongs to, and (``depth`` levels deep) the name and bytecode of each function its closure holds. The
    demo's three Hugging Face models share one ``forward`` code object, a decorator's ``wrapper`` whose closure
    holds the model's own forward: torch's source id (name and first line) is the same for all three."""
    from torch._dynamo.package import SerializedCode

    owner = getattr(fn, "__self__", None)
    if owner is not None:
        yield "self=" + _qualified(type(owner))
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        yield "callable=" + _qualified(type(fn))
        return
    yield _qualified(fn) + "=" + _code_hash(SerializedCode.from_code_object(code))
    if depth > 0:
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            yield from _value_parts("closure", value, depth)
        # the functions and classes the code reaches by global name: Dynamo's identity guards on them (ID_MATCH,
        # CLOSURE_MATCH) are dropped under caching precompile, so a global chosen by configuration at start-up
        # (ACT = {"gelu": ..., "relu": ...}[name]) must change the key instead
        scope = getattr(fn, "__globals__", {})
        for name in sorted(set(_global_names(code))):
            if name in scope:
                yield from _value_parts("G." + name, scope[name], depth)


def _global_names(code: Any) -> Iterator[str]:
    """The global (and attribute) names a code object and its nested code objects use."""
    yield from code.co_names
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _global_names(c)


def _value_parts(label: str, value: Any, depth: int) -> Iterator[str]:
    """What identifies a closure cell's or a global's value for the key: a Python function by its own parts
    (recursively, ``depth - 1``), another callable with a qualified name (a builtin function, a class) by that name;
    other values (modules, tensors, numbers: Dynamo keeps guards on those that survive a process) add nothing."""
    if isinstance(value, types.FunctionType):
        yield label + "[" + ",".join(_function_parts(value, depth - 1)) + "]"
    elif callable(value) and hasattr(value, "__qualname__"):
        yield label + "=" + _qualified(value)


def package_key(fn: Any) -> str:
    """The directory name of the package for ``fn`` (what ``torch.compile`` wraps: a function, or a module's bound
    ``forward``): torch's source id (a hash of the innermost function's qualified name and first line), the parts
    of _function_parts, and Autofuse's version tag (sources, native extension, code-generation environment)."""
    from torch._dynamo.eval_frame import innermost_fn
    from torch._dynamo.package import CompilePackage

    from .aot_cache import version_tag

    inner = innermost_fn(fn)
    parts = [CompilePackage.source_id_from_fn(inner), *_function_parts(inner, depth=3), version_tag()]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:40]


def _is_ours(output_code: Any) -> bool:
    from .aot_cache import AutofuseOutputCode

    return output_code is None or isinstance(output_code, AutofuseOutputCode)


def foreign_backend(entry: Any) -> Optional[str]:
    """Why a ``PrecompileCacheEntry`` is not entirely Autofuse's, or None when every compiled graph it references is
    an AOTAutograd bundle of ``AutofuseOutputCode`` (forward, and backward where there is one). An entry with no
    stored graph at all (another backend without serializable output, such as aot_eager, or graphs that could not
    be stored) is refused too: it would only overwrite a useful entry with one that traces everything again."""
    if not entry.backends:
        return "it holds no stored compiled graph"
    for backend_id, artifact in entry.backends.items():
        content = getattr(artifact, "content", None)
        fw = getattr(getattr(content, "compiled_fw", None), "result", None)
        bw = getattr(getattr(content, "compiled_bw", None), "result", None)
        if fw is None or not _is_ours(fw) or not _is_ours(bw):
            return f"{backend_id} is a {type(artifact).__name__} holding {type(fw).__name__}, not Autofuse's"
    return None


def _store_base() -> Any:
    from torch._dynamo.package import DiskDynamoCache

    return DiskDynamoCache


class _StoreMixin:
    """Methods of AutofuseDynamoCache (a subclass of torch's DiskDynamoCache, built lazily in _make_store so that
    importing this module does not import Dynamo's package module)."""

    def path_prefix(self) -> str:
        from torch._dynamo.package import cache_dir

        return os.path.join(cache_dir(), STORE_DIR)

    def record_package(self, package: Any) -> None:
        """Dynamo calls this after each compiled frame: record it as torch does, then write it to disk now."""
        import copy

        from torch._dynamo.package import PrecompileCacheEntry
        from torch._dynamo.precompile_context import PrecompileContext

        super().record_package(package)  # type: ignore[misc]
        try:
            # a graph whose compiled form could not be stored (no artifact) marks its code "bypassed": traced again
            entry = PrecompileCacheEntry.from_cache_entry(copy.deepcopy(package.cache_entry()),
                                                          PrecompileContext._backend_artifacts_by_key)
            if entry is not None:
                _record_module_globals(package, entry)
                self._write_keyed(entry, package_key(package._innermost_fn))
        except Exception as e:  # noqa: BLE001 - a package that cannot be stored is traced again next time
            log.info("autofuse warm start: package %s not saved: %s", package.source_id, e)

    def write(self, cache_entry: Any, path: str) -> None:
        """torch's own save (``torch.compiler.save_cache_artifacts()``) names a package by source id only, which
        does not identify the function (see package_key): ignored, record_package has written it already."""
        log.info("autofuse warm start: package %s already written when it was recorded", path)

    def _write_keyed(self, cache_entry: Any, key: str) -> None:
        """Write a package under ``key``, unless a compiled graph in it is not Autofuse's or it was marked
        UNLOADABLE."""
        why = foreign_backend(cache_entry)
        if not why and os.path.exists(os.path.join(self.path_prefix(), key, UNLOADABLE)):
            why = "an earlier process could not install it (see the " + UNLOADABLE + " file)"
        if why:
            _STATE["rejected"] += 1
            log.info("autofuse warm start: not saving %s: %s", key, why)
            return
        super().write(cache_entry, key)  # type: ignore[misc]
        _STATE["saved"] += 1

    def load(self, fn: Callable[..., Any]) -> Any:
        """The package for ``fn`` under our key, or None (missing, unreadable or not Autofuse's: a warning)."""
        from torch._dynamo.utils import counters

        backend = _calling_backend()
        if backend is not _our_backend():
            log.info("autofuse warm start: no lookup for backend %r", backend)
            return None
        key = package_key(fn)
        if os.path.exists(os.path.join(self.path_prefix(), key, UNLOADABLE)):
            counters["dynamo_cache"]["dynamo_cache_unloadable"] += 1
            return None
        if not os.path.exists(os.path.join(self.path_prefix(), key, "entry")):
            counters["dynamo_cache"]["dynamo_cache_miss"] += 1
            return None
        try:
            entry = self.load_cache_entry(key)  # type: ignore[attr-defined]
        except Exception as e:  # noqa: BLE001 - a damaged entry: trace afresh (and overwrite it)
            counters["dynamo_cache"]["dynamo_cache_error"] += 1
            warnings.warn(f"autofuse warm start: skipping unreadable entry {key}: {str(e)[:300]}")
            return None
        why = foreign_backend(entry)
        if why:
            counters["dynamo_cache"]["dynamo_cache_error"] += 1
            warnings.warn(f"autofuse warm start: skipping entry {key}: {why}")
            return None
        counters["dynamo_cache"]["dynamo_cache_hit"] += 1
        _advance_unique_ids(entry)
        return entry


_SUFFIX = re.compile(r"_(\d+)$")
_BUILTINS_NAME = re.compile(rb"__builtins_dict___(\d+)")


def _code_names(code: Any) -> Iterator[str]:
    yield from code.co_names
    for c in code.co_consts:
        if type(c) is type(code):
            yield from _code_names(c)


def _advance_unique_ids(entry: Any) -> None:
    """Work around a torch 2.13 crash: installing a package puts globals named by Dynamo's per-process counter
    (``unique_id``: ``__builtins_dict___0``, ...) into the model's module; when a guard then fails (a new shape)
    Dynamo traces afresh in this process, draws the same names from its counter and raises "Name
    '__builtins_dict___0' already exists in scope". So before the install, move the counter past every number such a
    name in the package uses (in its compiled bytecode's global names and its guards' builtins-dict name)."""
    import itertools

    import torch._dynamo.bytecode_transformation as bt

    top = -1
    for code in entry.dynamo.codes:
        for guarded in code.guarded_codes:
            for name in _code_names(guarded.dynamo_code):
                m = _SUFFIX.search(name)
                if m:
                    top = max(top, int(m.group(1)))
            for m in _BUILTINS_NAME.finditer(guarded.guards_state):
                top = max(top, int(m.group(1)))
    if top >= 0:
        current = next(bt._unique_id_counter)
        bt._unique_id_counter = itertools.count(max(current, top + 1))


def _our_backend() -> Callable[..., Any]:
    from .backend import autofuse_backend

    return autofuse_backend


def _calling_backend(max_depth: int = 4) -> Any:
    """The backend of the ``torch.compile`` that is looking a package up: torch's ``DynamoCache.load(fn)`` does not
    say, so this finds the calling Dynamo context (``_TorchDynamoContext.__call__``, a frame or two up) and unwraps
    its callback (``innermost_backend``, then torch.compile's ``_TorchCompileWrapper``). None when no such caller
    is found."""
    import sys

    from torch._dynamo.eval_frame import _TorchDynamoContext, innermost_backend

    frame = sys._getframe(1)
    for _ in range(max_depth):
        frame = frame.f_back
        if frame is None:
            return None
        ctx = frame.f_locals.get("self")
        if isinstance(ctx, _TorchDynamoContext):
            backend = innermost_backend(ctx.callback)
            # torch.compile wraps a backend in _TorchCompileWrapper (its compiler_fn is the registered function)
            return getattr(backend, "compiler_fn", backend)
    return None


def _fix_main_module(package: Any) -> None:
    """Work around a torch 2.13 bug: a package records the module of its main function as ``fn.__module__`` and
    installs the compiled graphs and guards into that module's globals, but a decorator's wrapper made with
    ``functools.wraps`` carries the decorated function's ``__module__`` while its bytecode runs in the decorator
    module's globals. Every Hugging Face model's forward is such a wrapper: the warm process then fails with
    "NameError: name '__compiled_fn_1_...' is not defined" (LLaMA-style) or its guards read the wrong globals and
    Dynamo traces again (GPT-2). Here the main code's module is set to the one that owns its globals."""
    import sys

    fn = getattr(package._innermost_fn, "__func__", package._innermost_fn)
    name = (getattr(fn, "__globals__", None) or {}).get("__name__")
    entry = package._codes.get(getattr(fn, "__code__", None))
    if entry is not None and name in sys.modules and entry.python_module != name:
        entry.python_module = name


_MODULE_GLOBAL = re.compile(r"^___module_\w+_\d+_c\d+$")


def _record_module_globals(package: Any, entry: Any) -> None:
    """Work around a torch 2.13 bug: compiled bytecode that loads a Python module does so through a global installed
    by object id (``___module_collections_<id>_c0``, torch/_dynamo/codegen.py ``create_load_python_module``), which
    the package does not record, so the warm process fails with NameError (seen on all three demo models). Before
    a package is written, each such name its compiled bytecode uses is added to its code's ``import_sources``
    (alias -> module name), which ``install`` imports and sets again. The module is looked up in the globals the
    bytecode ran in (the compiled function's, then its recorded module's)."""
    import sys

    fn = getattr(package._innermost_fn, "__func__", package._innermost_fn)
    scopes = [getattr(fn, "__globals__", {})]
    for code in entry.dynamo.codes:
        mod = sys.modules.get(code.python_module)
        for guarded in code.guarded_codes:
            for name in _code_names(guarded.dynamo_code):
                if not _MODULE_GLOBAL.match(name) or name in code.import_sources:
                    continue
                for scope in scopes + ([mod.__dict__] if mod is not None else []):
                    value = scope.get(name)
                    if isinstance(value, types.ModuleType):
                        code.import_sources[name] = value.__name__
                        break
    _fix_main_module_entry(fn, entry)


def _fix_main_module_entry(fn: Any, entry: Any) -> None:
    """_fix_main_module for a stored entry (its first code is the main function's)."""
    name = (getattr(fn, "__globals__", None) or {}).get("__name__")
    if entry.dynamo.codes and name:
        entry.dynamo.codes[0].python_module = name


def _guarded_install(install: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap torch's ``CompilePackage.install`` so that a package that cannot be installed makes the model be traced
    afresh instead of failing ``torch.compile``. torch 2.13 catches only RuntimeError there, and its fallback then
    fails too ("CompilePackage is already initialized"). Seen on Hugging Face GPT-2: a guard on a decorator's closure
    (``L['func'].__closure__[3].cell_contents``) whose value was not serializable is stored as ``_Missing`` and
    raises AttributeError when the guards are rebuilt. Our store's packages get an UNLOADABLE marker, so that later
    processes neither load nor store them again (the marker's key changes with the code and Autofuse's version)."""

    def guarded(self: Any, backends: Any) -> Any:
        _fix_main_module(self)
        try:
            return install(self, backends)
        except Exception as e:
            try:
                self.uninstall()
            except Exception:  # noqa: BLE001 - best effort: the package is discarded below
                pass
            self._initialized, self._codes, self._current_entry = False, {}, None
            msg = f"{type(e).__name__}: {str(e)[:300]}"
            store = torch._dynamo.package.DynamoCache
            if isinstance(store, _StoreMixin) and self._innermost_fn is not None:
                key = package_key(self._innermost_fn)
                try:
                    with open(os.path.join(store.path_prefix(), key, UNLOADABLE), "w") as f:
                        f.write(msg + "\n")
                except OSError:
                    pass
            warnings.warn(f"autofuse warm start: the stored package could not be installed ({msg}); "
                          "the model is traced afresh")
            raise RuntimeError(msg) from e

    guarded.__autofuse_guarded__ = True  # type: ignore[attr-defined]
    return guarded


def resolve_wrapped(module: str, qualname: str, hops: int) -> Any:
    """The function at ``module.qualname``, unwrapped ``hops`` times through ``__wrapped__`` (the inverse of what
    _guard_pickler_reducer stores for a decorated function)."""
    import importlib
    import sys

    f: Any = sys.modules.get(module) or importlib.import_module(module)
    for name in qualname.split("."):
        f = getattr(f, name)
    for _ in range(hops):
        f = f.__wrapped__
    return f


def _guarded_pickler(reducer_override: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap torch's ``GuardsStatePickler.reducer_override`` so that a function hidden behind a decorator is stored
    by reference. torch 2.13 pickles a function by its qualified name and stores a ``_Missing`` placeholder when the
    name resolves to another object ("fqn mismatch"), which is what ``functools.wraps`` makes of every decorated
    method: its ``__qualname__`` names the wrapper. Guards on it (Hugging Face's ``can_return_tuple`` wrapper guards
    ``L['func'].__defaults__`` and ``L['func'].__closure__[i].cell_contents`` of the model's real forward) then fail
    with AttributeError when a later process rebuilds them, for GPT-2, BERT and any model whose forward is
    decorated. Here such a function is stored as (module, qualified name, number of ``__wrapped__`` hops) and
    resolved by resolve_wrapped on load; anything else goes to torch's reducer."""
    import inspect
    import sys

    def reduce(self: Any, obj: Any) -> Any:
        if inspect.isfunction(obj) and "<locals>" not in obj.__qualname__ and obj.__module__ in sys.modules:
            f: Any = sys.modules[obj.__module__]
            for name in obj.__qualname__.split("."):
                f = getattr(f, name, None)
            hops = 0
            while f is not obj and f is not None and hops < 8:
                f = getattr(f, "__wrapped__", None)
                hops += 1
            if f is obj and hops:
                return resolve_wrapped, (obj.__module__, obj.__qualname__, hops)
        return reducer_override(self, obj)

    reduce.__autofuse_guarded__ = True  # type: ignore[attr-defined]
    return reduce


def _guarded_serialize(serialize_guards: Callable[..., Any]) -> Callable[..., Any]:
    """``CheckFunctionManager.serialize_guards`` bypassing the frame's package where torch 2.13 raises a TypeError.

    A type guard on an object of a class defined inside a function (transformers 5.25's LLaMA reaches its rotary
    embedding through such a ``_create_func_module.<locals>.Func``) cannot be stored, and torch's
    ``raise_local_type_error`` says so with a TypeError, which ``CheckFunctionManager`` does not catch: the user's
    first call died with InternalTorchDynamoError (review, session 28). Here the frame's package entry is bypassed
    instead (``output_graph.bypass_package``, torch's path for an unstorable frame; a PackageError under
    ``strict_precompile``) and empty guard bytes are returned, which the bypassed entry ignores (torch's own
    PackageError path returns None there and then fails an assertion in ``_compile_inner``). The frame is compiled
    and runs, only without a package, so a later process traces it again.

    Arguments as torch's: (self, builder, sorted_guards, output_graph); returns the serialized guards (bytes)."""

    def guarded(self: Any, builder: Any, sorted_guards: Any, output_graph: Any) -> Any:
        try:
            return serialize_guards(self, builder, sorted_guards, output_graph)
        except TypeError as e:
            if "cannot be saved into torch.compile() package" not in str(e):
                raise
            if torch._dynamo.config.strict_precompile:
                raise torch._dynamo.exc.PackageError(str(e)) from e
            log.info("autofuse warm start: a frame is not stored (%s)", e)
            output_graph.bypass_package(f"Guard serialization failed: {e}")
            return b""

    guarded.__autofuse_guarded__ = True  # type: ignore[attr-defined]
    return guarded


def _make_store() -> Any:
    cls = type("AutofuseDynamoCache", (_StoreMixin, _store_base()), {"__doc__": _StoreMixin.__doc__})
    return cls()


def enabled() -> bool:
    """Whether enable_warm_start() switched caching precompile on in this process (and it is still on)."""
    return _STATE["enabled"] and bool(torch._dynamo.config.caching_precompile)


def enable_warm_start() -> bool:
    """Switch on Dynamo's caching precompile for this process, with Autofuse's store (see the module doc). Call it
    before ``torch.compile``: a compiled model looks its package up when ``torch.compile(model)`` wraps it. Returns
    False (and changes nothing) when caches are disabled; True otherwise. Process-wide: other backends compiled in
    this process also run under caching precompile (their packages are not stored)."""
    from . import aot_cache

    if not aot_cache.enabled():
        log.info("autofuse warm start: not enabled (caches are disabled)")
        return False
    import torch._dynamo.package as package
    import torch._dynamo.precompile_context as precompile_context

    store = _make_store()
    from torch._dynamo.guards import CheckFunctionManager, GuardsStatePickler

    if not getattr(CheckFunctionManager.serialize_guards, "__autofuse_guarded__", False):
        CheckFunctionManager.serialize_guards = _guarded_serialize(CheckFunctionManager.serialize_guards)
    if not getattr(GuardsStatePickler.reducer_override, "__autofuse_guarded__", False):
        GuardsStatePickler.reducer_override = _guarded_pickler(GuardsStatePickler.reducer_override)
    if not getattr(package.CompilePackage.install, "__autofuse_guarded__", False):
        package.CompilePackage.install = _guarded_install(package.CompilePackage.install)
    package.DynamoCache = store
    precompile_context.DynamoCache = store
    torch._dynamo.config.caching_precompile = True
    _STATE["enabled"] = True
    return True


def stats() -> dict:
    """Counts of this process: packages written (``saved``), packages refused for holding another backend's graphs
    (``rejected``), and Dynamo's own cache counters (``dynamo_cache_hit`` / ``_miss`` / ``_error``)."""
    from torch._dynamo.utils import counters

    return {"saved": _STATE["saved"], "rejected": _STATE["rejected"], **dict(counters["dynamo_cache"])}


def maybe_enable_from_env() -> None:
    """``AUTOFUSE_WARM_START=1``: enable_warm_start() at import."""
    from .env import env_bool

    if env_bool("AUTOFUSE_WARM_START", False):
        enable_warm_start()
