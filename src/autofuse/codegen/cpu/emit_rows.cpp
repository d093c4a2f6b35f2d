// The row loop of kernels whose vector axis is kept (elementwise kernels, outer reductions) and the row odometer
// shared with the inner-reduction row loop (emitter.h).
//
// The row odometer. A row's indices along the kept axes used to be decomposed from the row number on every row
// (`rest % n<a>; rest /= n<a>` per axis): 64-bit divisions, ~9-10 ns per row for three or four axes on the
// development machine (Zen 5), most of the time of elementwise kernels with short rows ([mul] over a transposed
// [4, 4, 128, 64] view: 4 vectors per row, 17.1 -> 9.9 us on one thread; session 10, docs/demo.md). Now the row
// number is decomposed once per call (at row_begin) into mutable digits, and each row advances them with carries:
// one compare per row, one more per wrap. A call's rows are all below the product of the limits, so the digits
// always hold the row's exact indices.
//
// Interleaved vector steps. An elementwise body with a long dependency chain (GELU-tanh: tanh's polynomial, exp,
// reciprocal and corrections, ~70 vector uops per vector) is latency bound: the out-of-order window holds about two
// vectors' chains. Emitting kInterleave vectors per step, statement by statement (the compiler keeps the order: x86
// GCC schedules after register allocation only), puts independent work next to each chain. Measured on GELU-tanh
// bf16 [32, 3072] on one thread (session 10): 81 us plain, 65.8 us with 2 copies, 60.1 us with 4, bit-identical.
#include <cctype>
#include <regex>
#include <set>
#include <sstream>

#include "autofuse/codegen/cpu/emitter.h"
#include "autofuse/schedule/schedule.h"

namespace autofuse {
namespace cpu_emit {
namespace {

/// Vectors per interleaved step of an elementwise loop (see the file comment).
constexpr int kInterleave = 4;

}  // namespace

std::vector<std::string> odometer_start_lines(const RowDigits& digits, const std::string& first,
                                              const std::string& rest) {
  std::vector<std::string> out{"int64_t " + rest + " = " + first + ";"};
  for (size_t j = 0; j < digits.size(); ++j) {
    const auto& [d, n] = digits[j];
    out.push_back(j + 1 < digits.size() ? "int64_t " + d + " = " + rest + " % " + n + "; " + rest + " /= " + n + ";"
                                        : "int64_t " + d + " = " + rest + ";");
  }
  out.push_back("(void)" + rest + ";");
  return out;
}

std::string odometer_advance_line(const RowDigits& digits) {
  std::string l, tail;
  for (size_t j = 0; j < digits.size(); ++j) {
    const auto& [d, n] = digits[j];
    if (j + 1 == digits.size()) {
      l += "++" + d + ";";
    } else {
      l += "if (++" + d + " == " + n + ") { " + d + " = 0; ";
      tail += " }";
    }
  }
  return l + tail;
}

/// Whether c can be part of an identifier (regex's \w).
static bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// The positions in l where `word` occurs as a whole identifier (regex `\bword\b` for an identifier `word`).
static std::vector<size_t> whole_word_at(const std::string& l, const std::string& word) {
  std::vector<size_t> at;
  for (size_t p = l.find(word); p != std::string::npos; p = l.find(word, p + 1))
    if ((p == 0 || !word_char(l[p - 1])) && (p + word.size() == l.size() || !word_char(l[p + word.size()])))
      at.push_back(p);
  return at;
}

/// l with every whole-identifier occurrence of `word` replaced by `by`.
static std::string replace_whole_word(const std::string& l, const std::string& word, const std::string& by) {
  std::string out;
  size_t from = 0;
  for (size_t p : whole_word_at(l, word)) {
    out.append(l, from, p - from).append(by);
    from = p + word.size();
  }
  return out.append(l, from, std::string::npos);
}

/// The lines of an emitted body (the interleaving rewrites below work line by line).
static std::vector<std::string> body_lines(const std::string& body) {
  std::vector<std::string> lines;
  std::istringstream in(body);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::string interleaved_vector_body(const std::string& body, const std::string& iv, int copies,
                                    const std::string& indent) {
  const std::vector<std::string> lines = body_lines(body);
  // Names the body declares must be the renamed kinds (x<id>, x<id>_<suffix>, oc<k>) or n; no control flow.
  // The patterns are compiled once (static: std::regex construction was ~16M of the ~39M instructions of a warm
  // Kernel::compile of an elementwise add, session 22); the loop index is matched by whole_word_at.
  static const std::regex decl(R"(^\s*(?:const\s+)?[A-Za-z_][\w<>:, ]*\s+([A-Za-z_]\w*)\s*=)");
  static const std::regex renamed(R"(^(x\d+(_\w+)?|oc\d+|n)$)");
  static const std::regex name(R"(\b(x\d+(?:_\w+)?|oc\d+)\b)");
  static const std::regex assign(R"(^\s*[A-Za-z_]\w*\s*[-+*/|&^]?=[^=])");
  for (const std::string& l : lines) {
    if (l.find("if (") != std::string::npos || l.find("for (") != std::string::npos ||
        l.find("while") != std::string::npos || l.find("goto") != std::string::npos)
      return "";
    std::smatch m;
    if (std::regex_search(l, assign)) return "";
    if (std::regex_search(l, m, decl) && !std::regex_match(m[1].str(), renamed)) return "";
  }
  std::string out;
  for (int c = 1; c < copies; ++c)
    out += indent + "const int64_t " + iv + "_" + std::to_string(c) + " = " + iv + " + " + std::to_string(c) +
           " * AF_W;\n";
  for (const std::string& l : lines) {
    out += l + "\n";
    const std::string t = l.substr(std::min(l.find_first_not_of(' '), l.size()));
    // Block braces and comments appear once (copy 0's); n is shared.
    if (t.empty() || t == "{" || t == "}" || t.rfind("//", 0) == 0 || t.rfind("const int64_t n =", 0) == 0) continue;
    for (int c = 1; c < copies; ++c) {
      const std::string sfx = "_" + std::to_string(c);
      out += replace_whole_word(std::regex_replace(l, name, "$1" + sfx), iv, iv + sfx) + "\n";
    }
  }
  return out;
}

std::string interleaved_reduction_body(const std::string& body, const std::string& iv, int copies,
                                       const std::string& indent) {
  const std::vector<std::string> lines = body_lines(body);
  // Per-vector names: values, offsets (oc<k> and the reduction loops' o<k>_<a>), accumulators (a / am / ad, their
  // cascade partials ba / bam / bad, argmax indices ai) and var means (mu).
  static const std::regex name(R"(\b((?:x\d+(?:_\w+)?)|oc\d+|o\d+_\d+|b?a[md]?\d+|ai\d+|mu\d+)\b)");
  static const std::regex renamed(R"(^(x\d+(_\w+)?|oc\d+|o\d+_\d+|b?a[md]?\d+|ai\d+|mu\d+)$)");
  static const std::regex decl(R"(^\s*(?:const\s+)?[A-Za-z_][\w<>:, ]*\s+([A-Za-z_]\w*)\s*=)");
  static const std::regex assign(R"(^\s*([A-Za-z_]\w*)\s*[-+*/|&^]?=[^=])");
  std::vector<bool> per_vector(lines.size(), false);
  for (size_t j = 0; j < lines.size(); ++j) {
    const std::string& l = lines[j];
    const std::string t = l.substr(std::min(l.find_first_not_of(' '), l.size()));
    if (t.rfind("//", 0) == 0) continue;
    std::smatch m;
    const bool named = std::regex_search(l, name) || !whole_word_at(l, iv).empty();
    if (!named) {
      // Shared lines (loop headers, braces, the loop index and block bounds) run once per step: no assignments
      // to names outside a loop header (they would run once instead of once per vector).
      if (t.rfind("for (", 0) != 0 && std::regex_search(l, m, assign) && !std::regex_search(l, decl)) return "";
      continue;
    }
    // A per-vector line is one whole statement: no control flow around other lines, and it declares or assigns
    // only per-vector names.
    if (t.rfind("for (", 0) == 0 || t.rfind("while", 0) == 0 || t.rfind("else", 0) == 0 || t.find("goto") != t.npos ||
        std::count(t.begin(), t.end(), '{') != std::count(t.begin(), t.end(), '}') ||
        (t.rfind("if (", 0) == 0 && t.back() != '}'))
      return "";
    if (std::regex_search(l, m, decl) && !std::regex_match(m[1].str(), renamed)) return "";
    if (std::regex_search(l, m, assign) && !std::regex_match(m[1].str(), renamed)) return "";
    per_vector[j] = true;
  }
  std::string out;
  for (int c = 1; c < copies; ++c)
    out += indent + "const int64_t " + iv + "_" + std::to_string(c) + " = " + iv + " + " + std::to_string(c) +
           " * AF_W;\n";
  static const std::regex every(R"(// every (\d+) vectors$)");  // a prefetch of a line that `every` vectors share
  for (size_t j = 0; j < lines.size(); ++j) {
    out += lines[j] + "\n";
    if (!per_vector[j]) continue;
    std::smatch m;
    const int step = std::regex_search(lines[j], m, every) ? std::max(1, std::stoi(m[1].str())) : 1;
    for (int c = step; c < copies; c += step) {
      const std::string sfx = "_" + std::to_string(c);
      out += replace_whole_word(std::regex_replace(lines[j], name, "$1" + sfx), iv, iv + sfx) + "\n";
    }
  }
  return out;
}

void Emitter::emit_vector_step(const std::string& iv, const std::vector<std::string>& row_offsets, bool tail) {
  line(std::string("const int64_t n = ") + (tail ? "vend - " + iv : "AF_W") + ";");
  cur_ = row_offsets;
  for (size_t k = 0; k < cur_.size(); ++k) {
    if (!op_varies(k, v_)) continue;
    std::string name = "oc" + s(k);
    line("const int64_t " + name + " = " + cur_[k] + " + " + iv + " * s" + s(k) + "_" + s(v_) + ";");
    cur_[k] = name;
  }
  in_scope_[static_cast<size_t>(v_)] = true;
  emit_passes();
}

int Emitter::column_reduce_copies() const {
  // Accumulators per vector: one per reduction (var: its mean, then the squared deviations and the deviations; a
  // mean taken from a var's accumulators none).
  int accumulators = 0;
  for (size_t i = 0; i < g_.size(); ++i) {
    const Node& nd = g_.node(static_cast<ValueId>(i));
    if (nd.info().category == OpCategory::Reduce && val(static_cast<ValueId>(i)).var_of_mean < 0)
      accumulators += nd.op == OpKind::Var ? (needs_deviation_sum(g_, static_cast<ValueId>(i)) ? 3 : 2) : 1;
  }
  // At most kColumnReduceVectors accumulators in all (the registers; and compile time: a kernel of three
  // reductions with 16 copies compiled in 0.55 s against 0.11 s with one vector per step), at least 4 copies (a
  // whole line of f32 per row, two lines of bf16). The schedule's vblock, a multiple of kColumnReduceVectors
  // vectors, holds whole groups of any of these counts.
  const int most = kColumnReduceVectors;
  int copies = most;
  while (copies > 4 && copies * accumulators > most) copies /= 2;
  return copies;
}

void Emitter::emit_rows_vec_kept() {
  if (o_.tile_axis >= 0) return emit_rows_tiled();
  std::vector<int> ko;
  for (int a : nest_.kept_axes())
    if (a != v_) ko.push_back(a);
  line("const int64_t nvb = (n" + s(v_) + " + vblock - 1) / vblock;");
  // An operand read lane by lane (strided along the vector axis, e.g. a transposed input) is read cache-line-wise
  // along some outer axis; rows then run column-block-major (the vector block outermost, the outer index fastest)
  // so that consecutive rows reuse the same vblock cache lines of that operand (see column_block_schedule).
  const bool column_major = strided_vector_operand(nest_, o_);
  if (column_major) {
    std::string nko = "1";
    for (int a : ko) nko += " * n" + s(a);
    line("const int64_t nko = " + nko + ";");
  }
  // Row-major rows: the vector block fastest; column-major: the outer indices fastest, the vector block last.
  RowDigits digits = axis_digits(ko);
  if (column_major)
    digits.emplace_back("vb", "nvb");
  else
    digits.insert(digits.begin(), {"vb", "nvb"});
  emit_odometer_start(digits, "row_begin", "rest");
  open("for (int64_t row = row_begin; row < row_end; ++row)");
  decompose_row(ko);
  line("const int64_t vbeg = vb * vblock, vend = af_imin<int64_t>(n" + s(v_) + ", vbeg + vblock);");
  const std::string iv = "i" + s(v_);
  line("int64_t " + iv + " = vbeg;");
  const std::vector<std::string> saved = cur_;
  // Interleaved steps, whole vectors: elementwise kernels, and reductions over other axes (one pass over the
  // reduced axis per kColumnReduceVectors adjacent vectors: whole cache lines of 16-bit inputs, independent chains).
  const bool reduces = !nest_.reduce_axes().empty();
  const int copies = reduces ? column_reduce_copies() : kInterleave;
  if (!o_.outer && copies > 1) {
    std::ostringstream body;
    out_.swap(body);
    ++ind_;
    emit_vector_step(iv, saved, false);
    --ind_;
    out_.swap(body);
    // (A 2-vector step after it for rows of 2-3 vectors measured no faster on rotary's halves of 32 elements.)
    const std::string indent(2 * (ind_ + 1), ' ');
    const std::string text = reduces ? interleaved_reduction_body(body.str(), iv, copies, indent)
                                     : interleaved_vector_body(body.str(), iv, copies, indent);
    if (!text.empty()) {
      open("for (; " + iv + " + " + s(copies) + " * AF_W <= vend; " + iv + " += " + s(copies) + " * AF_W)");
      out_ << text;
      close();
    }
  }
  for (int tail = 0; tail < 2; ++tail) {
    if (!tail)
      open("for (; " + iv + " + AF_W <= vend; " + iv + " += AF_W)");
    else
      open("if (" + iv + " < vend)");
    emit_vector_step(iv, saved, tail != 0);
    close();
  }
  emit_odometer_advance(digits);
  close();
}

bool Emitter::feeds_bf16_store(ValueId id) const {
  for (size_t j = 0; j < g_.size(); ++j) {
    const Node& c = g_.node(static_cast<ValueId>(j));
    if (store_rounds_[j] == StoreRounds::Cast && c.dtype == DType::BFloat16 && c.inputs[0] == id) return true;
  }
  return false;
}

void Emitter::emit_stores(ValueId id) {
  const Node& nd = g_.node(id);
  const ValuePlacement& vp = val(id);
  const std::string ct = compute_ctype(nd.dtype), st = storage_ctype(nd.dtype);
  const std::string var = "x" + s(static_cast<int64_t>(id));
  for (int k : outputs_of_[static_cast<size_t>(id)]) {
    if (const OuterReduction* r = outer_of(static_cast<size_t>(k))) {
      line(outer_accumulate(*r, "p" + s(k) + " + " + cur_[static_cast<size_t>(k)], var, vp.kept ? "1" : "n"));
      continue;
    }
    std::vector<std::string> guards;
    for (int a = 0; a < r_; ++a) {
      if (vp.varies[static_cast<size_t>(a)] || !in_scope_[static_cast<size_t>(a)]) continue;
      if (nest_.domain[static_cast<size_t>(a)].as_const() == std::optional<int64_t>(1)) continue;
      guards.push_back("i" + s(a) + " == 0");
    }
    const std::string ptr = "p" + s(static_cast<int64_t>(k)) + " + " + cur_[static_cast<size_t>(k)];
    // A bf16 quotient flagged normal (emit_value: af_div_rcp_unit's fast path), or a cast of an f32 one that this
    // store rounds (casts_rounded_by_store), skips the store's subnormal check.
    const std::string nrm = nrm_.count(id) ? ", " + var + "_nrm" : "";
    std::string stmt;
    if (!vp.varies[static_cast<size_t>(v_)])
      stmt = "af_stn<" + st + ", " + ct + ">(" + ptr + ", 0, 1, " + var + ");";
    else if (o_.unit_inner[static_cast<size_t>(k)] && streams_output(static_cast<size_t>(k)))
      stmt = "af_sto<" + st + ", " + ct + ">(" + ptr + ", n, " + var + ", af_nt" + nrm + ");";
    else if (o_.unit_inner[static_cast<size_t>(k)])
      stmt = "af_stu<" + st + ", " + ct + ">(" + ptr + ", n, " + var + nrm + ");";
    else
      stmt = "af_stn<" + st + ", " + ct + ">(" + ptr + ", s" + s(static_cast<int64_t>(k)) + "_" + s(v_) + ", n, " +
             var + ");";
    if (!guards.empty()) {
      std::string c;
      for (size_t j = 0; j < guards.size(); ++j) c += (j ? " && " : "") + guards[j];
      stmt = "if (" + c + ") { " + stmt + " }";
    }
    line(stmt);
  }
}

}  // namespace cpu_emit
}  // namespace autofuse
