// AVX-512 versions of the channel-mode hot loops of quant_kernels.cpp (the
// per-channel max-abs quantizer of AQ-SGD). They do the same arithmetic,
// operation for operation (subtract, multiply, add, clamp, truncate; no fused
// multiply-add), so their results are bit-identical to the portable loops;
// tests/compressors/test_quant_kernels.cpp checks that.
#pragma once

#include <cstdint>

namespace slowpipe::compressors::simd {

// The widest instruction set the run-time-dispatched kernels of this library
// may use (these kernels, aq_kernels.h, the TopK sweeps, QSGD's loop,
// TAH-Quant's tile statistics, unpacking and F16C roundings): the
// CPU's, capped by the environment variable SLOWPIPE_SIMD = avx2 | portable
// (read once; any other value is ignored with a warning on stderr), so that
// a developer on an AVX-512 host can measure what an AVX2-only host runs.
// kAvx2 needs FMA and POPCNT beside AVX2 (every AVX2 CPU of Intel since
// Haswell and of AMD since Excavator has both). Left out: the target_clones of quant_kernels.cpp
// and index_coding.cpp, which the loader picks from the CPU alone.
enum class Level { kPortable = 0, kAvx2 = 1, kAvx512 = 2 };
Level level();

// True when this build has the AVX-512 paths and level() allows AVX-512F.
bool available();

// codes[i] = clamp(floor((x[i] - lo[i]) * inv[i] + 0.5), 0, max_code), NaN -> 0,
// for the leading whole vectors of 16; returns how many elements it did (the
// caller's portable loop does the rest). x, lo, inv: [n]; codes: [n].
int64_t quant_vary(const float* x, int64_t n, const float* lo, const float* inv, float max_code,
                   uint8_t* codes);

// m[c] = max(m[c], max_r bits(|x[r, c]|)) for x: [rows, cols] row-major, on the
// bit patterns of the magnitudes as unsigned integers: they order like the
// values, with every NaN above +inf, so a NaN or inf is never lost.
void column_maxabs(const float* x, int64_t rows, int64_t cols, uint32_t* m);

}  // namespace slowpipe::compressors::simd
