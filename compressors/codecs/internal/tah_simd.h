// The build switches of TAH-Quant's kernel files (tah_kernels.cpp,
// tah_entropy.cpp, tah_pack.cpp), defined once:
//   TAH_CLONES  target_clones for the portable loops (GCC on x86-64), so the
//               loader picks an AVX-512, AVX2 or baseline build of them;
//   TAH_F16C    the explicit AVX2 / F16C / AVX-512 paths are compiled (x86-64,
//               GCC or clang); each still checks the CPU at run time.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TAH_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TAH_CLONES
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TAH_F16C 1
#endif
