// TAH-Quant's per-tile kernels (tah_quant.cpp uses them; tah_kernels.cpp,
// tah_entropy.cpp, tah_pack.cpp and tah_stats8.cpp):
// the tile statistics, the fp16 roundings of the zero point and step, and the
// public pieces of internal/tah_quant.h (entropy, log2, Walsh-Hadamard). Each
// fast path (AVX2 statistics, F16C roundings) gives the portable result
// exactly; test_tah_quant.cpp compares them. docs/codec-spec.md, "TAH-Quant".
#pragma once

#include <cstdint>

namespace slowpipe::compressors::tah {

constexpr int64_t kMinTile = 2, kMaxTile = 1024;

inline int log2_of(int64_t g) {
  int k = 0;
  while ((int64_t{1} << k) < g) ++k;
  return k;
}

// Whether the AVX2 (and F16C) paths may run: the CPU has them and the
// library's dispatch level allows them (SLOWPIPE_SIMD=portable runs the
// portable loops; quant_simd.h).
bool avx2_allowed();
bool f16c_allowed();

// One pass over a tile: the two largest |x| (with multiplicity: two equal
// peaks give top1 = top2), min (-0 read as +0) and max of x, and whether
// every element is finite (the others are meaningless when not).
struct TileStats {
  float top1 = 0, top2 = 0, lo = 0, hi = 0;
  bool finite = true;
};
// By the fastest path this CPU has (`vector` false: the portable loop).
TileStats stats_of(const float* x, int64_t len, bool vector = true);
// stats_of's lo and hi alone, by the fastest path (a rotated tile's grid
// needs nothing else).
void range_of(const float* x, int64_t len, float* lo, float* hi);
// stats_of(x[i], len[i]) into out[i] for i < n, the path chosen once; each
// group of 8 tiles of one length (a multiple of 8) folds its lanes together
// in AVX2.
void stats_many(const float* const* x, const int64_t* len, int n, TileStats* out);
// The statistics of 8 tiles of `len` elements (a positive multiple of 8) in
// AVX2, the same as stats_of's (tah_stats8.cpp). x86-64 with GCC/clang only.
void stats8_avx2(const float* const* x, int64_t len, TileStats* out);

// tah_entropy(x[i], len) into out[i] for i < n (internal/tah_quant.h): in
// AVX2 (len a multiple of 8) or AVX-512 (a multiple of 16) four tiles
// interleaved, each with its own operations in their order, so the same
// floats. False when some element is
// a NaN or an inf (the entropies are then meaningless): the pass over the
// tiles is also the encoder's check of its input.
bool entropies(const float* const* x, int64_t len, int64_t n, float* out);

// The first i < len with |x[i]| == top (len when none), by AVX2 8 at a time
// where the CPU has it and len is a multiple of 8.
int64_t first_magnitude(const float* x, int64_t len, float top);

// The smallest fp16 >= v (v finite; beyond +-65504 the largest finite fp16
// of that sign), the largest fp16 <= v likewise, and an fp16's float value.
uint16_t half_up(float v);
uint16_t half_down(float v);
float widen(uint16_t h);

// Tile grids: zero = lo rounded down to fp16, step = max(0, (hi - zero) /
// (2^bits - 1)) rounded up to fp16, their float values, and inv = 1 / step (0
// for a step of 0); out[i] from lo[i], hi[i], bits[i] for i < n (AVX2 + F16C
// 8 tiles at a time where the CPU has them: the same roundings and divisions,
// lane by lane).
struct Grid {  // no initializers: grids_of fills every field
  uint16_t zero_half, step_half;
  float zero, step, inv;
};
void grids_of(const float* lo, const float* hi, const int* bits, int n, Grid* out);

// The codes clamp(floor((v - zero) * inv + 1/2), 0, 2^bits - 1) of len
// values (len a multiple of 32; the scalar loop's arithmetic, operation for
// operation), packed LSB-first, 8 codes in W = bits bytes, to exactly
// out[0, len W / 8), in AVX2, 32 codes at a time: the kernel for one width,
// picked once (an encoder's loop over tiles); null where this CPU lacks AVX2
// or W > 6 (the caller's loops then).
using QuantizePack = void (*)(const float* v, int64_t len, float zero, float inv, uint8_t* out);
QuantizePack quantize_pack_avx2_for(int bits);

// The float values of n tiles' fp16 zero points and steps (scales: 4 bytes a
// tile, the zero point's fp16 then the step's, little-endian), by F16C 8
// tiles at a time where the CPU has it (widen's values either way).
void widen_scales(const uint8_t* scales, int64_t n, float* zero, float* step);

// A byte-aligned run of len codes (len a multiple of 8, W = bits bits each,
// LSB-first, 8 codes in W bytes) to values zero + code * step, in AVX2 for
// W <= 4: 32 codes from one 16-byte load (byte shuffles, variable shifts)
// where `avail` >= 16 bytes of `in` remain readable, else 8 codes from one
// broadcast word. The kernel for one width, picked once (a decoder's loop over
// tiles); null where this CPU lacks AVX2 or W > 4 (the caller's loops then).
using DequantizeGroups = void (*)(const uint8_t* in, int64_t len, int64_t avail, float zero,
                                  float step, float* out);
DequantizeGroups dequantize_groups_avx2_for(int bits);
// The same for any W in 1..4, given per call: one kernel for the tiles of
// both widths of a fractional budget, so that a tile's width steers no branch
// and no call (the widths of neighbouring tiles follow the data); null where
// this CPU lacks AVX2.
using DequantizeAny = void (*)(const uint8_t* in, int64_t len, int64_t avail, float zero,
                               float step, float* out, int bits);
DequantizeAny dequantize_any_avx2();

}  // namespace slowpipe::compressors::tah
