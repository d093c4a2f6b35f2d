"""Linear-layer weights pre-packed for oneDNN in inference graphs.

oneDNN's linear (``torch.ops.mkldnn._linear_pointwise``, extern_matmul.py) given a plain (N, K) weight reorders it
into its blocked layout on every call: a read and a write of the whole weight before the GEMM reads the copy. Packed
once with ``torch.ops.mkldnn._reorder_linear_weight`` and passed as that opaque tensor, the same op skips the
reorder. Measured on session 11's machine (AMD EPYC Zen 5, 2 threads, torch 2.13.0, medians of 20 calls, 12:15 UTC):
bf16 K x N = 768 x 2304 at M = 1 / 32 / 512 rows 78 / 181 / 1969 us plain against 43 / 144 / 1877 us packed,
3072 x 768 143 / 314 / 2881 against 46 / 179 / 2631, 768 x 50257 at M = 32 5.6 ms against 4.1 ms; fp32 768 x 2304
452 against 260 us at M = 32. The packed call gave the same bits as the plain one for bf16 on every shape, and for
fp32 except at M = 1 (another kernel; 2e-6 relative). Inductor does the same under ``freezing``
(torch/_inductor/fx_passes/mkldnn_fusion.py), which is off by default because it assumes the weights never change.

Here packing is on by default for inference graphs (compiled with grad disabled; a training graph's weights change
every optimizer step), for weights that are ``nn.Parameter`` objects (graph inputs; a tensor passed as a plain
argument or a buffer runs plain), and checked at every call: ``packed_weight(w)`` returns the cached packed copy
only while ``w`` has the same data pointer, the same version counter (bumped by every in-place op on it or on a view
of it: ``copy_``, ``w[i] = v`` under no_grad, ``load_state_dict``, optimizer steps, ``nn.init``) and the same
``_core.weight_stamp`` (64 eight-byte words sampled at evenly spaced places: catches a rewrite of the whole tensor
through ``.data`` or numpy, which the version counter does not see); otherwise it packs again. A weight read both
as ``linear(x, W)`` and as ``x @ W`` has one packed copy per orientation.

**Not seen** (the copy stays stale until ``clear()``): a write that bypasses the version counter, i.e. through
``.data``, numpy or ``torch.from_numpy`` of the same memory, or through another Parameter made from the same memory
with ``.data`` (old-style weight tying: each Parameter has its own counter), and that changes none of the 64 sampled
words: any write of less than about 1/64 of the tensor can be missed, e.g. one row of a vocabulary matrix. Set
``AUTOFUSE_PREPACK=0`` for models edited that way, or call ``autofuse.weight_pack.clear()`` after such an edit.
Reading every row or column instead was measured too costly (session 11: 400-500 us per call for GPT-2's
50257 x 768 bf16 head, 30-60 us for a 3072 x 768 layer weight out of cache, against 144-180 us GEMMs).

The cache holds a weak reference to each packed Parameter, and ``torch.utils.swap_tensors`` refuses to swap a
tensor that has one: ``swap_tensors(p, q)``, and ``Module.to`` / ``load_state_dict`` under
``torch.__future__.set_swap_module_params_on_conversion(True)``, raise "Cannot swap ... weakref" after a compiled
inference call until ``autofuse.weight_pack.clear()`` (or with ``AUTOFUSE_PREPACK=0``). The default ``Module.to``
and ``load_state_dict`` do not swap.

Memory: each packed weight is a second copy of it (same dtype), held as long as the parameter lives (a weak
reference keys the cache; a 2-layer GPT-2 with its full vocabulary: +110 MB in bf16, +201 MB in fp32). A weight
packed ``MAX_REPACKS`` times in a row with no call reusing the copy (rewritten before every call) is passed plain
from then on.
"""

from __future__ import annotations

import weakref
from typing import Dict, Optional, Tuple

import torch

from . import _core
from .env import env_bool
from .extern_matmul import mkldnn_op

#: ``torch.ops.mkldnn._reorder_linear_weight(w (N, K), batch_size) -> opaque packed weight``, or None without it.
REORDER = mkldnn_op("_reorder_linear_weight")

#: A weight packed this many times in a row without a call reusing the copy in between (rewritten before every
#: call) is passed plain from then on (its calls pay the reorder, not a pack and a cache update too). A weight
#: reloaded now and then, with calls in between, is packed again every time.
MAX_REPACKS = 8


class _Entry:
    """The packed copy of one weight and what it was packed from. Never changed once in the cache: a repack puts a
    new entry in its place (one dict store), so a thread reading the cache never sees a half-updated one."""

    __slots__ = ("ref", "ptr", "version", "stamp", "shape", "dtype", "packed", "repacks", "used")

    def __init__(self, ref: "weakref.ref", w: torch.Tensor, packed: torch.Tensor, repacks: int) -> None:
        self.ref = ref  # the weight; its death removes the entry
        self.ptr, self.version, self.stamp = w.data_ptr(), w._version, _core.weight_stamp(w)
        self.shape, self.dtype = w.shape, w.dtype  # a `.data` reshape or reinterpretation keeps the rest
        self.packed = packed
        self.repacks = repacks  # packs in a row without a call that reused the copy (MAX_REPACKS)
        self.used = False  # a call reused this copy (the one field written after the entry is made)


#: (id(weight), kn) -> its entry (a plain dict: a WeakKeyDictionary compares tensor keys with ``==``, elementwise)
_CACHE: Dict[Tuple[int, bool], _Entry] = {}
#: counters: packs (first packs and repacks), hits (calls that reused a packed copy), plain (calls passed plain)
STATS = {"packs": 0, "hits": 0, "plain": 0}


def enabled() -> bool:
    """Whether inference graphs pack their oneDNN linear weights: ``AUTOFUSE_PREPACK`` (default 1) and this torch
    has oneDNN's reorder op."""
    return REORDER is not None and env_bool("AUTOFUSE_PREPACK", True)


def _drop(key: Tuple[int, bool], ref: "weakref.ref") -> None:
    """Weak-reference callback: the weight ``ref`` pointed to died; forget its packed copy."""
    entry = _CACHE.get(key)
    if entry is not None and entry.ref is ref:
        del _CACHE[key]


def clear() -> None:
    """Drop every packed copy (the next call of each layer packs again) and zero STATS."""
    _CACHE.clear()
    for k in STATS:
        STATS[k] = 0


def packed_weight(w: torch.Tensor, kn: bool, rows: Optional[int]) -> torch.Tensor:
    """The weight to pass to oneDNN's linear for parameter ``w``: its packed copy, made or refreshed as the module
    doc says, or ``w`` itself (viewed as (N, K) when ``kn``) when it cannot be packed.

    ``w``: a contiguous (N, K) tensor, or (K, N) when ``kn`` (GPT-2's Conv1D weight), float32 or bfloat16; only
    an ``nn.Parameter`` is packed (a tensor passed as a plain argument, a buffer or an activation runs plain: they
    are more often rewritten in place through numpy or other untracked aliases).
    ``rows``: the expected number of input rows M (oneDNN's layout hint; None when not static). Never raises for a
    weight it cannot pack (a non-contiguous tensor, an inference tensor (made under ``torch.inference_mode``: it
    has no version counter), a failed reorder): it returns the plain weight."""
    key = (id(w), kn)  # one weight read both ways (linear(x, W) and x @ W) has two packed copies
    entry = _CACHE.get(key)
    if entry is not None and entry.ref() is not w:  # a dead weight's id reused before its callback ran
        entry = None
    if entry is not None:
        if (entry.ptr == w.data_ptr() and entry.version == w._version and entry.shape == w.shape
                and entry.dtype == w.dtype and w.is_contiguous()):
            if entry.stamp == _core.weight_stamp(w):
                STATS["hits"] += 1
                entry.used = True
                return entry.packed
    plain = w.t() if kn else w
    if entry is not None and entry.repacks >= MAX_REPACKS:
        STATS["plain"] += 1
        return plain
    if not isinstance(w, torch.nn.Parameter) or not w.is_contiguous() or w.dim() != 2 or w.is_inference():
        STATS["plain"] += 1  # an inference tensor has no version counter
        return plain
    try:
        packed = REORDER(plain, rows)
    except RuntimeError:
        STATS["plain"] += 1
        return plain
    if entry is None:
        ref = weakref.ref(w, lambda _r, key=key: _drop(key, _r))
        _CACHE[key] = _Entry(ref, w, packed, 0)
    else:
        _CACHE[key] = _Entry(entry.ref, w, packed, 0 if entry.used else entry.repacks + 1)
    STATS["packs"] += 1
    return packed
