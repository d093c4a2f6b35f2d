"""The ``torch.compile`` backend: ``torch.compile(model, backend="autofuse")``.

Pipeline per Dynamo graph: Dynamo's addcmul_ / addcdiv_ / addcdiv parts become the whole op again (addc_rewrite.py,
so they round once as in eager) -> written-out attention becomes one SDPA call (attention_rewrite.py; opt-in,
AUTOFUSE_ATTENTION_REWRITE=1) -> AOTAutograd
(functional ATen, forward and backward, inference under no_grad) with the decomposition table of decompositions.py -> lowering to the Autofuse IR (lowering.py) -> fusion into groups
(``autofuse._core.fuse``) -> one compiled kernel per Kernel group (``autofuse._core.Kernel``) -> a generated Python
program running kernels and ATen calls in order (program.py).

Failures never break the user's program: a graph that cannot be lowered runs as-is (eager ATen) and a kernel that
fails to compile runs its ops eagerly, each with a warning; ``AUTOFUSE_STRICT=1`` raises instead (for tests).
When the C++ fusion/kernel bindings are not available the groups run through the eager reference evaluator
(``mode == "reference"`` in the records), which keeps the backend usable while parts of the core are missing.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

import torch
import torch.fx

from . import neg_inputs, weight_pack
from .env import env_bool
from .lowering import LoweredGraph, UnsupportedGraph, lower, report_fallback
from .program import HostGroup, ReferenceGroup, Step, build_program

log = logging.getLogger("autofuse")


def strict() -> bool:
    """AUTOFUSE_STRICT=1: fallbacks of whole graphs and kernels raise instead of warning."""
    return env_bool("AUTOFUSE_STRICT", False)


@dataclass
class GraphRecord:
    """What the backend did with one FX graph; read by explain() and the debug dump."""

    name: str
    kind: str  # "forward" | "backward" | "inference"
    gm: Optional[torch.fx.GraphModule]  # None when loaded from the AOTAutograd cache (aot_cache.py)
    lowered: Optional[LoweredGraph] = None
    steps: List[Step] = field(default_factory=list)
    mode: str = "kernels"  # "kernels" | "reference" (eager stand-in) | "interpreter" (stand-in) | "eager" (as-is)
    program_source: str = ""
    reason: str = ""
    compile_seconds: float = 0.0
    #: Wall seconds of compile_seconds spent in native.compile_kernels for this graph: kernel code generation, the C++
    #: compiler runs and loading (small when every kernel was compiled earlier in the process or is in the disk
    #: cache; 0 without kernel steps).
    kernel_compile_seconds: float = 0.0
    fusion_report: str = ""
    program: Optional[Callable] = None  # the generated function (takes the list of arguments)
    example_bindings: Dict[str, int] = field(default_factory=dict)  # symbol values of the example inputs
    cached: bool = False  # loaded from the AOTAutograd cache: no lowering (``lowered`` is None), steps carry kernels
    cached_fallbacks: List[Any] = field(default_factory=list)  # the fallbacks stored with a cached graph

    @property
    def kernels(self) -> List[Step]:
        return [s for s in self.steps if s.kind == "kernel"]

    @property
    def fallbacks(self) -> List[Any]:
        """``(op, reason)`` per ATen fallback of this graph (from its lowering, or stored with a cached graph)."""
        return list(self.lowered.fallbacks) if self.lowered is not None else list(self.cached_fallbacks)


#: Every graph compiled in this process, in order (explain() and tests look at the tail).
RECORDS: List[GraphRecord] = []
_counter = itertools.count()


def _load_core():
    try:
        from . import _core  # type: ignore
    except ImportError:
        return None
    return _core


def has_native_kernels() -> bool:
    """Whether the C++ fusion pass and kernel compiler are available through the bindings."""
    core = _load_core()
    if core is None or not (hasattr(core, "Graph") and hasattr(core, "fuse")):
        return False
    from .native import kernel_compiler

    return kernel_compiler(core) is not None


# ---- planning: groups and their runners ------------------------------------------------------------------------------

def simple_partition(lg: LoweredGraph) -> List[Step]:
    """Stand-in partition: maximal runs of non-extern nodes (in graph order) form one group each."""
    steps: List[Step] = []
    users: Dict[int, List[int]] = {}
    for i, n in enumerate(lg.nodes):
        for j in n.inputs:
            users.setdefault(j, []).append(i)
    graph_outs = {v for k, v in lg.outputs if k == "node"} | {v for _, v in lg.mutations}
    graph_outs |= {c[0] for c in lg.index_checks}  # range-checked gather/scatter indices (lowering_gather.py)
    run: List[int] = []

    def close():
        if not run:
            return
        inside = set(run)
        ins: List[int] = []
        for i in run:
            for j in lg.nodes[i].inputs:
                if j not in inside and j not in ins:
                    ins.append(j)
        outs = [i for i in run if i in graph_outs or any(u not in inside for u in users.get(i, []))]
        steps.append(Step("kernel", list(run), ins, outs, name=f"group{len(steps)}"))
        run.clear()

    for i, n in enumerate(lg.nodes):
        if n.op == "input":
            continue
        if n.op == "extern":
            close()
            steps.append(Step("extern", [i], list(n.inputs), [i], name=n.attrs["name"]))
        else:
            run.append(i)
    close()
    return [s for s in steps if s.kind != "kernel" or s.outputs]


def _reference_runners(lg: LoweredGraph, steps: List[Step]) -> None:
    for s in steps:
        if s.kind == "kernel" and s.run is None:
            s.run = ReferenceGroup(lg, s)
            s.needs_bindings = True
        elif s.kind == "host":
            s.run = HostGroup(lg, s)
            s.needs_bindings = True


def has_fusion() -> bool:
    """Whether the C++ IR builder and fusion pass are available through the bindings."""
    core = _load_core()
    return core is not None and hasattr(core, "Graph") and hasattr(core, "fuse")


def plan(lg: LoweredGraph, record: GraphRecord) -> List[Step]:
    """Partition ``lg`` into steps and give every kernel step a runner.

    Native: fusion groups from ``_core.fuse``, kernels from ``_core.Kernel``. Without the kernel compiler the fusion
    groups run on a stand-in (mode "fused-reference"); without fusion, maximal runs of IR nodes between ATen calls do
    (mode "reference"). AUTOFUSE_STANDIN=interp makes the stand-in the C++ interpreter instead of eager torch.
    Raises RuntimeError under AUTOFUSE_STRICT=1 when the kernel compiler is missing (no stand-in in strict mode).
    """
    interp = os.environ.get("AUTOFUSE_STANDIN") == "interp"
    if strict() and not has_native_kernels():
        # a stand-in must never pass for compiled kernels in tests: AUTOFUSE_STRICT=1 makes its absence an error
        raise RuntimeError("autofuse: AUTOFUSE_STRICT=1 but the native kernel path is missing (autofuse._core lacks "
                           "fuse or Kernel.compile); the stand-in evaluators are not allowed in strict mode")
    if has_fusion():
        from .native import plan_native

        steps = plan_native(lg, record, strict())
        if not has_native_kernels():
            record.mode = "fused-reference"
            if interp:
                from .native import InterpreterGroup

                for st in steps:
                    if st.kind == "kernel":
                        st.run = InterpreterGroup(st.info["subgraph"])
                record.mode = "fused-interpreter"
    else:
        record.mode = "reference"
        steps = simple_partition(lg)
        if interp:
            from .native import has_interpreter, plan_interpreter

            if has_interpreter():
                plan_interpreter(lg, steps)
                record.mode = "interpreter"
    _reference_runners(lg, steps)
    return steps


# ---- compiling one FX graph ----------------------------------------------------------------------------------------

def _eager(gm: torch.fx.GraphModule) -> Callable:
    def run(args):
        return gm(*args)

    run._boxed_call = True  # type: ignore[attr-defined]
    return run


def _example_bindings(lg: LoweredGraph, example_inputs) -> Dict[str, int]:
    """Symbol values of the example inputs (size hints; reading them adds no guard)."""

    def hint(v):
        if isinstance(v, torch.SymInt):
            return v.node.hint
        return v

    out: Dict[str, int] = {}
    for name, src in lg.sym_sources.items():
        try:
            # src is "args[i]" or "args[i].shape[d]"
            i = int(src.split("[")[1].split("]")[0])
            x = example_inputs[i]
            if ".shape[" in src:
                d = int(src.rsplit("[", 1)[1].rstrip("]"))
                v = hint(x.shape[d])
            else:
                v = hint(x)
            if v is not None:
                out[name] = int(v)
        except Exception:  # noqa: BLE001 - a missing hint only weakens the debug reproducer
            continue
    return out


#: The thread count last given to the kernel launcher (0: not yet), compared with torch's on each graph call.
_THREADS = [0]


def sync_threads() -> None:
    """Give the kernel launcher as many threads as torch uses, so the two pools do not oversubscribe the cores.

    Called when a graph is compiled and by every compiled graph's entry; it calls into the runtime only when
    ``torch.get_num_threads()`` differs from the value last set (one integer comparison otherwise, never per launch).
    """
    n = torch.get_num_threads()
    if n == _THREADS[0]:
        return
    core = _load_core()
    if core is not None and hasattr(core, "set_num_threads"):
        core.set_num_threads(n)
    _THREADS[0] = n


#: What failed, by the stage an exception left compile_graph from (``autofuse_stage`` on the exception; the fallback
#: message of autofuse_backend). An exception without one comes from AOTAutograd's tracing or the decompositions.
STAGE_MESSAGES = {
    None: "the graph could not be traced to ATen",
    "lowering": "tracing to ATen succeeded, but the graph could not be lowered to the Autofuse IR",
    "kernels": "the graph's kernels could not be compiled",
    "program": "the graph's runner program could not be built",
}


def _failure_stage(stage: str, e: BaseException) -> str:
    """The STAGE_MESSAGES key of ``e`` raised during ``stage`` ("lowering": lower, IR building, verification and
    fusion; "plan": fusion and kernels; "program")."""
    if stage == "plan":
        return "kernels" if type(e).__name__ == "CompileError" else "lowering"
    return stage


def compile_graph(gm: torch.fx.GraphModule, example_inputs, kind: str = "inference") -> Callable:
    """Compile one functional ATen FX graph into a boxed callable (``fn(list_of_args) -> list``). An exception it
    raises carries ``autofuse_stage`` (a STAGE_MESSAGES key) naming what failed."""
    stage = ["lowering"]
    try:
        return _compile_graph(gm, example_inputs, kind, stage)
    except Exception as e:
        with contextlib.suppress(Exception):  # an exception object that takes no attribute keeps no stage
            e.autofuse_stage = _failure_stage(stage[0], e)  # type: ignore[attr-defined]
        raise


def _compile_graph(gm: torch.fx.GraphModule, example_inputs, kind: str, stage: List[str]) -> Callable:
    """compile_graph's work; ``stage[0]`` follows its progress ("lowering", "plan", "program")."""
    t0 = time.perf_counter()
    sync_threads()
    record = GraphRecord(name=f"graph{next(_counter)}_{kind}", kind=kind, gm=gm)
    RECORDS.append(record)
    try:
        lg = lower(gm)
    except UnsupportedGraph as e:
        if strict():
            raise
        record.mode, record.reason = "eager", str(e)
        report_fallback("graph", f"runs as-is in ATen: {e}")
        record.compile_seconds = time.perf_counter() - t0
        return _eager(gm)
    record.lowered = lg
    record.example_bindings = _example_bindings(lg, example_inputs)
    stage[0] = "plan"
    steps = plan(lg, record)
    record.steps = steps
    stage[0] = "program"
    fn = build_program(lg, steps, name=f"af_{record.name}", prepack=kind == "inference" and weight_pack.enabled())
    record.program_source = fn.__autofuse_source__
    record.program = fn
    record.compile_seconds = time.perf_counter() - t0
    from .debug import maybe_dump

    maybe_dump(record)

    return boxed_runner(fn, record)


def boxed_runner(fn: Callable, record: GraphRecord) -> Callable:
    """The boxed callable AOTAutograd calls (``run(list_of_args) -> list``) around a generated program ``fn``: keeps
    the kernel launcher's thread count equal to torch's (one integer comparison per call) and frees the arguments."""
    threads, get_threads = _THREADS, torch.get_num_threads

    def run(args):
        if get_threads() != threads[0]:
            sync_threads()
        out = fn(args)
        args.clear()
        return out

    run._boxed_call = True  # type: ignore[attr-defined]
    run.__autofuse_record__ = record  # type: ignore[attr-defined]
    return run


def cached_record(payload: Dict[str, Any], fn: Callable, kernels_by_ir: Dict[str, Any], seconds: float) -> GraphRecord:
    """The GraphRecord of a graph loaded from the AOTAutograd cache (aot_cache.load_program): its steps (kernels with
    their Kernel objects), program, stored fallbacks and fusion report; appended to RECORDS."""
    record = GraphRecord(name=f"graph{next(_counter)}_{payload['kind']}", kind=payload["kind"], gm=None,
                         mode="kernels", reason="loaded from the AOTAutograd cache", compile_seconds=seconds,
                         fusion_report=payload.get("fusion_report", ""), program=fn, cached=True,
                         cached_fallbacks=list(payload.get("fallbacks", [])))
    record.program_source = payload["source"]
    for kind, name, ir in payload["steps"]:
        st = Step(kind, [], [], [], name=name)
        if kind == "kernel":
            st.kernel = kernels_by_ir.get(ir)
            st.run = st.kernel.run if st.kernel is not None else None
            st.info["ir"] = ir
            if st.kernel is not None:
                st.info["source"] = st.kernel.source
        record.steps.append(st)
    RECORDS.append(record)
    return record


def _cacheable(run: Callable) -> Callable:
    """Attach the AOTAutograd cache's OutputCode to a compiled graph's runner (as ``__wrapped__``, where torch's cache
    looks for it; calls still go straight to ``run``)."""
    from . import aot_cache

    record = getattr(run, "__autofuse_record__", None)
    payload, why = None, "graph runs as-is in ATen"
    if record is not None:
        try:
            payload = aot_cache.make_payload(record, record.program, aot_cache.base_globals())
        except aot_cache.Unserializable as e:
            why = str(e)
    run.__wrapped__ = aot_cache.AutofuseOutputCode(run, payload, why)  # type: ignore[attr-defined]
    return run


def _aot_drops_mutation(gm: torch.fx.GraphModule, example_inputs) -> Optional[str]:
    """Why AOTAutograd would lose an in-place update of this graph's inputs, or None.

    PyTorch 2.13's AOTAutograd drops an in-place method (``x.add_(1)``, ``x.copy_(y)``) or ``out=`` write whose target
    is a 0-d float64 graph input: the caller's tensor keeps its old value and later reads in the graph see the old
    value (``backend="aot_eager"`` and ``"inductor"`` alike; Dynamo's own graph is right; ``x += 1`` and
    ``x[...] = v`` are not affected). Such a graph runs as Dynamo traced it, eagerly: found by the hard-input suite
    (seed 40000015); tests/python/test_backend_inplace.py checks the workaround."""
    zero_d_f64 = {n for n, v in zip((n for n in gm.graph.nodes if n.op == "placeholder"), example_inputs)
                  if isinstance(v, torch.Tensor) and v.dim() == 0 and v.dtype == torch.float64}
    if not zero_d_f64:
        return None
    for n in gm.graph.nodes:
        if neg_inputs.written_value(n, operators=False) in zero_d_f64:
            return (f"{n.format_node()}: PyTorch's AOTAutograd drops in-place updates of 0-d float64 inputs; the "
                    "graph runs eagerly (as Dynamo traced it)")
    return None


def donate_no_buffers() -> None:
    """Tell AOTAutograd that no saved tensor is donated to this graph's backward, so ``backward(retain_graph=True)``
    and ``autograd.grad(..., retain_graph=True)`` work (review 18 finding 3). Called by the forward and backward
    compilers, inside AOTAutograd's tracing context.

    torch 2.13's AOTAutograd lists the saved tensors the backward may reuse as scratch memory
    (``fw_metadata.bw_donated_idxs``, ``torch._functorch.config.donated_buffer``, on by default) and refuses every
    backward that keeps the graph while that list is non-empty ("This backward function was compiled with non-empty
    donated buffers..."). Only Inductor's code generator reads the list (it reuses donated buffers as scratch
    memory). AOTAutograd compiles a backward lazily, at its first call, and empties the list when that call keeps
    the graph: that is how Inductor (and aot_eager) accept a first ``retain_graph=True``. Where the backward was
    compiled before (with the forward, as AOTAutograd does under dynamic shapes when sizes are saved, or by an
    earlier backward) and a buffer is donated, they raise too (torch 2.13: both with dynamic shapes, aot_eager after
    a plain backward). Autofuse compiles the backward with the forward whenever its AOTAutograd cache is on
    (aot_cache's ``force_non_lazy_backward_lowering``), and its programs never write into saved tensors, so
    donation gains nothing here: the list is emptied for every graph (the cache stores it empty). Double backward
    (``create_graph=True``, then a backward of the gradients) raises AOTAutograd's own "torch.compile with
    aot_autograd does not currently support double backward", as with Inductor."""
    from torch._guards import TracingContext

    meta = getattr(TracingContext.try_get(), "fw_metadata", None)
    if meta is not None:
        meta.bw_donated_idxs = []


def check_compile_arguments(kwargs: Dict[str, Any]) -> None:
    """Raise ValueError for torch.compile's ``mode`` and ``options``, which Dynamo hands the backend as keyword
    arguments: Autofuse has neither modes nor options (its settings are AUTOFUSE_* environment variables, README), so
    any given one would be ignored. Like Inductor for an unknown option, the error names them. Dynamo passes neither
    for ``mode="default"`` or empty options."""
    problems = []
    mode = kwargs.pop("mode", None)
    if mode not in (None, "default"):
        problems.append(f"mode={mode!r} (an Inductor mode; Autofuse has none)")
    options = kwargs.pop("options", None) or {}
    if options:
        problems.append("options " + ", ".join(sorted(map(str, options))) + " (Autofuse takes none)")
    problems += [f"argument {k}" for k in sorted(kwargs)]
    if problems:
        raise ValueError("autofuse: unexpected torch.compile " + "; ".join(problems) + ". Autofuse's settings are "
                         "AUTOFUSE_* environment variables (e.g. AUTOFUSE_STRICT=1; see the README)")


def autofuse_backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    """The Dynamo backend entry point (registered as "autofuse"). ``kwargs``: torch.compile's ``mode`` and
    ``options``, which Autofuse rejects (check_compile_arguments). Python numbers that Dynamo passes as 0-d tensors
    are compiled for, and checked against, the dtype they have at run time (scalar_inputs.py)."""
    check_compile_arguments(dict(kwargs))
    from . import scalar_inputs

    example_inputs, expected = scalar_inputs.as_passed(gm, example_inputs)
    fn = _compile_dynamo_graph(gm, example_inputs)
    return scalar_inputs.checked(fn, gm, expected) if expected else fn


def _compile_dynamo_graph(gm: torch.fx.GraphModule, example_inputs) -> Callable:
    """autofuse_backend's work: Dynamo's graph through AOTAutograd to compile_graph, or the graph itself (run
    eagerly) where it cannot be."""
    from torch._dynamo.backends.common import aot_autograd

    from .decompositions import decomposition_table

    from . import aot_cache

    use_cache = aot_cache.enabled()
    wrap = aot_cache.wrap_compiler if use_cache else (lambda f: f)
    out = _cacheable if use_cache else (lambda r: r)

    def fw(g, ex):
        donate_no_buffers()
        return out(compile_graph(g, ex, "forward"))

    def bw(g, ex):
        donate_no_buffers()
        return out(compile_graph(g, ex, "backward"))

    def inference(g, ex):
        return out(compile_graph(g, ex, "inference"))

    negs = neg_inputs.negated_inputs(example_inputs)
    writes = neg_inputs.may_write_inputs(gm) if negs else None
    if negs and not writes:  # kernels read memory: they get the negated copies (neg_inputs.py)
        resolved = [v.resolve_neg() if i in negs else v for i, v in enumerate(example_inputs)]
        return neg_inputs.resolving(_compile_dynamo_graph(gm, resolved), negs)
    why = _aot_drops_mutation(gm, example_inputs) or (
        f"{writes}: the graph may write into a lazily negated input view; it runs eagerly" if negs else None)
    if why:
        log.info("autofuse: %s", why)
        RECORDS.append(GraphRecord(name=f"graph{next(_counter)}_untraced", kind="inference", gm=gm, mode="eager",
                                   reason=why))
        return gm.forward
    from . import addc_rewrite, attention_rewrite

    addc_rewrite.rewrite(gm)  # Dynamo's addcmul_ / addcdiv_ / addcdiv parts -> the whole op (eager's rounding)
    attention_rewrite.rewrite(gm)  # written-out attention -> one SDPA call (attention_rewrite.py; infer10)
    backend = aot_autograd(fw_compiler=wrap(fw), bw_compiler=wrap(bw), inference_compiler=wrap(inference),
                           decompositions=decomposition_table(), keep_inference_input_mutations=True)
    try:
        with (aot_cache.cache_context() if use_cache else contextlib.nullcontext()):
            return backend(gm, example_inputs)
    except Exception as e:  # noqa: BLE001 - AOTAutograd/decomposition failures must not break the user's program
        from torch._dynamo.exc import TorchDynamoException

        if strict() or isinstance(e, TorchDynamoException):  # Dynamo's own control flow (restarts, skips) passes
            raise
        what = STAGE_MESSAGES.get(getattr(e, "autofuse_stage", None), STAGE_MESSAGES[None])
        msg = f"autofuse: {what} ({type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}); " \
              "it runs eagerly (AUTOFUSE_STRICT=1 raises instead)"
        warnings.warn(msg)  # once: the "autofuse" logger gets it at INFO (a WARNING reached stderr a second time)
        log.info(msg)
        RECORDS.append(GraphRecord(name=f"graph{next(_counter)}_untraced", kind="inference", gm=gm, mode="eager",
                                   reason=msg))
        return gm.forward


def _register() -> None:
    """Register the backend with Dynamo under the name "autofuse" (idempotent)."""
    try:
        from torch._dynamo.backends.registry import _BACKENDS, _COMPILER_FNS, register_backend

        # When Dynamo found our entry point first, it registers the function itself after importing this module.
        if "autofuse" not in _BACKENDS and "autofuse" not in _COMPILER_FNS:
            register_backend(autofuse_backend, name="autofuse")
    except Exception as e:  # pragma: no cover - registry internals moved
        warnings.warn(f"autofuse: could not register the Dynamo backend: {e}")


def _release_at_exit() -> None:
    """Drop compiled graphs before interpreter teardown, so C++ objects are freed while the extension is alive."""
    RECORDS.clear()
    try:
        torch._dynamo.reset()
        from . import native

        native._KERNELS.clear()
    except Exception:  # noqa: BLE001 - best effort at exit
        pass


_register()
atexit.register(_release_at_exit)
