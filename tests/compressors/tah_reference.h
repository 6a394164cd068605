// A naive TAH-Quant (docs/codec-spec.md, "TAH-Quant"), written from the page
// and not from compressors/codecs/tah_quant.cpp: one tile at a time, one bit at a time,
// every tile's statistics in plain loops, the whole class sorted to pick the
// high-width tiles. Shares only the fp16 rounding helpers (quantizer.h, tested
// on their own). The tests compare it with the codec byte for byte.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "compressors/codecs/quantizer.h"

namespace slowpipe::compressors::naive {

struct Tah {
  int centi = 300;  // B in hundredths
  int64_t tile = 64;
  bool adaptive = true;
};

struct TahTile {
  int64_t start = 0, len = 0;
  bool full = false;
};

inline std::vector<TahTile> tah_tiles(const std::vector<int64_t>& shape, int64_t n, int64_t g) {
  const int64_t c = shape.empty() ? 1 : shape.back();
  std::vector<TahTile> tiles;
  if (c == 0) return tiles;
  for (int64_t tok = 0; tok < n / c; ++tok)
    for (int64_t off = 0; off < c; off += g)
      tiles.push_back({tok * c + off, std::min(g, c - off), off + g <= c});
  return tiles;
}

// The two widths: floor(B) and ceil(B).
inline void tah_widths(const Tah& t, int& low, int& high) {
  low = t.centi / 100;
  high = t.centi % 100 ? low + 1 : low;
}
inline bool tah_width_map(const Tah& t) {
  return t.adaptive && t.centi % 100 != 0;
}

inline float tah_log2(float u) {  // exponent + the page's polynomial in the mantissa
  int e = 0;
  const float m = 2.0F * std::frexp(u, &e);  // u = m 2^(e-1), m in [1, 2)
  const float t = m - 1.0F;
  const float p = (((-0.084767579F * t + 0.32559363F) * t + -0.67994287F) * t + 1.4390145F) * t;
  return static_cast<float>(e - 1) + p;
}

inline float tah_entropy(const float* x, int64_t len) {
  float top = 0;
  for (int64_t i = 0; i < len; ++i)
    if (std::fabs(x[i]) > top) top = std::fabs(x[i]);
  if (top < FLT_MIN) return 0;
  int e = 0;
  std::frexp(top, &e);                      // top = f 2^e, f in [0.5, 1)
  const float k = std::ldexp(1.0F, 1 - e);  // 2^-(exponent of top)
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t i = 0; i < len; ++i) {
    const float u = std::fabs(x[i]) * k;
    if (u < FLT_MIN) continue;
    s[i % 8] += u;
    t[i % 8] += u * tah_log2(u);
  }
  const float ss = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  const float tt = ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
  return tah_log2(ss) - tt / ss;
}

// Stage h pairs every index i without bit h with i + h.
inline void tah_hadamard(std::vector<float>& v) {
  const auto g = static_cast<int64_t>(v.size());
  for (int64_t h = 1; h < g; h *= 2)
    for (int64_t i = 0; i < g; ++i)
      if ((i & h) == 0) {
        const float a = v[i], b = v[i + h];
        v[i] = a + b;
        v[i + h] = a - b;
      }
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(g)));
  for (float& y : v) y *= scale;
}

inline void tah_put(std::vector<uint8_t>& out, uint64_t bit, uint32_t value, int bits) {
  for (int j = 0; j < bits; ++j)
    if ((value >> j) & 1U) out[(bit + j) / 8] |= static_cast<uint8_t>(1U << ((bit + j) % 8));
}
inline uint32_t tah_get(const std::vector<uint8_t>& in, uint64_t bit, int bits) {
  uint32_t v = 0;
  for (int j = 0; j < bits; ++j) v |= ((in[(bit + j) / 8] >> ((bit + j) % 8)) & 1U) << j;
  return v;
}

inline int tah_pivot_bits(int64_t g) {
  int k = 0;
  while ((int64_t{1} << k) < g) ++k;
  return k;
}

// Which tiles get the high width: per class (full, tail), the share
// h = floor((B - floor(B)) * count): under adaptive the h largest entropies
// (ties to the lower index); under fixed the i-th tile of the class when
// floor((i + 1) h / count) > floor(i h / count).
inline std::vector<bool> tah_high(const Tah& t, const std::vector<float>& x,
                                  const std::vector<TahTile>& tiles) {
  std::vector<bool> high(tiles.size(), false);
  int low = 0, hi = 0;
  tah_widths(t, low, hi);
  if (hi == low) return high;
  if (!t.adaptive) {
    for (bool full : {true, false}) {
      int64_t count = 0;
      for (const TahTile& tile : tiles) count += tile.full == full;
      const int64_t h = (t.centi - 100 * low) * count / 100;
      int64_t i = 0;
      for (size_t k = 0; k < tiles.size(); ++k)
        if (tiles[k].full == full) {
          high[k] = (i + 1) * h / count > i * h / count;
          ++i;
        }
    }
    return high;
  }
  for (bool full : {true, false}) {
    std::vector<std::pair<float, int64_t>> keyed;
    for (size_t i = 0; i < tiles.size(); ++i)
      if (tiles[i].full == full)
        keyed.push_back(
            {-tah_entropy(x.data() + tiles[i].start, tiles[i].len), static_cast<int64_t>(i)});
    std::sort(keyed.begin(), keyed.end());  // entropy descending, then index ascending
    const auto count = static_cast<int64_t>(keyed.size());
    const int64_t share = (t.centi - 100 * low) * count / 100;
    for (int64_t i = 0; i < share; ++i) high[keyed[i].second] = true;
  }
  return high;
}

inline std::vector<uint8_t> tah_encode(const Tah& t, const std::vector<float>& x,
                                       const std::vector<int64_t>& shape) {
  const auto n = static_cast<int64_t>(x.size());
  const auto tiles = tah_tiles(shape, n, t.tile);
  const std::vector<bool> high = tah_high(t, x, tiles);
  int low = 0, hi = 0;
  tah_widths(t, low, hi);
  const int pb = tah_pivot_bits(t.tile);
  int64_t full_tiles = 0;
  uint64_t code_bits = 0;
  for (size_t i = 0; i < tiles.size(); ++i) {
    full_tiles += tiles[i].full;
    code_bits += static_cast<uint64_t>(tiles[i].len) * (high[i] ? hi : low);
  }
  const uint64_t width_bits = tah_width_map(t) ? tiles.size() : 0;
  const uint64_t header_bits = width_bits + static_cast<uint64_t>(full_tiles) * (1 + pb);
  const uint64_t header_at = 4 * tiles.size(), codes_at = header_at + (header_bits + 7) / 8;
  std::vector<uint8_t> out(codes_at + (code_bits + 7) / 8, 0);
  uint64_t code_bit = 0;
  int64_t full_index = 0;
  for (size_t i = 0; i < tiles.size(); ++i) {
    const TahTile& tile = tiles[i];
    std::vector<float> v(x.begin() + tile.start, x.begin() + tile.start + tile.len);
    if (high[i] && width_bits) tah_put(out, 8 * header_at + i, 1, 1);
    if (tile.full) {
      int64_t pivot = 0;
      for (int64_t j = 1; j < tile.len; ++j)
        if (std::fabs(v[j]) > std::fabs(v[pivot])) pivot = j;
      float second = 0;
      for (int64_t j = 0; j < tile.len; ++j)
        if (j != pivot && std::fabs(v[j]) > second) second = std::fabs(v[j]);
      const float first = std::fabs(v[pivot]);
      if (first > 0 && first <= 65504.0F && first >= 2 * second) {
        std::swap(v[0], v[pivot]);
        tah_hadamard(v);
        const uint64_t at = 8 * header_at + width_bits + full_index * (1 + pb);
        tah_put(out, at, 1, 1);
        tah_put(out, at + 1, static_cast<uint32_t>(pivot), pb);
      }
      ++full_index;
    }
    const int bits = high[i] ? hi : low;
    const float lo = *std::min_element(v.begin(), v.end()) + 0.0F;  // -0 reads as +0
    const float up = *std::max_element(v.begin(), v.end());
    const uint16_t zh = half_round_down(lo);
    const float zero = half_to_float(zh);
    const auto levels = static_cast<float>((1 << bits) - 1);
    float step = (up - zero) / levels;
    if (!(step > 0)) step = 0;  // +0, also for -0
    const uint16_t sh = half_round_up(step);
    const float s = half_to_float(sh);
    std::memcpy(&out[4 * i], &zh, 2);
    std::memcpy(&out[4 * i + 2], &sh, 2);
    for (float y : v) {
      float q = (y - zero) * (s > 0 ? 1.0F / s : 0.0F) + 0.5F;
      q = std::min(std::max(q, 0.0F), levels);
      tah_put(out, 8 * codes_at + code_bit, static_cast<uint32_t>(std::floor(q)), bits);
      code_bit += static_cast<uint64_t>(bits);
    }
  }
  return out;
}

inline std::vector<float> tah_decode(const Tah& t, const std::vector<uint8_t>& msg,
                                     const std::vector<int64_t>& shape, int64_t n) {
  const auto tiles = tah_tiles(shape, n, t.tile);
  int low = 0, hi = 0;
  tah_widths(t, low, hi);
  const int pb = tah_pivot_bits(t.tile);
  int64_t full_tiles = 0;
  for (const TahTile& tile : tiles) full_tiles += tile.full;
  const uint64_t width_bits = tah_width_map(t) ? tiles.size() : 0;
  const uint64_t header_at = 4 * tiles.size();
  const uint64_t codes_at =
      header_at + (width_bits + static_cast<uint64_t>(full_tiles) * (1 + pb) + 7) / 8;
  std::vector<float> out(static_cast<size_t>(n));
  const std::vector<bool> spread = tah_high(t, out, tiles);  // fixed: no entropy needed
  uint64_t code_bit = 0;
  int64_t full_index = 0;
  for (size_t i = 0; i < tiles.size(); ++i) {
    const TahTile& tile = tiles[i];
    const bool high = width_bits ? tah_get(msg, 8 * header_at + i, 1) != 0 : spread[i];
    const int bits = high ? hi : low;
    uint16_t zh, sh;
    std::memcpy(&zh, &msg[4 * i], 2);
    std::memcpy(&sh, &msg[4 * i + 2], 2);
    std::vector<float> v;
    for (int64_t j = 0; j < tile.len; ++j) {
      const auto code = static_cast<float>(tah_get(msg, 8 * codes_at + code_bit, bits));
      v.push_back(half_to_float(zh) + code * half_to_float(sh));
      code_bit += static_cast<uint64_t>(bits);
    }
    if (tile.full) {
      const uint64_t at = 8 * header_at + width_bits + full_index++ * (1 + pb);
      if (tah_get(msg, at, 1)) {
        tah_hadamard(v);
        std::swap(v[0], v[tah_get(msg, at + 1, pb)]);
      }
    }
    std::copy(v.begin(), v.end(), out.begin() + tile.start);
  }
  return out;
}

}  // namespace slowpipe::compressors::naive
