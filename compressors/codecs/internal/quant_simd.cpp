// AVX-512 channel-mode quantization kernels; see quant_simd.h. Compiled with
// function-level target attributes and picked at run time, so the binary still
// runs on CPUs without AVX-512 (available() is then false).
#include "compressors/codecs/internal/quant_simd.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
// GCC 12 warns about the deliberately undefined upper halves inside the
// AVX-512 conversion intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define SLOWPIPE_QUANT_AVX512 1
#define SLOWPIPE_AVX512 __attribute__((target("avx512f")))
#endif

namespace slowpipe::compressors::simd {

namespace {
// SLOWPIPE_SIMD as a cap; kAvx512 when unset.
Level env_cap() {
  const char* v = std::getenv("SLOWPIPE_SIMD");
  if (v == nullptr || *v == '\0') return Level::kAvx512;
  const std::string s(v);
  if (s == "avx512") return Level::kAvx512;
  if (s == "avx2") return Level::kAvx2;
  if (s == "portable") return Level::kPortable;
  std::fprintf(stderr, "warning: SLOWPIPE_SIMD='%s' ignored (expected avx512, avx2 or portable)\n",
               v);
  return Level::kAvx512;
}
}  // namespace

#ifdef SLOWPIPE_QUANT_AVX512

Level level() {
  static const Level cached = [] {
    __builtin_cpu_init();
    Level cpu = Level::kPortable;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("popcnt"))
      cpu = Level::kAvx2;
    if (cpu == Level::kAvx2 && __builtin_cpu_supports("avx512f")) cpu = Level::kAvx512;
    const Level cap = env_cap();
    return static_cast<int>(cap) < static_cast<int>(cpu) ? cap : cpu;
  }();
  return cached;
}

bool available() {
  return level() == Level::kAvx512;
}

SLOWPIPE_AVX512 int64_t quant_vary(const float* x, int64_t n, const float* lo, const float* inv,
                                   float max_code, uint8_t* codes) {
  const __m512 half = _mm512_set1_ps(0.5F);
  const __m512 zero = _mm512_setzero_ps();
  const __m512 top = _mm512_set1_ps(max_code);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 t = _mm512_sub_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(lo + i));
    t = _mm512_add_ps(_mm512_mul_ps(t, _mm512_loadu_ps(inv + i)), half);
    // max(t, 0) is (t > 0 ? t : 0), so NaN -> 0; min(t, top) is (t < top ? t : top).
    t = _mm512_min_ps(_mm512_max_ps(t, zero), top);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + i),
                     _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(t)));
  }
  return i;
}

namespace {
SLOWPIPE_AVX512 inline __m512i magnitude(const float* p) {
  return _mm512_and_si512(_mm512_loadu_si512(p), _mm512_set1_epi32(0x7FFFFFFF));
}
}  // namespace

SLOWPIPE_AVX512 void column_maxabs(const float* x, int64_t rows, int64_t cols, uint32_t* m) {
  // Row-major order, four rows at a time: m (cols words) stays in L1 and each
  // of its vectors is loaded and stored once per four rows. Magnitudes compare
  // as unsigned integers (quant_simd.h), so NaN and inf are kept.
  const int64_t vec_cols = cols / 16 * 16;
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* x0 = x + r * cols;
    for (int64_t c = 0; c < vec_cols; c += 16) {
      __m512i acc = _mm512_max_epu32(magnitude(x0 + c), _mm512_loadu_si512(m + c));
      acc = _mm512_max_epu32(magnitude(x0 + cols + c), acc);
      acc = _mm512_max_epu32(magnitude(x0 + 2 * cols + c), acc);
      acc = _mm512_max_epu32(magnitude(x0 + 3 * cols + c), acc);
      _mm512_storeu_si512(m + c, acc);
    }
  }
  for (; r < rows; ++r)
    for (int64_t c = 0; c < vec_cols; c += 16)
      _mm512_storeu_si512(m + c,
                          _mm512_max_epu32(magnitude(x + r * cols + c), _mm512_loadu_si512(m + c)));
  for (r = 0; r < rows; ++r)
    for (int64_t c = vec_cols; c < cols; ++c) {
      uint32_t a;
      std::memcpy(&a, x + r * cols + c, 4);
      a &= 0x7FFFFFFFU;
      m[c] = a > m[c] ? a : m[c];
    }
}

#else  // no AVX-512 paths in this build: available() is false, the rest is never called

Level level() {
  static const Level cached = (static_cast<void>(env_cap()), Level::kPortable);
  return cached;
}
bool available() {
  return false;
}
int64_t quant_vary(const float*, int64_t, const float*, const float*, float, uint8_t*) {
  return 0;
}
void column_maxabs(const float*, int64_t, int64_t, uint32_t*) {}

#endif

}  // namespace slowpipe::compressors::simd
