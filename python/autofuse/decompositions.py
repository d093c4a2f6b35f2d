"""The decomposition table the backend hands to AOTAutograd.

Starting point: PyTorch's core-ATen decompositions (``torch._decomp.core_aten_decompositions``), which lower composite
ops to the core ATen opset. On top of that we decompose the memory-bound composites that the core opset keeps whole
(softmax, log-softmax, layer norm, group norm, GELU, and their backwards), so they reach the lowering as pointwise ops
plus reductions that the fusion pass turns into single kernels. Compute-bound ops (mm, bmm, addmm, convolution,
embedding and its backward, scaled-dot-product attention's fused CPU kernel) are taken out of the table so they stay
whole and run as ATen calls.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Dict

import torch
from torch._decomp import core_aten_decompositions, get_decompositions

aten = torch.ops.aten

#: Composites decomposed in addition to the core-ATen table (so that they fuse).
EXTRA_DECOMPOSED = [
    aten._softmax, aten._log_softmax, aten._softmax_backward_data, aten._log_softmax_backward_data,
    aten.native_layer_norm, aten.native_layer_norm_backward, aten.native_group_norm, aten.native_group_norm_backward,
    aten.gelu, aten.gelu_backward, aten.silu, aten.silu_backward, aten._safe_softmax, aten.logsumexp,
    aten.std, aten.std_mean, aten.hardtanh, aten.hardswish, aten.hardsigmoid, aten.leaky_relu, aten.elu, aten.mish,
    aten.native_batch_norm, aten._native_batch_norm_legit_functional,
]

# Not aten._native_batch_norm_legit_no_training: its decomposition calls the mutating aten._native_batch_norm_legit,
# which AOTAutograd rejects in an inference graph ("expected an entirely functional graph"; BatchNorm in eval mode).
# The core table's own entry for it stays.

#: Ops kept whole even if a table would decompose them (compute-bound or not expressible as pointwise/reductions).
KEEP_WHOLE = [
    aten.mm, aten.bmm, aten.addmm, aten.convolution, aten.convolution_backward, aten.embedding,
    aten.embedding_dense_backward, aten._scaled_dot_product_flash_attention_for_cpu, aten.native_dropout,
]

#: Ops whose core-ATen decomposition drops eager's range check of a Python scalar: ``masked_fill(x, m, 3e38)`` on
#: float16 became ``where(m, 3e38, x)`` (inf; eager raises). Kept whole, it reaches the lowering, whose
#: ``check_scalar_fits`` leaves an out-of-range value to ATen, which raises (review 16b). Likewise masked_fill with a
#: 0-d tensor value, which eager checks at run time (``value.item()``): its decomposition converted the value without
#: a check (int8 masked_fill(m, tensor(300)) was 44; review 16c).
KEEP_FOR_SCALAR_CHECKS = [aten.masked_fill.Scalar, aten.masked_fill.Tensor]

#: Ops whose decomposition rounds differently from eager's kernel: torch's addcmul decomposition is ``x + v * t1 *
#: t2`` with the product rounded, where eager's CPU kernel rounds once (a fused multiply-add, ``fma(v * t1, t2, x)``;
#: 10-30 % of float32 / float64 elements differed); lerp's is ``coeff * (end - start) + base``, eager's is
#: ``fma(coeff, end - start, base)`` (10-39 %). Kept whole, they reach their lowerings (lowering_pointwise._addcmul,
#: _lerp), which build the IR's ``fma``; lerp's backward is then autograd's formula for the whole op, as in eager.
KEEP_FOR_ROUNDING = [aten.addcmul, aten.addcmul_, aten.lerp, aten.lerp_]

#: c10's ScalarType names, as eager's error messages spell dtypes.
_SCALAR_TYPE_NAMES = {torch.int32: "Int", torch.int16: "Short", torch.int8: "Char", torch.bool: "Bool",
                      torch.float32: "Float", torch.float64: "Double", torch.float16: "Half", torch.bfloat16: "BFloat16"}


def _target_dtype_checked(decomp: Callable) -> Callable:
    """nll_loss's decomposition with eager's check of the target dtype (int64 or uint8), which the decomposition leaves
    out: an int32 target must raise as in eager (RuntimeError), not give a loss."""

    def run(self, target, *args, **kwargs):
        if target.dtype not in (torch.int64, torch.uint8):
            name = _SCALAR_TYPE_NAMES.get(target.dtype, str(target.dtype))
            raise RuntimeError(f"expected target dtype to be Long or Byte, but got {name}")
        return decomp(self, target, *args, **kwargs)

    return run


def _nll_loss_forward_kept(fallback: Callable) -> Callable:
    """nll_loss_forward for [N, C] input with every per-row value kept as [N, 1] (the keepdim form), so the gather of
    the target's log-probability, the ignore mask, the batch sum and the count of valid targets all live in the
    [N, C] row kernel's iteration space: cross-entropy's forward fuses into one kernel with its log-softmax, where
    torch's decomposition squeezes to [N] (a value the fusion pass cannot mix with the rows: NF-KEPT-MIX).

    Shapes: self [N, C] (other ranks go to ``fallback``, torch's decomposition); target [N] int64; weight [C] or
    None. Returns (output, total_weight): output [N] for reduction="none", else []; total_weight [] (0 for "none").
    The same operations as torch's decomposition (torch/_decomp/decompositions.py, _nll_loss_forward) in the same
    order, so the values are the same."""

    def run(self, target, weight, reduction, ignore_index):
        if self.dim() != 2:
            return fallback(self, target, weight, reduction, ignore_index)
        t = target.unsqueeze(1)
        valid = t != ignore_index
        safe = torch.where(valid, t, 0)
        x = self if weight is None else self * weight.view(1, -1)
        result = torch.where(valid, -torch.gather(x, 1, safe), 0)
        if reduction == 0:  # none (torch's Reduction enum: none 0, mean 1, sum 2)
            return result.squeeze(1), self.new_full((), 0.0)
        if weight is not None:
            wsum = torch.where(valid, torch.gather(weight.view(1, -1).expand(self.shape), 1, safe), 0)
            total = wsum.sum()
        else:
            total = valid.sum().to(self)
        result = result.sum()
        return (result if reduction == 2 else result / total), total

    return run


def _nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight):
    """nll_loss(2d)_backward as a select rather than torch's ``scatter(zeros, -1.0) * grad``: same values, and eager's
    +0.0 wherever eager writes nothing (off-target classes, ignored rows), where the product gives -0.0 for a
    negative or zeroed gradient.

    Shapes: self [C], [N, C] or [N, C, H, W]; target [] / [N] / [N, H, W] (int64); grad_output [] for mean/sum, the
    target's shape for reduction="none"; weight [C] or None; total_weight []. Returns self's shape and dtype. The
    target's value at the selected class is ``-(grad_output [/ total_weight]) * weight[target]``, eager's operations
    in eager's order (ATen LossNLL.cpp / LossNLL2d.cpp); shape errors are left to the forward, which raised first."""
    channel_dim = 0 if self.dim() < 2 else 1
    if reduction == 1:  # mean (torch's Reduction enum: none 0, mean 1, sum 2)
        grad_output = grad_output / total_weight
    if self.dim() == 1 and target.dim() > 0:
        target = target[0]  # eager's kernel reads only target[0] when self has no batch dim
    target = target.unsqueeze(channel_dim)
    if self.dim() > grad_output.dim() > 0:
        grad_output = grad_output.unsqueeze(channel_dim)
    # [C] broadcasts as it is when the class axis is the last one; a reshape (a host view, which ends a fusion
    # group) only for [N, C, H, W]
    classes_shape = [self.shape[channel_dim]] + [1] * (self.dim() - channel_dim - 1)
    classes = torch.arange(self.shape[channel_dim], device=self.device)
    if len(classes_shape) > 1:
        classes = classes.reshape(classes_shape)
    if weight is not None:
        grad_output = grad_output * (weight.reshape(classes_shape) if len(classes_shape) > 1 else weight)
    hit = (classes == target) & (target != ignore_index)
    return torch.where(hit, -grad_output, torch.zeros((), dtype=self.dtype, device=self.device))


@lru_cache(maxsize=1)
def decomposition_table() -> Dict[torch._ops.OperatorBase, Callable]:
    """The table: core ATen decompositions + EXTRA_DECOMPOSED - KEEP_WHOLE - KEEP_FOR_ROUNDING -
    KEEP_FOR_SCALAR_CHECKS (computed once); nll_loss entries check
    the target dtype as eager does, and its backward keeps eager's +0.0 (``_nll_loss_backward``)."""
    table = dict(core_aten_decompositions())
    table.update(get_decompositions(EXTRA_DECOMPOSED))
    if aten.nll_loss_forward.default in table:
        table[aten.nll_loss_forward.default] = _nll_loss_forward_kept(table[aten.nll_loss_forward.default])
    for op in (aten.nll_loss_forward.default, aten.nll_loss2d_forward.default):
        if op in table:
            table[op] = _target_dtype_checked(table[op])
    for op in (aten.nll_loss_backward.default, aten.nll_loss2d_backward.default):
        table[op] = _nll_loss_backward
    whole = set()
    for packet in KEEP_WHOLE + KEEP_FOR_ROUNDING:
        for name in packet.overloads():
            whole.add(getattr(packet, name))
    whole.update(KEEP_FOR_SCALAR_CHECKS)
    for op in list(table):
        if op in whole:
            del table[op]
    return table
