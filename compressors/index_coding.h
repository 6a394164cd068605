// Index coding of the sparsifiers' messages: the kept indices of each row.
//
// Per row of length m with k kept: a bitmap of m bits or a list of k indices of
// ceil(log2 m) bits each, whichever is smaller (bitmap on a tie). The choice is
// a function of (m, k), which both sides know, so no flag is sent. Rows follow
// each other in one LSB-first bit stream padded to a byte at the end.
#pragma once

#include <cstdint>

namespace slowpipe::compressors {

struct IndexCoding {
  bool bitmap = true;
  int index_bits = 1;
  uint64_t row_bits = 0;  // bits per row
};
IndexCoding index_coding(int64_t m, int64_t k);
uint64_t index_section_bytes(int64_t rows, int64_t m, int64_t k);
// idx: [rows, k] ascending per row -> `out` of index_section_bytes() bytes.
void encode_indices(const int32_t* idx, int64_t rows, int64_t m, int64_t k, uint8_t* out);
// Inverse; throws DataError when a bitmap row does not hold exactly k bits or a
// list row is not strictly ascending below m.
void decode_indices(const uint8_t* in, int64_t rows, int64_t m, int64_t k, int32_t* idx);

}  // namespace slowpipe::compressors
