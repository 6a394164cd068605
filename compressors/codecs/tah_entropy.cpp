// TAH-Quant's entropy estimate (internal/tah_quant.h, tah_entropy, and
// internal/tah_kernels.h, entropies): the documented recipe (docs/codec-spec.md,
// "TAH-Quant", Entropy) as a portable loop and in AVX2 and AVX-512, every path
// with the portable loop's operations in its order, so the same float. Kept
// apart from tah_kernels.cpp (statistics, roundings, Walsh-Hadamard) for size.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "compressors/codecs/internal/quant_simd.h"
#include "compressors/codecs/internal/tah_kernels.h"
#include "compressors/codecs/internal/tah_quant.h"
#include "compressors/codecs/internal/tah_simd.h"
#ifdef TAH_F16C
// GCC 12 warns about the deliberately undefined upper halves inside the
// AVX-512 intrinsics (_mm512_castps256_ps512 and the like).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace slowpipe::compressors {
namespace {
using tah::kMaxTile;
// log2(1 + t) ~ t (c1 + t (c2 + t (c3 + t c4))) on [0, 1): a least-squares
// fit, |error| < 1.1e-4 (docs/codec-spec.md).
constexpr float kC1 = 1.4390145F, kC2 = -0.67994287F, kC3 = 0.32559363F, kC4 = -0.084767579F;
constexpr int kLanes = 8;  // the entropy's interleaved partial sums

}  // namespace

float tah_log2(float u) {
  uint32_t b;
  std::memcpy(&b, &u, 4);
  const int e = static_cast<int>(b >> 23) - 127;
  const uint32_t mb = (b & 0x7FFFFFU) | 0x3F800000U;
  float m;
  std::memcpy(&m, &mb, 4);
  const float t = m - 1.0F;
  return static_cast<float>(e) + (((kC4 * t + kC3) * t + kC2) * t + kC1) * t;
}

namespace {

// 2^-e with e the exponent of `top` (a normal float): u = |x| * k lies in [0, 2).
float entropy_scale(float top) {
  uint32_t tb;
  std::memcpy(&tb, &top, 4);
  const uint32_t e = tb >> 23;                                       // 1..254 for a finite top
  if (e >= 254) return std::ldexp(1.0F, 127 - static_cast<int>(e));  // not a normal scale
  const uint32_t kb = (254 - e) << 23;                               // 2^(127 - e), a normal float
  float k;
  std::memcpy(&k, &kb, 4);
  return k;
}

#ifdef TAH_F16C
// tah_entropy in AVX2 for len a positive multiple of 8: the same element-wise
// arithmetic, operation for operation (no fused multiply-add), and the same 8
// lane sums in the same order, so the same float. The scale is built from its
// bits where it is a normal float (every top below 2^127). One tile at a time
// (entropy_avx2) or four interleaved (entropy_ways_avx2, so that the tiles'
// dependency chains overlap), both on the pieces below: named registers, not
// arrays (which the compiler kept in memory).
struct EntropyTerms {  // the recipe's constants
  __m256 abs_mask, one, c1, c2, c3, c4;
  __m256i mant, one_bits, bias, below_normal;
};
__attribute__((target("avx2"))) inline EntropyTerms entropy_constants() {
  EntropyTerms c;
  c.abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  c.mant = _mm256_set1_epi32(0x7FFFFF), c.one_bits = _mm256_set1_epi32(0x3F800000);
  c.bias = _mm256_set1_epi32(127), c.below_normal = _mm256_set1_epi32(0x007FFFFF);
  c.one = _mm256_set1_ps(1.0F), c.c1 = _mm256_set1_ps(kC1), c.c2 = _mm256_set1_ps(kC2);
  c.c3 = _mm256_set1_ps(kC3), c.c4 = _mm256_set1_ps(kC4);
  return c;
}
// The terms of 8 elements into the lane sums s (of u) and t (of u log2 u).
__attribute__((target("avx2"), always_inline)) inline void entropy_terms(const EntropyTerms& c,
                                                                         const float* x, __m256 k,
                                                                         __m256& s, __m256& t) {
  const __m256 u = _mm256_mul_ps(_mm256_and_ps(_mm256_loadu_ps(x), c.abs_mask), k);
  const __m256i b = _mm256_castps_si256(u);
  const __m256 f = _mm256_sub_ps(
      _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(b, c.mant), c.one_bits)), c.one);
  __m256 poly = _mm256_add_ps(_mm256_mul_ps(c.c4, f), c.c3);
  poly = _mm256_add_ps(_mm256_mul_ps(poly, f), c.c2);
  poly = _mm256_add_ps(_mm256_mul_ps(poly, f), c.c1);
  const __m256 e = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(b, 23), c.bias));
  const __m256 lg = _mm256_add_ps(e, _mm256_mul_ps(poly, f));
  const __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(b, c.below_normal));
  s = _mm256_add_ps(s, _mm256_and_ps(u, keep));
  t = _mm256_add_ps(t, _mm256_and_ps(_mm256_mul_ps(u, lg), keep));
}
// The largest |x| is taken on the bits, unsigned: for finite values the same
// as the float maximum, and an inf or NaN (bits >= 0x7F800000) stands above
// every finite one, so it also says whether a tile is finite.
__attribute__((target("avx2"))) inline __m256i magnitude_max(__m256i m, const float* x) {
  const __m256i abs_bits = _mm256_set1_epi32(0x7FFFFFFF);
  return _mm256_max_epu32(
      m, _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)), abs_bits));
}
// The scale of a tile from its lanes' largest |x| (0 for a dead tile: a top
// below FLT_MIN, or a NaN).
__attribute__((target("avx2"))) inline __m256 entropy_k(__m256i lanes, bool& live) {
  __m256 m = _mm256_castsi256_ps(lanes);
  m = _mm256_max_ps(m, _mm256_permute2f128_ps(m, m, 1));
  m = _mm256_max_ps(m, _mm256_permute_ps(m, 0x4E));
  m = _mm256_max_ps(m, _mm256_permute_ps(m, 0xB1));
  const float top = _mm256_cvtss_f32(m);
  live = top >= FLT_MIN;
  return _mm256_set1_ps(live ? entropy_scale(top) : 0.0F);
}
__attribute__((target("avx2"))) inline float entropy_of(__m256 s, __m256 t, bool live) {
  alignas(32) float sl[8], tl[8];
  _mm256_store_ps(sl, s);
  _mm256_store_ps(tl, t);
  const float sum_s = ((sl[0] + sl[1]) + (sl[2] + sl[3])) + ((sl[4] + sl[5]) + (sl[6] + sl[7]));
  const float sum_t = ((tl[0] + tl[1]) + (tl[2] + tl[3])) + ((tl[4] + tl[5]) + (tl[6] + tl[7]));
  return live ? tah_log2(sum_s) - sum_t / sum_s : 0.0F;
}
__attribute__((target("avx2"))) float entropy_avx2(const float* x, int64_t len) {
  __m256i m = _mm256_setzero_si256();
  for (int64_t i = 0; i < len; i += 8) m = magnitude_max(m, x + i);
  bool live;
  const __m256 k = entropy_k(m, live);
  if (!live) return 0.0F;
  const EntropyTerms c = entropy_constants();
  __m256 s = _mm256_setzero_ps(), t = s;
  for (int64_t i = 0; i < len; i += 8) entropy_terms(c, x + i, k, s, t);
  return entropy_of(s, t, live);
}
constexpr int kWays = 4;
// Four tiles; false when one holds a NaN or an inf (the entropies are then
// meaningless).
__attribute__((target("avx2"))) bool entropy_ways_avx2(const float* const* x, int64_t len,
                                                       float* out) {
  const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
  __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
  for (int64_t i = 0; i < len; i += 8) {
    m0 = magnitude_max(m0, x0 + i);
    m1 = magnitude_max(m1, x1 + i);
    m2 = magnitude_max(m2, x2 + i);
    m3 = magnitude_max(m3, x3 + i);
  }
  const __m256i top = _mm256_max_epu32(_mm256_max_epu32(m0, m1), _mm256_max_epu32(m2, m3));
  const bool finite = _mm256_testz_si256(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(0x7F7FFFFF)),
                                         _mm256_set1_epi32(-1));
  bool live[kWays];
  const __m256 k0 = entropy_k(m0, live[0]), k1 = entropy_k(m1, live[1]),
               k2 = entropy_k(m2, live[2]), k3 = entropy_k(m3, live[3]);
  const EntropyTerms c = entropy_constants();
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, t0 = s0, t1 = s0, t2 = s0, t3 = s0;
  for (int64_t i = 0; i < len; i += 8) {
    entropy_terms(c, x0 + i, k0, s0, t0);
    entropy_terms(c, x1 + i, k1, s1, t1);
    entropy_terms(c, x2 + i, k2, s2, t2);
    entropy_terms(c, x3 + i, k3, s3, t3);
  }
  out[0] = entropy_of(s0, t0, live[0]);
  out[1] = entropy_of(s1, t1, live[1]);
  out[2] = entropy_of(s2, t2, live[2]);
  out[3] = entropy_of(s3, t3, live[3]);
  return finite;
}
// The same four tiles with the element-wise recipe on 16 lanes (AVX-512F):
// every lane's operations are entropy_terms', and each 16-element step adds
// its low 8 terms into the 8 lane sums before its high 8, so that element i
// still goes into sum i mod 8 in index order: the same floats, half the
// element-wise instructions.
struct EntropyTerms512 {
  __m512i abs_mask, mant, one_bits, bias;
  __m512 one, c1, c2, c3, c4;
};
__attribute__((target("avx512f"))) inline EntropyTerms512 entropy_constants512() {
  return {_mm512_set1_epi32(0x7FFFFFFF), _mm512_set1_epi32(0x7FFFFF), _mm512_set1_epi32(0x3F800000),
          _mm512_set1_epi32(127),        _mm512_set1_ps(1.0F),        _mm512_set1_ps(kC1),
          _mm512_set1_ps(kC2),           _mm512_set1_ps(kC3),         _mm512_set1_ps(kC4)};
}
__attribute__((target("avx512f"))) inline __m256 high_half(__m512 v) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}
__attribute__((target("avx512f"), always_inline)) inline void entropy_terms16(
    const EntropyTerms512& c, const float* x, __m512 k, __m256& s, __m256& t) {
  const __m512 u =
      _mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(_mm512_loadu_si512(x), c.abs_mask)), k);
  const __m512i b = _mm512_castps_si512(u);
  const __m512 f = _mm512_sub_ps(
      _mm512_castsi512_ps(_mm512_or_si512(_mm512_and_si512(b, c.mant), c.one_bits)), c.one);
  __m512 poly = _mm512_add_ps(_mm512_mul_ps(c.c4, f), c.c3);
  poly = _mm512_add_ps(_mm512_mul_ps(poly, f), c.c2);
  poly = _mm512_add_ps(_mm512_mul_ps(poly, f), c.c1);
  const __m512 e = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_srli_epi32(b, 23), c.bias));
  const __m512 lg = _mm512_add_ps(e, _mm512_mul_ps(poly, f));
  const __mmask16 keep = _mm512_cmpgt_epi32_mask(b, c.mant);  // u >= FLT_MIN
  const __m512 su = _mm512_maskz_mov_ps(keep, u), tu = _mm512_maskz_mul_ps(keep, u, lg);
  s = _mm256_add_ps(s, _mm512_castps512_ps256(su));
  t = _mm256_add_ps(t, _mm512_castps512_ps256(tu));
  s = _mm256_add_ps(s, high_half(su));
  t = _mm256_add_ps(t, high_half(tu));
}
// len a positive multiple of 16.
__attribute__((target("avx512f,avx2"))) bool entropy_ways_avx512(const float* const* x, int64_t len,
                                                                 float* out) {
  __m256i m[kWays];
  for (int w = 0; w < kWays; ++w) m[w] = _mm256_setzero_si256();
  for (int64_t i = 0; i < len; i += 8)
    for (int w = 0; w < kWays; ++w) m[w] = magnitude_max(m[w], x[w] + i);
  const __m256i top = _mm256_max_epu32(_mm256_max_epu32(m[0], m[1]), _mm256_max_epu32(m[2], m[3]));
  const bool finite = _mm256_testz_si256(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(0x7F7FFFFF)),
                                         _mm256_set1_epi32(-1));
  bool live[kWays];
  __m512 k[kWays];
  for (int w = 0; w < kWays; ++w)
    k[w] = _mm512_broadcastss_ps(_mm256_castps256_ps128(entropy_k(m[w], live[w])));
  const EntropyTerms512 c = entropy_constants512();
  __m256 s[kWays], t[kWays];
  for (int w = 0; w < kWays; ++w) s[w] = t[w] = _mm256_setzero_ps();
  for (int64_t i = 0; i < len; i += 16)
    for (int w = 0; w < kWays; ++w) entropy_terms16(c, x[w] + i, k[w], s[w], t[w]);
  for (int w = 0; w < kWays; ++w) out[w] = entropy_of(s[w], t[w], live[w]);
  return finite;
}
#endif

TAH_CLONES float tah_entropy_portable(const float* x, int64_t len) {
  const float top = tah::stats_of(x, len, false).top1;
  if (!(top >= FLT_MIN)) return 0.0F;
  // 2^-e with e the exponent of the largest |x|: u = |x| * k lies in [0, 2),
  // exactly scaled wherever u >= FLT_MIN (the entropy is scale invariant).
  const float k = entropy_scale(top);
  // Element-wise first (vectorized), then the documented lane sums.
  float us[kMaxTile], terms[kMaxTile];
  for (int64_t i = 0; i < len; ++i) {
    const float u = std::fabs(x[i]) * k;
    uint32_t b;
    std::memcpy(&b, &u, 4);
    const uint32_t mb = (b & 0x7FFFFFU) | 0x3F800000U;
    float m;
    std::memcpy(&m, &mb, 4);
    const float f = m - 1.0F;
    const float lg = static_cast<float>(static_cast<int>(b >> 23) - 127) +
                     (((kC4 * f + kC3) * f + kC2) * f + kC1) * f;  // tah_log2(u)
    // u < FLT_MIN (zero or subnormal) counts as 0: an integer mask on the bits,
    // so that the loop has no branch (u >= 0, so its bits order like its value).
    const float term = u * lg;
    const uint32_t keep = b >= 0x00800000U ? 0xFFFFFFFFU : 0U;
    uint32_t tb_bits;
    std::memcpy(&tb_bits, &term, 4);
    const uint32_t ub = b & keep, qb = tb_bits & keep;
    std::memcpy(&us[i], &ub, 4);
    std::memcpy(&terms[i], &qb, 4);
  }
  float s[kLanes] = {}, t[kLanes] = {};
  const int64_t whole = len / kLanes * kLanes;
  for (int64_t i = 0; i < whole; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      s[j] += us[i + j];
      t[j] += terms[i + j];
    }
  for (int64_t i = whole; i < len; ++i) {
    s[i - whole] += us[i];
    t[i - whole] += terms[i];
  }
  const float sum_s = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  const float sum_t = ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
  return tah_log2(sum_s) - sum_t / sum_s;
}

}  // namespace

float tah_entropy(const float* x, int64_t len, bool vector) {
#ifdef TAH_F16C
  if (vector && len >= 8 && len % 8 == 0 && tah::avx2_allowed()) return entropy_avx2(x, len);
#endif
  (void)vector;
  return tah_entropy_portable(x, len);
}

bool tah::entropies(const float* const* x, int64_t len, int64_t n, float* out) {
  const auto finite_tile = [len](const float* v) {
    for (int64_t j = 0; j < len; ++j)
      if (!std::isfinite(v[j])) return false;
    return true;
  };
  bool finite = true;
  int64_t i = 0;
#ifdef TAH_F16C
  if (len >= 16 && len % 16 == 0 && simd::level() >= simd::Level::kAvx512)
    for (; i + kWays <= n; i += kWays) finite &= entropy_ways_avx512(x + i, len, out + i);
  else if (len >= 8 && len % 8 == 0 && tah::avx2_allowed())
    for (; i + kWays <= n; i += kWays) finite &= entropy_ways_avx2(x + i, len, out + i);
#endif
  for (; i < n; ++i) {
    out[i] = tah_entropy(x[i], len);
    finite &= finite_tile(x[i]);
  }
  return finite;
}

}  // namespace slowpipe::compressors
