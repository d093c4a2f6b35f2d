// Python bindings of the IR: DType, the exceptions, Node (read-only view), the Graph builder, parse, verify and the
// op table. Values are referred to by their ValueId (an int); sizes are ints or expression strings ("s0", "s0*2").
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "attr_convert.h"
#include "autofuse/ir/dtype.h"
#include "autofuse/ir/graph.h"
#include "autofuse/ir/ops.h"
#include "autofuse/ir/parser.h"
#include "autofuse/ir/printer.h"
#include "autofuse/ir/verifier.h"
#include "bindings.h"
#include "tensor_convert.h"

namespace autofuse::bindings {

namespace {

// Python exception classes: IRError(ValueError), and its subclasses ParseError and VerifyError.
PyObject* g_ir_error = nullptr;
PyObject* g_parse_error = nullptr;
PyObject* g_verify_error = nullptr;

// Raise `cls(message)` with extra attributes set on the instance.
void raise_with_attrs(PyObject* cls, const char* message,
                      std::initializer_list<std::pair<const char*, nb::object>> at) {
  nb::object inst = nb::steal(PyObject_CallOneArg(cls, nb::str(message).ptr()));
  if (!inst.is_valid()) return;  // the call raised; keep that error
  for (const auto& [k, v] : at) nb::setattr(inst, k, v);
  PyErr_SetObject(cls, inst.ptr());
}

void register_exceptions(nb::module_& m) {
  g_ir_error = PyErr_NewExceptionWithDoc("autofuse._core.IRError",
                                         "Malformed IR: the message names the node and what was expected.",
                                         PyExc_ValueError, nullptr);
  g_parse_error = PyErr_NewExceptionWithDoc("autofuse._core.ParseError",
                                            "Malformed IR text: 'FILE:LINE:COL: error: ...'; attributes file, line, "
                                            "col (1-based) and message.",
                                            g_ir_error, nullptr);
  g_verify_error = PyErr_NewExceptionWithDoc("autofuse._core.VerifyError",
                                             "A graph that breaks an IR rule; attribute node: the offending value id "
                                             "(-1 for a graph-level problem).",
                                             g_ir_error, nullptr);
  m.attr("IRError") = nb::handle(g_ir_error);
  m.attr("ParseError") = nb::handle(g_parse_error);
  m.attr("VerifyError") = nb::handle(g_verify_error);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const ParseError& e) {
      raise_with_attrs(g_parse_error, e.what(),
                       {{"file", nb::str(e.file().c_str())},
                        {"line", nb::int_(e.line())},
                        {"col", nb::int_(e.col())},
                        {"message", nb::str(e.message().c_str())}});
    } catch (const VerifyError& e) {
      raise_with_attrs(g_verify_error, e.what(), {{"node", nb::int_(e.node())}});
    } catch (const IRError& e) {
      PyErr_SetString(g_ir_error, e.what());
    }
  });
}

OpKind op_by_name_or_throw(const std::string& name) {
  if (std::optional<OpKind> k = op_by_name(name)) return *k;
  throw nb::value_error(("unknown op '" + name + "' (autofuse.op_names() lists the ops)").c_str());
}

nb::dict attrs_dict(const Attrs& attrs) {
  nb::dict d;
  for (const auto& [k, v] : attrs) d[k.c_str()] = from_attr(v);
  return d;
}

nb::dict op_schema(const std::string& name) {
  const OpInfo& info = op_info(op_by_name_or_throw(name));
  static const char* kKinds[] = {"int", "float", "bool", "scalar", "dtype", "ints", "shape", "expr", "str"};
  nb::list attrs;
  for (const AttrSpec& a : info.attrs) {
    attrs.append(nb::make_tuple(a.name, kKinds[static_cast<int>(a.kind)], a.optional));
  }
  nb::dict d;
  d["name"] = std::string(info.name);
  d["category"] = std::string(category_name(info.category));
  d["min_inputs"] = info.min_inputs;
  d["max_inputs"] = info.max_inputs;
  d["attrs"] = attrs;
  return d;
}

void bind_node(nb::module_& m) {
  nb::class_<Node>(m, "Node", "One IR node (a copy): op, inputs (value ids), attrs, dtype, shape, name.")
      .def_prop_ro(
          "op", [](const Node& n) { return std::string(n.info().name); }, "Op name, e.g. 'add'.")
      .def_prop_ro(
          "category", [](const Node& n) { return std::string(category_name(n.info().category)); },
          "'source', 'elementwise', 'broadcast', 'reduce', 'layout' or 'extern'.")
      .def_prop_ro(
          "inputs", [](const Node& n) { return n.inputs; }, "Value ids of the inputs.")
      .def_prop_ro(
          "attrs", [](const Node& n) { return attrs_dict(n.attrs); }, "Attributes as Python values.")
      .def_prop_ro("dtype", [](const Node& n) { return n.dtype; })
      .def_prop_ro(
          "shape", [](const Node& n) { return from_shape(n.shape); }, "Sizes: ints, or strings for symbolic sizes.")
      .def_prop_ro(
          "name", [](const Node& n) { return n.name; }, "Text-form name without '%'.")
      .def("__repr__", [](const Node& n) {
        return "<autofuse.Node %" + n.name + " = " + std::string(n.info().name) + " : " + print_type(n.type()) + ">";
      });
}

void bind_graph(nb::module_& m) {
  nb::class_<Graph>(m, "Graph", "A dataflow graph of tensor ops (the Autofuse IR); value ids are ints.")
      .def(nb::init<std::string>(), nb::arg("name") = "main")
      .def_prop_rw("name", &Graph::name, &Graph::set_name)
      .def(
          "add_input",
          [](Graph& g, const std::string& name, nb::handle dtype, nb::handle shape, nb::handle strides) {
            std::optional<std::vector<Expr>> st;
            if (!strides.is_none()) st = to_shape(strides, "strides");
            return g.add_input(name, to_dtype(dtype), to_shape(shape, "shape"), std::move(st));
          },
          nb::arg("name"), nb::arg("dtype"), nb::arg("shape"), nb::arg("strides") = nb::none(),
          "Add an input; shape and strides (elements, default contiguous) are lists of ints or strings like 's0'. "
          "Returns its value id. Raises IRError when the name is taken.")
      .def(
          "add",
          [](Graph& g, const std::string& op, std::vector<ValueId> inputs, nb::handle attrs, const std::string& name) {
            OpKind k = op_by_name_or_throw(op);
            return g.add(k, std::move(inputs), to_attrs(attrs, k), name);
          },
          nb::arg("op"), nb::arg("inputs"), nb::arg("attrs") = nb::none(), nb::arg("name") = "",
          "Append a node applying op (by name) to value ids, with attributes by name; its type is inferred. "
          "Returns its value id. Raises IRError naming the node on any rule violation.")
      .def("set_outputs", &Graph::set_outputs, nb::arg("outputs"), "Set the graph outputs (value ids).")
      .def_prop_ro("outputs", &Graph::outputs)
      .def_prop_ro("inputs", &Graph::inputs, "Value ids of the inputs, in declaration order.")
      .def_prop_ro(
          "nodes",
          [](const Graph& g) {
            nb::list l;
            for (const Node& n : g.nodes()) l.append(nb::cast(n, nb::rv_policy::copy));
            return l;
          },
          "Every node (copies), in order: node i produces value i.")
      .def(
          "node",
          [](const Graph& g, ValueId v) {
            if (v < 0 || static_cast<size_t>(v) >= g.size()) throw nb::index_error("value id out of range");
            return g.node(v);
          },
          nb::arg("value"))
      .def("find", &Graph::find, nb::arg("name"), "Value id of the node named name, or None.")
      .def_prop_ro(
          "symbols",
          [](const Graph& g) {
            std::set<std::string> s = g.symbols();
            return std::vector<std::string>(s.begin(), s.end());
          },
          "Size symbols used anywhere, sorted.")
      .def("__len__", &Graph::size)
      .def("__str__", &Graph::str, "The IR text form.")
      .def("__repr__", [](const Graph& g) {
        return "<autofuse.Graph '" + g.name() + "': " + std::to_string(g.size()) + " nodes>";
      });
}

}  // namespace

void bind_ir(nb::module_& m) {
  nb::enum_<DType>(m, "DType", "Element type of an IR value (IR text names: bool, u8, ..., f64)")
      .value("bool", DType::Bool)
      .value("uint8", DType::UInt8)
      .value("int8", DType::Int8)
      .value("int16", DType::Int16)
      .value("int32", DType::Int32)
      .value("int64", DType::Int64)
      .value("float16", DType::Float16)
      .value("bfloat16", DType::BFloat16)
      .value("float32", DType::Float32)
      .value("float64", DType::Float64);
  m.def(
      "dtype_name", [](nb::handle d) { return std::string(dtype_name(to_dtype(d))); }, nb::arg("dtype"),
      "IR text name of a dtype (DType, name, or torch dtype): 'f32', 'bf16', ...");
  register_exceptions(m);
  bind_node(m);
  bind_graph(m);
  m.def(
      "parse",
      [](const std::string& text, const std::string& filename, bool output_shapes_bind,
         const std::vector<std::string>& given_symbols) {
        VerifyOptions vo;
        vo.output_shapes_bind = output_shapes_bind;
        vo.given_symbols.insert(given_symbols.begin(), given_symbols.end());
        return parse_graph(text, filename, vo);
      },
      nb::arg("text"), nb::arg("filename") = "<input>", nb::arg("output_shapes_bind") = false,
      nb::arg("given_symbols") = std::vector<std::string>{},
      "Parse IR text into a verified Graph. Raises ParseError ('FILE:LINE:COL: error: ...'). output_shapes_bind and "
      "given_symbols relax the symbol rule as for a kernel's IR (ir/verifier.h VerifyOptions): symbols that output "
      "sizes name, or that are listed, count as bound.");
  m.def(
      "verify", [](const Graph& g) { verify(g); }, nb::arg("graph"),
      "Check every IR rule; raises VerifyError naming the node.");
  m.def(
      "parse_expr", [](const std::string& text) { return from_expr(parse_expr(text)); }, nb::arg("text"),
      "Canonical form of a size expression: an int if constant, else its text ('s0*2 + 1').");
  m.def(
      "op_names",
      [] {
        std::vector<std::string> names;
        for (const OpInfo& o : all_ops()) names.emplace_back(o.name);
        return names;
      },
      "Names of every IR op, in op-table order.");
  m.def("op_schema", &op_schema, nb::arg("op"),
        "An op's table row: dict(name, category, min_inputs, max_inputs (-1: any), attrs=[(name, kind, optional)]).");
}

}  // namespace autofuse::bindings
