// QSGD: bucketed stochastic quantization scaled by the L2 norm; see qsgd.h and
// docs/codec-spec.md ("QSGD"). The per-element loops (norms, levels) are
// internal/qsgd_kernels.h: SIMD paths with the portable loop's bytes.
#include "compressors/codecs/internal/qsgd.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/errors.h"
#include "compressors/codecs/internal/qsgd_kernels.h"
#include "compressors/codecs/quant_kernels.h"

namespace slowpipe::compressors {

namespace {

constexpr int kMaxLevels = 127;  // 1 + 7 bits: codes fit a byte

uint32_t encode_seed(uint64_t seed, uint64_t counter) {
  uint64_t z = (seed ^ 0x5153474451534744ULL) + 0x9E3779B97F4A7C15ULL * (counter + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return static_cast<uint32_t>(z ^ (z >> 31));
}

int64_t buckets_of(int64_t n, int64_t d) {
  return (n + d - 1) / d;
}

}  // namespace

float norm_of_sum(double sum_of_squares) {
  return qsgd::norm_up(sum_of_squares);
}

float qsgd_norm(const float* v, int64_t n) {
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) sq += static_cast<double>(v[i]) * v[i];
  return norm_of_sum(sq);
}

Qsgd::Qsgd(QsgdConfig config, uint64_t seed) : config_(config), seed_(seed) {}

int Qsgd::code_bits() const {
  int b = 0;
  while ((1 << b) < config_.levels + 1) ++b;
  return 1 + b;
}

uint64_t Qsgd::payload_bytes(const Shape& shape) const {
  const int64_t n = shape_numel(shape);
  return 4 * static_cast<uint64_t>(buckets_of(n, config_.bucket)) + packed_bytes(n, code_bits());
}

void norms_from_sums(const float* x, int64_t len, int64_t count, const double* sums, float* norms,
                     simd::Level isa) {
  // |sums[b] - the element-order sum| <= (len + 8) 2^-52 of the sum
  // (qsgd_kernels.h); the stored norm is monotone in the sum, so where both
  // ends of that interval give one norm it is the norm.
  const double delta = static_cast<double>(len + 8) * 0x1p-51;
  constexpr int64_t kChunk = 16;
  float above[kChunk];
  for (int64_t b0 = 0; b0 < count; b0 += kChunk) {
    const int64_t nb = std::min(kChunk, count - b0);
    qsgd::norms_up(sums + b0, nb, 1 - delta, norms + b0, isa);
    qsgd::norms_up(sums + b0, nb, 1 + delta, above, isa);
    for (int64_t b = 0; b < nb; ++b)
      if (norms[b0 + b] != above[b]) norms[b0 + b] = qsgd_norm(x + (b0 + b) * len, len);
  }
}

void Qsgd::encode_payload(const float* x, const Shape& shape, uint8_t* out) {
  const int64_t n = shape_numel(shape);
  const int64_t d = config_.bucket, whole = n / d;
  // The encode's seed; the counter moves only once the message is made.
  const uint32_t seed = encode_seed(seed_, encodes_);
  const int bits = code_bits();
  uint8_t* const packed = out + 4 * buckets_of(n, d);
  // Where every block starts on a byte of the packed codes, each block is
  // packed while its codes are in cache; otherwise all of them at the end.
  const bool by_block = d * bits % 8 == 0;
  codes_.resize(static_cast<size_t>(by_block ? std::min(n, kBlock * d) : n));
  const auto block = [&](int64_t b0, int64_t count) {
    const int64_t start = b0 * d, len = std::min(count * d, n - start);
    encode_block(x, n, b0, count, seed, out, codes_.data() + (by_block ? 0 : start));
    if (by_block) pack_codes(codes_.data(), len, bits, packed + start * bits / 8);
  };
  for (int64_t b0 = 0; b0 < whole; b0 += kBlock) block(b0, std::min(kBlock, whole - b0));
  if (whole * d < n) block(whole, 1);  // the shorter last bucket
  if (!by_block) pack_codes(codes_.data(), n, bits, packed);
  ++encodes_;
}

void Qsgd::encode_block(const float* x, int64_t n, int64_t b0, int64_t count, uint32_t seed,
                        uint8_t* out, uint8_t* codes) {
  // In passes over the block (8 KiB at D = 128, so it stays in cache): the
  // sums of squares, the norms, the levels. The buckets' norms have no
  // chain between them, and the vector loops' constants are set once.
  const simd::Level isa = simd_ ? simd::Level::kAvx512 : simd::Level::kPortable;
  const int64_t start = b0 * config_.bucket, len = std::min(config_.bucket, n - start);
  double sums[kBlock];
  float norms[kBlock];
  qsgd::bucket_sums_fast(x + start, len, count, sums, isa);
  // A non-finite element makes its bucket's sum non-finite (squares of
  // finite floats cannot overflow a double): no separate pass looks for one.
  for (int64_t b = 0; b < count; ++b)
    if (!std::isfinite(sums[b])) refuse_non_finite(spec(), x, n, first_non_finite(x, n));
  if (simd_)  // vector partial sums
    norms_from_sums(x + start, len, count, sums, norms, isa);
  else  // element-order sums
    for (int64_t b = 0; b < count; ++b) norms[b] = norm_of_sum(sums[b]);
  std::memcpy(out + 4 * b0, norms, static_cast<size_t>(4 * count));
  qsgd::block_codes(x + start, len, count, norms, config_.levels, seed,
                    static_cast<uint64_t>(start), codes, isa);
}

void Qsgd::decode_payload(const uint8_t* p, const Shape& shape, float* out) const {
  const int64_t n = shape_numel(shape);
  const int64_t d = config_.bucket, buckets = buckets_of(n, d);
  const uint8_t* const packed = p + 4 * buckets;
  // 4-bit codes of even-length buckets (every bucket starts on a byte) are
  // read in place; others are unpacked first.
  const bool in_place = code_bits() == 4 && d % 2 == 0;
  // Unpacked codes, kept per thread (decoding is const and may run on
  // several threads) at the size of the largest message decoded there, so
  // that large messages do not fault fresh pages in at every call.
  thread_local std::vector<uint8_t> codes;
  codes.resize(in_place ? 0 : static_cast<size_t>(n));
  if (!in_place) unpack_codes(packed, n, code_bits(), codes.data());
  const simd::Level isa = simd_ ? simd::Level::kAvx512 : simd::Level::kPortable;
  float value[kMaxLevels + 1] = {};  // value[l] = norm * l / S, as the formula (docs/codec-spec.md)
  for (int64_t b = 0; b < buckets; ++b) {
    float norm;
    std::memcpy(&norm, p + 4 * b, 4);
    if (!(norm >= 0 && norm <= FLT_MAX))
      throw DataError("message for '" + spec() + "': bucket " + std::to_string(b) +
                      " has a negative or non-finite norm");
    const int64_t start = b * d, len = std::min(d, n - start);
    for (int l = 0; l <= config_.levels; ++l)
      value[l] = static_cast<float>(static_cast<double>(norm) * l / config_.levels);
    float* o = out + start;
    if (in_place) {
      // Levels above S read value[l] = 0 here; the message is refused below.
      if (qsgd::decode_codes4(packed + start / 2, len, value, o, isa) > 2 * config_.levels + 1)
        refuse_level(packed, start, len, 4);
      continue;
    }
    const uint8_t* c = codes.data() + start;
    if (config_.levels <= 7 && len >= 16) {  // codes below 16: the eight-value lane permute
      if (qsgd::decode_codes(c, len, value, o, isa) > 2 * config_.levels + 1)
        refuse_level(codes.data(), start, len, 8);
      continue;
    }
    int max_code = 0;
    for (int64_t i = 0; i < len; ++i) max_code = std::max<int>(max_code, c[i]);
    if (max_code > 2 * config_.levels + 1) refuse_level(codes.data(), start, len, 8);
    for (int64_t i = 0; i < len; ++i) {
      const float v = value[c[i] >> 1];
      o[i] = (c[i] & 1) ? -v : v;
    }
  }
}

void Qsgd::refuse_level(const uint8_t* codes, int64_t start, int64_t len, int bits) const {
  for (int64_t i = start; i < start + len; ++i) {
    const int c = bits == 8 ? codes[i] : (codes[i / 2] >> (4 * (i % 2))) & 0x0F;
    if ((c >> 1) > config_.levels)
      throw DataError("message for '" + spec() + "': level " + std::to_string(c >> 1) +
                      " above s at element " + std::to_string(i));
  }
}

std::string Qsgd::spec() const {
  std::string s = "qsgd:s=" + std::to_string(config_.levels);
  if (config_.bucket != QsgdConfig{}.bucket) s += ":bucket=" + std::to_string(config_.bucket);
  return s;
}

void Qsgd::save_state(const std::string& prefix, CodecState& out) const {
  put_u64(out, prefix + "encodes", encodes_);
}
void Qsgd::load_state(const std::string& prefix, const CodecState& in) {
  encodes_ = get_u64(in, prefix + "encodes");
}

std::unique_ptr<Codec> make_qsgd(const SpecStage& stage, const CodecBuildContext& ctx) {
  QsgdConfig c;
  bool levels_given = false;
  StageOptions options(ctx);
  auto positive = [&](const SpecArg& arg, int64_t max, const std::string& what) {
    const std::string& v = arg.value;
    const bool digits =
        !v.empty() && v.size() <= 12 && v.find_first_not_of("0123456789") == std::string::npos;
    const int64_t value = digits ? std::stoll(v) : 0;
    if (value < 1 || value > max)
      stage_error(ctx, arg.pos, "expected " + what + ", got '" + v + "'");
    return value;
  };
  for (const SpecArg& arg : stage.args) {
    if (arg.key == "s") {
      options.claim("levels", arg);
      c.levels = static_cast<int>(
          positive(arg, kMaxLevels, "s=S, the levels per sign, an integer in 1..127"));
      levels_given = true;
    } else if (arg.key == "bucket") {
      options.claim("bucket size", arg);
      c.bucket = positive(arg, int64_t{1} << 31, "bucket=D, a positive integer (elements)");
    } else {
      stage_error(ctx, arg.pos,
                  "expected a qsgd option (s=S, bucket=D), got '" +
                      (arg.key.empty() ? arg.value : arg.key + "=" + arg.value) + "'");
    }
  }
  if (!levels_given)
    stage_error(ctx, stage.pos + stage.name.size(),
                "expected ':s=S' after 'qsgd' (S = levels per sign, e.g. qsgd:s=4)");
  return std::make_unique<Qsgd>(c, ctx.seed);
}

}  // namespace slowpipe::compressors
