"""The benchmark suite: memory-bound subgraphs that PyTorch users meet, written as plain torch functions.

Every pattern is a function of 2-D-ish "rows x features" tensors whose row count scales with the size class
(see harness.SIZE_TARGETS): the feature sizes stay fixed (1024 hidden, 8192 vocab, 256-long attention rows,
8 heads x 128 rotary dims), so a size class changes only how many rows stream through memory.

A pattern's ``make_inputs(rows, dtype, gen)`` builds its inputs for ``rows`` rows in ``dtype`` (float32 or
bfloat16; integer targets and boolean masks keep their own dtypes) from a seeded ``torch.Generator``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

HIDDEN = 1024  # feature size of the row-wise patterns
VOCAB = 8192  # classes of the cross-entropy pattern
ATTN = 256  # attention row length of the masked softmax
HEADS, HEAD_DIM = 8, 128  # rotary embedding layout [seq, heads, head_dim]


@dataclass(frozen=True)
class Pattern:
    """One benchmark subgraph.

    name: short identifier used in tables and JSON.
    fn: the plain torch function benchmarked (eager, and under torch.compile).
    make_inputs: (rows, dtype, generator) -> tuple of input tensors.
    doc: one line saying what the function computes and where users meet it.
    """

    name: str
    fn: Callable
    make_inputs: Callable[[int, torch.dtype, torch.Generator], tuple]
    doc: str


def _randn(gen: torch.Generator, shape, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(*shape, generator=gen, dtype=torch.float32).to(dtype)


def _rows_x(rows, dtype, gen):
    return (_randn(gen, (rows, HIDDEN), dtype),)


# --- pointwise and broadcasts -------------------------------------------------------------------------------

def pointwise_chain(x):
    return torch.sigmoid(x * 1.5 + 0.5) * torch.tanh(x) - x * 0.25


def bias_gelu_tanh(x, b):
    return F.gelu(x + b, approximate="tanh")


def bias_gelu_erf(x, b):
    return F.gelu(x + b)


def _x_bias(rows, dtype, gen):
    return (_randn(gen, (rows, HIDDEN), dtype), _randn(gen, (HIDDEN,), dtype))


def bcast_leading(x, w, b):
    return x * w + b


def _x_w_b(rows, dtype, gen):
    return (_randn(gen, (rows, HIDDEN), dtype), _randn(gen, (HIDDEN,), dtype), _randn(gen, (HIDDEN,), dtype))


def bcast_trailing(x, s, t):
    return x * s + t


def _x_col_col(rows, dtype, gen):
    return (_randn(gen, (rows, HIDDEN), dtype), _randn(gen, (rows, 1), dtype), _randn(gen, (rows, 1), dtype))


def transposed_input(a, bt):
    return a * 2.0 + bt


def _a_bt(rows, dtype, gen):
    # bt is a [rows, HIDDEN] view of a [HIDDEN, rows] contiguous tensor: a transposed (non-contiguous) input.
    return (_randn(gen, (rows, HIDDEN), dtype), _randn(gen, (HIDDEN, rows), dtype).t())


def swiglu(a, b):
    return F.silu(a) * b


def _two_rows(rows, dtype, gen):
    return (_randn(gen, (rows, HIDDEN), dtype), _randn(gen, (rows, HIDDEN), dtype))


def rotary(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def _rotary_inputs(rows, dtype, gen):
    # rows = sequence positions; cos/sin [seq, 1, head_dim] broadcast over heads, as in LLaMA-style decoders.
    pos = torch.arange(rows, dtype=torch.float32)[:, None]
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.float32) / HEAD_DIM))
    angles = torch.cat((pos * inv_freq, pos * inv_freq), dim=-1)[:, None, :]
    return (_randn(gen, (rows, HEADS, HEAD_DIM), dtype), angles.cos().to(dtype), angles.sin().to(dtype))


# --- norms and softmax ---------------------------------------------------------------------------------------

def bias_residual_layernorm(x, b, res, w, beta):
    h = x + b + res
    return h, F.layer_norm(h, (h.shape[-1],), w, beta, 1e-5)


def _bias_res_ln(rows, dtype, gen):
    return (_randn(gen, (rows, HIDDEN), dtype), _randn(gen, (HIDDEN,), dtype), _randn(gen, (rows, HIDDEN), dtype),
            _randn(gen, (HIDDEN,), dtype), _randn(gen, (HIDDEN,), dtype))


def rmsnorm(x, w):
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
    return w * h.to(x.dtype)


def _x_w(rows, dtype, gen):
    return (_randn(gen, (rows, HIDDEN), dtype), _randn(gen, (HIDDEN,), dtype))


def softmax(x):
    return torch.softmax(x, dim=-1)


def scaled_softmax(x):
    return torch.softmax(x * 0.125, dim=-1)


def masked_softmax(x, mask):
    return torch.softmax(x.masked_fill(mask, float("-inf")), dim=-1)


def _masked_inputs(rows, dtype, gen):
    # rows counts attention rows: scores [rows // ATTN, ATTN, ATTN] with a causal mask [ATTN, ATTN] broadcast.
    n = max(1, rows // ATTN)
    mask = torch.triu(torch.ones(ATTN, ATTN, dtype=torch.bool), diagonal=1)
    return (_randn(gen, (n, ATTN, ATTN), dtype), mask)


def cross_entropy(logits, target):
    return F.cross_entropy(logits, target)


def _ce_inputs(rows, dtype, gen):
    rows = max(1, rows // (VOCAB // HIDDEN))  # keep the logits about as large as the other patterns' inputs
    return (_randn(gen, (rows, VOCAB), dtype), torch.randint(0, VOCAB, (rows,), generator=gen))


# --- reductions ----------------------------------------------------------------------------------------------

def sum_inner(x):
    return x.sum(-1)


def sum_outer(x):
    return x.sum(0)


def mean_inner(x):
    return x.mean(-1)


def mean_outer(x):
    return x.mean(0)


def max_inner(x):
    return x.amax(-1)


def max_outer(x):
    return x.amax(0)


def var_mean(x):
    return torch.var_mean(x, dim=-1)


PATTERNS: list[Pattern] = [
    Pattern("pointwise_chain", pointwise_chain, _rows_x, "sigmoid(1.5x+0.5)*tanh(x)-0.25x: a 6-op elementwise chain"),
    Pattern("bias_gelu_tanh", bias_gelu_tanh, _x_bias, "gelu_tanh(x + b[H]): GPT-2 MLP epilogue"),
    Pattern("bias_gelu_erf", bias_gelu_erf, _x_bias, "gelu(x + b[H]) (erf form): BERT MLP epilogue"),
    Pattern("bias_residual_layernorm", bias_residual_layernorm, _bias_res_ln,
            "h = x + b + res; (h, layer_norm(h)): post-attention residual + LN (two outputs)"),
    Pattern("rmsnorm", rmsnorm, _x_w, "LLaMA RMSNorm: fp32 upcast, mean of squares, rsqrt, weight"),
    Pattern("softmax", softmax, _rows_x, "softmax over the last dim"),
    Pattern("scaled_softmax", scaled_softmax, _rows_x, "softmax(x * 0.125) over the last dim"),
    Pattern("masked_softmax", masked_softmax, _masked_inputs,
            "softmax(scores.masked_fill(causal[S,S], -inf)): attention probabilities"),
    Pattern("cross_entropy", cross_entropy, _ce_inputs, "log_softmax + nll (mean) over an 8192-class vocabulary"),
    Pattern("swiglu", swiglu, _two_rows, "silu(a) * b: LLaMA MLP gate"),
    Pattern("rotary", rotary, _rotary_inputs, "x*cos + rotate_half(x)*sin over [seq, heads, 128]"),
    Pattern("sum_inner", sum_inner, _rows_x, "sum over the last (contiguous) dim"),
    Pattern("sum_outer", sum_outer, _rows_x, "sum over the first (strided) dim"),
    Pattern("mean_inner", mean_inner, _rows_x, "mean over the last dim"),
    Pattern("mean_outer", mean_outer, _rows_x, "mean over the first dim"),
    Pattern("max_inner", max_inner, _rows_x, "amax over the last dim"),
    Pattern("max_outer", max_outer, _rows_x, "amax over the first dim"),
    Pattern("var_mean", var_mean, _rows_x, "var_mean over the last dim (two outputs)"),
    Pattern("bcast_leading", bcast_leading, _x_w_b, "x * w[H] + b[H]: operands broadcast over the leading dim"),
    Pattern("bcast_trailing", bcast_trailing, _x_col_col,
            "x * s[R,1] + t[R,1]: operands broadcast over the trailing dim"),
    Pattern("transposed_input", transposed_input, _a_bt, "a * 2 + b.t(): one input read through a transpose"),
]


def find(names: list[str] | None) -> list[Pattern]:
    """The patterns named in ``names`` (all when None or empty), in suite order.

    Raises ValueError naming any unknown pattern and listing the known ones.
    """
    if not names:
        return list(PATTERNS)
    known = {p.name: p for p in PATTERNS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown pattern(s) {unknown}; known: {sorted(known)}")
    return [p for p in PATTERNS if p.name in set(names)]
