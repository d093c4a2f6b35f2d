#include "autofuse/runtime/host_gather.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "autofuse/ir/dtype.h"

namespace autofuse {
namespace {

/// The flat (row-major) list of index values, read through their strides; throws for an out-of-range one.
std::vector<int64_t> read_indices(const HostTensor& indices, int64_t rows) {
  const int64_t n = indices.numel();
  std::vector<int64_t> out(static_cast<size_t>(n));
  if (n == 0) return out;
  const size_t rank = indices.sizes.size();
  std::vector<int64_t> idx(rank, 0);
  const bool i64 = indices.dtype == DType::Int64;
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (size_t a = 0; a < rank; ++a) off += idx[a] * indices.strides[a];
    const int64_t v = i64 ? static_cast<const int64_t*>(indices.data)[off]
                          : static_cast<int64_t>(static_cast<const int32_t*>(indices.data)[off]);
    if (v < 0 || v >= rows)
      throw std::out_of_range("index out of range in self: index " + std::to_string(v) + ", table of " +
                              std::to_string(rows) + " rows");
    out[static_cast<size_t>(k)] = v;
    for (size_t a = rank; a-- > 0;) {  // next multi-index, last axis fastest
      if (++idx[a] < indices.sizes[a]) break;
      idx[a] = 0;
    }
  }
  return out;
}

}  // namespace

void gather_rows(const HostTensor& table, const HostTensor& indices, const HostTensor& out) {
  if (table.sizes.size() != 2)
    throw std::invalid_argument("gather_rows: table must be 2-d [rows, columns], got " + table.describe());
  if (indices.dtype != DType::Int64 && indices.dtype != DType::Int32)
    throw std::invalid_argument("gather_rows: indices must be i64 or i32, got " + indices.describe());
  std::vector<int64_t> want = indices.sizes;
  want.push_back(table.sizes[1]);
  if (out.dtype != table.dtype || out.sizes != want)
    throw std::invalid_argument("gather_rows: out must be " + std::string(dtype_name(table.dtype)) +
                                " of the indices' sizes and the table's columns, got " + out.describe() +
                                " for table " + table.describe() + " and indices " + indices.describe());
  const std::vector<int64_t> rows = read_indices(indices, table.sizes[0]);
  const int64_t cols = table.sizes[1];
  if (rows.empty() || cols == 0) return;
  const int64_t es = dtype_size(table.dtype);
  const int64_t tcol = table.strides[1], ocol = out.strides.back();
  const auto* src = static_cast<const char*>(table.data);
  auto* dst = static_cast<char*>(out.data);
  // out's row k (row-major over the index axes) starts at the offset of that multi-index.
  const size_t rank = indices.sizes.size();
  std::vector<int64_t> idx(rank, 0);
  for (size_t k = 0; k < rows.size(); ++k) {
    int64_t orow = 0;
    for (size_t a = 0; a < rank; ++a) orow += idx[a] * out.strides[a];
    const char* s = src + rows[k] * table.strides[0] * es;
    char* d = dst + orow * es;
    if (tcol == 1 && ocol == 1) {
      std::memcpy(d, s, static_cast<size_t>(cols * es));
    } else {
      for (int64_t c = 0; c < cols; ++c) std::memcpy(d + c * ocol * es, s + c * tcol * es, static_cast<size_t>(es));
    }
    for (size_t a = rank; a-- > 0;) {
      if (++idx[a] < indices.sizes[a]) break;
      idx[a] = 0;
    }
  }
}

}  // namespace autofuse
