"""The Python package: the extension imports, and the torch.compile backend entry point is registered."""

import importlib.metadata

import autofuse


def test_extension_exposes_dtypes_and_ops():
    names = [d.name for d in autofuse.DType]
    assert names == ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
    ops = autofuse.op_names()
    assert len(ops) == len(set(ops))
    assert {"add", "exp", "sum", "reshape", "extern"} <= set(ops)


def test_dynamo_backend_entry_point_is_registered():
    eps = importlib.metadata.entry_points(group="torch_dynamo_backends")
    assert [e.value for e in eps if e.name == "autofuse"] == ["autofuse.backend:autofuse_backend"]
