// `qsgd:s=S[:bucket=D]`: QSGD (Alistarh, Grubic, Li, Tomioka and Vojnovic,
// "QSGD: Communication-Efficient SGD via Gradient Quantization and Encoding",
// NeurIPS 2017). The tensor, in row-major order, is cut into buckets of D
// consecutive elements (the last may be shorter); each bucket v is sent as its
// L2 norm and, per element, a sign and a level l in 0..S, with
//   l = floor(S |v_i| / ||v||) + 1 with probability S |v_i| / ||v|| - floor(...), else the floor,
//   decoded value = ||v|| * sign(v_i) * l / S,
// which is unbiased. Not `q<b>:stochastic:group=D`: that one scales by the
// bucket's max |v| over a grid of 2^b - 1 levels; QSGD scales by the L2 norm.
//
// Payload: [norms: ceil(n / D) fp32][codes: ceil(n * b / 8) bytes], b = 1 +
// ceil(log2(S + 1)) bits per element, code = sign | level << 1 (sign 1 =
// negative; 0 for level 0), LSB-first as q<b>. The norm is rounded up to
// fp32 (so |v_i| <= norm) and saturates at FLT_MAX. Left out: the paper's
// Elias coding of the levels (a variable-length code); this is fixed width.
// Wire sizes and worked example: docs/codec-spec.md, "QSGD".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compressors/codecs/codec.h"
#include "compressors/codecs/internal/quant_simd.h"

namespace slowpipe::compressors {

struct QsgdConfig {
  int levels = 4;        // S, 1..127
  int64_t bucket = 128;  // D
};

class Qsgd : public Codec {
 public:
  Qsgd(QsgdConfig config, uint64_t seed);
  uint64_t payload_bytes(const Shape& shape) const override;
  void encode_payload(const float* x, const Shape& shape, uint8_t* out) override;
  // DataError for a negative or non-finite norm, or a level above S.
  void decode_payload(const uint8_t* p, const Shape& shape, float* out) const override;
  std::string spec() const override;
  // "encodes": encodes so far (seeds the rounding), as q<b>:stochastic.
  void save_state(const std::string& prefix, CodecState& out) const override;
  void load_state(const std::string& prefix, const CodecState& in) override;

  const QsgdConfig& config() const { return config_; }
  // Tests: false runs the portable loops even where SIMD ones exist (the
  // same bytes; internal/qsgd_kernels.h).
  void set_simd(bool enabled) { simd_ = enabled; }
  int code_bits() const;  // 1 + ceil(log2(S + 1))

 private:
  QsgdConfig config_;
  uint64_t seed_;
  uint64_t encodes_ = 0;
  bool simd_ = true;
  std::vector<uint8_t> codes_;  // scratch of encode_payload: one block's codes, or [n]

  // DataError naming the first element in [start, start + len) whose level
  // is above S; codes: one per byte (bits 8) or packed two to a byte (bits 4).
  void refuse_level(const uint8_t* codes, int64_t start, int64_t len, int bits) const;

  static constexpr int64_t kBlock = 16;  // buckets per encode_block
  // Buckets [b0, b0 + count) (count <= kBlock) of the n-element x, all of the
  // length of bucket b0: their norms into out, their codes into `codes` (one
  // byte per element, from the block's first).
  void encode_block(const float* x, int64_t n, int64_t b0, int64_t count, uint32_t seed,
                    uint8_t* out, uint8_t* codes);
};

// The bucket's L2 norm as stored: computed in double, rounded up to fp32,
// saturated at FLT_MAX. norm_of_sum: the same from the sum of squares.
float qsgd_norm(const float* v, int64_t n);
float norm_of_sum(double sum_of_squares);
// norms[b] = qsgd_norm of bucket b of x ([count * len]) from sums[b], a sum of
// its squares in another order (qsgd::bucket_sums_fast): exact, recomputed in
// element order only where the bound on the sum's error straddles two stored
// norms. `isa`: the widest path of the rounding (qsgd::norms_up).
void norms_from_sums(const float* x, int64_t len, int64_t count, const double* sums, float* norms,
                     simd::Level isa);

std::unique_ptr<Codec> make_qsgd(const SpecStage& stage, const CodecBuildContext& ctx);

}  // namespace slowpipe::compressors
