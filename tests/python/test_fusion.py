"""Python face of fusion: autofuse._core.fuse on parsed IR, its groups and report (reason codes)."""

import os

import pytest

from autofuse import _core

pytestmark = pytest.mark.skipif(not hasattr(_core, "parse"),
                                reason="needs the IR bindings (parse / Graph) from bind_ir.cpp")

MODELS = os.path.join(os.path.dirname(__file__), "..", "ir", "models")


def _parse_file(name):
    with open(os.path.join(MODELS, name)) as f:
        return _core.parse(f.read())


def test_softmax_is_one_kernel_with_its_report():
    f = _core.fuse(_parse_file("softmax.af"))
    assert f.num_kernels == 1
    (k,) = f.groups
    assert k.kind == _core.GroupKind.Kernel
    assert k.reduce_axes == [1]
    assert k.domain == ["s0", "s1"]
    assert k.bytes_fused < k.bytes_unfused
    assert f.report.bytes_saved == f.report.total_bytes_unfused - f.report.total_bytes_fused
    assert "kernel(s)" in str(f.report)
    assert "graph k0" in str(f)


def test_transformer_block_reports_externs_layouts_and_savings():
    f = _core.fuse(_parse_file("transformer_block.af"))
    assert f.num_kernels == 6
    codes = set(f.report.refusal_codes())
    assert {"NF-EXTERN", "NF-LAYOUT"} <= codes
    kinds = [str(g.kind) for g in f.groups]
    assert any("Extern" in k for k in kinds) and any("Host" in k for k in kinds)
    assert f.report.bytes_saved > 0
    assert "digraph" in f.dot()


def test_options_change_the_partition():
    g = _parse_file("gelu_tanh.af")
    assert _core.fuse(g).num_kernels == 1
    small = _core.fuse(g, max_group_nodes=3)
    assert small.num_kernels > 1
    assert "NF-SIZE" in small.report.refusal_codes()
