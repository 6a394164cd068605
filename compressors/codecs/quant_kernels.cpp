// Quantization kernels: plain loops over raw fp32 arrays, written so that GCC
// vectorizes them; the hot loops are also compiled for AVX-512F and AVX2 and
// picked at load time (target_clones). The channel-mode statistics and
// round-to-nearest loop have hand-written AVX-512 versions (quant_simd.h).
// Work goes in chunks of 4096 codes so the code buffer stays in L1 and each
// chunk starts on a byte boundary of the bit stream.
#include "compressors/codecs/quant_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compressors/codecs/internal/quant_simd.h"
#include "compressors/codecs/internal/rounding_hash.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SLOWPIPE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SLOWPIPE_CLONES
#endif

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "wire format assumes little endian");

namespace slowpipe::compressors {

namespace {

constexpr int64_t kChunk = 4096;
constexpr int kLanes = 16;

using rounding::hash_uniform;
using rounding::run_key;
inline uint8_t to_code(float t, float max_code) {
  t = t > 0.0F ? t : 0.0F;  // NaN -> 0
  t = t < max_code ? t : max_code;
  return static_cast<uint8_t>(static_cast<int>(t));
}

SLOWPIPE_CLONES void quant_const(const float* x, int64_t n, float lo, float inv, float max_code,
                                 uint8_t* codes) {
  for (int64_t i = 0; i < n; ++i) codes[i] = to_code((x[i] - lo) * inv + 0.5F, max_code);
}
SLOWPIPE_CLONES void quant_vary(const float* x, int64_t n, const float* lo, const float* inv,
                                float max_code, uint8_t* codes) {
  for (int64_t i = 0; i < n; ++i) codes[i] = to_code((x[i] - lo[i]) * inv[i] + 0.5F, max_code);
}
// Stochastic variants: `index` is the global index of x[0].
SLOWPIPE_CLONES void quant_const_sr(const float* x, int64_t n, float lo, float inv, float max_code,
                                    uint32_t seed, uint64_t index, uint8_t* codes) {
  uint32_t key = run_key(seed, index);
  auto base = static_cast<uint32_t>(index);
  for (int64_t i = 0; i < n; ++i) {
    float u = hash_uniform(base + static_cast<uint32_t>(i), key);
    codes[i] = to_code((x[i] - lo) * inv + u, max_code);
  }
}
SLOWPIPE_CLONES void quant_vary_sr(const float* x, int64_t n, const float* lo, const float* inv,
                                   float max_code, uint32_t seed, uint64_t index, uint8_t* codes) {
  uint32_t key = run_key(seed, index);
  auto base = static_cast<uint32_t>(index);
  for (int64_t i = 0; i < n; ++i) {
    float u = hash_uniform(base + static_cast<uint32_t>(i), key);
    codes[i] = to_code((x[i] - lo[i]) * inv[i] + u, max_code);
  }
}
SLOWPIPE_CLONES void dequant_const(const uint8_t* codes, int64_t n, float lo, float step,
                                   float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = lo + static_cast<float>(codes[i]) * step;
}
SLOWPIPE_CLONES void dequant_vary(const uint8_t* codes, int64_t n, const float* lo,
                                  const float* step, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = lo[i] + static_cast<float>(codes[i]) * step[i];
}

// Max-abs statistics compare magnitudes as integers: for |x| (sign bit
// cleared) the bit patterns order like the values, and every NaN pattern sorts
// above +inf above every finite value, so a NaN or inf in a group always shows
// up in its statistic (a float max would drop NaN: a > m is false for NaN).
inline uint32_t magnitude_bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b & 0x7FFFFFFFU;
}
inline float bits_to_float(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

SLOWPIPE_CLONES void column_maxabs(const float* x, int64_t rows, int64_t cols, uint32_t* m) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      uint32_t a = magnitude_bits(row[c]);
      m[c] = a > m[c] ? a : m[c];
    }
  }
}
// Min-max statistics: an inf becomes the min or the max; a NaN would be skipped
// by the comparisons, so `bad` accumulates v - v (0 for finite v, NaN otherwise).
SLOWPIPE_CLONES void column_minmax(const float* x, int64_t rows, int64_t cols, float* lo, float* hi,
                                   float* bad) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      float v = row[c];
      lo[c] = v < lo[c] ? v : lo[c];
      hi[c] = v > hi[c] ? v : hi[c];
      bad[c] += v - v;
    }
  }
}
SLOWPIPE_CLONES void span_minmax(const float* x, int64_t n, float* out_lo, float* out_hi) {
  float lo[kLanes], hi[kLanes], bad[kLanes] = {};
  float first = n > 0 ? x[0] : 0.0F;
  for (int j = 0; j < kLanes; ++j) lo[j] = hi[j] = first;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      float v = x[i + j];
      lo[j] = v < lo[j] ? v : lo[j];
      hi[j] = v > hi[j] ? v : hi[j];
      bad[j] += v - v;
    }
  float l = first, h = first, b = first - first;
  for (int j = 0; j < kLanes; ++j) {
    l = std::min(l, lo[j]);
    h = std::max(h, hi[j]);
    b += bad[j];
  }
  for (; i < n; ++i) {
    l = std::min(l, x[i]);
    h = std::max(h, x[i]);
    b += x[i] - x[i];
  }
  *out_lo = b == 0.0F ? l : b;  // NaN marks a group holding NaN
  *out_hi = h;
}

SLOWPIPE_CLONES uint32_t span_max_magnitude(const float* x, int64_t n) {
  uint32_t acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      uint32_t a = magnitude_bits(x[i + j]);
      acc[j] = a > acc[j] ? a : acc[j];
    }
  uint32_t m = 0;
  for (uint32_t a : acc) m = a > m ? a : m;
  for (; i < n; ++i) m = std::max(m, magnitude_bits(x[i]));
  return m;
}

// Calls fn(begin, end, group_or_column_offset) over [begin, end) split where the
// group changes (contiguous modes) or a row ends (channel mode).
template <class Fn>
void for_each_run(const GroupLayout& layout, int64_t begin, int64_t end, Fn&& fn) {
  int64_t i = begin;
  while (i < end) {
    if (layout.mode == ScaleMode::kChannel) {
      int64_t c = i % layout.channels;
      int64_t stop = std::min(end, i + (layout.channels - c));
      fn(i, stop, c);
      i = stop;
    } else {
      int64_t g = i / layout.run;
      int64_t stop = std::min(end, (g + 1) * layout.run);
      fn(i, stop, g);
      i = stop;
    }
  }
}

}  // namespace

int64_t first_non_finite_index(const float* x, int64_t n) {
  constexpr uint32_t kInfBits = 0x7F800000U;
  for (int64_t start = 0; start < n; start += kChunk) {
    int64_t len = std::min(kChunk, n - start);
    if (span_max_magnitude(x + start, len) < kInfBits) continue;
    for (int64_t i = start; i < start + len; ++i)
      if (magnitude_bits(x[i]) >= kInfBits) return i;
  }
  return -1;
}

float stochastic_uniform(uint32_t seed, uint64_t index) {
  return hash_uniform(static_cast<uint32_t>(index), run_key(seed, index));
}

void group_maxabs(const float* x, const GroupLayout& layout, float* maxabs, bool use_simd) {
  if (layout.mode == ScaleMode::kChannel) {
    std::vector<uint32_t> m(static_cast<size_t>(layout.channels), 0);
    const int64_t rows = layout.numel / layout.channels;
    if (use_simd && simd::available())
      simd::column_maxabs(x, rows, layout.channels, m.data());
    else
      column_maxabs(x, rows, layout.channels, m.data());
    for (int64_t c = 0; c < layout.channels; ++c) maxabs[c] = bits_to_float(m[c]);
    return;
  }
  for (int64_t g = 0; g < layout.groups; ++g) {
    int64_t begin = g * layout.run, end = std::min(layout.numel, begin + layout.run);
    maxabs[g] = bits_to_float(span_max_magnitude(x + begin, end - begin));
  }
}

void group_minmax(const float* x, const GroupLayout& layout, float* mins, float* maxs) {
  if (layout.mode == ScaleMode::kChannel) {
    int64_t rows = layout.numel / layout.channels;
    std::vector<float> bad(static_cast<size_t>(layout.channels), 0.0F);
    for (int64_t c = 0; c < layout.channels; ++c) mins[c] = maxs[c] = rows > 0 ? x[c] : 0.0F;
    column_minmax(x, rows, layout.channels, mins, maxs, bad.data());
    for (int64_t c = 0; c < layout.channels; ++c)
      if (bad[c] != 0.0F) mins[c] = bad[c];  // NaN marks a channel holding NaN
    return;
  }
  for (int64_t g = 0; g < layout.groups; ++g) {
    int64_t begin = g * layout.run, end = std::min(layout.numel, begin + layout.run);
    span_minmax(x + begin, end - begin, &mins[g], &maxs[g]);
  }
}

void quantize_pack(const float* x, const GroupLayout& layout, const GroupGrid& grid,
                   const QuantizeArgs& args, uint8_t* out) {
  uint8_t chunk_codes[kChunk];
  const float max_code = static_cast<float>(args.levels - 1);
  const bool fast = args.simd && simd::available();
  for (int64_t start = 0; start < layout.numel; start += kChunk) {
    int64_t end = std::min(layout.numel, start + kChunk);
    // 8-bit codes are their own packing: write them in place.
    uint8_t* codes = args.bits == 8 ? out + start : chunk_codes;
    for_each_run(layout, start, end, [&](int64_t b, int64_t e, int64_t g) {
      uint8_t* c = codes + (b - start);
      if (layout.mode == ScaleMode::kChannel) {
        const float* lo = grid.lo.data() + g;
        const float* inv = grid.inv_step.data() + g;
        if (args.stochastic) {
          quant_vary_sr(x + b, e - b, lo, inv, max_code, args.seed, static_cast<uint64_t>(b), c);
        } else {
          const int64_t done = fast ? simd::quant_vary(x + b, e - b, lo, inv, max_code, c) : 0;
          quant_vary(x + b + done, e - b - done, lo + done, inv + done, max_code, c + done);
        }
      } else if (args.stochastic) {
        quant_const_sr(x + b, e - b, grid.lo[g], grid.inv_step[g], max_code, args.seed,
                       static_cast<uint64_t>(b), c);
      } else {
        quant_const(x + b, e - b, grid.lo[g], grid.inv_step[g], max_code, c);
      }
    });
    if (args.bits != 8) pack_codes(codes, end - start, args.bits, out + start / 8 * args.bits);
  }
}

void unpack_dequantize(const uint8_t* in, const GroupLayout& layout, const GroupGrid& grid,
                       int bits, float* out) {
  uint8_t chunk_codes[kChunk];
  for (int64_t start = 0; start < layout.numel; start += kChunk) {
    int64_t end = std::min(layout.numel, start + kChunk);
    const uint8_t* codes = chunk_codes;
    if (bits == 8)
      codes = in + start;
    else
      unpack_codes(in + start / 8 * bits, end - start, bits, chunk_codes);
    for_each_run(layout, start, end, [&](int64_t b, int64_t e, int64_t g) {
      const uint8_t* c = codes + (b - start);
      if (layout.mode == ScaleMode::kChannel)
        dequant_vary(c, e - b, grid.lo.data() + g, grid.step.data() + g, out + b);
      else
        dequant_const(c, e - b, grid.lo[g], grid.step[g], out + b);
    });
  }
}

SLOWPIPE_CLONES void pack_codes(const uint8_t* codes, int64_t n, int bits, uint8_t* out) {
  if (n <= 0) return;  // nothing to write (and memcpy takes no null pointer, even for 0 bytes)
  int64_t full = 0;    // codes handled by the fast loops (a multiple of 8)
  if (bits == 8) {
    std::memcpy(out, codes, static_cast<size_t>(n));
    return;
  } else if (bits == 4) {
    full = n / 8 * 8;
    for (int64_t i = 0; i < full / 2; ++i)
      out[i] = static_cast<uint8_t>(codes[2 * i] | (codes[2 * i + 1] << 4));
  } else if (bits == 2) {
    full = n / 8 * 8;
    for (int64_t i = 0; i < full / 4; ++i)
      out[i] = static_cast<uint8_t>(codes[4 * i] | (codes[4 * i + 1] << 2) |
                                    (codes[4 * i + 2] << 4) | (codes[4 * i + 3] << 6));
  } else if (bits == 1) {
    full = n / 8 * 8;
    for (int64_t i = 0; i < full / 8; ++i) {
      const uint8_t* c = codes + 8 * i;
      out[i] = static_cast<uint8_t>(c[0] | (c[1] << 1) | (c[2] << 2) | (c[3] << 3) | (c[4] << 4) |
                                    (c[5] << 5) | (c[6] << 6) | (c[7] << 7));
    }
  } else {
    full = n / 8 * 8;
    for (int64_t gidx = 0; gidx < full / 8; ++gidx) {
      uint64_t acc = 0;
      for (int j = 0; j < 8; ++j) acc |= static_cast<uint64_t>(codes[8 * gidx + j]) << (bits * j);
      std::memcpy(out + gidx * bits, &acc, static_cast<size_t>(bits));
    }
  }
  // Tail: fewer than 8 codes, at most `bits` bytes.
  if (full < n) {
    uint64_t acc = 0;
    for (int64_t i = full; i < n; ++i)
      acc |= static_cast<uint64_t>(codes[i]) << (bits * (i - full));
    size_t tail_bytes = (static_cast<size_t>(n - full) * bits + 7) / 8;
    std::memcpy(out + full / 8 * bits, &acc, tail_bytes);
  }
}

SLOWPIPE_CLONES void unpack_codes(const uint8_t* in, int64_t n, int bits, uint8_t* codes) {
  if (n <= 0) return;  // as pack_codes
  int64_t full = n / 8 * 8;
  if (bits == 8) {
    std::memcpy(codes, in, static_cast<size_t>(n));
    return;
  } else if (bits == 4) {
    for (int64_t i = 0; i < full / 2; ++i) {
      codes[2 * i] = in[i] & 15;
      codes[2 * i + 1] = in[i] >> 4;
    }
  } else if (bits == 2) {
    for (int64_t i = 0; i < full / 4; ++i) {
      uint8_t v = in[i];
      codes[4 * i] = v & 3;
      codes[4 * i + 1] = (v >> 2) & 3;
      codes[4 * i + 2] = (v >> 4) & 3;
      codes[4 * i + 3] = v >> 6;
    }
  } else if (bits == 1) {
    for (int64_t i = 0; i < full / 8; ++i)
      for (int j = 0; j < 8; ++j) codes[8 * i + j] = (in[i] >> j) & 1;
  } else {
    const uint64_t mask = (1U << bits) - 1;
    for (int64_t gidx = 0; gidx < full / 8; ++gidx) {
      uint64_t acc = 0;
      std::memcpy(&acc, in + gidx * bits, static_cast<size_t>(bits));
      for (int j = 0; j < 8; ++j)
        codes[8 * gidx + j] = static_cast<uint8_t>((acc >> (bits * j)) & mask);
    }
  }
  if (full < n) {
    uint64_t acc = 0;
    size_t tail_bytes = (static_cast<size_t>(n - full) * bits + 7) / 8;
    std::memcpy(&acc, in + full / 8 * bits, tail_bytes);
    const uint64_t mask = (1U << bits) - 1;
    for (int64_t i = full; i < n; ++i)
      codes[i] = static_cast<uint8_t>((acc >> (bits * (i - full))) & mask);
  }
}

}  // namespace slowpipe::compressors
