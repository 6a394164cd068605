// `q<bits>`: uniform quantization at 1..8 bits with scales per tensor, row
// (sample), channel (last dimension) or group of G consecutive elements;
// max-abs (symmetric) or min-max (asymmetric); nearest or stochastic rounding;
// scales stored as fp16 (default, as in AQ-SGD's reference code) or fp32.
//
// Payload: [scales][codes]. Scales: one fp16/fp32 per group (max-abs) or two
// (min, max) per group (min-max), little endian. Codes: ceil(n*bits/8) bytes of
// LSB-first packed b-bit codes, in the tensor's row-major order.
// fp16 scales are rounded outward (max-abs up, min down, max up) so that no value
// is clipped and stochastic rounding stays unbiased; beyond 65504 they saturate
// (values clip). fp32 scales saturate at FLT_MAX/4 (about 8.5e37) so that the
// grid arithmetic never overflows; decoders refuse larger ones. A tensor
// holding NaN or inf is refused (DataError). Grids and kernels: quant_kernels.h.
#pragma once

#include <memory>
#include <string>

#include "compressors/codecs/codec.h"
#include "compressors/codecs/quant_kernels.h"

namespace slowpipe::compressors {

struct QuantizerConfig {
  int bits = 4;
  bool stochastic = false;
  bool minmax = false;
  ScaleMode mode = ScaleMode::kChannel;
  int64_t group = 0;  // kGroup: elements per group
  bool fp32_scales = false;
  bool value_stage = false;  // after a sparsifier: default scale mode is row
};

class Quantizer : public Codec {
 public:
  Quantizer(QuantizerConfig config, uint64_t seed);
  uint64_t payload_bytes(const Shape& shape) const override;
  void encode_payload(const float* x, const Shape& shape, uint8_t* out) override;
  void decode_payload(const uint8_t* p, const Shape& shape, float* out) const override;
  std::string spec() const override;
  void save_state(const std::string& prefix, CodecState& out) const override;
  void load_state(const std::string& prefix, const CodecState& in) override;
  const QuantizerConfig& config() const { return config_; }

  GroupLayout layout(const Shape& shape) const;
  int levels() const;
  uint64_t scale_bytes(int64_t groups) const;

 private:
  // Reads scales from the payload into `grid` (resized); throws DataError for
  // non-finite or inconsistent scales.
  void read_grid(const uint8_t* p, int64_t groups, GroupGrid& grid) const;

  QuantizerConfig config_;
  uint64_t seed_;
  uint64_t encodes_ = 0;
  // The encoder's per-group buffers (statistics, grid), kept at the size of
  // the largest tensor encoded: with group=G a large tensor has many groups
  // (a flat gradient one per 128 elements), and fresh buffers of that size
  // fault their pages in at every call.
  std::vector<float> stat_a_, stat_b_;
  GroupGrid grid_;
};

std::unique_ptr<Codec> make_quantizer(const SpecStage& stage, const CodecBuildContext& ctx);

// compress.grad (GradientSpec, channel_spec.h): a flat [1, N] gradient under
// the default per-channel scales would carry one scale per element, so a q<b>
// stage without an explicit granularity (group=G, channel, row, tensor) gets
// group=kGradientGroup; q4 is then 0.5 + 2/128 bytes per element, 7.76x
// smaller than fp32. The entry "q"'s CodecInfo::gradient_form.
constexpr int64_t kGradientGroup = 128;
GradientForm quantizer_gradient_form(const SpecStage& stage);

// fp16 helpers shared by codecs and AQ-SGD buffers. Outward rounding saturates at
// the largest finite half.
uint16_t half_round_up(float v);
uint16_t half_round_down(float v);
float half_to_float(uint16_t bits);
uint16_t float_to_half(float v);  // nearest even

}  // namespace slowpipe::compressors
