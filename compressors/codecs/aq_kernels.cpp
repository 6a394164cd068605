// AQ-SGD's row loops; the contract is in aq_kernels.h. The AVX-512 and AVX2 +
// F16C paths are compiled with function-level target attributes (as
// quant_simd.cpp) and run only where the CPU has those instructions.
#include "compressors/codecs/aq_kernels.h"

#include "compressors/codecs/internal/quant_simd.h"
#include "compressors/codecs/quantizer.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
// GCC 12 warns about the deliberately undefined upper halves inside the
// AVX-512 conversion intrinsics (as in quant_simd.cpp); clang has no such warning.
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <cpuid.h>
#define SLOWPIPE_AQ_SIMD 1
#define SLOWPIPE_AVX512 __attribute__((target("avx512f")))
#define SLOWPIPE_AVX2 __attribute__((target("avx2,f16c")))
#endif

namespace slowpipe::compressors::aq {

namespace {

// ---- portable reference loops ----
// One compiled copy each (neither inlined nor cloned for constant arguments):
// the AVX-512 paths hand vectors holding a NaN to these same loops, so a NaN
// sum keeps the same payload either way (each copy may order the operands of a
// commutative add differently, and x86 keeps the first one's payload when both
// are NaN).
#if defined(__clang__)
#define SLOWPIPE_ONE_COPY [[gnu::noinline]]
#else
#define SLOWPIPE_ONE_COPY [[gnu::noipa]]
#endif

// Stores v as fp16; false when it does not fit (NaN, inf, |v| beyond 65504).
inline bool store_half(uint16_t* slot, float v) {
  uint16_t h = float_to_half(v);
  *slot = h;
  return (h & 0x7C00) != 0x7C00;
}

SLOWPIPE_ONE_COPY bool store_portable(const float* a, int64_t n, uint16_t* m, double* norm_sq) {
  bool fits = true;
  double s = norm_sq ? *norm_sq : 0.0;
  for (int64_t j = 0; j < n; ++j) {
    fits &= store_half(m + j, a[j]);
    if (norm_sq) s += static_cast<double>(a[j]) * a[j];
  }
  if (norm_sq) *norm_sq = s;
  return fits;
}

SLOWPIPE_ONE_COPY void delta_portable(const float* a, const uint16_t* m, bool seen, int64_t n,
                                      float* d, double* norm_sq) {
  double s = norm_sq ? *norm_sq : 0.0;
  for (int64_t j = 0; j < n; ++j) {
    const float v = a[j] - (seen ? half_to_float(m[j]) : 0.0F);
    d[j] = v;
    if (norm_sq) s += static_cast<double>(v) * v;
  }
  if (norm_sq) *norm_sq = s;
}

SLOWPIPE_ONE_COPY bool accumulate_portable(uint16_t* m, bool seen, const float* y, int64_t n,
                                           float* out) {
  bool fits = true;
  for (int64_t j = 0; j < n; ++j) {
    const float v = (seen ? half_to_float(m[j]) : 0.0F) + y[j];
    if (out) out[j] = v;
    fits &= store_half(m + j, v);
  }
  return fits;
}

// ---- SIMD paths: whole vectors (16 or 8 lanes); return how many elements they did ----

#ifdef SLOWPIPE_AQ_SIMD

constexpr int kFp16RoundNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

bool cpu_has_avx2_f16c() {
  static const bool has = [] {
    __builtin_cpu_init();
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
    return f16c && __builtin_cpu_supports("avx2") != 0 &&
           simd::level() != simd::Level::kPortable;  // SLOWPIPE_SIMD may cap
  }();
  return has;
}

// -- AVX-512F: 16 lanes --

SLOWPIPE_AVX512 inline bool has_nan(__m512 v) {
  return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0;
}

// fp16 of v (no NaN lanes: the callers sent those vectors to the portable loop),
// stored at m; false when a lane does not fit (all-ones exponent).
SLOWPIPE_AVX512 inline bool store_vector(uint16_t* m, __m512 v) {
  const __m256i h = _mm512_cvtps_ph(v, kFp16RoundNearest);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(m), h);
  const __m256i exp = _mm256_set1_epi16(0x7C00);
  return _mm256_testz_si256(_mm256_cmpeq_epi16(_mm256_and_si256(h, exp), exp),
                            _mm256_set1_epi16(-1)) != 0;
}

SLOWPIPE_AVX512 inline __m512 load_half(const uint16_t* m) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(m)));
}

// *s += double(v[k])^2 for k = 0..15 in order (the products are exact in double).
SLOWPIPE_AVX512 inline void add_squares(__m512 v, double* s) {
  alignas(64) double sq[16];
  const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
  const __m512d hi =
      _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  _mm512_store_pd(sq, _mm512_mul_pd(lo, lo));
  _mm512_store_pd(sq + 8, _mm512_mul_pd(hi, hi));
  double t = *s;
  for (double q : sq) t += q;
  *s = t;
}

SLOWPIPE_AVX512 int64_t store_avx512(const float* a, int64_t n, uint16_t* m, double* norm_sq,
                                     bool* fits) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(a + i);
    if (has_nan(v)) {
      *fits &= store_portable(a + i, 16, m + i, norm_sq);
      continue;
    }
    *fits &= store_vector(m + i, v);
    if (norm_sq) add_squares(v, norm_sq);
  }
  return i;
}

SLOWPIPE_AVX512 int64_t delta_avx512(const float* a, const uint16_t* m, bool seen, int64_t n,
                                     float* d, double* norm_sq) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 prev = seen ? load_half(m + i) : _mm512_setzero_ps();
    const __m512 v = _mm512_sub_ps(_mm512_loadu_ps(a + i), prev);
    if (has_nan(v)) {
      delta_portable(a + i, m + i, seen, 16, d + i, norm_sq);
      continue;
    }
    _mm512_storeu_ps(d + i, v);
    if (norm_sq) add_squares(v, norm_sq);
  }
  return i;
}

SLOWPIPE_AVX512 int64_t accumulate_avx512(uint16_t* m, bool seen, const float* y, int64_t n,
                                          float* out, bool* fits) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 prev = seen ? load_half(m + i) : _mm512_setzero_ps();
    const __m512 v = _mm512_add_ps(prev, _mm512_loadu_ps(y + i));
    if (has_nan(v)) {
      *fits &= accumulate_portable(m + i, seen, y + i, 16, out ? out + i : nullptr);
      continue;
    }
    if (out) _mm512_storeu_ps(out + i, v);
    *fits &= store_vector(m + i, v);
  }
  return i;
}

// -- AVX2 + F16C: 8 lanes, the same steps --

SLOWPIPE_AVX2 inline bool has_nan8(__m256 v) {
  return _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0;
}

SLOWPIPE_AVX2 inline bool store_vector8(uint16_t* m, __m256 v) {
  const __m128i h = _mm256_cvtps_ph(v, kFp16RoundNearest);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(m), h);
  const __m128i exp = _mm_set1_epi16(0x7C00);
  return _mm_testz_si128(_mm_cmpeq_epi16(_mm_and_si128(h, exp), exp), _mm_set1_epi16(-1)) != 0;
}

SLOWPIPE_AVX2 inline __m256 load_half8(const uint16_t* m) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(m)));
}

SLOWPIPE_AVX2 inline void add_squares8(__m256 v, double* s) {
  alignas(32) double sq[8];
  const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
  const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
  _mm256_store_pd(sq, _mm256_mul_pd(lo, lo));
  _mm256_store_pd(sq + 4, _mm256_mul_pd(hi, hi));
  double t = *s;
  for (double q : sq) t += q;
  *s = t;
}

SLOWPIPE_AVX2 int64_t store_avx2(const float* a, int64_t n, uint16_t* m, double* norm_sq,
                                 bool* fits) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(a + i);
    if (has_nan8(v)) {
      *fits &= store_portable(a + i, 8, m + i, norm_sq);
      continue;
    }
    *fits &= store_vector8(m + i, v);
    if (norm_sq) add_squares8(v, norm_sq);
  }
  return i;
}

SLOWPIPE_AVX2 int64_t delta_avx2(const float* a, const uint16_t* m, bool seen, int64_t n, float* d,
                                 double* norm_sq) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 prev = seen ? load_half8(m + i) : _mm256_setzero_ps();
    const __m256 v = _mm256_sub_ps(_mm256_loadu_ps(a + i), prev);
    if (has_nan8(v)) {
      delta_portable(a + i, m + i, seen, 8, d + i, norm_sq);
      continue;
    }
    _mm256_storeu_ps(d + i, v);
    if (norm_sq) add_squares8(v, norm_sq);
  }
  return i;
}

SLOWPIPE_AVX2 int64_t accumulate_avx2(uint16_t* m, bool seen, const float* y, int64_t n, float* out,
                                      bool* fits) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 prev = seen ? load_half8(m + i) : _mm256_setzero_ps();
    const __m256 v = _mm256_add_ps(prev, _mm256_loadu_ps(y + i));
    if (has_nan8(v)) {
      *fits &= accumulate_portable(m + i, seen, y + i, 8, out ? out + i : nullptr);
      continue;
    }
    if (out) _mm256_storeu_ps(out + i, v);
    *fits &= store_vector8(m + i, v);
  }
  return i;
}

#else  // no SIMD paths in this build: only Isa::kPortable is available

bool cpu_has_avx2_f16c() {
  return false;
}
int64_t store_avx512(const float*, int64_t, uint16_t*, double*, bool*) {
  return 0;
}
int64_t delta_avx512(const float*, const uint16_t*, bool, int64_t, float*, double*) {
  return 0;
}
int64_t accumulate_avx512(uint16_t*, bool, const float*, int64_t, float*, bool*) {
  return 0;
}
int64_t store_avx2(const float*, int64_t, uint16_t*, double*, bool*) {
  return 0;
}
int64_t delta_avx2(const float*, const uint16_t*, bool, int64_t, float*, double*) {
  return 0;
}
int64_t accumulate_avx2(uint16_t*, bool, const float*, int64_t, float*, bool*) {
  return 0;
}

#endif

// The loops that run for `isa`: kAuto -> the widest available; an unavailable
// ISA -> the portable loops.
Isa resolve(Isa isa) {
  if (isa == Isa::kAuto)
    return isa_available(Isa::kAvx512) ? Isa::kAvx512
           : isa_available(Isa::kAvx2) ? Isa::kAvx2
                                       : Isa::kPortable;
  return isa_available(isa) ? isa : Isa::kPortable;
}

}  // namespace

bool isa_available(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return simd::available();
    case Isa::kAvx2:
      return cpu_has_avx2_f16c();
    default:
      return true;
  }
}

bool store_row(const float* a, int64_t n, uint16_t* m, double* norm_sq, Isa isa) {
  bool fits = true;
  int64_t done = 0;
  switch (resolve(isa)) {
    case Isa::kAvx512:
      done = store_avx512(a, n, m, norm_sq, &fits);
      break;
    case Isa::kAvx2:
      done = store_avx2(a, n, m, norm_sq, &fits);
      break;
    default:
      break;
  }
  fits &= store_portable(a + done, n - done, m + done, norm_sq);
  return fits;
}

void delta_row(const float* a, const uint16_t* m, bool seen, int64_t n, float* d, double* norm_sq,
               Isa isa) {
  int64_t done = 0;
  switch (resolve(isa)) {
    case Isa::kAvx512:
      done = delta_avx512(a, m, seen, n, d, norm_sq);
      break;
    case Isa::kAvx2:
      done = delta_avx2(a, m, seen, n, d, norm_sq);
      break;
    default:
      break;
  }
  delta_portable(a + done, m + done, seen, n - done, d + done, norm_sq);
}

bool accumulate_row(uint16_t* m, bool seen, const float* y, int64_t n, float* out, Isa isa) {
  bool fits = true;
  int64_t done = 0;
  switch (resolve(isa)) {
    case Isa::kAvx512:
      done = accumulate_avx512(m, seen, y, n, out, &fits);
      break;
    case Isa::kAvx2:
      done = accumulate_avx2(m, seen, y, n, out, &fits);
      break;
    default:
      break;
  }
  fits &= accumulate_portable(m + done, seen, y + done, n - done, out ? out + done : nullptr);
  return fits;
}

}  // namespace slowpipe::compressors::aq
