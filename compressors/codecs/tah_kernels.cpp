// TAH-Quant's per-tile kernels: internal/tah_kernels.h (the packing ones are
// tah_pack.cpp, the entropy tah_entropy.cpp) and the pieces of
// internal/tah_quant.h. Reductions run in 8 lanes, so the loops vectorize
// (target_clones); the statistics, grids and Walsh-Hadamard also have
// explicit AVX2 paths and the fp16 roundings F16C ones, each with the
// portable loop's results.
#include "compressors/codecs/internal/tah_kernels.h"

#include <c10/util/Half.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "compressors/codecs/internal/quant_simd.h"
#include "compressors/codecs/internal/tah_quant.h"
#include "compressors/codecs/internal/tah_simd.h"

namespace slowpipe::compressors {
namespace tah {
namespace {

// Reductions in 8 interleaved lanes (vectorizable, one AVX2 vector, a short
// tree; min, max and the top two
// are exact, so the order does not change the result).
constexpr int kRedLanes = 8;

TAH_CLONES TileStats tile_stats(const float* x, int64_t len) {
  float m1[kRedLanes] = {}, m2[kRedLanes] = {}, mn[kRedLanes], mx[kRedLanes];
  for (int j = 0; j < kRedLanes; ++j) mn[j] = mx[j] = x[0];
  int bad = 0;  // a NaN or inf seen (which min and max would pass over)
  const auto step = [&](int j, float v) {
    const float a = std::fabs(v);
    bad |= !(a <= FLT_MAX);
    const float low = a < m1[j] ? a : m1[j];
    m2[j] = low > m2[j] ? low : m2[j];
    m1[j] = a > m1[j] ? a : m1[j];
    mn[j] = v < mn[j] ? v : mn[j];
    mx[j] = v > mx[j] ? v : mx[j];
  };
  const int64_t whole = len / kRedLanes * kRedLanes;
  for (int64_t i = 0; i < whole; i += kRedLanes)
    for (int j = 0; j < kRedLanes; ++j) step(j, x[i + j]);
  for (int64_t i = whole; i < len; ++i) step(0, x[i]);
  for (int w = kRedLanes / 2; w >= 1; w /= 2)  // lanes j and j + w, as a tree
    for (int j = 0; j < w; ++j) {
      const float low = m1[j] < m1[j + w] ? m1[j] : m1[j + w];
      const float high2 = m2[j] > m2[j + w] ? m2[j] : m2[j + w];
      m2[j] = low > high2 ? low : high2;
      m1[j] = m1[j] > m1[j + w] ? m1[j] : m1[j + w];
      mn[j] = mn[j + w] < mn[j] ? mn[j + w] : mn[j];
      mx[j] = mx[j + w] > mx[j] ? mx[j + w] : mx[j];
    }
  TileStats s;
  s.top1 = m1[0];
  s.top2 = m2[0];
  s.lo = mn[0] + 0.0F;  // -0 reads as +0, whatever the lanes' order
  s.hi = mx[0];
  s.finite = bad == 0;
  return s;
}

#ifdef TAH_F16C
// tile_stats in explicit AVX2 (len a positive multiple of 8): the same lane
// updates, then the tree across lanes by shuffles instead of scalar code.
// Exact whatever the order (min, max and the top two), so the same stats.
__attribute__((target("avx2"))) inline void fold_tops(__m256i& m1, __m256i& m2, __m256i o1,
                                                      __m256i o2) {
  const __m256i low = _mm256_min_epu32(m1, o1);
  m2 = _mm256_max_epu32(low, _mm256_max_epu32(m2, o2));
  m1 = _mm256_max_epu32(m1, o1);
}
__attribute__((target("avx2"))) inline void fold_range(__m256& mn, __m256& mx, __m256 on,
                                                       __m256 ox) {
  mn = _mm256_min_ps(on, mn);
  mx = _mm256_max_ps(ox, mx);
}
// Magnitudes are compared as the bits of |x|, unsigned: they order like the
// values (equal values, equal bits), and an inf or NaN (bits >= 0x7F800000)
// is above every finite one, so the largest also says whether all are finite.
__attribute__((target("avx2"))) TileStats tile_stats_avx2(const float* x, int64_t len) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  __m256i m1 = _mm256_setzero_si256(), m2 = _mm256_setzero_si256();
  __m256 mn = _mm256_set1_ps(x[0]), mx = mn;
  for (int64_t i = 0; i < len; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256i a = _mm256_and_si256(_mm256_castps_si256(v), abs_mask);
    m2 = _mm256_max_epu32(_mm256_min_epu32(a, m1), m2);
    m1 = _mm256_max_epu32(a, m1);
    mn = _mm256_min_ps(v, mn);
    mx = _mm256_max_ps(v, mx);
  }
  fold_tops(m1, m2, _mm256_permute2x128_si256(m1, m1, 1), _mm256_permute2x128_si256(m2, m2, 1));
  fold_range(mn, mx, _mm256_permute2f128_ps(mn, mn, 1), _mm256_permute2f128_ps(mx, mx, 1));
  fold_tops(m1, m2, _mm256_shuffle_epi32(m1, 0x4E), _mm256_shuffle_epi32(m2, 0x4E));
  fold_range(mn, mx, _mm256_permute_ps(mn, 0x4E), _mm256_permute_ps(mx, 0x4E));
  fold_tops(m1, m2, _mm256_shuffle_epi32(m1, 0xB1), _mm256_shuffle_epi32(m2, 0xB1));
  fold_range(mn, mx, _mm256_permute_ps(mn, 0xB1), _mm256_permute_ps(mx, 0xB1));
  const auto top1 = static_cast<uint32_t>(_mm256_cvtsi256_si32(m1));
  const auto top2 = static_cast<uint32_t>(_mm256_cvtsi256_si32(m2));
  TileStats s;
  std::memcpy(&s.top1, &top1, 4);
  std::memcpy(&s.top2, &top2, 4);
  s.lo = _mm256_cvtss_f32(mn) + 0.0F;  // -0 reads as +0, as tile_stats
  s.hi = _mm256_cvtss_f32(mx);
  s.finite = top1 < 0x7F800000U;
  return s;
}
// tile_stats_avx2's min and max alone (the same lane updates and tree).
__attribute__((target("avx2"))) void tile_range_avx2(const float* x, int64_t len, float* lo,
                                                     float* hi) {
  __m256 mn = _mm256_set1_ps(x[0]), mx = mn;
  for (int64_t i = 0; i < len; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    mn = _mm256_min_ps(v, mn);
    mx = _mm256_max_ps(v, mx);
  }
  fold_range(mn, mx, _mm256_permute2f128_ps(mn, mn, 1), _mm256_permute2f128_ps(mx, mx, 1));
  fold_range(mn, mx, _mm256_permute_ps(mn, 0x4E), _mm256_permute_ps(mx, 0x4E));
  fold_range(mn, mx, _mm256_permute_ps(mn, 0xB1), _mm256_permute_ps(mx, 0xB1));
  *lo = _mm256_cvtss_f32(mn) + 0.0F;  // -0 reads as +0, as tile_stats
  *hi = _mm256_cvtss_f32(mx);
}
bool have_avx2() {
  return avx2_allowed();
}
#endif
}  // namespace

bool avx2_allowed() {
  return simd::level() >= simd::Level::kAvx2;
}
bool f16c_allowed() {
  static const bool cpu = __builtin_cpu_supports("f16c");
  return cpu && avx2_allowed();
}

#ifdef TAH_F16C
namespace {
__attribute__((target("avx2"))) int64_t first_magnitude_avx2(const float* x, int64_t len,
                                                             float top) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 t = _mm256_set1_ps(top);
  for (int64_t i = 0; i < len; i += 8) {
    const __m256 a = _mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask);
    const int eq = _mm256_movemask_ps(_mm256_cmp_ps(a, t, _CMP_EQ_OQ));
    if (eq != 0) return i + __builtin_ctz(static_cast<unsigned>(eq));
  }
  return len;
}
}  // namespace
#endif

int64_t first_magnitude(const float* x, int64_t len, float top) {
#ifdef TAH_F16C
  if (len % 8 == 0 && have_avx2()) return first_magnitude_avx2(x, len, top);
#endif
  int64_t i = 0;
  while (i < len && std::fabs(x[i]) != top) ++i;
  return i;
}

TileStats stats_of(const float* x, int64_t len, bool vector) {
#ifdef TAH_F16C
  if (vector && len >= 8 && len % 8 == 0 && have_avx2()) return tile_stats_avx2(x, len);
#endif
  (void)vector;
  return tile_stats(x, len);
}

void range_of(const float* x, int64_t len, float* lo, float* hi) {
#ifdef TAH_F16C
  if (len >= 8 && len % 8 == 0 && have_avx2()) return tile_range_avx2(x, len, lo, hi);
#endif
  const TileStats s = tile_stats(x, len);
  *lo = s.lo, *hi = s.hi;
}

void stats_many(const float* const* x, const int64_t* len, int n, TileStats* out) {
#ifdef TAH_F16C
  if (have_avx2()) {
    int i = 0;
    for (; i + 8 <= n && len[i] >= 8 && len[i] % 8 == 0 &&
           std::all_of(len + i, len + i + 8, [&](int64_t v) { return v == len[i]; });
         i += 8)
      stats8_avx2(x + i, len[i], out + i);
    for (; i < n; ++i)
      out[i] =
          len[i] >= 8 && len[i] % 8 == 0 ? tile_stats_avx2(x[i], len[i]) : tile_stats(x[i], len[i]);
    return;
  }
#endif
  for (int i = 0; i < n; ++i) out[i] = tile_stats(x[i], len[i]);
}

namespace {

// fp16 bits, inline (c10's header-only conversions; the same roundings as
// half_round_down / half_round_up of quantizer.h, which the tests compare).
inline uint16_t to_half(float v) {
  return c10::Half(v).x;
}
inline float from_half(uint16_t h) {
  return static_cast<float>(c10::Half(h, c10::Half::from_bits()));
}
inline uint16_t half_up_software(float v) {  // v finite
  if (v > 65504.0F) return 0x7BFF;
  if (v < -65504.0F) return 0xFBFF;
  const uint16_t h = to_half(v);
  if (from_half(h) >= v) return h;
  if (h == 0x8000) return 0x0001;
  return (h & 0x8000) ? h - 1 : h + 1;
}
#ifdef TAH_F16C
// The same rounding in one instruction: F16C converts toward +inf directly
// (the smallest fp16 >= v, -0 for -tiny, 0x0001 for +tiny); and the exact
// widening back.
__attribute__((target("f16c"))) inline uint16_t half_up_f16c(float v) {
  if (v > 65504.0F) return 0x7BFF;
  if (v < -65504.0F) return 0xFBFF;
  return static_cast<uint16_t>(_cvtss_sh(v, _MM_FROUND_TO_POS_INF));
}
__attribute__((target("f16c"))) inline float from_half_f16c(uint16_t h) {
  return _cvtsh_ss(h);
}
bool have_f16c() {
  return f16c_allowed();
}
#endif

}  // namespace

uint16_t half_up(float v) {
#ifdef TAH_F16C
  if (have_f16c()) return half_up_f16c(v);
#endif
  return half_up_software(v);
}
float widen(uint16_t h) {
#ifdef TAH_F16C
  if (have_f16c()) return from_half_f16c(h);
#endif
  return from_half(h);
}
uint16_t half_down(float v) {
  return half_up(-v) ^ 0x8000;
}

namespace {
Grid grid_portable(float lo, float hi, int bits) {
  Grid g{};
  g.zero_half = half_down(lo);
  g.zero = widen(g.zero_half);
  g.step_half = half_up(std::max(0.0F, (hi - g.zero) / static_cast<float>((1 << bits) - 1)));
  g.step = widen(g.step_half);
  g.inv = g.step > 0.0F ? 1.0F / g.step : 0.0F;
  return g;
}
#ifdef TAH_F16C
// fp16 bits of v rounded up, 8 lanes: F16C's conversion toward +inf, which
// already gives -65504 below the range; above it (+inf, 0x7C00, which no
// finite v <= 65504 gives) the largest finite fp16 instead, as half_up_f16c.
__attribute__((target("avx2,f16c"))) inline __m128i halves_up(__m256 v) {
  const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_POS_INF);
  return _mm_add_epi16(h, _mm_cmpeq_epi16(h, _mm_set1_epi16(0x7C00)));
}
// grids_of for up to 8 tiles at once: the scalar recipe lane by lane (the
// same roundings, the same division), unused lanes padded with a zero tile.
__attribute__((target("avx2,f16c"))) void grids_f16c(const float* lo, const float* hi,
                                                     const int* bits, int n, Grid* out) {
  for (int i0 = 0; i0 < n; i0 += 8) {
    const int m = std::min(8, n - i0);
    alignas(32) float l8[8] = {}, h8[8] = {};
    alignas(32) int b8[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    std::copy(lo + i0, lo + i0 + m, l8);
    std::copy(hi + i0, hi + i0 + m, h8);
    std::copy(bits + i0, bits + i0 + m, b8);
    const __m256 vlo = _mm256_load_ps(l8), vhi = _mm256_load_ps(h8);
    const __m256 max_code = _mm256_cvtepi32_ps(
        _mm256_sub_epi32(_mm256_sllv_epi32(_mm256_set1_epi32(1),
                                           _mm256_load_si256(reinterpret_cast<const __m256i*>(b8))),
                         _mm256_set1_epi32(1)));
    const __m256 minus = _mm256_set1_ps(-0.0F);
    const __m128i zero_half = _mm_xor_si128(halves_up(_mm256_xor_ps(vlo, minus)),
                                            _mm_set1_epi16(static_cast<short>(0x8000)));
    const __m256 zero = _mm256_cvtph_ps(zero_half);
    // max(x, 0) is (x > 0) ? x : 0, as std::max(0.0F, x)
    const __m128i step_half = halves_up(
        _mm256_max_ps(_mm256_div_ps(_mm256_sub_ps(vhi, zero), max_code), _mm256_setzero_ps()));
    const __m256 step = _mm256_cvtph_ps(step_half);
    const __m256 inv = _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0F), step),
                                     _mm256_cmp_ps(step, _mm256_setzero_ps(), _CMP_GT_OQ));
    alignas(16) uint16_t zh[8], sh[8];
    alignas(32) float z[8], st[8], iv[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(zh), zero_half);
    _mm_store_si128(reinterpret_cast<__m128i*>(sh), step_half);
    _mm256_store_ps(z, zero);
    _mm256_store_ps(st, step);
    _mm256_store_ps(iv, inv);
    for (int j = 0; j < m; ++j) out[i0 + j] = {zh[j], sh[j], z[j], st[j], iv[j]};
  }
}
#endif
}  // namespace

void grids_of(const float* lo, const float* hi, const int* bits, int n, Grid* out) {
#ifdef TAH_F16C
  if (have_f16c() && have_avx2()) return grids_f16c(lo, hi, bits, n, out);
#endif
  for (int i = 0; i < n; ++i) out[i] = grid_portable(lo[i], hi[i], bits[i]);
}

}  // namespace tah

namespace {

// (float)(1 / sqrt(G)) for G = 2^k, k = 0..10, computed once (g a power of
// two, so its exponent is its count of trailing zeros).
float hadamard_scale(int64_t g) {
  static const std::array<float, 11> scales = [] {
    std::array<float, 11> s{};
    for (int k = 0; k <= 10; ++k)
      s[static_cast<size_t>(k)] =
          static_cast<float>(1.0 / std::sqrt(static_cast<double>(int64_t{1} << k)));
    return s;
  }();
  return scales[static_cast<size_t>(__builtin_ctzll(static_cast<uint64_t>(g)))];
}

}  // namespace

namespace {

#ifdef TAH_F16C
// One butterfly stage inside each vector: lanes with bit w clear get x + y,
// the others x' - y' (their partner's value minus their own), as the scalar
// loop's (v[j], v[j + w]) <- (v[j] + v[j + w], v[j] - v[j + w]). Computed as
// partner + v with the sign of the second lanes flipped (`odd`: -0 there, +0
// elsewhere): a sum is commutative and x - y is x + (-y), exactly, so these
// are the same floats, in one addition and one xor instead of two and a blend.
__attribute__((target("avx2"))) inline __m256 butterfly(__m256 v, __m256 partner, __m256 odd) {
  return _mm256_add_ps(partner, _mm256_xor_ps(v, odd));
}
// The sign masks of the three stages inside a vector (w = 1, 2, 4).
struct OddLanes {
  __m256 w1, w2, w4;
};
__attribute__((target("avx2"))) inline OddLanes odd_lanes() {
  const float m = -0.0F;
  return {_mm256_setr_ps(0, m, 0, m, 0, m, 0, m), _mm256_setr_ps(0, 0, m, m, 0, 0, m, m),
          _mm256_setr_ps(0, 0, 0, 0, m, m, m, m)};
}
__attribute__((target("avx2"))) inline __m256 stages_in_vector(__m256 y, const OddLanes& o) {
  y = butterfly(y, _mm256_permute_ps(y, 0xB1), o.w1);
  y = butterfly(y, _mm256_permute_ps(y, 0x4E), o.w2);
  return butterfly(y, _mm256_permute2f128_ps(y, y, 1), o.w4);
}
// hadamard_avx2 for g = 8 N, N a power of two up to 8: the tile held in N
// registers from load to store (the same operations on the same pairs).
template <int N>
__attribute__((target("avx2"))) void hadamard_regs_avx2(float* v, float scale) {
  __m256 x[N];
  const OddLanes o = odd_lanes();
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) x[i] = stages_in_vector(_mm256_loadu_ps(v + 8 * i), o);
#pragma GCC unroll 4
  for (int h = 1; h < N; h *= 2)  // N / 2 pairs (j, j + h) per stage
#pragma GCC unroll 4
    for (int p = 0; p < N / 2; ++p) {
      const int j = p / h * 2 * h + p % h;
      const __m256 a = x[j], b = x[j + h];
      x[j] = _mm256_add_ps(a, b);
      x[j + h] = _mm256_sub_ps(a, b);
    }
  const __m256 s = _mm256_set1_ps(scale);
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) _mm256_storeu_ps(v + 8 * i, _mm256_mul_ps(x[i], s));
}
// tah_hadamard in AVX2 for g a multiple of 8: stages 1, 2 and 4 inside each
// vector by lane permutes, the wider ones between vectors, then the scale:
// the portable loop's additions, subtractions and products, in its order.
__attribute__((target("avx2"))) void hadamard_avx2(float* v, int64_t g, float scale) {
  switch (g) {
    case 8:
      return hadamard_regs_avx2<1>(v, scale);
    case 16:
      return hadamard_regs_avx2<2>(v, scale);
    case 32:
      return hadamard_regs_avx2<4>(v, scale);
    case 64:
      return hadamard_regs_avx2<8>(v, scale);
    default:
      break;
  }
  const OddLanes o = odd_lanes();
  for (int64_t i = 0; i < g; i += 8)
    _mm256_storeu_ps(v + i, stages_in_vector(_mm256_loadu_ps(v + i), o));
  for (int64_t h = 8; h < g; h *= 2)
    for (int64_t i = 0; i < g; i += 2 * h)
      for (int64_t j = i; j < i + h; j += 8) {
        const __m256 a = _mm256_loadu_ps(v + j), b = _mm256_loadu_ps(v + j + h);
        _mm256_storeu_ps(v + j, _mm256_add_ps(a, b));
        _mm256_storeu_ps(v + j + h, _mm256_sub_ps(a, b));
      }
  const __m256 s = _mm256_set1_ps(scale);
  for (int64_t j = 0; j < g; j += 8)
    _mm256_storeu_ps(v + j, _mm256_mul_ps(_mm256_loadu_ps(v + j), s));
}
#endif

TAH_CLONES void hadamard_portable(float* v, int64_t g) {
  int64_t h = 1;
  if (g >= 8) {  // stages 1, 2, 4 inside each group of 8, in registers
    for (int64_t i = 0; i < g; i += 8) {
      float a[8];
      for (int j = 0; j < 8; ++j) a[j] = v[i + j];
      for (int w = 1; w < 8; w *= 2)
        for (int j = 0; j < 8; ++j)
          if ((j & w) == 0) {
            const float x = a[j], y = a[j + w];
            a[j] = x + y;
            a[j + w] = x - y;
          }
      for (int j = 0; j < 8; ++j) v[i + j] = a[j];
    }
    h = 8;
  }
  for (; h < g; h *= 2)
    for (int64_t i = 0; i < g; i += 2 * h)
      for (int64_t j = i; j < i + h; ++j) {
        const float a = v[j], b = v[j + h];
        v[j] = a + b;
        v[j + h] = a - b;
      }
  const float scale = hadamard_scale(g);
  for (int64_t j = 0; j < g; ++j) v[j] *= scale;
}

}  // namespace

void tah_hadamard(float* v, int64_t g, bool vector) {
#ifdef TAH_F16C
  if (vector && g >= 8 && tah::have_avx2()) return hadamard_avx2(v, g, hadamard_scale(g));
#endif
  (void)vector;
  hadamard_portable(v, g);
}

std::array<float, 5> tah_tile_stats(const float* x, int64_t len, bool vector) {
  const tah::TileStats s = tah::stats_of(x, len, vector);
  return {s.top1, s.top2, s.lo, s.hi, s.finite ? 1.0F : 0.0F};
}

uint16_t tah_half_up(float v, bool hardware) {
#ifdef TAH_F16C
  if (hardware && tah::have_f16c()) return tah::half_up_f16c(v);
#endif
  (void)hardware;
  return tah::half_up_software(v);
}

}  // namespace slowpipe::compressors
