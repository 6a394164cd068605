// Uniform quantizer codec; see quantizer.h for the format and quant_kernels.h
// for the grid. Follows AQ-SGD's reference quantizer by default (q<b> = max-abs,
// one fp16 scale per hidden channel, round to nearest).
#include "compressors/codecs/quantizer.h"

#include <c10/util/Half.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/errors.h"

namespace slowpipe::compressors {

namespace {
constexpr uint16_t kHalfMax = 0x7BFF;
constexpr uint16_t kHalfLowest = 0xFBFF;
// fp32 scales saturate here: max - min and 2 * max-abs stay at most FLT_MAX/2, so
// every step, code * step and grid value lo + code * step is finite.
constexpr float kMaxFp32Scale = std::numeric_limits<float>::max() / 4;

uint32_t mix_seed(uint64_t seed, uint64_t counter) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (counter + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return static_cast<uint32_t>(z ^ (z >> 31));
}
}  // namespace

float half_to_float(uint16_t bits) {
  return static_cast<float>(c10::Half(bits, c10::Half::from_bits()));
}
uint16_t float_to_half(float v) {
  return c10::Half(v).x;
}

uint16_t half_round_up(float v) {
  if (std::isnan(v)) return float_to_half(v);
  if (v > 65504.0F) return kHalfMax;
  if (v < -65504.0F) return kHalfLowest;
  uint16_t h = float_to_half(v);
  if (half_to_float(h) >= v) return h;
  if (h == 0x8000) return 0x0001;       // -0 -> smallest positive
  return (h & 0x8000) ? h - 1 : h + 1;  // toward +inf
}
uint16_t half_round_down(float v) {
  return half_round_up(-v) ^ 0x8000;
}

Quantizer::Quantizer(QuantizerConfig config, uint64_t seed) : config_(config), seed_(seed) {}

int Quantizer::levels() const {
  if (config_.minmax) return 1 << config_.bits;
  return config_.bits == 1 ? 2 : (1 << config_.bits) - 1;
}

GroupLayout Quantizer::layout(const Shape& shape) const {
  GroupLayout l;
  l.mode = config_.mode;
  l.numel = shape_numel(shape);
  if (l.numel == 0) {
    l.groups = 0;
    return l;
  }
  switch (config_.mode) {
    case ScaleMode::kTensor:
      l.run = l.numel;
      l.groups = 1;
      break;
    case ScaleMode::kRow:
      l.groups = shape_rows(shape);
      l.run = l.numel / l.groups;
      break;
    case ScaleMode::kChannel:
      l.channels = shape.empty() ? 1 : shape.back();
      l.groups = l.channels;
      break;
    case ScaleMode::kGroup:
      l.run = config_.group;
      l.groups = (l.numel + config_.group - 1) / config_.group;
      break;
  }
  return l;
}

uint64_t Quantizer::scale_bytes(int64_t groups) const {
  return static_cast<uint64_t>(groups) * (config_.minmax ? 2 : 1) * (config_.fp32_scales ? 4 : 2);
}

uint64_t Quantizer::payload_bytes(const Shape& shape) const {
  GroupLayout l = layout(shape);
  return scale_bytes(l.groups) + packed_bytes(l.numel, config_.bits);
}

void Quantizer::read_grid(const uint8_t* p, int64_t groups, GroupGrid& grid) const {
  const int per_group = config_.minmax ? 2 : 1;
  auto scale_at = [&](int64_t i) {
    if (config_.fp32_scales) {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return half_to_float(h);
  };
  grid.lo.resize(groups);
  grid.step.resize(groups);
  grid.inv_step.resize(groups);
  const float intervals = static_cast<float>(levels() - 1);
  for (int64_t g = 0; g < groups; ++g) {
    float a = scale_at(per_group * g);
    float b = config_.minmax ? scale_at(per_group * g + 1) : a;
    if (!std::isfinite(a) || !std::isfinite(b))
      throw DataError("q" + std::to_string(config_.bits) + " message: non-finite scale in group " +
                      std::to_string(g));
    if (std::fabs(a) > kMaxFp32Scale || std::fabs(b) > kMaxFp32Scale)
      throw DataError("q" + std::to_string(config_.bits) +
                      " message: scale beyond FLT_MAX/4 in group " + std::to_string(g));
    float lo = config_.minmax ? a : -a;
    float hi = b;
    if (hi < lo)
      throw DataError("q" + std::to_string(config_.bits) + " message: bad scale in group " +
                      std::to_string(g));
    float step = (hi - lo) / intervals;
    grid.lo[g] = lo;
    grid.step[g] = step;
    grid.inv_step[g] = step > 0 ? 1.0F / step : 0.0F;
  }
}

void Quantizer::encode_payload(const float* x, const Shape& shape, uint8_t* out) {
  GroupLayout l = layout(shape);
  if (l.numel == 0) return;
  const int64_t groups = l.groups;
  std::vector<float>& a = stat_a_;
  std::vector<float>& b = stat_b_;
  a.resize(static_cast<size_t>(groups));
  b.resize(config_.minmax ? static_cast<size_t>(groups) : 0);
  if (config_.minmax)
    group_minmax(x, l, a.data(), b.data());
  else
    group_maxabs(x, l, a.data());
  // The statistics carry any NaN or inf of their group (quant_kernels.h), so
  // checking them checks every element.
  for (int64_t g = 0; g < groups; ++g) {
    bool finite = std::isfinite(a[g]) && (b.empty() || std::isfinite(b[g]));
    if (!finite) refuse_non_finite(spec(), x, l.numel);
    if (config_.fp32_scales) {  // saturate so that the grid arithmetic stays finite
      a[g] = std::clamp(a[g], -kMaxFp32Scale, kMaxFp32Scale);
      if (!b.empty()) b[g] = std::clamp(b[g], -kMaxFp32Scale, kMaxFp32Scale);
    }
  }
  // Scales as the decoder will read them.
  const int per_group = config_.minmax ? 2 : 1;
  for (int64_t g = 0; g < groups; ++g) {
    for (int j = 0; j < per_group; ++j) {
      float v = j == 0 ? a[g] : b[g];
      bool down = config_.minmax && j == 0;
      int64_t i = per_group * g + j;
      if (config_.fp32_scales) {
        std::memcpy(out + 4 * i, &v, 4);
      } else {
        uint16_t h = down ? half_round_down(v) : half_round_up(v);
        std::memcpy(out + 2 * i, &h, 2);
      }
    }
  }
  read_grid(out, groups, grid_);
  QuantizeArgs args;
  args.bits = config_.bits;
  args.levels = levels();
  args.stochastic = config_.stochastic;
  args.seed = mix_seed(seed_, encodes_++);
  quantize_pack(x, l, grid_, args, out + scale_bytes(groups));
}

void Quantizer::decode_payload(const uint8_t* p, const Shape& shape, float* out) const {
  GroupLayout l = layout(shape);
  if (l.numel == 0) return;
  // The decoder's grid, kept per thread (decoding is const and may run on
  // several threads) at the size of the largest message decoded there.
  thread_local GroupGrid grid;
  read_grid(p, l.groups, grid);
  unpack_dequantize(p + scale_bytes(l.groups), l, grid, config_.bits, out);
}

void Quantizer::save_state(const std::string& prefix, CodecState& out) const {
  put_u64(out, prefix + "encodes", encodes_);
}
void Quantizer::load_state(const std::string& prefix, const CodecState& in) {
  encodes_ = get_u64(in, prefix + "encodes");
}

std::string Quantizer::spec() const {
  std::string s = "q" + std::to_string(config_.bits);
  if (config_.stochastic) s += ":stochastic";
  ScaleMode default_mode = config_.value_stage ? ScaleMode::kRow : ScaleMode::kChannel;
  if (config_.mode != default_mode) {
    switch (config_.mode) {
      case ScaleMode::kTensor:
        s += ":tensor";
        break;
      case ScaleMode::kRow:
        s += ":row";
        break;
      case ScaleMode::kChannel:
        s += ":channel";
        break;
      case ScaleMode::kGroup:
        s += ":group=" + std::to_string(config_.group);
        break;
    }
  }
  if (config_.minmax) s += ":minmax";
  if (config_.fp32_scales) s += ":fp32";
  return s;
}

namespace {

// Each option claims its family (StageOptions): two roundings, say, are an
// error naming both.
void claim_option_kind(StageOptions& options, const SpecArg& arg) {
  const std::string& v = arg.value;
  if (arg.key == "group" || (arg.key.empty() && (v == "tensor" || v == "row" || v == "channel")))
    options.claim("scale granularity", arg);
  else if (arg.key.empty() && (v == "stochastic" || v == "sr" || v == "nearest" || v == "rtn"))
    options.claim("rounding", arg);
  else if (arg.key.empty() && (v == "maxabs" || v == "minmax"))
    options.claim("scale statistic", arg);
  else if (arg.key.empty() && (v == "fp16" || v == "fp32"))
    options.claim("scale precision", arg);
}

// Sets what one quantizer option says in `c`.
void apply_quantizer_option(QuantizerConfig& c, const SpecArg& arg, const CodecBuildContext& ctx) {
  const std::string& v = arg.value;
  if (arg.key == "group") {
    bool digits_only = v.find_first_not_of("0123456789") == std::string::npos && v.size() <= 12;
    int64_t g = digits_only ? std::stoll(v) : 0;
    if (g < 1)
      stage_error(ctx, arg.pos, "expected group=G with G a positive integer, got '" + v + "'");
    c.mode = ScaleMode::kGroup;
    c.group = g;
  } else if (!arg.key.empty()) {
    stage_error(ctx, arg.pos,
                "unknown quantizer option '" + arg.key + "=' (only group=G takes a value)");
  } else if (v == "stochastic" || v == "sr") {
    c.stochastic = true;
  } else if (v == "nearest" || v == "rtn") {
    c.stochastic = false;
  } else if (v == "tensor") {
    c.mode = ScaleMode::kTensor;
  } else if (v == "row") {
    c.mode = ScaleMode::kRow;
  } else if (v == "channel") {
    if (ctx.value_stage)
      stage_error(
          ctx, arg.pos,
          "per-channel scales do not apply to sparsified values; use row, tensor or group=G");
    c.mode = ScaleMode::kChannel;
  } else if (v == "maxabs") {
    c.minmax = false;
  } else if (v == "minmax") {
    c.minmax = true;
  } else if (v == "fp16") {
    c.fp32_scales = false;
  } else if (v == "fp32") {
    c.fp32_scales = true;
  } else {
    stage_error(ctx, arg.pos,
                "expected a quantizer option (stochastic, nearest, tensor, row, channel, group=G, "
                "maxabs, minmax, fp16, fp32), got '" +
                    v + "'");
  }
}

}  // namespace

std::unique_ptr<Codec> make_quantizer(const SpecStage& stage, const CodecBuildContext& ctx) {
  QuantizerConfig c;
  c.value_stage = ctx.value_stage;
  c.mode = ctx.value_stage ? ScaleMode::kRow : ScaleMode::kChannel;
  const std::string digits = stage.name.substr(1);
  bool ok = !digits.empty() && digits.size() <= 2 &&
            digits.find_first_not_of("0123456789") == std::string::npos;
  c.bits = ok ? std::stoi(digits) : 0;
  if (c.bits < 1 || c.bits > 8)
    stage_error(ctx, stage.pos, "expected a bit width q1..q8, got '" + stage.name + "'");
  StageOptions options(ctx);
  for (const SpecArg& arg : stage.args) {
    claim_option_kind(options, arg);
    apply_quantizer_option(c, arg, ctx);
  }
  return std::make_unique<Quantizer>(c, ctx.seed);
}

GradientForm quantizer_gradient_form(const SpecStage& stage) {
  for (const SpecArg& a : stage.args)
    if (a.key == "group" || a.value == "channel" || a.value == "row" || a.value == "tensor")
      return {};  // explicit granularity
  return {"", SpecArg{"group", std::to_string(kGradientGroup), 0}};
}

}  // namespace slowpipe::compressors
