// TAH-Quant's packing kernels (internal/tah_kernels.h): codes quantized and
// packed 32 at a time, packed codes unpacked and dequantized, and the tiles'
// fp16 scales widened, in AVX2 (and F16C) with the portable loops' results.
// Kept apart from tah_kernels.cpp (statistics, roundings, Walsh-Hadamard)
// for size.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "compressors/codecs/internal/tah_kernels.h"
#include "compressors/codecs/internal/tah_simd.h"

namespace slowpipe::compressors::tah {

#ifdef TAH_F16C
namespace {
// Bytes of the 8-bit lanes: b[j] in lane j mod 2 of each pair, for maddubs.
constexpr int8_t pair_weight(int w, int j) {
  return static_cast<int8_t>(j % 2 == 0 ? 1 : 1 << w);
}
// 32 codes (four vectors of 8 in 32-bit lanes, each < 2^W) to four groups of
// 8 W-bit fields, group k in the low 8W bits of 64-bit lane k: bytes in
// order, then neighbours joined in 16-, 32- and 64-bit lanes (as
// tah_quant.cpp's gather_fields).
template <int W>
__attribute__((target("avx2"))) __m256i join_fields(__m256i c0, __m256i c1, __m256i c2,
                                                    __m256i c3) {
  const __m256i bytes = _mm256_packus_epi16(_mm256_packs_epi32(c0, c1), _mm256_packs_epi32(c2, c3));
  const __m256i in_order =
      _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  const __m256i w16 = _mm256_maddubs_epi16(
      in_order, _mm256_set1_epi16(static_cast<int16_t>((pair_weight(W, 1) << 8) | 1)));
  const __m256i w32 = _mm256_madd_epi16(w16, _mm256_set1_epi32((1 << (2 * W)) << 16 | 1));
  const __m256i high = _mm256_and_si256(
      _mm256_srli_epi64(w32, 32 - 4 * W),
      _mm256_set1_epi64x(static_cast<int64_t>(((uint64_t{1} << (4 * W)) - 1) << (4 * W))));
  return _mm256_or_si256(_mm256_and_si256(w32, _mm256_set1_epi64x(0xFFFFFFFF)), high);
}
__attribute__((target("avx2"))) inline __m256i codes8(const float* v, __m256 vz, __m256 vi,
                                                      __m256 half, __m256 top) {
  __m256 t = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v), vz), vi), half);
  t = _mm256_min_ps(_mm256_max_ps(t, _mm256_setzero_ps()), top);  // max(+-0, 0) is +0
  return _mm256_cvttps_epi32(t);
}
// Per 128-bit half: the W low bytes of its two 64-bit lanes, side by side.
template <int W>
struct PackPicks {
  int8_t pick[32];
  constexpr PackPicks() : pick() {
    for (int h = 0; h < 2; ++h)
      for (int j = 0; j < 16; ++j)
        pick[16 * h + j] = static_cast<int8_t>(j < W ? j : j < 2 * W ? 8 + j - W : -1);
  }
};
template <int W>
constexpr PackPicks<W> kPackPicks{};

template <int W>
__attribute__((target("avx2"))) void quantize_pack_w(const float* v, int64_t len, float zero,
                                                     float inv, uint8_t* out) {
  const __m256 vz = _mm256_set1_ps(zero), vi = _mm256_set1_ps(inv);
  const __m256 half = _mm256_set1_ps(0.5F), top = _mm256_set1_ps((1 << W) - 1);
  const __m256i gather = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kPackPicks<W>.pick));
  for (int64_t i = 0; i < len; i += 32, out += 4 * W) {
    const __m256i groups = _mm256_shuffle_epi8(
        join_fields<W>(codes8(v + i, vz, vi, half, top), codes8(v + i + 8, vz, vi, half, top),
                       codes8(v + i + 16, vz, vi, half, top),
                       codes8(v + i + 24, vz, vi, half, top)),
        gather);
    const uint64_t lo = static_cast<uint64_t>(_mm256_extract_epi64(groups, 0));
    const uint64_t hi = static_cast<uint64_t>(_mm256_extract_epi64(groups, 2));
    // Exactly 4W bytes: the stream's next bytes are not this tile's.
    constexpr int kFirst = 2 * W > 8 ? 8 : 2 * W;
    std::memcpy(out, &lo, kFirst);
    std::memcpy(out + 2 * W, &hi, kFirst);
    if constexpr (2 * W > 8) {
      const auto lo2 = static_cast<uint64_t>(_mm256_extract_epi64(groups, 1));
      const auto hi2 = static_cast<uint64_t>(_mm256_extract_epi64(groups, 3));
      std::memcpy(out + 8, &lo2, 2 * W - 8);
      std::memcpy(out + 2 * W + 8, &hi2, 2 * W - 8);
    }
  }
}
}  // namespace
#endif

namespace {
// table[W] for a width W the table holds, where the AVX2 paths may run; else null.
template <typename Fn, size_t N>
Fn by_width(const Fn (&table)[N], int bits) {
  return avx2_allowed() && bits >= 1 && static_cast<size_t>(bits) < N ? table[bits] : nullptr;
}
#ifdef TAH_F16C
constexpr QuantizePack kPackByWidth[] = {nullptr,
                                         quantize_pack_w<1>,
                                         quantize_pack_w<2>,
                                         quantize_pack_w<3>,
                                         quantize_pack_w<4>,
                                         quantize_pack_w<5>,
                                         quantize_pack_w<6>};
#else
constexpr QuantizePack kPackByWidth[] = {nullptr};
#endif
}  // namespace

QuantizePack quantize_pack_avx2_for(int bits) {
  return by_width(kPackByWidth, bits);
}

#ifdef TAH_F16C
namespace {
// Byte picks of the wide loop below: lane j of group k (k < 4) takes the byte
// holding its field's first bit and, where the field crosses into the next
// byte, that one too (-1: a zero byte).
struct UnpackTables {
  int8_t pick[4][32];
  int32_t shift[8];
  constexpr explicit UnpackTables(int w) : pick(), shift() {
    for (int k = 0; k < 4; ++k)
      for (int half = 0; half < 2; ++half)
        for (int lane = 0; lane < 4; ++lane) {
          const int j = 4 * half + lane, first = w * k + (w * j) / 8, at = (w * j) % 8;
          int8_t* b = pick[k] + 16 * half + 4 * lane;
          b[0] = static_cast<int8_t>(first);
          b[1] = static_cast<int8_t>(at + w > 8 ? first + 1 : -1);
          b[2] = b[3] = -1;
        }
    for (int j = 0; j < 8; ++j) shift[j] = (w * j) % 8;
  }
};
constexpr UnpackTables kUnpack[] = {UnpackTables(1), UnpackTables(2), UnpackTables(3),
                                    UnpackTables(4)};  // [W - 1]

// len codes (8 per W bytes) to zero + code * step; `avail` bytes of `in` may
// be read. Four groups (4W <= 16 bytes) from one 16-byte load while 16 bytes
// remain, then a group at a time from its own W bytes. Inlined with W a
// constant (dequantize_w) or as data (dequantize_any).
__attribute__((target("avx2"), always_inline)) inline void dequantize_body(
    const uint8_t* in, int64_t len, int64_t avail, float zero, float step, float* out, int w) {
  const __m256i shifts =
      _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(w));
  const __m256i mask = _mm256_set1_epi32((1 << w) - 1);
  const __m256 vz = _mm256_set1_ps(zero), vs = _mm256_set1_ps(step);
  const UnpackTables& t = kUnpack[w - 1];
  const __m256i byte_shifts = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.shift));
  int64_t g = 0;
  for (; 8 * (g + 4) <= len && w * g + 16 <= avail; g += 4) {
    const __m256i bytes =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + w * g)));
    for (int k = 0; k < 4; ++k) {
      const __m256i picked = _mm256_shuffle_epi8(
          bytes, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.pick[k])));
      const __m256i c = _mm256_and_si256(_mm256_srlv_epi32(picked, byte_shifts), mask);
      // zero + code * step: a product then a sum, as the scalar loop.
      _mm256_storeu_ps(out + 8 * (g + k),
                       _mm256_add_ps(vz, _mm256_mul_ps(_mm256_cvtepi32_ps(c), vs)));
    }
  }
  for (; g < len / 8; ++g) {
    uint32_t acc = 0;  // W byte loads: never past the group's last byte
    for (int k = 0; k < w; ++k) acc |= static_cast<uint32_t>(in[w * g + k]) << (8 * k);
    const __m256i c =
        _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(acc)), shifts), mask);
    _mm256_storeu_ps(out + 8 * g, _mm256_add_ps(vz, _mm256_mul_ps(_mm256_cvtepi32_ps(c), vs)));
  }
}
template <int W>
__attribute__((target("avx2"))) void dequantize_w(const uint8_t* in, int64_t len, int64_t avail,
                                                  float zero, float step, float* out) {
  dequantize_body(in, len, avail, zero, step, out, W);
}
__attribute__((target("avx2"))) void dequantize_any(const uint8_t* in, int64_t len, int64_t avail,
                                                    float zero, float step, float* out, int bits) {
  dequantize_body(in, len, avail, zero, step, out, bits);
}
}  // namespace
#endif

#ifdef TAH_F16C
namespace {
__attribute__((target("avx2,f16c"))) int64_t widen_scales_f16c(const uint8_t* scales, int64_t n,
                                                               float* zero, float* step) {
  // 8 tiles = 16 halves: zero points in the even 16-bit slots, steps in the odd.
  const __m256i split = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1,
                                         4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
  int64_t t = 0;
  for (; t + 8 <= n; t += 8) {
    const __m256i h = _mm256_permute4x64_epi64(
        _mm256_shuffle_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + 4 * t)),
                            split),
        0xD8);  // qwords 0, 2 (zero points), 1, 3 (steps)
    _mm256_storeu_ps(zero + t, _mm256_cvtph_ps(_mm256_castsi256_si128(h)));
    _mm256_storeu_ps(step + t, _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)));
  }
  return t;
}
}  // namespace
#endif

void widen_scales(const uint8_t* scales, int64_t n, float* zero, float* step) {
  int64_t t = 0;
#ifdef TAH_F16C
  if (f16c_allowed()) t = widen_scales_f16c(scales, n, zero, step);
#endif
  for (; t < n; ++t) {
    uint16_t z, s;
    std::memcpy(&z, scales + 4 * t, 2);
    std::memcpy(&s, scales + 4 * t + 2, 2);
    zero[t] = widen(z);
    step[t] = widen(s);
  }
}

namespace {
#ifdef TAH_F16C
constexpr DequantizeGroups kUnpackByWidth[] = {nullptr, dequantize_w<1>, dequantize_w<2>,
                                               dequantize_w<3>, dequantize_w<4>};
#else
constexpr DequantizeGroups kUnpackByWidth[] = {nullptr};
#endif
}  // namespace

DequantizeGroups dequantize_groups_avx2_for(int bits) {
  return by_width(kUnpackByWidth, bits);
}

DequantizeAny dequantize_any_avx2() {
#ifdef TAH_F16C
  if (avx2_allowed()) return dequantize_any;
#endif
  return nullptr;
}

}  // namespace slowpipe::compressors::tah
