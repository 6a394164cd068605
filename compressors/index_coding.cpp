// Index coding of the sparsifiers; the format is described in index_coding.h.
#include "compressors/index_coding.h"

#include <cstring>
#include <string>
#include <vector>

#include "common/errors.h"

namespace slowpipe::compressors {

IndexCoding index_coding(int64_t m, int64_t k) {
  IndexCoding c;
  int b = 1;
  while (b < 31 && (int64_t{1} << b) < m) ++b;
  c.index_bits = b;
  uint64_t list_bits = static_cast<uint64_t>(k) * b;
  c.bitmap = static_cast<uint64_t>(m) <= list_bits;
  c.row_bits = c.bitmap ? static_cast<uint64_t>(m) : list_bits;
  return c;
}

uint64_t index_section_bytes(int64_t rows, int64_t m, int64_t k) {
  if (rows == 0 || k == 0) return 0;
  return (static_cast<uint64_t>(rows) * index_coding(m, k).row_bits + 7) / 8;
}

void encode_indices(const int32_t* idx, int64_t rows, int64_t m, int64_t k, uint8_t* out) {
  const uint64_t bytes = index_section_bytes(rows, m, k);
  if (bytes == 0) return;
  IndexCoding c = index_coding(m, k);
  std::vector<uint8_t> buf(bytes + 8, 0);
  uint64_t pos = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t* row = idx + r * k;
    if (c.bitmap) {
      for (int64_t j = 0; j < k; ++j) {
        uint64_t p = pos + static_cast<uint64_t>(row[j]);
        buf[p >> 3] |= static_cast<uint8_t>(1U << (p & 7));
      }
    } else {
      for (int64_t j = 0; j < k; ++j) {
        uint64_t word;
        std::memcpy(&word, &buf[pos >> 3], 8);
        word |= static_cast<uint64_t>(row[j]) << (pos & 7);
        std::memcpy(&buf[pos >> 3], &word, 8);
        pos += c.index_bits;
      }
      continue;
    }
    pos += c.row_bits;
  }
  std::memcpy(out, buf.data(), bytes);
}

void decode_indices(const uint8_t* in, int64_t rows, int64_t m, int64_t k, int32_t* idx) {
  const uint64_t bytes = index_section_bytes(rows, m, k);
  if (bytes == 0) return;
  IndexCoding c = index_coding(m, k);
  std::vector<uint8_t> buf(bytes + 8, 0);
  std::memcpy(buf.data(), in, bytes);
  const uint64_t mask = (uint64_t{1} << c.index_bits) - 1;
  uint64_t pos = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int32_t* row = idx + r * k;
    int64_t w = 0;
    if (c.bitmap) {
      for (int64_t i = 0; i < m; ++i) {
        uint64_t p = pos + static_cast<uint64_t>(i);
        if ((buf[p >> 3] >> (p & 7)) & 1U) {
          if (w == k)
            throw DataError("sparse message: row " + std::to_string(r) +
                            " holds more than k indices");
          row[w++] = static_cast<int32_t>(i);
        }
      }
      if (w != k)
        throw DataError("sparse message: row " + std::to_string(r) + " holds fewer than k indices");
      pos += c.row_bits;
    } else {
      for (int64_t j = 0; j < k; ++j) {
        uint64_t word;
        std::memcpy(&word, &buf[pos >> 3], 8);
        auto v = static_cast<int64_t>((word >> (pos & 7)) & mask);
        if (v >= m || (j > 0 && v <= row[j - 1]))
          throw DataError("sparse message: bad index in row " + std::to_string(r));
        row[j] = static_cast<int32_t>(v);
        pos += c.index_bits;
      }
    }
  }
}

}  // namespace slowpipe::compressors
