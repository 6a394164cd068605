// QSGD's per-element loops (qsgd.h): the squared L2 norm of each bucket and the
// stochastic levels of one bucket, with a portable loop (the reference: the
// arithmetic Qsgd::encode_payload always did) and AVX2 and AVX-512 paths picked
// at run time (simd::level(), so SLOWPIPE_SIMD caps them).
//
// Numeric contract: every path gives the same bytes. Levels are those of the
// portable loop, computed in double as t = (S * |x|) / norm, then floor(t + u)
// with u the float of rounding_hash.h for the element's global index, clamped
// to S (no contraction: the codecs build with -ffp-contract=off). The vector
// loops first compute t + u in float, |x| times the float of S / norm: at
// most 2^-23 relative on t <= S <= 127 (2^-21 where S / norm is a subnormal
// float, which needs S <= 4), and 2^-18 on the sum below 128, so within 2e-5
// of the double t + u, and its floor can differ from the exact level
// only where t + u lies that close to an integer. A vector group with a lane
// within `margin` (1e-4) of one, or a non-finite lane, is recomputed in double
// exactly as the portable loop. The AVX2 loop does the same on the hash's
// 2^-24 grid in integers (qsgd_kernels.cpp, codes8_avx2). Bucket sums: bucket_sums adds the squares
// in element order (eight buckets side by side, scalar chains: the reference); bucket_sums_fast
// adds them in vector partial sums, which differ from it by at most (d + 8) 2^-52 of the sum
// (Qsgd::encode_payload uses it only where that bound cannot move the stored norm,
// docs/codec-spec.md). Left out: wider than one bucket's vector loop (buckets shorter than a vector
// run the portable loop).
#pragma once

#include <cstdint>

#include "compressors/codecs/internal/quant_simd.h"

namespace slowpipe::compressors::qsgd {

// sums[b] = sum over j in order of double(x[b d + j])^2, for b in [0, count):
// `count` whole buckets of d elements. x: [count * d].
void bucket_sums(const float* x, int64_t d, int64_t count, double* sums);

// codes[i] = level << 1 | (level > 0 && x[i] < 0), level = min(S, floor((S |x[i]|) / norm +
// u(seed, index0 + i))), for one bucket of n elements with norm > 0. x, codes: [n].
// The same sums in vector partial sums (isa: the widest path allowed; the
// portable level is bucket_sums itself).
void bucket_sums_fast(const float* x, int64_t d, int64_t count, double* sums,
                      simd::Level isa = simd::Level::kAvx512);

// The stored norm of a bucket from its sum of squares: the square root in
// double, rounded up to fp32, saturated at FLT_MAX (qsgd.h's norm_of_sum).
float norm_up(double sum_of_squares);
// out[b] = norm_up(sums[b] * scale) for b in [0, count), bit for bit on
// every path. sums, out: [count].
void norms_up(const double* sums, int64_t count, double scale, float* out,
              simd::Level isa = simd::Level::kAvx512);

// How close to an integer the float t + u may come before a vector group is
// recomputed in double (tests pass 0.5 to recompute every group).
constexpr double kExactMargin = 1e-4;

void bucket_codes(const float* x, int64_t n, float norm, int levels, uint32_t seed, uint64_t index0,
                  uint8_t* codes, simd::Level isa = simd::Level::kAvx512,
                  double margin = kExactMargin);

// bucket_codes for `count` whole buckets of d elements, bucket b with
// norms[b] (>= 0; a bucket whose norm is not > 0 gets codes 0), at global
// indices index0 + b d + i: the same bytes, the per-run constants set once.
// x, codes: [count * d].
void block_codes(const float* x, int64_t d, int64_t count, const float* norms, int levels,
                 uint32_t seed, uint64_t index0, uint8_t* codes,
                 simd::Level isa = simd::Level::kAvx512, double margin = kExactMargin);

// Decodes n codes of 4 bits packed as pack_codes(codes, n, 4, packed) writes
// them (element 2j in the low half of byte j; packed starts on element 0):
// out[i] = value8[c >> 1], negated where c & 1, for c = code i; returns the
// largest code. value8: the values of levels 0..7. packed: [ceil(n / 2)];
// out: [n].
int decode_codes4(const uint8_t* packed, int64_t n, const float* value8, float* out,
                  simd::Level isa = simd::Level::kAvx512);
// The same for codes one per byte, each below 16 (S <= 7). codes: [n].
int decode_codes(const uint8_t* codes, int64_t n, const float* value8, float* out,
                 simd::Level isa = simd::Level::kAvx512);

}  // namespace slowpipe::compressors::qsgd
