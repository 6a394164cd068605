// Index coding of the sparsifiers' messages: the ascending kept indices of each
// row of length m with k kept, in whichever of three codings is smallest:
//   bitmap       m bits; bit i is set when index i is kept.
//   list         k indices of b = ceil(log2 m) bits each (b >= 1).
//   Elias-Fano   (Elias 1974, Fano 1971; the layout of Vigna, "Quasi-succinct
//                indices", WSDM 2013) with l = floor(log2(m / k)) low bits:
//                first the low l bits of every index (k fields of l bits), then
//                the high parts h_j = x_j >> l in unary, bit h_j + j set in a
//                vector of k + (m >> l) bits: k*l + k + (m >> l) bits.
// A tie goes to the earlier in that order (bitmap, then list, then
// Elias-Fano), so Elias-Fano is chosen only when strictly smaller than both.
// The choice and the size are functions of (m, k) alone, which both sides know:
// no flag is sent, and `index_coding` is the size formula for anyone who needs
// message sizes without data (wire_bytes, `slowpipe timing`). A row with k = 0
// costs no bits. Rows follow each other in one LSB-first bit stream, padded to
// a byte once at the end.
//
// Against the entropy log2 C(m, k) (about m H(k/m) bits): at k/m = 10% the
// bitmap costs m bits, Elias-Fano 0.525 m, the entropy 0.469 m. Elias-Fano
// wins for k/m below about 1/4 down to k of a few (where the list wins).
//
// Encoders OR into the zeroed section: fields (list, Elias-Fano low parts)
// through a 64-bit accumulator, several per store; set bits (bitmap, unary
// high parts) one byte OR each, or in AVX2 eight at a time ORed into the two
// 64-bit words they span; no loop over bits. The bitmap decoder finds
// the set bits with count-trailing-zeros over 64-bit words; the Elias-Fano
// decoder too, or in AVX2 a byte of its unary code at a time (the offsets of
// a byte's set bits from a table of 256, eight indices per store).
// Decoding validates and throws DataError for a bitmap row or an Elias-Fano
// high part without exactly k set bits, an index >= m, or indices not strictly
// ascending; it reads nothing outside its input.
// Left out: coding that adapts to the data (runs, clustered indices): the size
// must not depend on which indices were kept.
#pragma once

#include <cstdint>

namespace slowpipe::compressors {

enum class IndexFormat { kBitmap, kList, kEliasFano };

struct IndexCoding {
  IndexFormat format = IndexFormat::kBitmap;
  int index_bits = 1;     // list: ceil(log2 m), at least 1
  int low_bits = 0;       // Elias-Fano: l = floor(log2(m / k)) (0 when k = 0)
  uint64_t row_bits = 0;  // bits per row in this format; 0 when k = 0
};
// The size formula: the coding of rows of length m with k kept (0 <= k <= m),
// the smallest format, ties to the earlier. Plain C++, a function of (m, k).
IndexCoding index_coding(int64_t m, int64_t k);
// One format at (m, k), chosen or not (tests, comparisons).
IndexCoding index_coding_as(IndexFormat format, int64_t m, int64_t k);
// ceil(rows * row_bits / 8): 0 when rows or k is 0.
uint64_t index_section_bytes(int64_t rows, int64_t m, int64_t k);
uint64_t index_section_bytes(int64_t rows, const IndexCoding& coding);

// idx: [rows, k], each row strictly ascending in [0, m) (else
// std::invalid_argument) -> `out` of index_section_bytes() bytes, all written.
void encode_indices(const int32_t* idx, int64_t rows, int64_t m, int64_t k, uint8_t* out);
// Inverse: `in` of index_section_bytes() bytes -> idx [rows, k]; DataError for
// input no encoder writes (see above; the padding bits are not checked).
void decode_indices(const uint8_t* in, int64_t rows, int64_t m, int64_t k, int32_t* idx);
// The same in a given coding from index_coding_as(format, m, k). `vector`:
// the set bits (bitmap, Elias-Fano's high parts) 8 indices at a time in AVX2
// where the CPU (and SLOWPIPE_SIMD) allow it; false keeps to one index per
// set bit (the tests compare the two).
void encode_indices(const int32_t* idx, int64_t rows, int64_t m, int64_t k,
                    const IndexCoding& coding, uint8_t* out, bool vector = true);
void decode_indices(const uint8_t* in, int64_t rows, int64_t m, int64_t k,
                    const IndexCoding& coding, int32_t* idx, bool vector = true);

}  // namespace slowpipe::compressors
