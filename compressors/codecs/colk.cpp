// `colk:F[+VALUES]`: column sparsification (slowpipe's reading of Beyond
// Top-K); format, selection rule and what is ours in internal/colk.h and
// docs/codec-spec.md, "Column sparsification".
#include "compressors/codecs/internal/colk.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>

#include "common/errors.h"
#include "compressors/codecs/index_coding.h"
#include "compressors/codecs/internal/cast_codecs.h"
#include "compressors/codecs/topk_select.h"

namespace slowpipe::compressors {

ColumnSparsifier::ColumnSparsifier(double fraction, std::unique_ptr<Codec> values)
    : fraction_(fraction), values_(std::move(values)) {}

void ColumnSparsifier::geometry(double fraction, const Shape& shape, int64_t* rows, int64_t* m,
                                int64_t* k) {
  const int64_t n = shape_numel(shape);
  *m = shape.empty() ? 1 : shape.back();
  *rows = *m == 0 ? 0 : n / *m;
  if (*m > std::numeric_limits<int32_t>::max())
    throw UsageError("colk: rows longer than 2^31-1 channels are not supported");
  *k = *rows == 0 ? 0 : kept_count(fraction, *m);
}

uint64_t ColumnSparsifier::payload_bytes(const Shape& shape) const {
  int64_t rows, m, k;
  geometry(fraction_, shape, &rows, &m, &k);
  return index_section_bytes(1, m, k) + values_->payload_bytes({rows, k});
}

void ColumnSparsifier::select_columns(const float* x, int64_t rows, int64_t m, int64_t k,
                                      int32_t* out) {
  // Scores in double, row by row (each row's pass is contiguous): a finite
  // fp32 square cannot overflow, and the order is fixed.
  std::vector<double> score(static_cast<size_t>(m), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * m;
    for (int64_t j = 0; j < m; ++j) score[j] += static_cast<double>(row[j]) * row[j];
  }
  std::vector<int32_t> order(static_cast<size_t>(m));
  std::iota(order.begin(), order.end(), 0);
  // Larger score first; equal scores: the lower index first.
  const auto before = [&score](int32_t a, int32_t b) {
    return score[a] != score[b] ? score[a] > score[b] : a < b;
  };
  if (k < m) std::nth_element(order.begin(), order.begin() + k, order.end(), before);
  std::copy(order.begin(), order.begin() + k, out);
  std::sort(out, out + k);
}

void ColumnSparsifier::encode_payload(const float* x, const Shape& shape, uint8_t* out) {
  int64_t rows, m, k;
  geometry(fraction_, shape, &rows, &m, &k);
  const int64_t n = rows * m;
  if (first_non_finite(x, n) >= 0) refuse_non_finite(spec(), x, n);
  kept_.resize(static_cast<size_t>(k));
  gathered_.resize(static_cast<size_t>(rows * k));
  select_columns(x, rows, m, k, kept_.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) gathered_[r * k + j] = x[r * m + kept_[j]];
  encode_indices(kept_.data(), /*rows=*/1, m, k, out);
  values_->encode_payload(gathered_.data(), {rows, k}, out + index_section_bytes(1, m, k));
}

void ColumnSparsifier::decode_payload(const uint8_t* p, const Shape& shape, float* out) const {
  int64_t rows, m, k;
  geometry(fraction_, shape, &rows, &m, &k);
  // The decoder's buffers, kept per thread (decoding is const and may run on
  // several threads) at the size of the largest message decoded there, so
  // that large messages do not fault fresh pages in at every call.
  thread_local std::vector<int32_t> kept;
  thread_local std::vector<float> values;
  kept.resize(static_cast<size_t>(k));
  values.resize(static_cast<size_t>(rows * k));
  decode_indices(p, /*rows=*/1, m, k, kept.data());  // DataError for bad indices
  values_->decode_payload(p + index_section_bytes(1, m, k), {rows, k}, values.data());
  for (int64_t r = 0; r < rows; ++r) {
    float* row = out + r * m;
    std::fill(row, row + m, 0.0F);
    for (int64_t j = 0; j < k; ++j) row[kept[j]] = values[r * k + j];
  }
}

std::string ColumnSparsifier::spec() const {
  // The shortest form that reads back as the same double ("0.1"), as topk's.
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, fraction_);
    if (std::strtod(buf, nullptr) == fraction_) break;
  }
  std::string s = std::string("colk:") + buf;
  const std::string v = values_->spec();
  if (v != "none") s += "+" + v;
  return s;
}

void ColumnSparsifier::save_state(const std::string& prefix, CodecState& out) const {
  values_->save_state(prefix + "values.", out);
}
void ColumnSparsifier::load_state(const std::string& prefix, const CodecState& in) {
  values_->load_state(prefix + "values.", in);
}

namespace {

// The F of `colk:F`, or stage_error.
double parse_fraction(const SpecStage& stage, const CodecBuildContext& ctx) {
  if (stage.args.empty())
    stage_error(ctx, stage.pos + stage.name.size(),
                "expected ':F' after 'colk' (F = fraction of columns kept, e.g. colk:0.25)");
  const SpecArg& first = stage.args.front();
  char* end = nullptr;
  const double f = first.key.empty() ? std::strtod(first.value.c_str(), &end) : 0.0;
  if (!first.key.empty() || end == first.value.c_str() || *end != '\0' || !(f > 0.0 && f <= 1.0))
    stage_error(ctx, first.pos,
                "expected F, the fraction of columns kept, in (0, 1], got '" +
                    (first.key.empty() ? first.value : first.key + "=" + first.value) + "'");
  if (stage.args.size() > 1)
    stage_error(ctx, stage.args[1].pos, "'colk:F' takes no further options");
  return f;
}

}  // namespace

std::unique_ptr<Codec> make_colk(const SpecStage& stage, const CodecBuildContext& ctx) {
  return make_colk_with_values(stage, ctx, nullptr);
}

std::unique_ptr<Codec> make_colk_with_values(const SpecStage& stage, const CodecBuildContext& ctx,
                                             std::unique_ptr<Codec> values) {
  const double f = parse_fraction(stage, ctx);
  if (!values) values = make_fp32_codec(SpecStage{"none", 0, {}}, ctx);
  return std::make_unique<ColumnSparsifier>(f, std::move(values));
}

GradientForm colk_gradient_form(const SpecStage& /*stage*/) {
  GradientForm form;
  form.refusal =
      "colk keeps whole channels (columns of [tokens, channels]), but a data-parallel gradient "
      "crosses as one flat [1, N] row with no channels (use topk:K, randk:K or a quantizer)";
  return form;
}

CodecPlotFacts colk_plot_facts(const SpecStage& stage) {
  CodecPlotFacts f;
  if (stage.args.empty() || !stage.args.front().key.empty()) return f;
  const std::string& v = stage.args.front().value;
  char* end = nullptr;
  const double fraction = std::strtod(v.c_str(), &end);
  if (!v.empty() && end && *end == '\0') f.keep_fraction = fraction;
  return f;
}

}  // namespace slowpipe::compressors
