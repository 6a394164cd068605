// TAH-Quant's tile statistics for a batch of 8 tiles of one length in AVX2
// (internal/tah_kernels.h, stats_many). Each tile's lanes are updated as in
// tile_stats_avx2; the fold across the 8 lanes then runs for the 8 tiles at
// once: the tiles' vectors are transposed (lane L of every tile in one
// vector) and folded by the same tree, lanes L and L + 4, then L + 2, then
// L + 1, a tie keeping the lower lane's value. Min, max and the top two are
// exact, and the tree and its ties are tile_stats_avx2's, so every statistic
// is the same to the bit (a max of +0 and -0 included).
#include <cstring>

#include "compressors/codecs/internal/tah_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace slowpipe::compressors::tah {
namespace {

// 8 x 8 transpose of 32-bit lanes: out[L] lane t = in[t] lane L.
__attribute__((target("avx2"))) inline void transpose8(const __m256i* in, __m256i* out) {
  __m256i a[8], b[8];
  for (int i = 0; i < 8; i += 2) {
    a[i] = _mm256_unpacklo_epi32(in[i], in[i + 1]);
    a[i + 1] = _mm256_unpackhi_epi32(in[i], in[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    b[i] = _mm256_unpacklo_epi64(a[i], a[i + 2]);
    b[i + 1] = _mm256_unpackhi_epi64(a[i], a[i + 2]);
    b[i + 2] = _mm256_unpacklo_epi64(a[i + 1], a[i + 3]);
    b[i + 3] = _mm256_unpackhi_epi64(a[i + 1], a[i + 3]);
  }
  for (int i = 0; i < 4; ++i) {
    out[i] = _mm256_permute2x128_si256(b[i], b[i + 4], 0x20);
    out[i + 4] = _mm256_permute2x128_si256(b[i], b[i + 4], 0x31);
  }
}

// The lane updates of one tile (tile_stats_avx2's loop).
struct Lanes {
  __m256i m1, m2;
  __m256 mn, mx;
};
__attribute__((target("avx2"))) inline Lanes tile_lanes(const float* x, int64_t len) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  Lanes s{_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_set1_ps(x[0]),
          _mm256_set1_ps(x[0])};
  for (int64_t i = 0; i < len; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256i a = _mm256_and_si256(_mm256_castps_si256(v), abs_mask);
    s.m2 = _mm256_max_epu32(_mm256_min_epu32(a, s.m1), s.m2);
    s.m1 = _mm256_max_epu32(a, s.m1);
    s.mn = _mm256_min_ps(v, s.mn);
    s.mx = _mm256_max_ps(v, s.mx);
  }
  return s;
}

}  // namespace

__attribute__((target("avx2"))) void stats8_avx2(const float* const* x, int64_t len,
                                                 TileStats* out) {
  __m256i m1[8], m2[8], mn[8], mx[8];
  for (int t = 0; t < 8; ++t) {
    const Lanes s = tile_lanes(x[t], len);
    m1[t] = s.m1, m2[t] = s.m2;
    mn[t] = _mm256_castps_si256(s.mn), mx[t] = _mm256_castps_si256(s.mx);
  }
  __m256i t1[8], t2[8], tn[8], tx[8];
  transpose8(m1, t1);
  transpose8(m2, t2);
  transpose8(mn, tn);
  transpose8(mx, tx);
  for (int w = 4; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) {  // lane j takes lane j + w; ties keep lane j's
      const __m256i low = _mm256_min_epu32(t1[j], t1[j + w]);
      t2[j] = _mm256_max_epu32(low, _mm256_max_epu32(t2[j], t2[j + w]));
      t1[j] = _mm256_max_epu32(t1[j], t1[j + w]);
      tn[j] = _mm256_castps_si256(
          _mm256_min_ps(_mm256_castsi256_ps(tn[j + w]), _mm256_castsi256_ps(tn[j])));
      tx[j] = _mm256_castps_si256(
          _mm256_max_ps(_mm256_castsi256_ps(tx[j + w]), _mm256_castsi256_ps(tx[j])));
    }
  alignas(32) uint32_t top1[8], top2[8];
  alignas(32) float lo[8], hi[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(top1), t1[0]);
  _mm256_store_si256(reinterpret_cast<__m256i*>(top2), t2[0]);
  _mm256_store_ps(lo, _mm256_castsi256_ps(tn[0]));
  _mm256_store_ps(hi, _mm256_castsi256_ps(tx[0]));
  for (int t = 0; t < 8; ++t) {
    std::memcpy(&out[t].top1, &top1[t], 4);
    std::memcpy(&out[t].top2, &top2[t], 4);
    out[t].lo = lo[t] + 0.0F;  // -0 reads as +0, as tile_stats
    out[t].hi = hi[t];
    out[t].finite = top1[t] < 0x7F800000U;
  }
}

}  // namespace slowpipe::compressors::tah
#endif
