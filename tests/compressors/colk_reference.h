// Naive reference for `colk:F` (compressors/codecs/internal/colk.h): plain
// loops written from docs/codec-spec.md, "Column sparsification", sharing no
// code with the codec. Column scores summed column by column (rows in order,
// in double, as documented), selection by k passes of "largest score not yet
// kept, the lower index on ties", decode by copying the kept columns into
// zeros, and the byte formula with the index bits written out.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace slowpipe::compressors::naive {

// The kept columns of x [rows, m], ascending.
inline std::vector<int32_t> colk_kept(const std::vector<float>& x, int64_t rows, int64_t m,
                                      int64_t k) {
  std::vector<double> score(static_cast<size_t>(m), 0.0);
  for (int64_t j = 0; j < m; ++j)
    for (int64_t r = 0; r < rows; ++r) {
      const double v = x[static_cast<size_t>(r * m + j)];
      score[static_cast<size_t>(j)] += v * v;
    }
  std::vector<bool> taken(static_cast<size_t>(m), false);
  std::vector<int32_t> kept;
  for (int64_t pass = 0; pass < k; ++pass) {
    int64_t best = -1;
    for (int64_t j = 0; j < m; ++j)
      if (!taken[j] && (best < 0 || score[j] > score[best])) best = j;  // strict: lower wins ties
    taken[best] = true;
    kept.push_back(static_cast<int32_t>(best));
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

// x [rows, m] with every column outside `kept` set to zero.
inline std::vector<float> colk_decoded(const std::vector<float>& x, int64_t rows, int64_t m,
                                       const std::vector<int32_t>& kept) {
  std::vector<float> out(x.size(), 0.0F);
  for (int64_t r = 0; r < rows; ++r)
    for (int32_t j : kept) out[r * m + j] = x[r * m + j];
  return out;
}

// Index bits of one row of length m with k kept: min(bitmap m, list
// k ceil(log2 m), Elias-Fano k l + k + floor(m / 2^l), l = floor(log2(m / k))).
inline uint64_t colk_index_bits(uint64_t m, uint64_t k) {
  if (k == 0) return 0;
  uint64_t list_bits = 1;
  while ((uint64_t{1} << list_bits) < m) ++list_bits;
  uint64_t l = 0;
  while ((k << (l + 1)) <= m) ++l;
  return std::min({m, k * list_bits, k * l + k + (m >> l)});
}

// Message bytes: the index row once, then `value_bytes` for the [rows, k] values.
inline uint64_t colk_bytes(uint64_t m, uint64_t k, uint64_t value_bytes) {
  return (colk_index_bits(m, k) + 7) / 8 + value_bytes;
}

}  // namespace slowpipe::compressors::naive
