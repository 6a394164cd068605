// QSGD's per-element loops (qsgd.h): the squared L2 norm of each bucket and the
// stochastic levels of one bucket, with a portable loop (the reference: the
// arithmetic Qsgd::encode_payload always did) and AVX2 and AVX-512 paths picked
// at run time (simd::level(), so SLOWPIPE_SIMD caps them).
//
// Numeric contract: every path gives the same bytes. Levels are computed in
// double exactly as the portable loop writes them, t = (S * |x|) / norm, then
// floor(t + u) with u the float of rounding_hash.h for the element's global
// index, clamped to S; a vector lane does the same IEEE operations (no
// contraction: the codecs build with -ffp-contract=off). Bucket sums add the
// squares in element order, eight buckets side by side (scalar chains). Left out: wider
// than one bucket's vector loop (buckets shorter than a vector run the
// portable loop).
#pragma once

#include <cstdint>

#include "compressors/codecs/internal/quant_simd.h"

namespace slowpipe::compressors::qsgd {

// sums[b] = sum over j in order of double(x[b d + j])^2, for b in [0, count):
// `count` whole buckets of d elements. x: [count * d].
void bucket_sums(const float* x, int64_t d, int64_t count, double* sums);

// codes[i] = level << 1 | (level > 0 && x[i] < 0), level = min(S, floor((S |x[i]|) / norm +
// u(seed, index0 + i))), for one bucket of n elements with norm > 0. x, codes: [n].
void bucket_codes(const float* x, int64_t n, float norm, int levels, uint32_t seed, uint64_t index0,
                  uint8_t* codes, simd::Level isa = simd::Level::kAvx512);

}  // namespace slowpipe::compressors::qsgd
