"""IR bindings: the Graph builder, printing, parsing (round trip), verification errors as Python exceptions."""

import pytest

import autofuse
from autofuse import DType, Graph, IRError, ParseError, VerifyError

SOFTMAX = """\
graph softmax(%x: f32[s0, s1]) {
  %m = amax(%x) {axes=[1], keepdim=true} : f32[s0, 1]
  %d = sub(%x, %m) : f32[s0, s1]
  %e = exp(%d) : f32[s0, s1]
  %s = sum(%e) {axes=[1], keepdim=true} : f32[s0, 1]
  %out = div(%e, %s) : f32[s0, s1]
  return %out
}
"""


def build_softmax():
    g = Graph("softmax")
    x = g.add_input("x", "f32", ["s0", "s1"])
    m = g.add("amax", [x], {"axes": [1], "keepdim": True}, name="m")
    d = g.add("sub", [x, m], name="d")
    e = g.add("exp", [d], name="e")
    s = g.add("sum", [e], {"axes": [1], "keepdim": True}, name="s")
    out = g.add("div", [e, s], name="out")
    g.set_outputs([out])
    return g


def test_builder_prints_the_text_form():
    assert str(build_softmax()) == SOFTMAX


def test_parse_print_round_trip():
    g = autofuse.parse(SOFTMAX)
    assert str(g) == SOFTMAX
    assert str(autofuse.parse(str(g))) == SOFTMAX


def test_introspection():
    g = build_softmax()
    assert len(g) == 6 and g.name == "softmax"
    assert g.inputs == [0] and g.outputs == [5]
    assert g.symbols == ["s0", "s1"]
    assert g.find("e") == 3 and g.find("nope") is None
    n = g.node(1)
    assert (n.op, n.category, n.inputs, n.dtype, n.shape) == ("amax", "reduce", [0], DType.float32, ["s0", 1])
    assert n.attrs == {"axes": [1], "keepdim": True}
    assert [n.name for n in g.nodes] == ["x", "m", "d", "e", "s", "out"]
    with pytest.raises(IndexError):
        g.node(6)


def test_symbolic_sizes_as_strings_and_strides():
    g = Graph("f")
    x = g.add_input("x", DType.float16, ["s0*2", 3], strides=[1, "s0*2"])
    y = g.add("reshape", [x], {"shape": ["s0", 6]})
    g.set_outputs([y])
    assert g.node(x).shape == [autofuse.parse_expr("2*s0"), 3]
    assert isinstance(g.node(x).shape[0], str)
    assert g.node(y).shape == ["s0", 6]
    text = str(g)
    assert "strides [1, " in text
    assert str(autofuse.parse(text)) == text
    assert autofuse.parse_expr("s0 + s0 + 2*3") == autofuse.parse_expr("6 + 2*s0")
    assert "6" in autofuse.parse_expr("s0 + s0 + 2*3")
    assert autofuse.parse_expr("4*5") == 20


@pytest.mark.parametrize("dtype", ["f32", "float32", DType.float32])
def test_dtype_spellings(dtype):
    torch = pytest.importorskip("torch")
    g = Graph()
    assert g.node(g.add_input("a", dtype, [2])).dtype == DType.float32
    assert g.node(g.add_input("b", torch.bfloat16, [2])).dtype == DType.bfloat16
    with pytest.raises(ValueError, match="unknown dtype 'f33'"):
        g.add_input("c", "f33", [2])


def test_every_attribute_kind_converts():
    g = Graph()
    x = g.add_input("x", "i32", [4, "s0"])
    c = g.add("constant", [], {"value": 2.5, "dtype": "f32"})
    assert g.node(c).attrs == {"value": 2.5, "dtype": DType.float32}
    f = g.add("full", [], {"value": 7, "dtype": "i64", "shape": [2, "s0"]})
    assert g.node(f).attrs["value"] == 7 and g.node(f).shape == [2, "s0"]
    s = g.add("slice", [x], {"axis": 1, "start": 1, "stop": "s0", "step": 2})
    assert g.node(s).attrs["stop"] == "s0"
    cl = g.add("clamp", [x], {"min": -1})
    assert g.node(cl).attrs == {"min": -1}
    e = g.add("extern", [x], {"name": "aten.mm", "dtype": "f32", "shape": [4, 4]})
    assert g.node(e).attrs["name"] == "aten.mm" and g.node(e).category == "extern"


def test_builder_errors_name_the_node_and_expectation():
    g = Graph()
    x = g.add_input("x", "f32", [4])
    i = g.add_input("i", "i64", [4])
    with pytest.raises(IRError, match=r"add.*dtype") as e:
        g.add("add", [x, i], name="bad")
    assert "%bad" in str(e.value)
    with pytest.raises(IRError, match="not defined before it"):
        g.add("exp", [17])
    with pytest.raises(IRError, match="already exists"):
        g.add_input("x", "f32", [4])
    with pytest.raises(ValueError, match="no attribute named 'axis'; its attributes are: axes, keepdim"):
        g.add("sum", [x], {"axis": [0], "keepdim": False})
    with pytest.raises(TypeError, match="attribute 'keepdim': expected a bool"):
        g.add("sum", [x], {"axes": [0], "keepdim": 1})
    with pytest.raises(ValueError, match="unknown op 'frobnicate'"):
        g.add("frobnicate", [x])


def test_ints_outside_int64_are_refused_by_name():
    """Review (session 14): these raised RuntimeError('std::bad_cast'), naming neither the attribute nor the problem."""
    g = Graph()
    x = g.add_input("x", "f32", [4])
    with pytest.raises(OverflowError, match="clamp: attribute 'max': integer 1180591620717411303424 does not fit in "
                                            "int64"):
        g.add("clamp", [x], {"max": 2**70})
    with pytest.raises(OverflowError, match="sum: attribute 'axes': integer -1180591620717411303424 does not fit"):
        g.add("sum", [x], {"axes": [-2**70], "keepdim": True})
    with pytest.raises(OverflowError, match="slice: attribute 'step': integer 9223372036854775808 does not fit"):
        g.add("slice", [x], {"axis": 0, "start": 0, "stop": 4, "step": 2**63})
    with pytest.raises(OverflowError, match="iota: attribute 'length': size 9223372036854775808 does not fit"):
        g.add("iota", [], {"length": 2**63, "start": 0, "step": 1, "dtype": "i64"})
    with pytest.raises(OverflowError, match="shape: size 9223372036854775808 does not fit in int64"):
        g.add_input("y", "f32", [2**63])
    with pytest.raises(OverflowError, match="strides: size -9223372036854775809 does not fit in int64"):
        g.add_input("z", "f32", [4], strides=[-2**63 - 1])
    # The int64 limits themselves are fine.
    g.add("clamp", [x], {"max": 2**63 - 1, "min": -2**63})


def test_parse_error_carries_line_and_column():
    bad = "graph f(%x: f32[4]) {\n  %y = exp(%nope)\n  return %y\n}\n"
    with pytest.raises(ParseError) as e:
        autofuse.parse(bad, "model.af")
    err = e.value
    assert isinstance(err, IRError) and isinstance(err, ValueError)
    assert (err.file, err.line) == ("model.af", 2)
    assert err.col == bad.splitlines()[1].index("%nope") + 1
    assert str(err).startswith(f"model.af:2:{err.col}: error: ")
    assert "%nope" in err.message


def test_verify_error_surfaces_with_message():
    g = Graph()
    x = g.add_input("x", "f32", [4])
    g.set_outputs([x])
    autofuse.verify(g)
    h = Graph("has space")
    h.add_input("x", "f32", [4])
    with pytest.raises(VerifyError) as e:
        autofuse.verify(h)
    assert e.value.node == -1 and "has space" in str(e.value)


def test_op_table_is_exposed():
    names = autofuse.op_names()
    assert len(names) == len(set(names)) and "where" in names
    schema = autofuse.op_schema("var")
    assert schema["category"] == "reduce" and (schema["min_inputs"], schema["max_inputs"]) == (1, 1)
    assert ("correction", "int", False) in schema["attrs"]
    assert autofuse.op_schema("concat")["max_inputs"] == -1


@pytest.mark.parametrize("op", ["constant", "full"])
@pytest.mark.parametrize("value,dtype", [("1e20", "i32"), ("nan", "i64"), ("-1e30", "i8"), ("inf", "u8"),
                                         ("3e9", "i32"), ("1e19", "i64"), ("300", "u8"), ("127.5", "i8")])
def test_integer_constant_eager_cannot_convert_is_refused(op, value, dtype):
    """Review (fixrepros/const_out_of_range.py): these verified, then the kernel and the interpreter converted them
    differently (1e20 as i32: 0 against -2147483648). Eager's torch.full raises for each; the parse error names the
    node, the value and the dtype, at the node's line."""
    shape = ", shape=[s0]" if op == "full" else ""
    text = (f"graph f(%x: {dtype}[s0]) {{\n  %c = {op}() {{value={value}, dtype={dtype}{shape}}}\n"
            f"  %y = add(%x, %c)\n  return %y\n}}\n")
    with pytest.raises(ParseError) as e:
        autofuse.parse(text, "c.af")
    assert e.value.line == 2 and f"%c = {op}(): value=" in e.value.message
    assert f" does not fit {dtype}; expected " in e.value.message


def test_integer_constant_eager_truncates_is_taken():
    """A fractional value in range truncates toward zero, as eager's torch.full((2,), 2.5, dtype=torch.int32) does."""
    import torch
    g = autofuse.parse("graph f(%x: i32[s0]) {\n  %c = constant() {value=-2.5, dtype=i32}\n  %y = add(%x, %c)\n"
                       "  return %y\n}\n")
    assert autofuse.interpret(g, [torch.zeros(3, dtype=torch.int32)])[0].tolist() == [-2, -2, -2]


def test_interpreter_prod_overflow_then_zero_is_nan():
    """Review (fixrepros/interp_prod_overflow_zero.py): the interpreter multiplied f32 in f64 and gave 0 for a row whose
    product overflows f32 before a zero; the kernel and eager give NaN (inf * 0)."""
    import torch
    g = autofuse.parse("graph g(%x: f32[s0, s1]) {\n  %p = prod(%x) {axes=[1], keepdim=false}\n  return %p\n}")
    x = torch.full((2, 130), 30.0)
    x[:, -3] = 0.0
    assert torch.isnan(x.prod(1)).all()  # eager
    assert torch.isnan(autofuse.interpret(g, [x])[0]).all()
