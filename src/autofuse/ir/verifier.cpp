#include "autofuse/ir/verifier.h"

#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "autofuse/ir/printer.h"

namespace autofuse {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

std::string join(const std::set<std::string>& s) {
  std::string r;
  for (const auto& x : s) r += (r.empty() ? "" : ", ") + x;
  return r;
}

// infer_type's messages start with "OPNAME: "; the verifier's header already names the op.
std::string strip_op_prefix(const Node& n, const std::string& msg) {
  std::string prefix = std::string(n.info().name) + ": ";
  return msg.rfind(prefix, 0) == 0 ? msg.substr(prefix.size()) : msg;
}

void collect_attr_symbols(const AttrValue& v, std::set<std::string>& out) {
  if (auto* e = std::get_if<Expr>(&v)) e->collect_symbols(out);
  if (auto* es = std::get_if<std::vector<Expr>>(&v))
    for (const auto& e : *es) e.collect_symbols(out);
}

/// An element count as constant * monomial (a product of symbols, possibly empty = 1), or nullopt when it is not
/// of that form (a sum, a floordiv, ...). numel's canonical Mul puts its constant factor first.
std::optional<std::pair<int64_t, Expr>> split_monomial(const Expr& e) {
  if (auto c = e.as_const()) return std::make_pair(*c, Expr(1));
  if (e.kind() == Expr::Kind::Sym) return std::make_pair(int64_t{1}, e);
  if (e.kind() != Expr::Kind::Mul) return std::nullopt;
  int64_t c = 1;
  Expr rest(1);
  for (const Expr& a : e.args()) {
    if (auto k = a.as_const()) {
      c *= *k;
    } else if (a.kind() == Expr::Kind::Sym) {
      rest = rest * a;
    } else {
      return std::nullopt;
    }
  }
  return std::make_pair(c, rest);
}

/// A reshape whose element counts are c1 * M and c2 * M with the same product of symbols M and constants c1 != c2:
/// equal only when a symbol is 0 (`reshape(%x: f32[s0, 8]) {shape=[s0, 3]}`). infer_type rejects only counts that
/// are provably unequal for every binding; this rejects those equal only for empty tensors, which no real graph
/// means (Dynamo specializes sizes 0 and 1, so its symbols are >= 2). Returns the message, or nullopt.
/// Also a constant count C against c * M (M a non-empty product of symbols) with C not a multiple of c: no integer
/// sizes make them equal (`reshape(%x: f32[s0, 8]) {shape=[3, 5]}`: 8*s0 = 15).
std::optional<std::string> impossible_reshape(const Shape& from, const Shape& to) {
  Expr a = numel(from), b = numel(to);
  auto sa = split_monomial(a), sb = split_monomial(b);
  if (!sa || !sb) return std::nullopt;
  const std::string head = "cannot reshape " + shape_str(from) + " (" + a.str() + " elements) to " + shape_str(to) +
                           " (" + b.str() + " elements): ";
  const bool const_a = sa->second.is_const(), const_b = sb->second.is_const();
  if (const_a != const_b) {
    const int64_t total = const_a ? sa->first : sb->first, factor = const_a ? sb->first : sa->first;
    if (factor != 0 && total % factor != 0)
      return head + "no integer sizes make the element counts equal; expected equal element counts";
    return std::nullopt;
  }
  if (const_a || sa->second != sb->second || sa->first == sb->first) return std::nullopt;
  return head + "the element counts differ unless a size symbol is 0; expected equal element counts";
}

class Verifier {
 public:
  Verifier(const Graph& g, const VerifyOptions& o) : g_(g), o_(o) {}

  void run() {
    if (!is_valid_graph_name(g_.name()))
      throw VerifyError(-1, "graph '" + g_.name() + "': invalid graph name; expected [A-Za-z_][A-Za-z0-9_.]*");
    // Symbols a run binds: those in input shapes (ir/bind_symbols.h), and in output shapes for a group's sub-graph
    // (its caller allocates the outputs). Symbols in input strides only are remembered to name them in errors.
    const auto n_nodes = static_cast<ValueId>(g_.size());
    for (const auto& n : g_.nodes())
      if (n.op == OpKind::Input) {
        for (const auto& d : n.shape) d.collect_symbols(bound_);
        auto it = n.attrs.find("strides");
        if (const auto* st = it == n.attrs.end() ? nullptr : std::get_if<std::vector<Expr>>(&it->second))
          for (const auto& d : *st) d.collect_symbols(stride_only_);
      }
    if (o_.output_shapes_bind)
      for (ValueId v : g_.outputs())
        if (v >= 0 && v < n_nodes)
          for (const auto& d : g_.node(v).shape) d.collect_symbols(bound_);
    bound_.insert(o_.given_symbols.begin(), o_.given_symbols.end());
    for (const auto& s : bound_) stride_only_.erase(s);
    for (size_t i = 0; i < g_.size(); ++i) check_node(static_cast<ValueId>(i));
    for (size_t i = 0; i < g_.outputs().size(); ++i) {
      ValueId v = g_.outputs()[i];
      if (v < 0 || v >= n_nodes)
        throw VerifyError(-1, "return: output " + std::to_string(i) + " refers to value id " + std::to_string(v) +
                                  ", which does not exist; expected an id in [0, " + std::to_string(n_nodes) + ")");
    }
  }

 private:
  [[noreturn]] void fail(ValueId id, const std::string& what) {
    throw VerifyError(id, node_header(g_, g_.node(id)) + ": " + what);
  }

  void check_node(ValueId id) {
    const Node& n = g_.node(id);
    if (!is_valid_value_name(n.name))
      fail(id, "invalid value name '" + n.name + "'; expected a non-empty name made of [A-Za-z0-9_.]");
    auto [it, fresh] = names_.emplace(n.name, id);
    if (!fresh)
      fail(id, "value name %" + n.name + " is already used by node " + std::to_string(it->second) +
                   "; expected unique names");
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      ValueId v = n.inputs[k];
      if (v < 0 || v >= id)
        fail(id, "input " + std::to_string(k) + " refers to value id " + std::to_string(v) +
                     ", which is not defined before this node; expected an id in [0, " + std::to_string(id) +
                     ") (nodes are in topological order)");
    }
    TensorType t;
    try {
      t = infer_type(n.op, input_types(g_, n), n.attrs);
    } catch (const IRError& e) {
      fail(id, strip_op_prefix(n, e.what()));
    } catch (const std::overflow_error& e) {
      fail(id, e.what());
    } catch (const std::domain_error& e) {
      fail(id, e.what());
    }
    for (const auto& d : n.shape)
      if (auto c = d.as_const(); c && *c < 0)
        fail(id, "negative size " + d.str() + " in declared type " + print_type(n.type()) + "; expected sizes >= 0");
    if (t.dtype != n.dtype || t.shape != n.shape)
      fail(id, "declared type " + print_type(n.type()) + " differs from the op table's; expected " + print_type(t));
    if (n.op == OpKind::Reshape)
      if (auto why = impossible_reshape(g_.node(n.inputs[0]).shape, n.shape)) fail(id, *why);
    if (n.op == OpKind::Input && has_attr(n.attrs, "strides")) {
      const auto& strides = attr_shape(n.attrs, "strides");
      for (size_t d = 0; d < strides.size(); ++d)
        if (sym_lt(strides[d], Expr(0)) == Tri::True)
          fail(id, "stride " + strides[d].str() + " of dim " + std::to_string(d) +
                       " is negative; expected strides >= 0 (in elements)");
    }
    std::set<std::string> used;
    for (const auto& d : n.shape) d.collect_symbols(used);
    for (const auto& [name, v] : n.attrs)
      if (n.op != OpKind::Input || name != "strides") collect_attr_symbols(v, used);  // a strides hint binds nothing
    const std::string binders =
        std::string(o_.output_shapes_bind ? "the graph's input shapes or output shapes" : "any graph input's shape") +
        (o_.given_symbols.empty() ? "" : " or given by the caller");
    for (const auto& s : used)
      if (!bound_.count(s))
        fail(id, "size symbol " + s + " is not bound by " + binders +
                     (stride_only_.count(s) ? " (it appears only in an input's strides, which bind nothing)" : "") +
                     "; expected " +
                     (bound_.empty() ? std::string("no symbols (they have none)") : "one of {" + join(bound_) + "}") +
                     " (a run binds symbols from its input sizes)");
  }

  const Graph& g_;
  const VerifyOptions o_;
  std::set<std::string> bound_, stride_only_;
  std::map<std::string, ValueId> names_;
};

}  // namespace

bool is_valid_value_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!is_name_char(c)) return false;
  return true;
}

bool is_valid_graph_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9') || name[0] == '.') return false;
  return is_valid_value_name(name);
}

std::string node_header(const Graph& g, const Node& n) {
  std::string s = "%" + n.name + " = " + std::string(n.info().name) + "(";
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    ValueId v = n.inputs[i];
    bool ok = v >= 0 && static_cast<size_t>(v) < g.size();
    s += (i ? ", %" : "%") + (ok ? g.node(v).name : std::string("?"));
  }
  return s + ")";
}

void verify(const Graph& g, const VerifyOptions& options) { Verifier(g, options).run(); }

}  // namespace autofuse
