// Binding size symbols from actual tensor sizes (see bind_symbols.h for the steps).
#include "autofuse/ir/bind_symbols.h"

#include <exception>
#include <stdexcept>

namespace autofuse {

namespace {

std::string input_label(const ShapeArg& a) { return "input %" + a.node->name; }

/// The single symbol of e not bound in b, or nullptr when there is none or more than one.
const std::string* single_unbound(const Expr& e, const Bindings& b, std::string& scratch) {
  if (e.kind() == Expr::Kind::Const) return nullptr;
  if (e.kind() == Expr::Kind::Sym) return b.count(e.name()) ? nullptr : &e.name();
  scratch.clear();
  for (const std::string& s : e.symbols()) {
    if (b.count(s)) continue;
    if (!scratch.empty()) return nullptr;
    scratch = s;
  }
  return scratch.empty() ? nullptr : &scratch;
}

/// Whether every symbol of e is bound in b (constants and bound bare symbols without a set).
bool all_bound(const Expr& e, const Bindings& b) {
  if (e.kind() == Expr::Kind::Const) return true;
  if (e.kind() == Expr::Kind::Sym) return b.count(e.name()) != 0;
  for (const std::string& s : e.symbols())
    if (!b.count(s)) return false;
  return true;
}

/// The first symbol of e that b lacks (e must have one).
std::string first_unbound(const Expr& e, const Bindings& b) {
  for (const std::string& s : e.symbols())
    if (!b.count(s)) return s;
  return std::string();
}

}  // namespace

bool solve_linear_size(const Expr& e, int64_t size, Bindings& b) {
  std::string scratch;
  const std::string* unbound = single_unbound(e, b, scratch);
  if (unbound == nullptr) return false;
  const std::string s = *unbound;
  try {
    if (e.kind() == Expr::Kind::Sym) {
      if (size < 0) return false;
      b[s] = size;
      return true;
    }
    // k*s + c: c = e(0), k = e(1) - e(0); the solution is checked by evaluating e at it (rejects non-linear forms).
    Bindings t = b;
    t[s] = 0;
    const int64_t c = e.eval(t);
    t[s] = 1;
    const int64_t k = e.eval(t) - c;
    if (k == 0 || (size - c) % k != 0) return false;
    const int64_t v = (size - c) / k;
    if (v < 0) return false;
    t[s] = v;
    if (e.eval(t) != size) return false;
    b[s] = v;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::string unbound_symbol_message(const std::vector<ShapeArg>& args, const std::string& s, bool with_sizes) {
  const std::string head = "size symbol " + s + " is not determined by the input sizes";
  for (const ShapeArg& a : args)
    for (size_t d = 0; d < a.node->shape.size(); ++d) {
      const Expr& e = a.node->shape[d];
      if (e.kind() == Expr::Kind::Const || !e.symbols().count(s)) continue;
      return head + "; " + input_label(a) + " dim " + std::to_string(d) + " is " + e.str() +
             (with_sizes ? " (size " + std::to_string((*a.sizes)[d]) + ")" : std::string()) +
             ", which does not determine it (a bare symbol or k*" + s + " + c with a whole solution >= 0 would)";
    }
  return head + "; no input's size uses it";
}

namespace {

/// Steps 1 and 2: bare symbols (throwing on a conflict), then linear forms until nothing changes.
Bindings solve_steps(const std::vector<ShapeArg>& args, const Bindings* seed = nullptr) {
  Bindings b = seed != nullptr ? *seed : Bindings{};
  for (const ShapeArg& a : args)
    for (size_t d = 0; d < a.node->shape.size(); ++d) {
      const Expr& e = a.node->shape[d];
      if (e.kind() != Expr::Kind::Sym) continue;
      const int64_t size = (*a.sizes)[d];
      auto [it, fresh] = b.emplace(e.name(), size);
      if (!fresh && it->second != size)
        throw IRError(input_label(a) + ": dim " + std::to_string(d) + " binds " + e.name() + " = " +
                      std::to_string(size) + ", but it is already " + std::to_string(it->second));
    }
  for (bool changed = true; changed;) {
    changed = false;
    for (const ShapeArg& a : args)
      for (size_t d = 0; d < a.node->shape.size(); ++d) {
        const Expr& e = a.node->shape[d];
        if (e.kind() != Expr::Kind::Const && e.kind() != Expr::Kind::Sym)
          changed |= solve_linear_size(e, (*a.sizes)[d], b);
      }
  }
  return b;
}

}  // namespace

Bindings bind_shape_symbols(const std::vector<ShapeArg>& args, const std::set<std::string>* need,
                            const Bindings* seed) {
  Bindings b = solve_steps(args, seed);
  if (need != nullptr)
    for (const std::string& s : *need)
      if (!b.count(s)) throw IRError(unbound_symbol_message(args, s));
  for (const ShapeArg& a : args)
    for (size_t d = 0; d < a.node->shape.size(); ++d) {
      const Expr& e = a.node->shape[d];
      if (!all_bound(e, b)) {
        if (need == nullptr) throw IRError(unbound_symbol_message(args, first_unbound(e, b)));
        continue;  // a symbol the caller does not need; nothing to check this dim against
      }
      const int64_t size = (*a.sizes)[d];
      int64_t want = 0;
      try {
        want = e.eval(b);
      } catch (const std::exception& ex) {
        throw IRError(input_label(a) + ": dim " + std::to_string(d) + ": cannot evaluate " + e.str() + ": " +
                      ex.what());
      }
      if (want != size)
        throw IRError(input_label(a) + ": dim " + std::to_string(d) + " has size " + std::to_string(size) +
                      ", expected " + (e.is_const() ? std::string() : e.str() + " = ") + std::to_string(want));
    }
  return b;
}

std::set<std::string> symbols_needed_to_run(const Graph& g) {
  std::set<std::string> s;
  for (const Node& n : g.nodes()) {
    for (const Expr& d : n.shape) d.collect_symbols(s);
    for (const auto& [k, v] : n.attrs) {
      if (n.op == OpKind::Input && k == "strides") continue;
      if (const auto* e = std::get_if<Expr>(&v)) e->collect_symbols(s);
      if (const auto* es = std::get_if<std::vector<Expr>>(&v))
        for (const Expr& e2 : *es) e2.collect_symbols(s);
    }
  }
  return s;
}

namespace {

/// Binds g's inputs at a trial assignment of distinct sizes (1009 + 37 i) with steps 1-2; `args` / `sizes` receive the
/// trial shapes (args point into sizes).
Bindings trial_bind(const Graph& g, std::vector<ShapeArg>& args, std::vector<std::vector<int64_t>>& sizes) {
  Bindings trial;
  int64_t v = 1009;
  for (const std::string& s : g.symbols()) trial[s] = (v += 37);
  const std::vector<ValueId> ins = g.inputs();
  sizes.clear();
  sizes.reserve(ins.size());  // args point into it
  for (ValueId in : ins) {
    std::vector<int64_t>& sz = sizes.emplace_back();
    for (const Expr& d : g.node(in).shape) {
      try {
        sz.push_back(d.eval(trial));
      } catch (const std::exception&) {
        sz.push_back(0);  // no size at this trial point (a division by zero): binds nothing
      }
    }
    args.push_back(ShapeArg{&g.node(in), &sz});
  }
  return solve_steps(args);  // no conflicts: equal symbols get equal trial sizes
}

}  // namespace

std::optional<std::string> unbound_symbol_reason(const Graph& g, const std::set<std::string>& need) {
  if (need.empty()) return std::nullopt;
  std::vector<ShapeArg> args;
  std::vector<std::vector<int64_t>> sizes;
  const Bindings b = trial_bind(g, args, sizes);
  for (const std::string& s : need)
    if (!b.count(s)) return unbound_symbol_message(args, s, false);
  return std::nullopt;
}

std::vector<std::string> unbound_symbols(const Graph& g, const std::set<std::string>& need) {
  std::vector<std::string> out;
  if (need.empty()) return out;
  std::vector<ShapeArg> args;
  std::vector<std::vector<int64_t>> sizes;
  const Bindings b = trial_bind(g, args, sizes);
  for (const std::string& s : need)
    if (!b.count(s)) out.push_back(s);
  return out;
}

}  // namespace autofuse
