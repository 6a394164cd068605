// QSGD's loops; see qsgd_kernels.h. SIMD paths compiled with function-level
// target attributes and picked at run time, as aq_kernels.cpp.
#include "compressors/codecs/internal/qsgd_kernels.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "compressors/codecs/internal/rounding_hash.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
// GCC 12 warns about the deliberately undefined upper halves inside the
// AVX-512 conversion intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#define SLOWPIPE_QSGD_SIMD 1
#define SLOWPIPE_AVX512 __attribute__((target("avx512f")))
#define SLOWPIPE_AVX2 __attribute__((target("avx2")))
#define SLOWPIPE_AVX2_FMA __attribute__((target("avx2,fma")))
#endif

namespace slowpipe::compressors::qsgd {

namespace {

// The reference loop, element i of the bucket at global index index0 + i.
void codes_portable(const float* x, int64_t begin, int64_t n, float norm, int levels, uint32_t seed,
                    uint64_t index0, uint8_t* codes) {
  const double s = levels;
  for (int64_t i = begin; i < n; ++i) {
    const uint64_t index = index0 + static_cast<uint64_t>(i);
    const float u =
        rounding::hash_uniform(static_cast<uint32_t>(index), rounding::run_key(seed, index));
    const double t = s * std::fabs(static_cast<double>(x[i])) / norm;  // in [0, S]
    int level = static_cast<int>(t + u);                               // floor: t + u >= 0
    level = std::min(level, levels);
    codes[i] = static_cast<uint8_t>((level << 1) | (level > 0 && x[i] < 0 ? 1 : 0));
  }
}

#ifdef SLOWPIPE_QSGD_SIMD

SLOWPIPE_AVX512 inline __m256 upper(__m512 v) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

// The levels of 16 lanes exactly as the portable loop: floor((S |x|) / norm + u)
// in double (S |x| is exact in double).
SLOWPIPE_AVX512 inline __m512i exact_levels512(__m512 ax, __m512 u, __m512d vs, __m512d vnorm) {
  const __m512d a0 = _mm512_mul_pd(vs, _mm512_cvtps_pd(_mm512_castps512_ps256(ax)));
  const __m512d a1 = _mm512_mul_pd(vs, _mm512_cvtps_pd(upper(ax)));
  const __m512d y0 =
      _mm512_add_pd(_mm512_div_pd(a0, vnorm), _mm512_cvtps_pd(_mm512_castps512_ps256(u)));
  const __m512d y1 = _mm512_add_pd(_mm512_div_pd(a1, vnorm), _mm512_cvtps_pd(upper(u)));
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvttpd_epi32(y0)),
                            _mm512_cvttpd_epi32(y1), 1);
}
SLOWPIPE_AVX2 inline __m256i exact_levels256(__m256 ax, __m256 u, __m256d vs, __m256d vnorm) {
  const __m256d a0 = _mm256_mul_pd(vs, _mm256_cvtps_pd(_mm256_castps256_ps128(ax)));
  const __m256d a1 = _mm256_mul_pd(vs, _mm256_cvtps_pd(_mm256_extractf128_ps(ax, 1)));
  const __m256d y0 =
      _mm256_add_pd(_mm256_div_pd(a0, vnorm), _mm256_cvtps_pd(_mm256_castps256_ps128(u)));
  const __m256d y1 =
      _mm256_add_pd(_mm256_div_pd(a1, vnorm), _mm256_cvtps_pd(_mm256_extractf128_ps(u, 1)));
  return _mm256_set_m128i(_mm256_cvttpd_epi32(y1), _mm256_cvttpd_epi32(y0));
}

// 16 lanes. t + u first in float, |x| times the float of S / norm: within
// 2e-5 of the double t + u (qsgd_kernels.h), so its floor is the exact level
// unless t + u lies within `margin` of an integer; a group with such a lane,
// or with a non-finite one (S / norm beyond the float range), is recomputed
// in double, exactly as the portable loop. The constants of a run of buckets
// are set once (CodesAvx512), those of a bucket (its norm) per bucket.
struct CodesAvx512 {
  __m512d vs;
  __m512 vlo, vhi, scale;
  __m512i vkey, m1, m2, vtop;
};
SLOWPIPE_AVX512 inline CodesAvx512 codes_avx512_setup(int levels, uint32_t key, double margin) {
  CodesAvx512 k;
  k.vs = _mm512_set1_pd(levels);
  k.vlo = _mm512_set1_ps(static_cast<float>(margin));
  k.vhi = _mm512_set1_ps(static_cast<float>(1.0 - margin));
  k.scale = _mm512_set1_ps(1.0F / 16777216.0F);
  k.vkey = _mm512_set1_epi32(static_cast<int>(key));
  k.m1 = _mm512_set1_epi32(0x7feb352d);
  k.m2 = _mm512_set1_epi32(static_cast<int>(0x846ca68bU));
  k.vtop = _mm512_set1_epi32(levels);
  return k;
}
SLOWPIPE_AVX512 inline int64_t codes_avx512_run(const CodesAvx512& k, const float* x, int64_t n,
                                                float norm, int levels, uint32_t lo_index,
                                                uint8_t* codes) {
  const __m512d vnorm = _mm512_set1_pd(norm);
  const __m512 vc = _mm512_set1_ps(static_cast<float>(levels / static_cast<double>(norm)));
  const __m512i one = _mm512_set1_epi32(1);
  // The hash's input, index + key (mod 2^32), kept as one running sum.
  __m512i idx =
      _mm512_add_epi32(_mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(lo_index)), k.vkey),
                       _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512i h = idx;
    h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 16));
    h = _mm512_mullo_epi32(h, k.m1);
    h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 15));
    h = _mm512_mullo_epi32(h, k.m2);
    h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 16));
    const __m512 u = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(h, 8)), k.scale);
    const __m512 xv = _mm512_loadu_ps(x + i);
    const __m512 ax = _mm512_abs_ps(xv);
    const __m512 y = _mm512_add_ps(_mm512_mul_ps(ax, vc), u);
    const __m512 fl = _mm512_roundscale_ps(y, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512 r = _mm512_sub_ps(y, fl);
    const __mmask16 near =
        _mm512_cmp_ps_mask(r, k.vlo, _CMP_NGE_UQ) | _mm512_cmp_ps_mask(r, k.vhi, _CMP_GT_OQ);
    __m512i level = near != 0 ? exact_levels512(ax, u, k.vs, vnorm) : _mm512_cvttps_epi32(fl);
    level = _mm512_min_epi32(level, k.vtop);
    const __mmask16 neg = _mm512_cmp_ps_mask(xv, _mm512_setzero_ps(), _CMP_LT_OQ) &
                          _mm512_cmpgt_epi32_mask(level, _mm512_setzero_si512());
    const __m512i code =
        _mm512_mask_or_epi32(_mm512_slli_epi32(level, 1), neg, _mm512_slli_epi32(level, 1), one);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + i), _mm512_cvtepi32_epi8(code));
    idx = _mm512_add_epi32(idx, _mm512_set1_epi32(16));
  }
  return i;
}

// 8 lanes, two groups of 8 per step, in integers on a 2^-24 grid: y = t + u
// as round(|x| c) + (h >> 8), c the float of S 2^24 / norm (a normal float:
// norm <= FLT_MAX and S >= 1; infinite where norm is tiny). floor(t + u) is
// y >> 24 unless y's fraction (its low 24 bits) lies within L = margin 2^24
// of an integer (t + u near one: the float product's 2^-23 relative error on
// t <= S <= 127 and the conversion's half unit stay under 256 units, L is
// 1677) or y >> 24 exceeds S (a non-finite or out-of-range product converts
// to 0x80000000); such a group is recomputed in double, exactly as the
// portable loop. The code is level << 1 | (sign & (level > 0)) =
// level << 1 | min(level, sign) for level >= 0 and sign (x's sign bit) in
// {0, 1}: -0 has its sign bit set, but its level is 0. Sixteen codes (< 256)
// go out by two saturating packs and one permute.
struct CodesAvx2 {
  __m256d vs, vnorm;
  __m256 vc, scale, abs_mask;
  __m256i vkey, m1, m2, vtop, near_off, near_width, frac_mask;
};
// `h`: the lanes' index + key (mod 2^32), the hash's input.
SLOWPIPE_AVX2 inline __m256i codes8_avx2(const CodesAvx2& k, const float* x, __m256i h) {
  h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
  h = _mm256_mullo_epi32(h, k.m1);
  h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 15));
  h = _mm256_mullo_epi32(h, k.m2);
  h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
  const __m256i hu = _mm256_srli_epi32(h, 8);  // u 2^24
  const __m256 xv = _mm256_loadu_ps(x);
  const __m256 ax = _mm256_and_ps(xv, k.abs_mask);
  const __m256i y = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(ax, k.vc)), hu);
  __m256i level = _mm256_srli_epi32(y, 24);
  // Near an integer: (fraction + L) mod 2^24 < 2 L.
  const __m256i shifted = _mm256_and_si256(_mm256_add_epi32(y, k.near_off), k.frac_mask);
  const __m256i bad =
      _mm256_or_si256(_mm256_cmpgt_epi32(k.near_width, shifted), _mm256_cmpgt_epi32(level, k.vtop));
  if (!_mm256_testz_si256(bad, bad)) {
    const __m256 u = _mm256_mul_ps(_mm256_cvtepi32_ps(hu), k.scale);
    level = _mm256_min_epi32(exact_levels256(ax, u, k.vs, k.vnorm), k.vtop);
  }
  const __m256i sign = _mm256_srli_epi32(_mm256_castps_si256(xv), 31);
  return _mm256_or_si256(_mm256_slli_epi32(level, 1), _mm256_min_epu32(level, sign));
}
SLOWPIPE_AVX2 inline CodesAvx2 codes_avx2_setup(int levels, uint32_t key, double margin) {
  CodesAvx2 k;
  k.vs = _mm256_set1_pd(levels);
  k.vkey = _mm256_set1_epi32(static_cast<int>(key));
  k.m1 = _mm256_set1_epi32(0x7feb352d);
  k.m2 = _mm256_set1_epi32(static_cast<int>(0x846ca68bU));
  k.vtop = _mm256_set1_epi32(levels);
  k.scale = _mm256_set1_ps(1.0F / 16777216.0F);
  k.abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  // margin in [0, 0.5]: L in [0, 2^23]; 2 L = 2^24 marks every lane near.
  const auto near = static_cast<int32_t>(std::min(margin, 0.5) * 16777216.0);
  k.near_off = _mm256_set1_epi32(near);
  k.near_width = _mm256_set1_epi32(2 * near);
  k.frac_mask = _mm256_set1_epi32(0xFFFFFF);
  return k;
}
SLOWPIPE_AVX2 inline int64_t codes_avx2_run(CodesAvx2 k, const float* x, int64_t n, float norm,
                                            int levels, uint32_t lo_index, uint8_t* codes) {
  k.vnorm = _mm256_set1_pd(norm);
  const double c = levels * 16777216.0 / norm;  // S 2^24 / norm, infinite beyond FLT_MAX
  k.vc = _mm256_set1_ps(c > FLT_MAX ? INFINITY : static_cast<float>(c));
  const __m256i eight = _mm256_set1_epi32(8), in_order = _mm256_setr_epi32(0, 4, 1, 5, 0, 0, 0, 0);
  __m256i idx =  // index + key, one running sum
      _mm256_add_epi32(_mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(lo_index)), k.vkey),
                       _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i c0 = codes8_avx2(k, x + i, idx);
    idx = _mm256_add_epi32(idx, eight);
    const __m256i c1 = codes8_avx2(k, x + i + 8, idx);
    idx = _mm256_add_epi32(idx, eight);
    // 32-bit lanes [c0 0-3, c1 0-3 | c0 4-7, c1 4-7] -> 16-bit -> bytes in
    // 32-bit groups (c0 0-3, c1 0-3, c0 4-7, c1 4-7 as dwords 0, 1, 4, 5).
    const __m256i w = _mm256_packus_epi32(c0, c1);
    const __m256i b = _mm256_packus_epi16(w, w);
    const __m256i ordered = _mm256_permutevar8x32_epi32(b, in_order);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + i), _mm256_castsi256_si128(ordered));
  }
  for (; i + 8 <= n; i += 8) {
    const __m256i c = codes8_avx2(k, x + i, idx);
    idx = _mm256_add_epi32(idx, eight);
    const __m256i w = _mm256_packus_epi32(c, c);
    const __m256i b = _mm256_packus_epi16(w, w);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(codes + i),
                     _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(b, in_order)));
  }
  return i;
}

// Sums of squares within one bucket in 16 (AVX-512) or 8 (AVX2) interleaved
// partial sums, then the rest in order: not the element-order sum (see
// bucket_sums_fast).
SLOWPIPE_AVX512 double sum_avx512(const float* x, int64_t n) {
  __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi =
        _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    a0 = _mm512_add_pd(a0, _mm512_mul_pd(lo, lo));
    a1 = _mm512_add_pd(a1, _mm512_mul_pd(hi, hi));
  }
  double s = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
  for (; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

// The squares of floats are exact in double, so a fused multiply-add rounds
// once, as the separate add did: the same sums in fewer operations (the AVX2
// level needs FMA, quant_simd.h).
SLOWPIPE_AVX2_FMA double sum_avx2(const float* x, int64_t n) {
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256d lo = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
    const __m256d hi = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
    a0 = _mm256_fmadd_pd(lo, lo, a0);
    a1 = _mm256_fmadd_pd(hi, hi, a1);
  }
  const __m256d a = _mm256_add_pd(a0, a1);
  const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
  double s = _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
  for (; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

// norm_up of 8 (AVX-512) or 4 (AVX2) scaled sums at a time: the same double
// product and square root; AVX-512 converts rounding up, which is the
// nearest float bumped up where below (for the non-negative values here);
// AVX2 converts to the nearest and bumps the bits, as norm_up. min(FLT_MAX, f)
// saturates and keeps a NaN, as norm_up.
SLOWPIPE_AVX512 int64_t norms_avx512(const double* sums, int64_t count, double scale, float* out) {
  const __m512d vscale = _mm512_set1_pd(scale);
  const __m256 vmax = _mm256_set1_ps(FLT_MAX);
  int64_t b = 0;
  for (; b + 8 <= count; b += 8) {
    const __m512d v = _mm512_sqrt_pd(_mm512_mul_pd(_mm512_loadu_pd(sums + b), vscale));
    const __m256 f = _mm512_cvt_roundpd_ps(v, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(out + b, _mm256_min_ps(vmax, f));
  }
  return b;
}
SLOWPIPE_AVX2 int64_t norms_avx2(const double* sums, int64_t count, double scale, float* out) {
  const __m256d vscale = _mm256_set1_pd(scale);
  const __m128 vmax = _mm_set1_ps(FLT_MAX);
  const __m256i evens = _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0);
  int64_t b = 0;
  for (; b + 4 <= count; b += 4) {
    const __m256d v = _mm256_sqrt_pd(_mm256_mul_pd(_mm256_loadu_pd(sums + b), vscale));
    const __m128 f = _mm256_cvtpd_ps(v);
    const __m256i below = _mm256_castpd_si256(_mm256_cmp_pd(_mm256_cvtps_pd(f), v, _CMP_LT_OQ));
    const __m128i minus_one =
        _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(below, evens));  // -1 where below
    const __m128 up = _mm_castsi128_ps(_mm_sub_epi32(_mm_castps_si128(f), minus_one));
    _mm_storeu_ps(out + b, _mm_min_ps(vmax, up));
  }
  return b;
}

// Decoding codes below 16: 16 (AVX-512) or 8 (AVX2) at a time, each a level
// (a lane index into the bucket's eight values) and a sign bit moved into
// the float's sign, which is -v for v = value[level] as the portable loop.
// kPacked: two codes to a byte (pack_codes at 4 bits); else one per byte.
// Returns the elements done; *max_code: the largest code among them.
template <bool kPacked>
SLOWPIPE_AVX2 inline __m128i load16(const uint8_t* in, int64_t i) {
  if (!kPacked) return _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
  const __m128i low = _mm_set1_epi8(0x0F);
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + i / 2));
  return _mm_unpacklo_epi8(_mm_and_si128(b, low), _mm_and_si128(_mm_srli_epi16(b, 4), low));
}
SLOWPIPE_AVX2 inline int largest(__m128i top) {
  alignas(16) uint8_t lanes[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), top);
  return *std::max_element(lanes, lanes + 16);
}
template <bool kPacked>
SLOWPIPE_AVX512 int64_t decode_avx512(const uint8_t* in, int64_t n, const float* value8, float* out,
                                      int* max_code) {
  const __m512 table = _mm512_castps256_ps512(_mm256_loadu_ps(value8));
  __m128i top = _mm_setzero_si128();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i c = load16<kPacked>(in, i);
    top = _mm_max_epu8(top, c);
    const __m512i code = _mm512_cvtepu8_epi32(c);
    const __m512 v = _mm512_permutexvar_ps(_mm512_srli_epi32(code, 1), table);
    const __m512i sign = _mm512_slli_epi32(code, 31);
    _mm512_storeu_ps(out + i, _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), sign)));
  }
  *max_code = largest(top);
  return i;
}
template <bool kPacked>
SLOWPIPE_AVX2 int64_t decode_avx2(const uint8_t* in, int64_t n, const float* value8, float* out,
                                  int* max_code) {
  const __m256 table = _mm256_loadu_ps(value8);
  __m128i top = _mm_setzero_si128();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i c = load16<kPacked>(in, i);
    top = _mm_max_epu8(top, c);
    for (int half = 0; half < 2; ++half) {
      const __m256i code = _mm256_cvtepu8_epi32(half == 0 ? c : _mm_srli_si128(c, 8));
      const __m256 v = _mm256_permutevar8x32_ps(table, _mm256_srli_epi32(code, 1));
      const __m256i sign = _mm256_slli_epi32(code, 31);
      _mm256_storeu_ps(out + i + 8 * half,
                       _mm256_castsi256_ps(_mm256_xor_si256(_mm256_castps_si256(v), sign)));
    }
  }
  *max_code = largest(top);
  return i;
}

#endif

}  // namespace

float norm_up(double sum_of_squares) {
  const double norm = std::sqrt(sum_of_squares);
  if (norm >= FLT_MAX) return FLT_MAX;
  float f = static_cast<float>(norm);
  if (static_cast<double>(f) < norm) {
    // The next float up (f >= 0 and below FLT_MAX here): its bits plus one.
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    ++bits;
    std::memcpy(&f, &bits, 4);
  }
  return f;
}

void norms_up(const double* sums, int64_t count, double scale, float* out, simd::Level isa) {
  int64_t b = 0;
#ifdef SLOWPIPE_QSGD_SIMD
  const auto allowed = static_cast<int>(std::min(isa, simd::level()));
  if (allowed == static_cast<int>(simd::Level::kAvx512))
    b = norms_avx512(sums, count, scale, out);
  else if (allowed == static_cast<int>(simd::Level::kAvx2))
    b = norms_avx2(sums, count, scale, out);
#endif
  for (; b < count; ++b) out[b] = norm_up(sums[b] * scale);
}

void bucket_sums(const float* x, int64_t d, int64_t count, double* sums) {
  // Eight buckets side by side: eight independent chains of additions, each in
  // its bucket's element order (the same double sums as one bucket at a time).
  // Scalar: gathering the eight buckets into vector lanes (stride d) measured
  // twice as slow (AMD EPYC with AVX-512, 2026-11-26).
  constexpr int64_t kWays = 8;
  int64_t b = 0;
  for (; b + kWays <= count; b += kWays) {
    double acc[kWays] = {};
    const float* base = x + b * d;
    for (int64_t j = 0; j < d; ++j)
      for (int64_t w = 0; w < kWays; ++w) {
        const double v = base[w * d + j];
        acc[w] += v * v;
      }
    std::copy(acc, acc + kWays, sums + b);
  }
  for (; b < count; ++b) {
    double sq = 0;
    for (int64_t j = 0; j < d; ++j) sq += static_cast<double>(x[b * d + j]) * x[b * d + j];
    sums[b] = sq;
  }
}

void bucket_sums_fast(const float* x, int64_t d, int64_t count, double* sums, simd::Level isa) {
#ifdef SLOWPIPE_QSGD_SIMD
  const auto allowed = static_cast<int>(std::min(isa, simd::level()));
  if (allowed >= static_cast<int>(simd::Level::kAvx2)) {
    const bool wide = allowed == static_cast<int>(simd::Level::kAvx512);
    for (int64_t b = 0; b < count; ++b)
      sums[b] = wide ? sum_avx512(x + b * d, d) : sum_avx2(x + b * d, d);
    return;
  }
#endif
  bucket_sums(x, d, count, sums);
}

namespace {

// The vector loops add lane offsets to the low 32 bits of the index: only
// for a bucket inside one 2^32-element run (one key).
bool one_run(uint64_t index0, int64_t n) {
  const uint64_t last = index0 + static_cast<uint64_t>(n > 0 ? n - 1 : 0);
  return (index0 >> 32) == (last >> 32);
}

// Whether bucket b of a block at index0 takes the vector loop, and its first
// index: a bucket with norm > 0 inside the block's first run (the key set
// up for the block); a bucket crossing into the next run takes none.
inline bool vector_bucket(uint64_t index0, int64_t d, int64_t b, float norm, uint32_t* lo) {
  const uint64_t start = index0 + static_cast<uint64_t>(b * d);
  *lo = static_cast<uint32_t>(start);
  return norm > 0 && (start >> 32) == (index0 >> 32) && one_run(start, d);
}

#ifdef SLOWPIPE_QSGD_SIMD
// The vector part of each bucket of a block (vector_bucket); done[b] = the
// bucket's elements coded.
SLOWPIPE_AVX512 void block_avx512(const float* x, int64_t d, int64_t count, const float* norms,
                                  int levels, uint32_t seed, uint64_t index0, uint8_t* codes,
                                  double margin, int64_t* done) {
  const CodesAvx512 k = codes_avx512_setup(levels, rounding::run_key(seed, index0), margin);
  uint32_t lo;
  for (int64_t b = 0; b < count; ++b)
    done[b] = vector_bucket(index0, d, b, norms[b], &lo)
                  ? codes_avx512_run(k, x + b * d, d, norms[b], levels, lo, codes + b * d)
                  : 0;
}
SLOWPIPE_AVX2 void block_avx2(const float* x, int64_t d, int64_t count, const float* norms,
                              int levels, uint32_t seed, uint64_t index0, uint8_t* codes,
                              double margin, int64_t* done) {
  const CodesAvx2 k = codes_avx2_setup(levels, rounding::run_key(seed, index0), margin);
  uint32_t lo;
  for (int64_t b = 0; b < count; ++b)
    done[b] = vector_bucket(index0, d, b, norms[b], &lo)
                  ? codes_avx2_run(k, x + b * d, d, norms[b], levels, lo, codes + b * d)
                  : 0;
}
#endif

}  // namespace

void bucket_codes(const float* x, int64_t n, float norm, int levels, uint32_t seed, uint64_t index0,
                  uint8_t* codes, simd::Level isa, double margin) {
  block_codes(x, n, 1, &norm, levels, seed, index0, codes, isa, margin);
}

void block_codes(const float* x, int64_t d, int64_t count, const float* norms, int levels,
                 uint32_t seed, uint64_t index0, uint8_t* codes, simd::Level isa, double margin) {
  constexpr int64_t kMax = 64;  // buckets per call of the vector loops
  int64_t done[kMax];
  for (int64_t b0 = 0; b0 < count; b0 += kMax) {
    const int64_t nb = std::min(kMax, count - b0);
    const float* xb = x + b0 * d;
    uint8_t* cb = codes + b0 * d;
    const uint64_t i0 = index0 + static_cast<uint64_t>(b0 * d);
    std::fill(done, done + nb, int64_t{0});  // the vector loops' share, if any
#ifdef SLOWPIPE_QSGD_SIMD
    const auto allowed = static_cast<int>(std::min(isa, simd::level()));
    if (allowed == static_cast<int>(simd::Level::kAvx512))
      block_avx512(xb, d, nb, norms + b0, levels, seed, i0, cb, margin, done);
    else if (allowed == static_cast<int>(simd::Level::kAvx2))
      block_avx2(xb, d, nb, norms + b0, levels, seed, i0, cb, margin, done);
#endif
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t at = b * d;
      if (!(norms[b0 + b] > 0))
        std::fill(cb + at, cb + at + d, uint8_t{0});
      else
        codes_portable(xb + at, done[b], d, norms[b0 + b], levels, seed, i0 + at, cb + at);
    }
  }
}

namespace {

template <bool kPacked>
int decode_small(const uint8_t* in, int64_t n, const float* value8, float* out, simd::Level isa) {
  int top = 0;
  int64_t i = 0;
#ifdef SLOWPIPE_QSGD_SIMD
  const auto allowed = static_cast<int>(std::min(isa, simd::level()));
  if (allowed == static_cast<int>(simd::Level::kAvx512))
    i = decode_avx512<kPacked>(in, n, value8, out, &top);
  else if (allowed == static_cast<int>(simd::Level::kAvx2))
    i = decode_avx2<kPacked>(in, n, value8, out, &top);
#endif
  for (; i < n; ++i) {
    const int c = kPacked ? (in[i / 2] >> (4 * (i % 2))) & 0x0F : in[i];
    top = std::max(top, c);
    const float v = value8[c >> 1];
    out[i] = (c & 1) ? -v : v;
  }
  return top;
}

}  // namespace

int decode_codes4(const uint8_t* packed, int64_t n, const float* value8, float* out,
                  simd::Level isa) {
  return decode_small<true>(packed, n, value8, out, isa);
}

int decode_codes(const uint8_t* codes, int64_t n, const float* value8, float* out,
                 simd::Level isa) {
  return decode_small<false>(codes, n, value8, out, isa);
}

}  // namespace slowpipe::compressors::qsgd
