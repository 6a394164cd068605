// The counter-based hash behind stochastic rounding (quant_kernels.h: q<b>
// :stochastic; qsgd.h): element `index` of an encode seeded `seed` rounds with
// u = (mix32(uint32(index) + run_key(seed, index)) >> 8) / 2^24, uniform in
// [0, 1) on a 2^-24 grid. Pure functions of (seed, index), so any loop order,
// vector width or thread split gives the same draws; the SIMD loops of
// qsgd_kernels.cpp repeat mix32 lane by lane. Not a cryptographic generator.
#pragma once

#include <cstdint>

namespace slowpipe::compressors::rounding {

inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}
// The key of the 2^32-element run holding `index`.
inline uint32_t run_key(uint32_t seed, uint64_t index) {
  return mix32(seed + 0x9E3779B9U * (static_cast<uint32_t>(index >> 32) + 1U));
}
inline float hash_uniform(uint32_t lo_index, uint32_t key) {
  return static_cast<float>(mix32(lo_index + key) >> 8) * (1.0F / 16777216.0F);
}

}  // namespace slowpipe::compressors::rounding
