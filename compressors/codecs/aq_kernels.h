// The per-element loops of AQ-SGD (aq_sgd.h) over one sample's row: n fp32
// values against that sample's fp16 buffer row m (IEEE binary16 bits). Each has
// a portable loop, the reference (the loops AqChannel ran before they moved
// here), and two SIMD paths built on the hardware fp16 conversions (vcvtps2ph /
// vcvtph2ps): AVX-512F (16 lanes) and AVX2 + F16C (8 lanes). Isa::kAuto, the
// default, picks the widest the CPU has at run time (capped by SLOWPIPE_SIMD,
// internal/quant_simd.h).
//
// Numeric contract: every path gives the same bits. fp16 stores round to
// nearest even (float_to_half, quantizer.h); a value "does not fit" when its
// fp16 has the all-ones exponent (inf or NaN: |v| >= 65520 or NaN), as before.
// Sums are the same double sum in the same order (element 0 first), so
// `norm_sq` is bitwise the portable one. A vector (16 or 8 lanes) holding a NaN
// (in a, in m or produced) goes to the portable loop, which stores NaN as
// float_to_half does (sign | 0x7E00, where vcvtps2ph would keep the payload);
// the rest is IEEE arithmetic with one correctly rounded answer (no
// contraction: compressors build with -ffp-contract=off).
// tests/compressors/test_aq_kernels.cpp checks each SIMD path against the
// portable loops over every fp16 value and sweeps of fp32 bit patterns.
//
// `seen` false reads m as zeros (a sample first seen after warm-up), as the
// update rule says: the arithmetic still adds or subtracts +0.0.
#pragma once

#include <cstdint>

namespace slowpipe::compressors::aq {

enum class Isa { kAuto, kPortable, kAvx2, kAvx512 };
// Whether this build and CPU run `isa` (kAuto and kPortable: always). Asking
// a kernel for an unavailable ISA runs the portable loop.
bool isa_available(Isa isa);

// Warm-up: m[j] = fp16(a[j]); when norm_sq, *norm_sq += double(a[j])^2 in
// order. Returns false when some a[j] does not fit. a: [n]; m: [n].
bool store_row(const float* a, int64_t n, uint16_t* m, double* norm_sq, Isa isa = Isa::kAuto);

// Sender's delta: d[j] = a[j] - (seen ? float(m[j]) : 0.0F); when norm_sq,
// *norm_sq += double(d[j])^2 in order. a, d: [n]; m: [n] (read only).
void delta_row(const float* a, const uint16_t* m, bool seen, int64_t n, float* d, double* norm_sq,
               Isa isa = Isa::kAuto);

// Buffer update: v[j] = (seen ? float(m[j]) : 0.0F) + y[j]; m[j] = fp16(v[j]);
// out[j] = v[j] when out (out may be y). Returns false when some v[j] does not
// fit. y, out: [n]; m: [n].
bool accumulate_row(uint16_t* m, bool seen, const float* y, int64_t n, float* out,
                    Isa isa = Isa::kAuto);

}  // namespace slowpipe::compressors::aq
