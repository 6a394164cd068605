// TopK / RandK / shared-mask codecs; format in sparsifier.h.
#include "compressors/codecs/sparsifier.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "common/errors.h"
#include "compressors/codecs/internal/cast_codecs.h"

namespace slowpipe::compressors {

Sparsifier::Sparsifier(SparseConfig config, std::unique_ptr<Codec> values, uint64_t seed)
    : config_(config), values_(std::move(values)), rng_state_(seed ^ 0x5851F42D4C957F2DULL) {}

void Sparsifier::geometry(const Shape& shape, int64_t* rows, int64_t* m, int64_t* k) const {
  const int64_t n = shape_numel(shape);
  if (config_.kind == SparseKind::kShared) {
    if (selection_.rows * selection_.row_len != n)
      throw std::logic_error("topk:shared: the shared mask covers " +
                             std::to_string(selection_.rows * selection_.row_len) +
                             " elements, the tensor has " + std::to_string(n));
    *rows = selection_.rows;
    *m = selection_.row_len;
    *k = selection_.k;
    return;
  }
  *rows = n == 0 ? 0 : (config_.per_row ? shape_rows(shape) : 1);
  *m = *rows == 0 ? 0 : n / *rows;
  if (*m > std::numeric_limits<int32_t>::max())
    throw UsageError("topk/randk: rows longer than 2^31-1 elements are not supported");
  *k = kept_count(config_.fraction, *m);
}

uint64_t Sparsifier::payload_bytes(const Shape& shape) const {
  int64_t rows, m, k;
  geometry(shape, &rows, &m, &k);
  uint64_t index_bytes = config_.kind == SparseKind::kShared ? 0 : index_section_bytes(rows, m, k);
  return index_bytes + values_->payload_bytes({rows, k});
}

void Sparsifier::select(const float* x, const Shape& shape) {
  select_rows(x, shape, nullptr);
}

void Sparsifier::select_rows(const float* x, const Shape& shape, float* gathered) {
  if (config_.kind == SparseKind::kShared) return;
  int64_t rows, m, k;
  geometry(shape, &rows, &m, &k);
  selection_.rows = rows;
  selection_.k = k;
  selection_.row_len = m;
  selection_.indices.resize(static_cast<size_t>(rows * k));
  for (int64_t r = 0; r < rows; ++r) {
    int32_t* idx = selection_.indices.data() + r * k;
    const float* row = x + r * m;
    if (config_.kind == SparseKind::kTopk) {
      selector_.select(row, m, k, idx, gathered ? gathered + r * k : nullptr);
    } else {
      select_randk(m, k, rng_state_, idx);
      if (gathered)  // while the row is still in cache
        for (int64_t j = 0; j < k; ++j) gathered[r * k + j] = row[idx[j]];
    }
  }
}

void Sparsifier::encode_payload(const float* x, const Shape& shape, uint8_t* out) {
  int64_t rows, m, k;
  geometry(shape, &rows, &m, &k);
  const uint64_t index_bytes =
      config_.kind == SparseKind::kShared ? 0 : index_section_bytes(rows, m, k);
  // fp32 values (no value codec) are gathered straight into the message where
  // it is aligned for floats (always, but for an index section of odd length):
  // no copy of them after.
  uint8_t* const values_out = out + index_bytes;
  const bool in_place =
      values_->spec() == "none" && reinterpret_cast<uintptr_t>(values_out) % alignof(float) == 0;
  float* gathered = reinterpret_cast<float*>(values_out);
  if (!in_place) {
    gathered_.resize(static_cast<size_t>(rows * k));
    gathered = gathered_.data();
  }
  if (config_.kind == SparseKind::kShared) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < k; ++j)
        gathered[r * k + j] = x[r * m + selection_.indices[r * k + j]];
  } else {
    select_rows(x, shape, gathered);
  }
  // Non-finite input is refused. TopK orders magnitudes as integers with NaN
  // above inf above every finite value, so a row holding one keeps it: checking
  // the kept values suffices. RandK and shared masks may drop it: check all.
  if (config_.kind != SparseKind::kTopk) {
    int64_t bad = first_non_finite(x, rows * m);
    if (bad >= 0) refuse_non_finite(spec(), x, rows * m, bad);
  }
  if (first_non_finite(gathered, rows * k) >= 0) refuse_non_finite(spec(), x, rows * m);
  if (config_.kind != SparseKind::kShared)
    encode_indices(selection_.indices.data(), rows, m, k, out);
  if (!in_place) values_->encode_payload(gathered, {rows, k}, values_out);
}

namespace {

// The j-th fp32 value of `v`, at any alignment.
inline float float_at(const uint8_t* v, int64_t j) {
  float x;
  std::memcpy(&x, v + 4 * j, 4);
  return x;
}

// out[0, n) = 0 in 16-byte stores, a loop the compiler keeps as written: a
// std::fill or memset call takes `rep stosb` at these sizes, which measured
// slower (docs/performance.md, "TopK's zero fill").
typedef float Float4 __attribute__((vector_size(16), aligned(4), may_alias));  // any alignment
__attribute__((optimize("no-tree-loop-distribute-patterns"))) void zero_floats(float* out,
                                                                               int64_t n) {
  const Float4 zero = {0.0F, 0.0F, 0.0F, 0.0F};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    *reinterpret_cast<Float4*>(out + i) = zero;
    *reinterpret_cast<Float4*>(out + i + 4) = zero;
    *reinterpret_cast<Float4*>(out + i + 8) = zero;
    *reinterpret_cast<Float4*>(out + i + 12) = zero;
  }
  for (; i < n; ++i) out[i] = 0.0F;
}

// out [m]: zeros, and gain * v[j] at idx[j]. Block by block, each block's kept
// values written right after its zeros while it is in cache: one pass over the
// output instead of a fill and a scatter. Fast for ascending indices; correct
// for any order of indices in [0, m).
// `v`: the k kept fp32 values, read at any alignment (a message's bytes).
void expand_row(const int32_t* idx, const uint8_t* v, int64_t k, int64_t m, float gain,
                float* out) {
  // 1024 floats (4 KiB): the GPT-2 XL decode took 0.22-0.33 ms (median
  // 0.25) against 0.24-0.42 (0.33) with blocks of 4096 on a Zen 5 capped to
  // AVX2; 2048 in between, 512 and 256 slower again.
  constexpr int64_t kBlock = 1024;
  int64_t j = 0;
  for (int64_t b = 0; b < m; b += kBlock) {
    const int64_t e = std::min(m, b + kBlock);
    zero_floats(out + b, e - b);
    for (; j < k && idx[j] < e; ++j) out[idx[j]] = gain * float_at(v, j);
  }
}

// decode_payload's buffers, kept per thread (decoding is const and may run on
// several threads) at the size of the largest message decoded there, so that
// large messages do not fault fresh pages in at every call. Never nested: a
// value codec is no sparsifier.
struct DecodeScratch {
  std::vector<int32_t> indices;  // [rows, k]
  std::vector<float> values;     // [rows, k]
};
DecodeScratch& decode_scratch() {
  thread_local DecodeScratch scratch;
  return scratch;
}

}  // namespace

void Sparsifier::decode_payload(const uint8_t* p, const Shape& shape, float* out) const {
  int64_t rows, m, k;
  geometry(shape, &rows, &m, &k);
  DecodeScratch& scratch = decode_scratch();
  const int32_t* indices = selection_.indices.data();
  uint64_t index_bytes = 0;
  if (config_.kind != SparseKind::kShared) {
    scratch.indices.resize(static_cast<size_t>(rows * k));
    decode_indices(p, rows, m, k, scratch.indices.data());
    indices = scratch.indices.data();
    index_bytes = index_section_bytes(rows, m, k);
  }
  // fp32 values (no value codec) are read where they lie in the message;
  // others are decoded first.
  std::vector<float>& values = scratch.values;
  const uint8_t* v = p + index_bytes;
  if (values_->spec() != "none") {
    values.resize(static_cast<size_t>(rows * k));
    values_->decode_payload(v, {rows, k}, values.data());
    v = reinterpret_cast<const uint8_t*>(values.data());
  }
  const float gain =
      config_.unbiased && k > 0 ? static_cast<float>(m) / static_cast<float>(k) : 1.0F;
  for (int64_t r = 0; r < rows; ++r)
    expand_row(indices + r * k, v + 4 * r * k, k, m, gain, out + r * m);
  if (gain != 1.0F)
    for (int64_t i = 0; i < rows * k; ++i)
      if (!std::isfinite(gain * float_at(v, i)))
        throw DataError(spec() + " message: value " + std::to_string(float_at(v, i)) +
                        " overflows when rescaled by m/k");
}

SparseSelection Sparsifier::selection_of(const uint8_t* p, size_t size, const Shape& shape) const {
  if (config_.kind == SparseKind::kShared)
    throw std::logic_error("topk:shared messages carry no indices");
  if (size != payload_bytes(shape))
    throw DataError(spec() + " message: " + std::to_string(size) + " bytes, expected " +
                    std::to_string(payload_bytes(shape)));
  SparseSelection sel;
  geometry(shape, &sel.rows, &sel.row_len, &sel.k);
  sel.indices.resize(static_cast<size_t>(sel.rows * sel.k));
  decode_indices(p, sel.rows, sel.row_len, sel.k, sel.indices.data());
  return sel;
}

void Sparsifier::save_state(const std::string& prefix, CodecState& out) const {
  put_u64(out, prefix + "rng", rng_state_);
  values_->save_state(prefix + "values.", out);
}
void Sparsifier::load_state(const std::string& prefix, const CodecState& in) {
  rng_state_ = get_u64(in, prefix + "rng");
  values_->load_state(prefix + "values.", in);
}

std::string Sparsifier::spec() const {
  std::string s;
  if (config_.kind == SparseKind::kShared) {
    s = "topk:shared";
  } else {
    // The shortest form that reads back as the same double ("0.1", not
    // "0.10000000000000001"), so the canonical spec names exactly this K.
    char buf[40];
    for (int digits = 1; digits <= 17; ++digits) {
      std::snprintf(buf, sizeof buf, "%.*g", digits, config_.fraction);
      if (std::strtod(buf, nullptr) == config_.fraction) break;
    }
    s = std::string(config_.kind == SparseKind::kTopk ? "topk:" : "randk:") + buf;
    if (!config_.per_row) s += ":tensor";
    if (config_.unbiased) s += ":unbiased";
  }
  std::string v = values_->spec();
  if (v != "none") s += "+" + v;
  return s;
}

namespace {

std::unique_ptr<Codec> build(SparseKind kind, const SpecStage& stage, const CodecBuildContext& ctx,
                             std::unique_ptr<Codec> values) {
  SparseConfig c;
  c.kind = kind;
  const char* name = kind == SparseKind::kRandk ? "randk" : "topk";
  if (stage.args.empty())
    stage_error(ctx, stage.pos + stage.name.size(),
                std::string("expected ':K' after '") + name + "' (K = fraction kept, e.g. " + name +
                    ":0.1)");
  const SpecArg& first = stage.args.front();
  if (first.key.empty() && first.value == "shared" && kind == SparseKind::kTopk) {
    c.kind = SparseKind::kShared;
    if (stage.args.size() > 1)
      stage_error(ctx, stage.args[1].pos,
                  "'topk:shared' takes the forward mask as is; no further options");
  } else {
    char* end = nullptr;
    double k = first.key.empty() ? std::strtod(first.value.c_str(), &end) : 0.0;
    if (!first.key.empty() || end == first.value.c_str() || *end != '\0' || !(k > 0.0 && k <= 1.0))
      stage_error(ctx, first.pos,
                  std::string("expected K, the fraction kept, in (0, 1]") +
                      (kind == SparseKind::kTopk ? " or 'shared'" : "") + ", got '" + first.value +
                      "'");
    c.fraction = k;
    StageOptions options(ctx);
    for (size_t i = 1; i < stage.args.size(); ++i) {
      const SpecArg& a = stage.args[i];
      if (a.key.empty() && a.value == "row") {
        options.claim("selection scope", a);
        c.per_row = true;
      } else if (a.key.empty() && a.value == "tensor") {
        options.claim("selection scope", a);
        c.per_row = false;
      } else if (a.key.empty() && a.value == "unbiased" && kind == SparseKind::kRandk) {
        options.claim("rescaling", a);
        c.unbiased = true;
      } else {
        stage_error(ctx, a.pos,
                    std::string("expected 'row' or 'tensor'") +
                        (kind == SparseKind::kRandk ? " or 'unbiased'" : "") + ", got '" + a.value +
                        "'");
      }
    }
  }
  if (!values) values = make_fp32_codec(SpecStage{"none", 0, {}}, ctx);
  return std::make_unique<Sparsifier>(c, std::move(values), ctx.seed);
}

}  // namespace

std::unique_ptr<Codec> make_topk(const SpecStage& stage, const CodecBuildContext& ctx) {
  return build(SparseKind::kTopk, stage, ctx, nullptr);
}
std::unique_ptr<Codec> make_randk(const SpecStage& stage, const CodecBuildContext& ctx) {
  return build(SparseKind::kRandk, stage, ctx, nullptr);
}
std::unique_ptr<Codec> make_topk_with_values(const SpecStage& stage, const CodecBuildContext& ctx,
                                             std::unique_ptr<Codec> values) {
  return build(SparseKind::kTopk, stage, ctx, std::move(values));
}
std::unique_ptr<Codec> make_randk_with_values(const SpecStage& stage, const CodecBuildContext& ctx,
                                              std::unique_ptr<Codec> values) {
  return build(SparseKind::kRandk, stage, ctx, std::move(values));
}

}  // namespace slowpipe::compressors
