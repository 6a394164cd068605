// The simple codecs: `none` (fp32 as is), `fp16`, `bf16` (round to nearest even)
// and `sign` (1 bit per element plus one fp32 scale per row or per tensor, the
// scale being mean |x| so that sign(x)*scale keeps the l1 mass, as in scaled
// signSGD / 1-bit SGD).
//
// Payloads: none 4n bytes; fp16 and bf16 2n bytes; sign 4*S + ceil(n/8) bytes
// (S = rows or 1), bits LSB-first, 1 = non-negative.
// `none` passes NaN and inf through; fp16, bf16 and sign refuse them (DataError),
// and fp16/bf16 refuse finite values that would round to inf.
#pragma once

#include <memory>

#include "compressors/codecs/codec.h"

namespace slowpipe::compressors {

std::unique_ptr<Codec> make_fp32_codec(const SpecStage& stage, const CodecBuildContext& ctx);
std::unique_ptr<Codec> make_fp16_codec(const SpecStage& stage, const CodecBuildContext& ctx);
std::unique_ptr<Codec> make_bf16_codec(const SpecStage& stage, const CodecBuildContext& ctx);
std::unique_ptr<Codec> make_sign_codec(const SpecStage& stage, const CodecBuildContext& ctx);

}  // namespace slowpipe::compressors
