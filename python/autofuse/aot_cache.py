"""Warm starts through torch's AOTAutograd cache: a new process skips AOTAutograd's tracing and our lowering/fusion.

torch 2.13's ``aot_module_simplified`` looks a Dynamo graph up in ``AOTAutogradCache`` when the forward compiler is a
``SerializableAOTDispatchCompiler``; with ``torch._functorch.config.bundled_autograd_cache`` the cache entry holds the
compilers' ``OutputCode`` objects themselves (pickled), plus everything AOTAutograd needs to rebuild its runtime
wrappers (view/mutation metadata, the backward's saved-tensor layout, guards). Inductor uses the same machinery; so
does this backend: ``backend.autofuse_backend`` wraps its forward / backward / inference compilers with
``wrap_compiler`` and calls AOTAutograd inside ``cache_context()``.

What we store per compiled FX graph (``AutofuseOutputCode``): the generated program's Python source, the objects its
globals hold (ATen ops, dtypes, constant tensors: pickled), and for each kernel its IR text. Loading re-parses each
kernel's IR and compiles it through the runtime's disk cache (a module load, no C++ compile while the kernel cache is
populated; a C++ compile when it is not), then executes the program source again. A graph with a step that cannot be
serialized (an eager stand-in group, a graph run as-is in ATen) is not cached: ``prepare_for_serialization`` raises
``BypassAOTAutogradCache`` and torch skips the save.

Cache key (``cache_key``, used instead of torch's ``autograd_cache_key`` inside ``cache_context``): torch's checks
and hashing of the Dynamo graph's code, the inputs' metadata (shapes, strides, dtypes, requires_grad) and the AOTConfig,
plus grad mode, autocast, the functorch config, torch's version and ``version_tag()``: a hash of this package's
Python sources, the native extension's file and the environment that changes generated code (AUTOFUSE_ISA,
AUTOFUSE_EMULATE_PRECISION_CASTS, ...). So a changed model, shape, dtype, grad mode or Autofuse build misses, and
entries of Inductor and Autofuse never collide. torch's own key also hashes Inductor's configuration and, to get
there, hashes torch's source tree and imports all of Inductor's code generators: about 2 s of CPU in every new
process, more than AOTAutograd's tracing of the demo's models costs, which is why we key entries ourselves.

Off when ``AUTOFUSE_FORCE_DISABLE_CACHES=1`` or ``AUTOFUSE_AOT_CACHE=0``, while a debug dump is configured (a hit
compiles nothing, so there would be nothing to dump), inside ``explain()``, and when torch's own switches turn the
AOTAutograd cache off (``TORCHINDUCTOR_FORCE_DISABLE_CACHES=1``, ``TORCHINDUCTOR_AUTOGRAD_CACHE=0``). A graph with a
symbolic float (a Python float argument) is not cached (``cache_key``: stale constants on a hit in torch 2.13). The entries live
in torch's cache directory (``TORCHINDUCTOR_CACHE_DIR``/aotautograd).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pickle
import time
from unittest import mock
from typing import Any, Callable, Dict, Iterator, List, Optional

import torch
from torch._inductor.output_code import OutputCode

#: Environment variables that change what the backend generates (part of the cache key).
KEY_ENV = ("AUTOFUSE_ISA", "AUTOFUSE_EMULATE_PRECISION_CASTS", "AUTOFUSE_STANDIN", "AUTOFUSE_STRICT",
           "AUTOFUSE_EXTRA_CXXFLAGS", "AUTOFUSE_KERNEL_INCLUDE_DIR", "AUTOFUSE_FUSE_CONCAT",
           "AUTOFUSE_ROUND_AT_STORE")

#: Format of the pickled payload; bump when AutofuseOutputCode's fields change.
PAYLOAD_VERSION = 1

_BYPASS = [0]  # >0 while explain() (or a caller of bypass()) runs
_VERSION: List[str] = []


def enabled() -> bool:
    """Whether compiled graphs go through torch's AOTAutograd cache (see the module doc for what turns it off)."""
    from .env import env_bool

    if _BYPASS[0] or env_bool("AUTOFUSE_FORCE_DISABLE_CACHES", False) or not env_bool("AUTOFUSE_AOT_CACHE", True):
        return False
    from .debug import debug_dirs

    return not debug_dirs()


@contextlib.contextmanager
def bypass() -> Iterator[None]:
    """Compile without the AOTAutograd cache inside this block (explain() needs every graph lowered afresh)."""
    _BYPASS[0] += 1
    try:
        yield
    finally:
        _BYPASS[0] -= 1


def version_tag() -> str:
    """A hash of what decides our compiled program for a given ATen graph: this package's Python sources, the native
    extension's bytes, the kernel ISA, the KEY_ENV environment and which library runs linear layers
    (extern_matmul.cache_key: AUTOFUSE_MATMUL and this machine's probe). Computed once per process (about 10 ms)."""
    if _VERSION:
        return _VERSION[0]
    h = hashlib.sha256(f"payload{PAYLOAD_VERSION}".encode())
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if name.endswith(".py") or (name.startswith("_core") and name.endswith(".so")):
            h.update(name.encode())
            with open(os.path.join(here, name), "rb") as f:
                h.update(f.read())
    for k in KEY_ENV:
        h.update(f"{k}={os.environ.get(k, '')}".encode())
    from .extern_matmul import cache_key

    h.update(cache_key().encode())  # which library runs linear layers (AUTOFUSE_MATMUL, the machine's probe)
    try:
        from . import _core  # type: ignore

        h.update(_core.host_isa().encode())
        h.update(_core.kernel_compile_flags().encode())
    except Exception:  # noqa: BLE001 - no native part: the stand-in paths are not cached anyway
        h.update(b"no-core")
    _VERSION.append("autofuse-" + h.hexdigest()[:24])
    return _VERSION[0]


@contextlib.contextmanager
def cache_context() -> Iterator[None]:
    """Configuration for one backend call with the cache on: bundled entries (our OutputCode pickled in the entry),
    the backward compiled with the forward (the entry is saved when both exist; torch's lazy backward would save it
    later, outside this context), and our version_tag() appended to the cache key tag."""
    import torch._functorch.config as fconfig
    from torch._functorch._aot_autograd import autograd_cache

    tag = torch.compiler.config.cache_key_tag
    with fconfig.patch(bundled_autograd_cache=True, force_non_lazy_backward_lowering=True), \
            torch.compiler.config.patch(cache_key_tag=(tag + "|" if tag else "") + version_tag()), \
            mock.patch.object(autograd_cache, "autograd_cache_key", cache_key):
        yield


class _KeyDetails:
    """What our cache key hashes (AOTAutogradCachePickler reduces tensors to metadata and the graph module to its
    code): see cache_key()."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: Any, aot_config: Any) -> None:
        from torch._functorch import config as fconfig
        from torch._functorch._aot_autograd import autograd_cache as ac

        self.gm = gm
        self.example_inputs = list(example_inputs)
        self.aot_config = aot_config
        self.grad_enabled = torch.is_grad_enabled()
        self.autocast = {d: torch.get_autocast_dtype(d) for d in torch._C._autocast_supported_devices()
                         if torch.is_autocast_enabled(d)}
        self.deterministic = (torch.are_deterministic_algorithms_enabled(),
                              torch.is_deterministic_algorithms_warn_only_enabled())
        self.default_dtype = torch.get_default_dtype()
        self.functorch_config = fconfig.save_config()
        self.torch_version = (torch.__version__, torch.version.git_version)
        self.tag = torch.compiler.config.cache_key_tag
        self.autofuse = version_tag()
        self.context_fns = ac._collect_context_fn_hashes(gm)
        self.saved_tensor_hooks = ac._collect_saved_tensors_hooks_fx_wrap_cache_hashes(gm)


def cache_key(mod: Any, example_inputs: Any, config: Any, compiler_config_extra: Any = None) -> tuple:
    """Our replacement for torch's ``autograd_cache_key`` (patched in only inside cache_context): the same checks
    (``check_cacheable``: every call in the Dynamo graph is one its code identifies) and the same graph / input
    hashing (AOTAutogradCachePickler over the Dynamo graph's code, the inputs' metadata, the AOTConfig), plus grad
    mode, autocast, determinism, the functorch config, torch's version and version_tag(); without what only
    Inductor's output depends on (the Inductor config, its custom passes, a hash of torch's whole source tree and
    the import of every Inductor code generator, about 2 s of CPU per process). Raises BypassAOTAutogradCache for
    a graph that cannot be cached. Returns (key, debug lines) as torch's does."""
    from torch._functorch._aot_autograd import autograd_cache as ac

    gm = mod.gm if isinstance(mod, torch._dynamo.utils.GmWrapper) else mod
    if any(isinstance(n.meta.get("example_value"), torch.SymFloat) for n in gm.graph.nodes):
        # A Python float argument (torch 2.13 traces it as a 0-d tensor input and item(): a SymFloat) that an op needs
        # as a constant (clamp's bound, a norm's eps) is burned into the AOT graph under a ShapeEnv guard the entry
        # drops, while this key is the same for every value: a hit would compute with the first call's value
        # (pytorch/pytorch#194976, fixed upstream by PR #195040; residual cases #197889). Found by review, session 14.
        raise ac.BypassAOTAutogradCache("a symbolic float in the graph (stale constants on a hit: pytorch#194976)")
    with ac.sanitize_gm_for_cache(gm):
        ac.check_cacheable(gm)
        details = _KeyDetails(gm, example_inputs, config)
        pickler = ac.AOTAutogradCachePickler(gm)
        return ac.AOTAUTOGRAD_CACHE_PREFIX + "af" + pickler.get_hash(details), []


def wrap_compiler(fn: Callable) -> Callable:
    """``fn(gm, example_inputs) -> boxed callable`` as the SerializableAOTDispatchCompiler AOTAutograd caches for."""
    from torch._functorch._aot_autograd.schemas import SerializableAOTDispatchCompiler

    return SerializableAOTDispatchCompiler(AutofuseOutputCode, fn)


class Unserializable(Exception):
    """A compiled graph that cannot be stored (the message says why); its cache save is skipped."""


class _Pickler(pickle.Pickler):
    """Pickles ATen operators by name (``aten::mm.default``); torch's OpOverload objects do not pickle."""

    def persistent_id(self, obj: Any) -> Optional[tuple]:
        if isinstance(obj, torch._ops.OpOverload):
            return ("op", obj._schema.name, obj._overloadname)
        if isinstance(obj, torch._ops.OpOverloadPacket):
            return ("packet", obj._qualified_op_name, "")
        return None


class _Unpickler(pickle.Unpickler):
    """Resolves the operators _Pickler stored by name through ``torch.ops``."""

    def persistent_load(self, pid: Any) -> Any:
        kind, qualified, overload = pid
        ns, name = qualified.split("::", 1)
        packet = getattr(getattr(torch.ops, ns), name)
        if kind == "packet":
            return packet
        return getattr(packet, overload or "default")


def dumps(obj: Any) -> bytes:
    """Pickle ``obj`` with ATen operators stored by name (see _Pickler)."""
    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


def loads(data: bytes) -> Any:
    """The inverse of dumps()."""
    return _Unpickler(io.BytesIO(data)).load()


def base_globals() -> Dict[str, Any]:
    """The globals every generated program starts from (program.py's emitter: torch.empty, the launch counter, the
    profiling hooks): module-level objects, re-created here rather than pickled."""
    from . import program

    return dict(program._Emitter(None).globals)  # type: ignore[arg-type]


def make_payload(record, fn: Callable, base_globals: Dict[str, Any]) -> Dict[str, Any]:
    """The storable form of a compiled graph: ``fn`` (the generated program, whose globals are ``base_globals`` plus
    the emitter's constants) and the record's steps. Raises Unserializable when a global is a stand-in runner or
    cannot be pickled."""
    if record.mode != "kernels":
        raise Unserializable(f"graph {record.name} runs in mode {record.mode!r}")
    kernels: Dict[int, Any] = {}  # id(runner) -> step
    for st in record.steps:
        if st.kind == "kernel":
            if st.kernel is None or "ir" not in st.info:
                raise Unserializable(f"kernel step {st.name} has no compiled kernel")
            kernels[id(st.run)] = st
    consts: Dict[str, Any] = {}
    kernel_globals: Dict[str, str] = {}
    name = fn.__name__
    for k, v in fn.__globals__.items():
        if k in ("__builtins__", name) or (k in base_globals and base_globals[k] is v):
            continue
        st = kernels.get(id(v))
        if st is not None and st.run is v:
            kernel_globals[k] = st.info["ir"]
            continue
        try:
            dumps(v)
        except Exception as e:  # noqa: BLE001 - any pickling failure means: do not cache this graph
            raise Unserializable(f"program global {k} ({type(v).__name__}) cannot be pickled: {e}") from e
        consts[k] = v
    steps = [(st.kind, st.name, st.info.get("ir", "")) for st in record.steps]
    return {"version": PAYLOAD_VERSION, "tag": version_tag(), "name": name, "kind": record.kind,
            "source": fn.__autofuse_source__, "consts": consts, "kernels": kernel_globals, "steps": steps,
            "fallbacks": record.fallbacks, "fusion_report": record.fusion_report}


class AutofuseOutputCode(OutputCode):
    """One compiled FX graph as AOTAutograd's cache stores it.

    Cold path: built by backend.compile_graph around the generated program's runner (``runner``) and its storable
    form (``payload``, or ``why_not`` when it has none). Warm path: unpickled from a cache entry with only the
    payload; ``post_compile`` loads the kernels and rebuilds the runner. Calls take a list of arguments (boxed).
    """

    def __init__(self, runner: Optional[Callable], payload: Optional[Dict[str, Any]], why_not: str = "") -> None:
        super().__init__()
        # an instance attribute, so that wrappers copying __dict__ (torch._dynamo.disable around a backward) keep it
        self._boxed_call = True
        self.runner = runner
        self.payload = payload
        self.why_not = why_not

    def __call__(self, inputs: List[Any]) -> Any:
        return self.runner(inputs)  # type: ignore[misc]

    def prepare_for_serialization(self) -> None:
        """Drop the live runner before pickling; raise BypassAOTAutogradCache when there is no payload."""
        from torch._functorch._aot_autograd.autograd_cache import BypassAOTAutogradCache

        if self.payload is None:
            raise BypassAOTAutogradCache(f"autofuse: graph not cacheable: {self.why_not}")
        self.runner = None

    def post_compile(self, example_inputs, constants, graph_kwargs) -> None:
        """On a cache hit: load the kernels and rebuild the program (no-op when the runner is live)."""
        if self.runner is None:
            self.runner = load_program(self.payload)

    def set_triton_bundle(self, triton_bundle: Any) -> None:
        """No Triton kernels here: nothing to bundle."""

    def __copy__(self) -> "AutofuseOutputCode":
        """A shallow copy (torch copies the OutputCode before preparing it for serialization), without the pickle
        round trip the default copy would make: that one may run under AOTAutograd's fake mode, which would turn
        the payload's constant tensors into fake ones."""
        new = AutofuseOutputCode.__new__(AutofuseOutputCode)
        new.__dict__.update(self.__dict__)
        return new

    def __getstate__(self) -> Dict[str, Any]:
        """Pickled state: the payload as bytes with their SHA-256 (checked on load), no runner."""
        state = dict(self.__dict__)
        state["runner"] = None
        if self.payload is not None:
            from torch.utils._python_dispatch import _disable_current_modes

            with _disable_current_modes():
                body = dumps(self.payload)
            state["payload"] = body
            state["digest"] = hashlib.sha256(body).hexdigest()
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        """Raises ValueError for a corrupted payload or one written by another Autofuse build (torch then treats
        the entry as unreadable: a miss, recompiled and saved again)."""
        digest = state.pop("digest", None)
        body = state.get("payload")
        if isinstance(body, bytes):
            if hashlib.sha256(body).hexdigest() != digest:
                raise ValueError("autofuse: corrupted AOTAutograd cache entry (payload digest mismatch)")
            from torch.utils._python_dispatch import _disable_current_modes

            with _disable_current_modes():  # constant tensors come back real even when a fake mode is active
                state["payload"] = payload = loads(body)
            if payload.get("tag") != version_tag():
                raise ValueError("autofuse: AOTAutograd cache entry from another Autofuse build")
        self.__dict__.update(state)


def load_program(payload: Dict[str, Any]) -> Callable:
    """Rebuild a cached graph's runner: kernels from their IR (through the runtime's disk cache), the program from
    its source. Records a GraphRecord (mode "kernels", reason "AOTAutograd cache hit") for explain()/the demo."""
    from . import _core as core  # type: ignore
    from . import backend
    from .native import compile_kernels

    t0 = time.perf_counter()
    names = list(payload["kernels"])
    graphs = [core.parse(payload["kernels"][n], f"<cached kernel {n}>") for n in names]
    kernels = compile_kernels(core, graphs)
    for n, k in zip(names, kernels):
        if isinstance(k, Exception):
            raise RuntimeError(f"autofuse: cached kernel {n} failed to load: {k}") from k
    namespace: Dict[str, Any] = base_globals()
    namespace.update(payload["consts"])
    namespace.update({n: k.run for n, k in zip(names, kernels)})
    exec(compile(payload["source"], f"<autofuse {payload['name']} (cached)>", "exec"), namespace)
    fn = namespace[payload["name"]]
    fn.__autofuse_source__ = payload["source"]
    by_ir = {payload["kernels"][n]: k for n, k in zip(names, kernels)}
    record = backend.cached_record(payload, fn, by_ir, time.perf_counter() - t0)
    return backend.boxed_runner(fn, record)
