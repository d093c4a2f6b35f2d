"""Lowering of a functional ATen FX graph (AOTAutograd's output) to the Autofuse IR.

The lowering walks the FX graph once, in order. Each ATen call either has a lowering in ``LOWERINGS`` (registered by
the ``lowering_*`` modules, one per op family) that appends IR nodes, or becomes an ``extern`` node: an ATen call the
runner makes as-is between kernels. The result, ``LoweredGraph``, is a plain Python list of IR nodes (``LNode``) that
knows, for every node, the FX node it stands for; ``to_core()`` builds the C++ ``autofuse._core.Graph`` from it.

Type promotion: IR binary ops take inputs of one dtype, so the lowering computes eager's common dtype
(``torch.result_type`` semantics: dimensioned tensors > zero-dim tensors > Python scalars, by category) and inserts
``cast`` nodes; Python scalars become ``constant`` nodes of that dtype. Every lowered value is checked against the FX
node's own metadata (dtype and shape) so a lowering bug shows up here, not as wrong numbers later.

Fallbacks are collected as ``(op, reason)`` pairs and logged once per process at INFO level on the "autofuse" logger:
``Fallback aten.<op>: <reason>``.
"""

from __future__ import annotations

import logging
import math
import operator
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import sympy

import torch
import torch.fx

from .lowering_shapes import SizeCanon, SymbolTable, UnsupportedSize, as_size, broadcast_sizes, canonical_sizes

log = logging.getLogger("autofuse")

#: torch dtype -> IR dtype name (src/autofuse/ir/dtype.h).
DTYPE_TO_IR = {
    torch.bool: "bool", torch.uint8: "u8", torch.int8: "i8", torch.int16: "i16", torch.int32: "i32",
    torch.int64: "i64", torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64",
}


class Unsupported(Exception):
    """Raised by a lowering function when it cannot lower a node; the message is the fallback reason."""


def check_scalar_fits(value, dtype: torch.dtype, what: str, floats: bool = True) -> None:
    """Raise Unsupported where eager's scalar range check raises for ``value`` converted to ``dtype``.

    For the ops whose Python scalar eager converts to the op's dtype with a range check (clamp bounds, fill and
    masked_fill values, add/sub's alpha, where's scalars, pow's exponent) eager raises ``RuntimeError: value cannot
    be converted to type ... without overflow``; a kernel would wrap or saturate silently, so the op stays with ATen,
    which raises that error. The ranges are eager's (measured, torch 2.13): signed integers their own, unsigned
    integers [-max, max] (-1 on uint8 is 255), float dtypes a finite value beyond +-finfo.max (inf and NaN pass).
    A float value on an integer dtype is checked as in c10's ``overflows<int, double>`` (below).
    ``floats=False`` skips the float-dtype check, for the callers whose eager op has none there: where's scalar
    with a float16 / bfloat16 result (it overflows to inf; a float32 result raises, also for an integer tensor with a
    float scalar: where(c, x, s) reaches the lowering as where(c, x, scalar_tensor(s, dtype)), and eager's
    scalar_tensor checks float32 but not float16 / bfloat16) and pow's exponent on float32 / float64 (kept in
    double). add, mul, comparisons and bitwise ops take out-of-range scalars without a check in eager; they wrap
    alike here (``scalar_as``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or dtype == torch.bool:
        return
    if dtype.is_floating_point:
        if floats and math.isfinite(value) and abs(value) > torch.finfo(dtype).max:
            raise Unsupported(f"{what} {value} is out of range for {dtype} (eager raises an overflow error)")
        return
    info = torch.iinfo(dtype)
    if isinstance(value, float):
        # c10's overflows<int, double>: NaN and +-inf, and a value below the dtype's lowest (0 for unsigned: -0.5 on
        # uint8 raises) or above its max (127.5 on int8 raises, on int32 it is 127; review 16c). c10 compares as
        # doubles, Python exactly: they differ only for 2.0**63 on int64, which eager accepts (int64's max is 2**63
        # as a double) and converts with undefined behaviour; left to ATen too
        if math.isnan(value) or not info.min <= value <= info.max:
            raise Unsupported(f"{what} {value} does not fit {dtype} (eager raises an overflow error)")
        return
    lo = -info.max if info.min == 0 else info.min
    if not lo <= value <= info.max:
        raise Unsupported(f"{what} {value} does not fit {dtype} (eager raises an overflow error)")


@dataclass
class LNode:
    """One IR node. ``op`` is the IR op name; ``inputs`` index LoweredGraph.nodes; ``shape`` holds ints and sympy
    expressions (Dynamo's symbols); ``fx`` is the FX node an input or extern node stands for, ``item`` the tuple index
    an extern ``getitem`` takes."""

    op: str
    inputs: List[int]
    attrs: Dict[str, Any]
    dtype: torch.dtype
    shape: Tuple[Any, ...]
    name: str
    fx: Optional[torch.fx.Node] = None
    item: Optional[int] = None


@dataclass
class LoweredGraph:
    """The IR of one FX graph plus what the runner needs to call it (see program.py)."""

    nodes: List[LNode]
    #: per FX output: ("node", lnode index) | ("sym", python expr) | ("const", value)
    outputs: List[Tuple[str, Any]]
    symbols: SymbolTable
    #: IR symbol name -> Python expression over ``args`` reading it at run time ("args[1].shape[0]")
    sym_sources: Dict[str, str]
    #: placeholder index -> LNode index of its IR input (tensor placeholders of an IR dtype only)
    arg_nodes: Dict[int, int]
    num_args: int
    fallbacks: List[Tuple[str, str]] = field(default_factory=list)
    lowered_ops: Counter = field(default_factory=Counter)
    #: FX node -> Python expression of a SymInt-valued node, over the IR symbol variables
    sym_nodes: Dict[torch.fx.Node, str] = field(default_factory=dict)
    #: LNode index of an IR input -> the constant tensor it holds (get_attr nodes)
    const_inputs: Dict[int, torch.Tensor] = field(default_factory=dict)
    #: FX node -> LNode index (or tuple of indices for multi-output lowerings)
    fx_value: Dict[torch.fx.Node, Any] = field(default_factory=dict)
    #: input mutations kept by AOTAutograd (``copy_(arg, value)`` at the end of the graph): (input LNode, value LNode);
    #: the value is computed like a graph output and the program copies it into the argument before returning
    mutations: List[Tuple[int, int]] = field(default_factory=list)
    #: index range checks of lowered gathers/scatters (lowering_gather.py): (index LNode, size of dim, dim, op); the
    #: index is materialized and the program raises eager's out-of-bounds error when it is outside [0, size)
    index_checks: List[Tuple[int, Any, int, str]] = field(default_factory=list)
    #: graph outputs eager returns as expanded views: output ``broadcast_to`` LNode -> its input, which the kernel
    #: writes and the program returns ``.expand(...)``ed (program_layout.expand_outputs; set by native.to_core)
    expand_outputs: Dict[int, int] = field(default_factory=dict)
    #: graph outputs rebuilt as views of another output's storage (lowering_unit_reshape.aliasing_outputs): the new
    #: LNode -> the FX node it returns (fx_value keeps the folded value that other nodes read)
    view_outputs: Dict[int, torch.fx.Node] = field(default_factory=dict)
    #: tensor placeholders of a dtype the IR lacks (float8, complex, ...) -> their index in ``args``: no IR value, but
    #: ATen fallbacks may read them (program.py passes ``args[i]``)
    opaque_args: Dict[torch.fx.Node, int] = field(default_factory=dict)

    def fake_values(self) -> Dict[int, Any]:
        """LNode index -> the fake tensor (FX ``meta["val"]``) of the first FX node it is the value of, including
        the outputs rebuilt as views."""
        vals: Dict[int, Any] = {}
        for node, v in list(self.fx_value.items()) + [(n, v) for v, n in self.view_outputs.items()]:
            if isinstance(v, int) and isinstance(node, torch.fx.Node):
                vals.setdefault(v, node.meta.get("val"))
        return vals

    def ir_text(self) -> str:
        """A readable listing of the IR nodes (debug dumps; the C++ printer gives the canonical text)."""
        lines = []
        for n in self.nodes:
            ins = ", ".join("%" + self.nodes[i].name for i in n.inputs)
            attrs = ", ".join(f"{k}={v}" for k, v in n.attrs.items())
            shape = ", ".join(str(self.symbols.ir(s)) for s in n.shape)
            lines.append(f"%{n.name}: {DTYPE_TO_IR[n.dtype]}[{shape}] = {n.op}({ins}{', ' if ins and attrs else ''}{attrs})")
        outs = ", ".join("%" + self.nodes[v].name if k == "node" else str(v) for k, v in self.outputs)
        lines.append(f"return {outs}")
        return "\n".join(lines)

    def extern_nodes(self) -> List[int]:
        return [i for i, n in enumerate(self.nodes) if n.op == "extern"]


#: ATen overload (or overload packet) -> lowering function(lowerer, fx node) -> LNode index or tuple of indices.
LOWERINGS: Dict[Any, Callable] = {}


def register(*targets):
    """Decorator registering a lowering for ATen overloads (``aten.add.Tensor``) or whole packets (``aten.add``)."""

    def deco(fn):
        for t in targets:
            LOWERINGS[t] = fn
        return fn

    return deco


#: The fallback reason of an op in EXTERN_BY_DESIGN (explain() counts these apart from fallbacks proper).
BY_DESIGN_REASON = "extern by design: compute-bound op stays an ATen call"
#: Ops that are ATen calls by design (the compute-bound part): reported as fallbacks with BY_DESIGN_REASON.
EXTERN_BY_DESIGN = {
    "mm", "bmm", "addmm", "baddbmm", "convolution", "convolution_backward", "embedding", "embedding_dense_backward",
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_flash_attention_for_cpu_backward",
}

_reported: set = set()


def op_name(target) -> str:
    """``aten.add`` for torch.ops.aten.add.Tensor; a readable name for other callables."""
    if isinstance(target, torch._ops.OpOverload):
        return f"{target.namespace}.{target._schema.name.split('::')[-1]}"
    return getattr(target, "__name__", str(target))


def report_fallback(op: str, reason: str) -> None:
    """Log ``Fallback <op>: <reason>`` at INFO once per process."""
    key = (op, reason)
    if key not in _reported:
        _reported.add(key)
        log.info("Fallback %s: %s", op, reason)


def lookup_lowering(target) -> Optional[Callable]:
    fn = LOWERINGS.get(target)
    if fn is None and isinstance(target, torch._ops.OpOverload):
        fn = LOWERINGS.get(target.overloadpacket)
    return fn


#: IR layout ops the program may run as views of their input (program.host_expr): outputs reached through them share
#: their input's storage.
IR_VIEW_OPS = frozenset({"reshape", "permute", "slice", "broadcast_to"})


def scalar_as(value, dtype: torch.dtype):
    """The Python value a scalar ``value`` (bool, int or float) becomes in ``dtype``, converted as torch converts a
    scalar: an int for integer and bool dtypes (0 / 1 for bool, truncation for floats), else a float rounded once to
    ``dtype``; a Python int within int64 goes int64 -> ``dtype`` directly, as eager's wrapped scalar does
    (``float(2**60 + 2**36 + 1)`` would round it twice on the way to float32: 2**60 instead of eager's
    2**60 + 2**37; review 16d). An int for an integer dtype is wrapped into it (two's complement) as eager converts
    the scalar of add, mul, comparisons and bitwise ops (``int32 + 2**40`` adds 0, ``uint8 + 300`` adds 44); the IR's
    verifier refuses constants outside the dtype. Values eager range-checks are the callers' to refuse first
    (``check_scalar_fits``); one eager cannot convert at all (beyond [-2**63, 2**64), a NaN / inf on an integer
    dtype) raises Unsupported, leaving the op to ATen, which raises."""
    if dtype == torch.bool:
        return int(bool(value))
    if not dtype.is_floating_point:
        if isinstance(value, float) and not math.isfinite(value):
            raise Unsupported(f"scalar {value} has no {dtype} value (eager raises an overflow error)")
        value = int(value)
        if not -(2**63) <= value < 2**64:
            raise Unsupported(f"scalar {value} is beyond int64 and uint64 (eager raises OverflowError)")
        bits = 8 * dtype.itemsize
        value &= (1 << bits) - 1
        return value - (1 << bits) if dtype.is_signed and value >= 1 << (bits - 1) else value
    if isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63:
        return float(torch.tensor(value, dtype=torch.int64).to(dtype).item())
    value = float(value)
    if dtype != torch.float64:
        value = float(torch.tensor(value, dtype=torch.float64).to(dtype).item())
    return value


class Lowerer:
    """Builds a LoweredGraph from an FX GraphModule; the helpers below are the API of the lowering functions."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        self.gm = gm
        self.g = LoweredGraph(nodes=[], outputs=[], symbols=SymbolTable(), sym_sources={}, arg_nodes={}, num_args=0)
        self._const_cache: Dict[Tuple[Any, torch.dtype], int] = {}
        #: input-independent nodes (sources and what is computed from them alone) by (op, inputs, attrs, dtype,
        #: shape): a repeated ``arange`` (a decoder's position ids, cache positions and mask) is built once
        self._source_cache: Dict[Tuple[Any, ...], int] = {}
        self._input_free: set = set()
        #: values fold_unit_reshape computed in place of a unit-dim reshape: folded value -> (reshaped value, shape);
        #: an output that must alias another output is rebuilt from them as a real view (lowering_unit_reshape)
        self.folded_reshapes: Dict[int, Tuple[int, Tuple[Any, ...]]] = {}
        from .lowering_unit_reshape import keep_views

        #: FX unit reshapes left as reshapes (not folded) so that an aliased graph output stays a view
        self.keep_views = keep_views(gm)

    # ---- building -----------------------------------------------------------------------------------------------
    def add(self, op: str, inputs: List[int], attrs: Dict[str, Any], dtype: torch.dtype, shape, **kw) -> int:
        """Append an IR node; returns its index. A node that depends on no graph input or extern (an ``iota``, a
        ``full``, arithmetic on them) and equals an earlier one (op, inputs, attributes, dtype, shape) is not added
        again: the earlier index is returned (every IR op but ``input`` and ``extern`` is a pure function)."""
        if dtype not in DTYPE_TO_IR:
            raise Unsupported(f"dtype {dtype} is not supported by Autofuse")
        key = None
        if not kw and op not in ("input", "extern") and all(i in self._input_free for i in inputs):
            key = (op, tuple(inputs), repr(sorted(attrs.items())), dtype, repr(tuple(shape)))
            if key in self._source_cache:
                return self._source_cache[key]
        idx = len(self.g.nodes)
        self.g.nodes.append(LNode(op, list(inputs), dict(attrs), dtype, tuple(shape), f"v{idx}", **kw))
        if key is not None:
            self._source_cache[key] = idx
            self._input_free.add(idx)
        return idx

    def node(self, i: int) -> LNode:
        return self.g.nodes[i]

    def cast(self, v: int, dtype: torch.dtype) -> int:
        """``v`` converted to ``dtype`` (no node when it already is)."""
        n = self.g.nodes[v]
        if n.dtype == dtype:
            return v
        if dtype not in DTYPE_TO_IR:
            raise Unsupported(f"conversion to {dtype}, a dtype the IR lacks")
        if n.op == "constant":
            return self.constant(n.attrs["value"], dtype)
        return self.add("cast", [v], {"dtype": DTYPE_TO_IR[dtype]}, dtype, n.shape)

    def constant(self, value, dtype: torch.dtype) -> int:
        """A 0-d constant of ``dtype`` holding ``value`` converted as torch converts a scalar (``scalar_as``). Stored
        already rounded, so folding a cast of the constant (``cast``) starts from the value ``dtype`` holds (review
        16d: ``2049 // tensor(1.5, f16)`` used 2049 where eager rounds it to 2048)."""
        if dtype not in DTYPE_TO_IR:
            raise Unsupported(f"a constant of {dtype}, a dtype the IR lacks")
        value = scalar_as(value, dtype)
        key = (repr(value), dtype)
        if key not in self._const_cache:
            self._const_cache[key] = self.add("constant", [], {"value": value, "dtype": DTYPE_TO_IR[dtype]}, dtype, ())
        return self._const_cache[key]

    def value(self, arg) -> int:
        """The IR value of an FX tensor argument; Unsupported if it has none (e.g. an unsupported dtype)."""
        if not isinstance(arg, torch.fx.Node):
            raise Unsupported(f"expected a tensor argument, got {type(arg).__name__}")
        v = self.g.fx_value.get(arg)
        if v is None or isinstance(v, tuple):
            raise Unsupported(f"argument {arg.name} is not a lowered tensor")
        return v

    def operand(self, arg, dtype: torch.dtype) -> int:
        """An elementwise operand converted to ``dtype``: a tensor gets a cast, a Python scalar becomes a constant."""
        if isinstance(arg, torch.fx.Node):
            val = arg.meta.get("val")
            if isinstance(val, torch.Tensor):
                return self.cast(self.value(arg), dtype)
            raise Unsupported(f"symbolic scalar argument {arg.name}")
        if isinstance(arg, (bool, int, float)):
            return self.constant(arg, dtype)
        raise Unsupported(f"argument of type {type(arg).__name__}")

    # ---- types ----------------------------------------------------------------------------------------------------
    @staticmethod
    def meta(arg):
        return arg.meta.get("val") if isinstance(arg, torch.fx.Node) else arg

    def shape_of(self, arg) -> Tuple[Any, ...]:
        if isinstance(arg, torch.fx.Node):
            return tuple(as_size(s) for s in arg.meta["val"].shape)
        return ()

    def promote(self, *args) -> torch.dtype:
        """Eager's common dtype of tensor and scalar arguments (torch.result_type semantics)."""
        probes = []
        for a in args:
            m = self.meta(a)
            if isinstance(m, torch.Tensor):
                probes.append(torch.empty([1] * m.dim(), dtype=m.dtype, device="meta"))
            elif isinstance(m, (bool, int, float)):
                probes.append(m)
            elif isinstance(m, torch.SymInt):
                probes.append(1)
            elif isinstance(m, torch.SymFloat):
                probes.append(1.0)
            else:
                raise Unsupported(f"cannot type-promote an argument of type {type(m).__name__}")
        if len(probes) == 1:
            p = probes[0]
            return p.dtype if isinstance(p, torch.Tensor) else torch.tensor(p).dtype
        result = torch.result_type(probes[0], probes[1])
        for p in probes[2:]:
            probe = torch.empty([1], dtype=result, device="meta")
            result = torch.result_type(probe, p) if isinstance(p, torch.Tensor) else torch.result_type(probe, p)
        return result

    # ---- the walk -----------------------------------------------------------------------------------------------
    def run(self) -> LoweredGraph:
        g = self.g
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                self._placeholder(node)
            elif node.op == "call_function":
                self._call(node)
            elif node.op == "output":
                self._output(node)
            elif node.op == "get_attr":
                self._get_attr(node)
            else:
                raise UnsupportedGraph(f"FX node kind {node.op} ({node.name})")
        return g

    def _placeholder(self, node: torch.fx.Node) -> None:
        g = self.g
        i = g.num_args
        g.num_args += 1
        val = node.meta.get("val")
        if isinstance(val, torch.SymInt):
            s = as_size(val, canonical=False)  # bind the symbol even where an earlier size stands for it
            if isinstance(s, sympy.Symbol):
                name = g.symbols.name(s)
                g.sym_sources.setdefault(name, f"args[{i}]")
            g.sym_nodes[node] = f"args[{i}]"
            return
        if not isinstance(val, torch.Tensor):
            return
        for d, s in enumerate(as_size(s, canonical=False) for s in val.shape):
            if isinstance(s, sympy.Symbol):
                g.sym_sources.setdefault(g.symbols.name(s), f"args[{i}].shape[{d}]")
        shape = tuple(as_size(s) for s in val.shape)
        if val.dtype not in DTYPE_TO_IR:
            g.opaque_args[node] = i  # no IR value; ATen fallbacks read it as args[i]
            return
        strides = tuple(as_size(s) for s in val.stride())
        attrs = {}
        if not _is_contiguous(shape, strides):
            attrs["strides"] = strides
        v = self.add("input", [], attrs, val.dtype, shape, fx=node)
        g.nodes[v].name = node.name
        g.arg_nodes[i] = v
        g.fx_value[node] = v

    def _get_attr(self, node: torch.fx.Node) -> None:
        """A constant tensor held by the GraphModule: an IR input whose value the program supplies itself."""
        obj = self.gm
        for part in str(node.target).split("."):
            obj = getattr(obj, part)
        if not isinstance(obj, torch.Tensor) or obj.dtype not in DTYPE_TO_IR:
            raise UnsupportedGraph(f"get_attr node {node.name} is not a tensor of an IR dtype")
        shape = tuple(int(s) for s in obj.shape)
        strides = tuple(int(s) for s in obj.stride())
        attrs = {} if _is_contiguous(shape, strides) else {"strides": strides}
        v = self.add("input", [], attrs, obj.dtype, shape, fx=node)
        self.g.nodes[v].name = node.name
        self.g.const_inputs[v] = obj
        self.g.fx_value[node] = v

    def _call(self, node: torch.fx.Node) -> None:
        g = self.g
        val = node.meta.get("val")
        if isinstance(val, (torch.SymInt, int)) and not isinstance(val, bool) and not isinstance(val, torch.Tensor):
            s = as_size(val)
            g.sym_nodes[node] = g.symbols.py(s)
            return
        if isinstance(val, (torch.SymFloat, torch.SymBool)):
            raise UnsupportedGraph(f"symbolic float/bool node {node.name}")
        if node.target is operator.getitem:
            src = g.fx_value.get(node.args[0])
            if isinstance(src, tuple):
                g.fx_value[node] = src[node.args[1]]
                return
            self._extern(node, None)
            return
        if node.target is torch.ops.aten.copy_.default and self._mutation(node):
            return
        fn = lookup_lowering(node.target)
        reason = None
        if fn is None:
            name = op_name(node.target).split(".")[-1]
            reason = (BY_DESIGN_REASON if name in EXTERN_BY_DESIGN
                      else "no Autofuse lowering for this op")
        else:
            try:
                out = fn(self, node)
                g.fx_value[node] = self._check(node, out)
                g.lowered_ops[op_name(node.target)] += 1
                return
            except (Unsupported, UnsupportedSize) as e:
                reason = str(e)
        self._extern(node, reason)

    def _mutation(self, node: torch.fx.Node) -> bool:
        """``copy_(placeholder, value)``: an input mutation (functionalization's write-back). Recorded in
        ``mutations`` instead of becoming an extern node, which fusion would drop as dead code (the write was lost:
        found by tests/python/test_hard_inputs.py). Returns False for other copies, which stay externs."""
        dst, src = node.args[0], node.args[1]
        if not isinstance(dst, torch.fx.Node) or dst.op != "placeholder" or not isinstance(src, torch.fx.Node):
            return False
        d, v = self.g.fx_value.get(dst), self.g.fx_value.get(src)
        if not isinstance(d, int) or not isinstance(v, int):
            return False
        dn, vn = self.g.nodes[d], self.g.nodes[v]
        if tuple(dn.shape) != tuple(vn.shape):
            return False
        if vn.dtype != dn.dtype:
            v = self.cast(v, dn.dtype)
        self.g.mutations.append((d, v))
        self.g.fx_value[node] = d
        return True

    def _check(self, node: torch.fx.Node, out):
        """Make the lowered value agree with torch's metadata for the node (dtype: cast; shape: adopt torch's)."""
        val = node.meta.get("val")
        if isinstance(out, tuple):
            return tuple(self._fix(o, m) for o, m in zip(out, val))
        return self._fix(out, val)

    def _fix(self, v: int, val) -> int:
        if not isinstance(val, torch.Tensor):
            raise Unsupported("lowered value has no tensor metadata")
        v = self.cast(v, val.dtype)
        n = self.g.nodes[v]
        shape = tuple(as_size(s) for s in val.shape)
        if len(n.shape) != len(shape):
            raise Unsupported(f"lowering produced rank {len(n.shape)}, torch says {len(shape)} (lowering bug)")
        if n.op != "input":
            n.shape = shape
        return v

    def _extern(self, node: torch.fx.Node, reason: Optional[str]) -> None:
        """Keep ``node`` as an ATen call. Its IR node depends on every lowered tensor among its arguments."""
        g = self.g
        name = op_name(node.target)
        if reason is not None:
            g.fallbacks.append((name, reason))
            report_fallback(name, reason)
        deps: List[int] = []
        for a in _flatten(node.args) + _flatten(list(node.kwargs.values())):
            if isinstance(a, torch.fx.Node):
                v = g.fx_value.get(a)
                if isinstance(v, int) and v not in deps:
                    deps.append(v)
                elif a.meta.get("val") is not None and isinstance(a.meta["val"], torch.Tensor) and v is None \
                        and a.op != "placeholder":
                    raise UnsupportedGraph(f"{node.name} reads {a.name}, a tensor of a dtype the IR lacks")
        val = node.meta.get("val")
        item = node.args[1] if node.target is operator.getitem else None
        tensors = [val] if isinstance(val, torch.Tensor) else [t for t in _flatten(val) if isinstance(t, torch.Tensor)]
        if not tensors:
            if val is None:
                raise UnsupportedGraph(f"{node.name} ({name}) returns no tensor")
            raise UnsupportedGraph(f"{node.name} ({name}) returns {type(val).__name__}")
        t = tensors[0]
        if t.dtype not in DTYPE_TO_IR:
            raise UnsupportedGraph(f"{node.name} ({name}) returns dtype {t.dtype}")
        shape = tuple(as_size(s) for s in t.shape)
        for s in shape:
            g.symbols.ir(s)  # raises UnsupportedSize early for sizes the IR cannot express
        v = self.add("extern", deps, {"name": name}, t.dtype, shape, fx=node, item=item)
        g.fx_value[node] = v

    def view_root(self, v: int) -> int:
        """The value whose storage ``v`` shares: ``v`` followed through IR view ops (IR_VIEW_OPS) to their input."""
        g = self.g
        while g.nodes[v].op in IR_VIEW_OPS:
            v = next(u for u in g.nodes[v].inputs if g.nodes[u].op != "constant")
        return v

    def _output(self, node: torch.fx.Node) -> None:
        from .lowering_unit_reshape import aliasing_outputs

        g = self.g
        seen: Dict[int, torch.fx.Node] = {}  # storage root of an output value -> the first FX node returning it
        args = _flatten(node.args[0]) if isinstance(node.args[0], (list, tuple)) else [node.args[0]]
        # outputs eager returns as views of another output's storage, rebuilt as views where a fold lost that
        as_views = aliasing_outputs(self, [g.fx_value.get(a) if isinstance(a, torch.fx.Node) else None for a in args])
        for a, view in zip(args, as_views):
            if isinstance(a, torch.fx.Node):
                if a in g.sym_nodes:
                    g.outputs.append(("sym", g.sym_nodes[a]))
                elif isinstance(g.fx_value.get(a), int):
                    v = view
                    if v != g.fx_value[a]:
                        g.view_outputs[v] = a
                    root = self.view_root(v)  # a view of a merged node shares its storage too
                    if root in self._input_free and seen.setdefault(root, a) is not a:
                        # two FX outputs whose storage add() merged (input-free duplicates, or views of them) are
                        # separate tensors in eager: a copy, appended directly (add() would merge the copies too)
                        n, one = g.nodes[v], self.constant(1, g.nodes[v].dtype)
                        g.nodes.append(LNode("mul", [v, one], {}, n.dtype, n.shape, f"v{len(g.nodes)}"))
                        v = len(g.nodes) - 1
                    g.outputs.append(("node", v))
                else:
                    raise UnsupportedGraph(f"output {a.name} has no value")
            else:
                g.outputs.append(("const", a))


class UnsupportedGraph(Exception):
    """The whole graph cannot go through Autofuse (the backend then runs it as-is)."""


def _is_contiguous(shape, strides) -> bool:
    expect = 1
    for s, st in zip(reversed(shape), reversed(strides)):
        if not (isinstance(s, int) and s == 1) and st != expect:
            return False
        expect = expect * s
    return True


def _flatten(x) -> list:
    if isinstance(x, (list, tuple)):
        out = []
        for e in x:
            out.extend(_flatten(e))
        return out
    return [x]


def lower(gm: torch.fx.GraphModule) -> LoweredGraph:
    """Lower an FX graph of functional ATen ops; raises UnsupportedGraph (or UnsupportedSize) if it cannot."""
    from . import lowering_gather, lowering_layout, lowering_pointwise, lowering_reduction  # noqa: F401  (register)
    from . import lowering_views  # noqa: F401  (register)

    try:
        with canonical_sizes(SizeCanon()):
            return Lowerer(gm).run()
    except UnsupportedSize as e:
        raise UnsupportedGraph(str(e)) from e
