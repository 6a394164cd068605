// Fast paths of uniform quantization: scale statistics, quantize + bit-pack,
// unpack + dequantize, over raw contiguous fp32 arrays, single thread.
//
// A tensor of n elements is split into scale groups. Each group has an affine
// grid: value = lo + code * step, code in [0, levels-1]. Max-abs (symmetric,
// AQ-SGD's reference quantizer) uses lo = -s and levels = 2^b - 1 (so 0 is a
// level and codes are the signed range [-(2^(b-1)-1), 2^(b-1)-1] shifted), except
// b = 1 which uses the two levels {-s, +s}. Min-max uses lo = min, levels = 2^b.
// Codes are packed LSB-first into a continuous bit stream, b bits each.
//
// Rounding: nearest (floor(t + 0.5)) or stochastic (floor(t + u), u uniform in
// [0,1) from a counter-based hash of (seed, element index)), which is unbiased
// inside the grid.
#pragma once

#include <cstdint>
#include <vector>

namespace slowpipe::compressors {

enum class ScaleMode { kTensor, kRow, kChannel, kGroup };

// How elements map to scale groups. Channel: group = index % channels (the last
// dimension). Other modes: group = index / run (contiguous runs).
struct GroupLayout {
  ScaleMode mode = ScaleMode::kTensor;
  int64_t numel = 0;
  int64_t run = 1;       // elements per contiguous group (not for kChannel)
  int64_t channels = 1;  // kChannel: the last dimension
  int64_t groups = 1;
};

// Grid of one scale group, as the decoder sees it.
struct GroupGrid {
  std::vector<float> lo, step, inv_step;  // [groups]
};

// Per-group max |x| (max-abs) or min and max (min-max). `use_simd`: use the AVX-512
// kernels where the CPU has them (bit-identical; false forces the portable loops).
// Non-finite values are never lost: a group holding NaN or inf gets a non-finite
// max-abs (NaN when it holds a NaN) or, for min-max, a NaN min.
void group_maxabs(const float* x, const GroupLayout& layout, float* maxabs, bool use_simd = true);
void group_minmax(const float* x, const GroupLayout& layout, float* mins, float* maxs);

struct QuantizeArgs {
  int bits = 4;
  int levels = 15;
  bool stochastic = false;
  uint32_t seed = 0;
  bool simd = true;  // AVX-512 kernels where available (bit-identical results)
};
// codes -> packed bit stream `out` of ceil(numel*bits/8) bytes.
void quantize_pack(const float* x, const GroupLayout& layout, const GroupGrid& grid,
                   const QuantizeArgs& args, uint8_t* out);
// packed bit stream -> values.
void unpack_dequantize(const uint8_t* in, const GroupLayout& layout, const GroupGrid& grid,
                       int bits, float* out);

// Bit-packing of small codes (quantizer codes, sign bits): LSB-first, `bits` in 1..8.
void pack_codes(const uint8_t* codes, int64_t n, int bits, uint8_t* out);
void unpack_codes(const uint8_t* in, int64_t n, int bits, uint8_t* codes);

inline uint64_t packed_bytes(int64_t n, int bits) {
  return (static_cast<uint64_t>(n) * bits + 7) / 8;
}

// Index of the first NaN or inf of x[0..n), or -1 (vectorized sweep).
int64_t first_non_finite_index(const float* x, int64_t n);

// The uniform in [0,1) used for stochastic rounding of element `index`.
float stochastic_uniform(uint32_t seed, uint64_t index);

}  // namespace slowpipe::compressors
