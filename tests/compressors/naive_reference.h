// Naive references for the compressors' fast paths: plain, obviously correct
// loops, one element at a time, no chunking and no vectorization. The tests
// compare every codec against these, byte for byte where the format is exact.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "compressors/codecs/quantizer.h"

namespace slowpipe::compressors::naive {

inline void put_bits(std::vector<uint8_t>& out, uint64_t bit_pos, uint64_t value, int bits) {
  for (int j = 0; j < bits; ++j) {
    uint64_t p = bit_pos + j;
    if ((value >> j) & 1U) out[p / 8] |= static_cast<uint8_t>(1U << (p % 8));
  }
}

// Scale-group index of element i (mirrors the documented layout).
inline int64_t group_of(const QuantizerConfig& c, const std::vector<int64_t>& shape, int64_t n,
                        int64_t i) {
  switch (c.mode) {
    case ScaleMode::kTensor:
      return 0;
    case ScaleMode::kRow: {
      int64_t rows = shape.size() < 2 ? 1 : shape[0];
      return i / (n / rows);
    }
    case ScaleMode::kChannel:
      return i % (shape.empty() ? 1 : shape.back());
    case ScaleMode::kGroup:
      return i / c.group;
  }
  return 0;
}

// The whole quantizer payload (nearest rounding): scales then packed codes.
inline std::vector<uint8_t> quantize_payload(const std::vector<float>& x,
                                             const std::vector<int64_t>& shape,
                                             const QuantizerConfig& c) {
  const int64_t n = static_cast<int64_t>(x.size());
  int64_t groups = 0;
  for (int64_t i = 0; i < n; ++i) groups = std::max(groups, group_of(c, shape, n, i) + 1);
  std::vector<float> a(groups, c.minmax ? INFINITY : 0.0F), b(groups, -INFINITY);
  for (int64_t i = 0; i < n; ++i) {
    int64_t g = group_of(c, shape, n, i);
    if (c.minmax) {
      a[g] = std::min(a[g], x[i]);
      b[g] = std::max(b[g], x[i]);
    } else {
      a[g] = std::max(a[g], std::fabs(x[i]));
    }
  }
  const int per = c.minmax ? 2 : 1, width = c.fp32_scales ? 4 : 2;
  std::vector<uint8_t> out(groups * per * width + (n * c.bits + 7) / 8, 0);
  std::vector<float> lo(groups), step(groups);
  const int levels = c.minmax ? (1 << c.bits) : (c.bits == 1 ? 2 : (1 << c.bits) - 1);
  for (int64_t g = 0; g < groups; ++g) {
    float stored[2];
    for (int j = 0; j < per; ++j) {
      float v = j == 0 ? a[g] : b[g];
      if (c.fp32_scales) {
        std::memcpy(&out[(g * per + j) * 4], &v, 4);
        stored[j] = v;
      } else {
        uint16_t h = (c.minmax && j == 0) ? half_round_down(v) : half_round_up(v);
        std::memcpy(&out[(g * per + j) * 2], &h, 2);
        stored[j] = half_to_float(h);
      }
    }
    lo[g] = c.minmax ? stored[0] : -stored[0];
    float hi = c.minmax ? stored[1] : stored[0];
    step[g] = (hi - lo[g]) / static_cast<float>(levels - 1);
  }
  const uint64_t base = static_cast<uint64_t>(groups * per * width) * 8;
  for (int64_t i = 0; i < n; ++i) {
    int64_t g = group_of(c, shape, n, i);
    float inv = step[g] > 0 ? 1.0F / step[g] : 0.0F;
    float t = (x[i] - lo[g]) * inv + 0.5F;
    int code = static_cast<int>(std::floor(t));
    code = std::clamp(code, 0, levels - 1);
    put_bits(out, base + static_cast<uint64_t>(i) * c.bits, static_cast<uint64_t>(code), c.bits);
  }
  return out;
}

inline uint64_t get_bits(const std::vector<uint8_t>& in, uint64_t bit_pos, int bits) {
  uint64_t v = 0;
  for (int j = 0; j < bits; ++j) {
    uint64_t p = bit_pos + j;
    v |= static_cast<uint64_t>((in[p / 8] >> (p % 8)) & 1U) << j;
  }
  return v;
}

// Decodes a quantizer payload: value = lo + code * step.
inline std::vector<float> dequantize_payload(const std::vector<uint8_t>& p,
                                             const std::vector<int64_t>& shape,
                                             const QuantizerConfig& c) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  int64_t groups = 0;
  for (int64_t i = 0; i < n; ++i) groups = std::max(groups, group_of(c, shape, n, i) + 1);
  const int per = c.minmax ? 2 : 1, width = c.fp32_scales ? 4 : 2;
  const int levels = c.minmax ? (1 << c.bits) : (c.bits == 1 ? 2 : (1 << c.bits) - 1);
  auto scale = [&](int64_t i) {
    if (c.fp32_scales) {
      float v;
      std::memcpy(&v, &p[i * 4], 4);
      return v;
    }
    uint16_t h;
    std::memcpy(&h, &p[i * 2], 2);
    return half_to_float(h);
  };
  std::vector<float> out(n);
  const uint64_t base = static_cast<uint64_t>(groups * per * width) * 8;
  for (int64_t i = 0; i < n; ++i) {
    int64_t g = group_of(c, shape, n, i);
    float lo = c.minmax ? scale(2 * g) : -scale(g);
    float hi = c.minmax ? scale(2 * g + 1) : scale(g);
    float step = (hi - lo) / static_cast<float>(levels - 1);
    out[i] =
        lo +
        static_cast<float>(get_bits(p, base + static_cast<uint64_t>(i) * c.bits, c.bits)) * step;
  }
  return out;
}

// The k largest magnitudes of a row, ties toward lower indices, ascending.
inline std::vector<int32_t> topk_indices(const float* x, int64_t m, int64_t k) {
  std::vector<int32_t> idx(m);
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int32_t a, int32_t b) { return std::fabs(x[a]) > std::fabs(x[b]); });
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

// Index coding (docs/codec-spec.md, "Indices"), written out from the spec: per
// row of length m with k kept, the smallest of
//   0 bitmap      m bits, bit i set when i is kept;
//   1 list        k indices of b = ceil(log2 m) bits (b >= 1);
//   2 Elias-Fano  l = floor(log2(m / k)), the largest l with k 2^l <= m: k low
//                 parts of l bits, then bit (x_j >> l) + j set in k + (m >> l) bits;
// a tie to the lower number; k = 0 costs nothing.
struct IndexFormatSize {
  int format = 0;  // 0 bitmap, 1 list, 2 Elias-Fano
  int bits = 1;    // list: bits per index
  int l = 0;       // Elias-Fano: low bits
  uint64_t row_bits = 0;
};
inline uint64_t format_row_bits(int format, int64_t m, int64_t k, int* bits, int* l) {
  *bits = 1;
  while ((int64_t{1} << *bits) < m) ++*bits;
  *l = 0;
  if (k == 0) return 0;
  while ((k << (*l + 1)) <= m) ++*l;
  if (format == 0) return static_cast<uint64_t>(m);
  if (format == 1) return static_cast<uint64_t>(k * *bits);
  return static_cast<uint64_t>(k * *l + k + (m >> *l));
}
inline IndexFormatSize index_format(int64_t m, int64_t k, int forced = -1) {
  IndexFormatSize best;
  for (int f = 0; f < 3; ++f) {
    if (forced >= 0 && f != forced) continue;
    IndexFormatSize c;
    c.format = f;
    c.row_bits = format_row_bits(f, m, k, &c.bits, &c.l);
    if (forced >= 0 || f == 0 || c.row_bits < best.row_bits) best = c;
  }
  return best;
}

// Index section of `rows` (each k ascending indices), one bit at a time.
inline std::vector<uint8_t> index_section(const std::vector<std::vector<int32_t>>& rows, int64_t m,
                                          int64_t k, int forced = -1) {
  const IndexFormatSize c = index_format(m, k, forced);
  std::vector<uint8_t> out(k == 0 ? 0 : (rows.size() * c.row_bits + 7) / 8, 0);
  for (size_t r = 0; r < rows.size(); ++r) {
    const uint64_t row = r * c.row_bits;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t x = rows[r][j];
      if (c.format == 0) {
        put_bits(out, row + x, 1, 1);
      } else if (c.format == 1) {
        put_bits(out, row + j * c.bits, x, c.bits);
      } else {
        put_bits(out, row + j * c.l, x % (int64_t{1} << c.l), c.l);
        put_bits(out, row + k * c.l + x / (int64_t{1} << c.l) + j, 1, 1);
      }
    }
  }
  return out;
}

// The inverse, one bit at a time: false for a section no encoder writes (a row
// without exactly k set bits in its bitmap or Elias-Fano high part, an index
// >= m, indices not strictly ascending).
inline bool decode_index_section(const std::vector<uint8_t>& in, int64_t rows, int64_t m, int64_t k,
                                 std::vector<std::vector<int32_t>>& out, int forced = -1) {
  const IndexFormatSize c = index_format(m, k, forced);
  out.assign(rows, {});
  if (k == 0) return true;  // nothing sent
  for (int64_t r = 0; r < rows; ++r) {
    const uint64_t row = r * c.row_bits;
    std::vector<int64_t> x;
    if (c.format == 0) {
      for (int64_t i = 0; i < m; ++i)
        if (get_bits(in, row + i, 1)) x.push_back(i);
    } else if (c.format == 1) {
      for (int64_t j = 0; j < k; ++j) x.push_back(get_bits(in, row + j * c.bits, c.bits));
    } else {
      const uint64_t high = row + k * c.l, high_bits = k + (m >> c.l);
      for (uint64_t q = 0; q < high_bits; ++q)
        if (get_bits(in, high + q, 1)) {
          const int64_t j = static_cast<int64_t>(x.size());
          if (j == k) return false;  // a (k+1)-th set bit
          const int64_t h = static_cast<int64_t>(q) - j;
          x.push_back(h * (int64_t{1} << c.l) + get_bits(in, row + j * c.l, c.l));
        }
    }
    if (static_cast<int64_t>(x.size()) != k) return false;
    for (int64_t j = 0; j < k; ++j) {
      if (x[j] >= m || (j > 0 && x[j] <= x[j - 1])) return false;
      out[r].push_back(static_cast<int32_t>(x[j]));
    }
  }
  return true;
}

}  // namespace slowpipe::compressors::naive
