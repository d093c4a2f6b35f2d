// The transposed-tile loop of elementwise kernels (EmitOptions::tile_axis).
//
// An operand read through a transpose (`a * 2 + b.t()`: stride 1 along the outer axis t, stride n_t along the vector
// axis) used to be read lane by lane: 16 scalar loads per vector, from 16 cache lines n_t elements apart, which for
// power-of-two n_t all fall into one L1 set (a 12-way set cannot hold them), so every lane missed L1. Here a row is a
// tile of tile_height() consecutive indices along t (group g<t> of ntg) by a vblock of the vector axis: AF_W, or a
// multiple of it so that each column of a transposed operand is read a whole 64-byte line at a time (32 rows for
// bf16: with 16, the other half of each line was read by the next tile after 1024 other lines, all in the same
// cache sets for a power-of-two n_t, so from L3 or DRAM again). The vblock is walked in column chunks (af_tc<k>
// columns, a kTileChunkBytes scratch per transposed operand). Per vector step of AF_W columns of a chunk the operand
// is loaded as AF_W vectors along t per AF_W x AF_W block (one contiguous, masked load per column), each block
// transposed in registers (af_transpose: log2(AF_W) stages of two-source permutes) and stored into the scratch, row
// by row; then the tile's rows j = 0..tn-1 each run the elementwise body over the chunk, reading row j of the scratch
// in place of the lane-by-lane load, every other operand read and written as in the row loop at index tb + j along t.
// (Session 27: the rows used to run per block, so each block step touched AF_W rows of every contiguous operand at
// once, rows n_v elements apart -- for a power-of-two n_v all in the same L1 sets, and the output's stores 4 KiB
// from the next row's loads. f32 a * 2 + b.t(), one thread, Zen 4: [64, 1024] 1.03 -> 0.24 ns per element, [512,
// 1024] 1.08 -> 0.35, [520, 1000] 0.87 -> 0.47, [8192, 1024] at DRAM size 2.75 -> 1.98; docs/codegen.md.) Each
// element is computed by the same expression as in the row loop, so the results are the same bits.
#include "autofuse/codegen/cpu/emitter.h"

namespace autofuse {

bool tile_transposed_operand(const LoopNest& nest, const EmitOptions& o, size_t k) {
  if (o.tile_axis < 0 || k >= o.unit_inner.size() || static_cast<int>(k) >= nest.num_inputs) return false;
  return !o.unit_inner[k] &&
         nest.values[static_cast<size_t>(nest.operands[k])].varies[static_cast<size_t>(nest.vec_axis())];
}

int tile_height(const Graph& g, const LoopNest& nest, const EmitOptions& o) {
  const int lanes = std::max(1, o.lanes);
  int blocks = 1;
  for (size_t k = 0; k < nest.operands.size(); ++k) {
    if (!tile_transposed_operand(nest, o, k)) continue;
    const int bytes = lanes * static_cast<int>(dtype_size(g.node(nest.operands[k]).dtype));
    blocks = std::max(blocks, (kTileLineBytes + bytes - 1) / bytes);
  }
  return lanes * blocks;
}

namespace cpu_emit {

void Emitter::emit_rows_tiled() {
  const int t = o_.tile_axis;
  if (t == v_ || t < 0 || t >= r_ || !nest_.reduce_axes().empty() || o_.outer)
    throw std::logic_error("emitter: tile axis " + s(t) + " for a kernel that is not elementwise along it");
  std::vector<size_t> tr;  // the transposed operands
  for (size_t k = 0; k < nest_.operands.size(); ++k) {
    if (k >= o_.unit_inner.size() || o_.unit_inner[k] || !op_varies(k, v_)) continue;
    if (!tile_transposed_operand(nest_, o_, k) || !op_varies(k, t))
      throw std::logic_error("emitter: operand " + s(k) + " is read lane by lane but not through the tile axis");
    tr.push_back(k);
  }
  std::vector<int> ko;  // kept axes other than the vector axis and the tile axis
  for (int a : nest_.kept_axes())
    if (a != v_ && a != t) ko.push_back(a);
  line("const int64_t nvb = (n" + s(v_) + " + vblock - 1) / vblock;");
  const int th = tile_height(g_, nest_, o_), blocks = th / std::max(1, o_.lanes);
  line("const int64_t ntg = (n" + s(t) + " + " + s(th) + " - 1) / " + s(th) + ";  // tiles of " + s(th) +
       " along axis " + s(t));
  // Digits, fastest first: the vector block, the tile group, then the other kept axes (innermost first).
  RowDigits digits{{"vb", "nvb"}};
  bool placed = false;
  for (size_t j = ko.size(); j-- > 0;) {
    if (!placed && ko[j] < t) {
      digits.emplace_back("g" + s(t), "ntg");
      placed = true;
    }
    digits.emplace_back("i" + s(ko[j]), "n" + s(ko[j]));
  }
  if (!placed) digits.emplace_back("g" + s(t), "ntg");
  emit_odometer_start(digits, "row_begin", "rest");
  const int lanes = std::max(1, o_.lanes);
  for (size_t k : tr) {
    const std::string ct = compute_ctype(g_.node(nest_.operands[k]).dtype), ks = s(k);
    const int eb = static_cast<int>(dtype_size(compute_dtype(g_.node(nest_.operands[k]).dtype)));
    // The scratch of one column chunk: th rows of kTileChunkBytes / (th * element) columns, each row padded by one
    // vector so that the rows do not all start in the same cache sets.
    const int chunk = std::max(lanes, kTileChunkBytes / (th * eb) / lanes * lanes);
    line("vec<" + ct + "> af_t" + ks + "[" + s(th) + "];  // operand " + ks + ": one block, transposed");
    line("constexpr int64_t af_tc" + ks + " = " + s(chunk) + ", af_tw" + ks + " = " + s(chunk + lanes) +
         ";  // chunk columns, scratch row stride");
    line("alignas(64) " + ct + " af_s" + ks + "[" + s(th) + " * af_tw" + ks + "];  // operand " + ks +
         ": the chunk, transposed");
  }
  // Every transposed operand has the same chunk (the widest compute type sets it; one chunk loop for all).
  // Without a transposed operand (a copy kernel's speculative tile variant whose input is a broadcast along the
  // vector axis: kernel_batch.cpp) the whole vblock is one chunk.
  std::string chunk = tr.empty() ? "vblock" : "af_tc" + s(tr.front());
  for (size_t i = 1; i < tr.size(); ++i) chunk = "af_imin<int64_t>(" + chunk + ", af_tc" + s(tr[i]) + ")";
  open("for (int64_t row = row_begin; row < row_end; ++row)");
  decompose_row(ko);
  line("const int64_t tb = g" + s(t) + " * " + s(th) + ", tn = af_imin<int64_t>(" + s(th) + ", n" + s(t) + " - tb);");
  line("const int64_t vbeg = vb * vblock, vend = af_imin<int64_t>(n" + s(v_) + ", vbeg + vblock);");
  const std::string iv = "i" + s(v_), it = "i" + s(t);
  const std::vector<std::string> saved = cur_;
  const std::vector<bool> saved_scope = in_scope_;
  open("for (int64_t cb = vbeg; cb < vend; cb += " + chunk + ")");
  line("const int64_t ce = af_imin<int64_t>(vend, cb + " + chunk + ");");
  // 1. The chunk's blocks of every transposed operand, loaded along t, transposed in registers, stored row by row.
  open("for (int64_t " + iv + " = cb; " + iv + " < ce; " + iv + " += AF_W)");
  line("const int64_t n = af_imin<int64_t>(AF_W, ce - " + iv + ");");
  for (size_t k : tr) {
    const Node& nd = g_.node(nest_.operands[k]);
    const std::string ct = compute_ctype(nd.dtype), st = storage_ctype(nd.dtype), ks = s(k);
    if (nd.dtype == DType::BFloat16 && blocks == 2) {  // bf16 pairs as 32-bit lanes: one transpose per 2 AF_W rows
      line("vec<uint32_t> af_u" + ks + "[AF_W];");
      open("AF_LANES for (int c = 0; c < AF_W; ++c)");
      line("af_u" + ks + "[c] = c < n ? af_ld_bf16_pairs(p" + ks + " + " + cur_[k] + " + tb * s" + ks + "_" + s(t) +
           " + (" + iv + " + c) * s" + ks + "_" + s(v_) + ", tn) : vec<uint32_t>{};");
      close();
      line("af_transpose<uint32_t>(af_u" + ks + ");");
      line("AF_LANES for (int c = 0; c < AF_W; ++c) af_bf16_pair_rows(af_u" + ks + "[c], af_t" + ks + "[2 * c], af_t" +
           ks + "[2 * c + 1]);");
    } else {
      for (int b = 0; b < blocks; ++b) {  // AF_W x AF_W blocks, one below the other along t
        const std::string tb = b ? "(tb + " + s(b) + " * AF_W)" : "tb", tnb = b ? "(tn - " + s(b) + " * AF_W)" : "tn";
        const std::string at = b ? "af_t" + ks + " + " + s(b) + " * AF_W" : "af_t" + ks;
        open("AF_LANES for (int c = 0; c < AF_W; ++c)");
        line("(" + at + ")[c] = c < n && " + tnb + " > 0 ? af_ldu<" + ct + ", " + st + ">(p" + ks + " + " + cur_[k] +
             " + " + tb + " * s" + ks + "_" + s(t) + " + (" + iv + " + c) * s" + ks + "_" + s(v_) +
             ", af_imin<int64_t>(AF_W, " + tnb + ")) : vec<" + ct + ">{};");
        close();
        line("af_transpose<" + ct + ">(" + at + ");");
      }
    }
    line("AF_LANES for (int r = 0; r < " + s(th) + "; ++r) af_st<" + ct + ", " + ct + ">(af_s" + ks + " + r * af_tw" +
         ks + " + (" + iv + " - cb), af_t" + ks + "[r]);");
  }
  close();
  // 2. The tile's rows over the chunk: each row streams along the vector axis, as in the row loop.
  open("for (int64_t j = 0; j < tn; ++j)");
  line("const int64_t " + it + " = tb + j;");
  open("for (int64_t " + iv + " = cb; " + iv + " < ce; " + iv + " += AF_W)");
  line("const int64_t n = af_imin<int64_t>(AF_W, ce - " + iv + ");");
  for (size_t k = 0; k < cur_.size(); ++k) {
    if (std::find(tr.begin(), tr.end(), k) != tr.end()) continue;
    std::string off = cur_[k];
    if (op_varies(k, t)) off += " + " + it + " * s" + s(k) + "_" + s(t);
    if (op_varies(k, v_)) off += " + " + iv + " * s" + s(k) + "_" + s(v_);
    if (off == cur_[k]) continue;
    line("const int64_t oc" + s(k) + " = " + off + ";");
    cur_[k] = "oc" + s(k);
  }
  in_scope_[static_cast<size_t>(t)] = true;
  in_scope_[static_cast<size_t>(v_)] = true;
  emit_passes();
  close();
  close();
  close();
  cur_ = saved;
  in_scope_ = saved_scope;
  emit_odometer_advance(digits);
  close();
}

}  // namespace cpu_emit
}  // namespace autofuse
