// PowerSGD: the matrix view, the seeded init, one warm-started power step and
// its spec; see powersgd.h and docs/codec-spec.md ("PowerSGD").
#include "compressors/codecs/internal/powersgd.h"

#include <cfloat>
#include <cmath>
#include <cstring>

#include "common/errors.h"
#include "compressors/codecs/quantizer.h"

namespace slowpipe::compressors {

namespace {

constexpr int kMaxRank = 4096;
constexpr double kPi = 3.14159265358979323846;

// Smallest w with w * w >= n.
int64_t ceil_sqrt(int64_t n) {
  int64_t w = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
  while (w > 0 && (w - 1) * (w - 1) >= n) --w;
  while (w * w < n) ++w;
  return w;
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Uniform in (0, 1], 53 bits.
double uniform_open0(uint64_t& state) {
  return (static_cast<double>(splitmix64(state) >> 11) + 1.0) * 0x1.0p-53;
}

}  // namespace

LowRankGeometry lowrank_geometry(const Shape& shape, MatrixView view, int rank) {
  LowRankGeometry g;
  g.rank = rank;
  g.numel = shape_numel(shape);
  if (view == MatrixView::kSquare) {
    g.cols = ceil_sqrt(g.numel);
    g.rows = g.cols == 0 ? 0 : (g.numel + g.cols - 1) / g.cols;
  } else if (shape.size() < 2) {
    g.rows = 1;
    g.cols = g.numel;
  } else if (view == MatrixView::kRows) {
    g.rows = shape.front();
    g.cols = g.rows == 0 ? 0 : g.numel / g.rows;
  } else {
    g.cols = shape.back();
    g.rows = g.cols == 0 ? 0 : g.numel / g.cols;
  }
  g.compressed = (g.rows + g.cols) * static_cast<int64_t>(rank) < g.numel;
  return g;
}

std::vector<float> powersgd_init(uint64_t seed, int64_t cols, int rank) {
  std::vector<float> q(static_cast<size_t>(cols * rank));
  uint64_t state = seed ^ 0x504F5745525347ULL;  // "POWERSG"
  for (size_t i = 0; i < q.size(); i += 2) {
    const double u1 = uniform_open0(state), u2 = uniform_open0(state);
    const double radius = std::sqrt(-2.0 * std::log(u1));
    q[i] = static_cast<float>(radius * std::cos(2 * kPi * u2));
    if (i + 1 < q.size()) q[i + 1] = static_cast<float>(radius * std::sin(2 * kPi * u2));
  }
  return q;
}

namespace {

// Matrix M [rows, cols] over x[0..numel): row i is x[i*cols .. min((i+1)*cols, numel)),
// the rest of the last row zeros (square view).
struct MatrixRef {
  const float* x;
  int64_t rows, cols, numel;
  int64_t row_len(int64_t i) const { return std::min(cols, numel - i * cols); }
};

// P = M Q, in double. q: [cols, r]; p: [rows, r].
void project(const MatrixRef& m, const float* q, int r, std::vector<double>& p) {
  p.assign(static_cast<size_t>(m.rows * r), 0.0);
  for (int64_t i = 0; i < m.rows; ++i) {
    const float* row = m.x + i * m.cols;
    double* pi = &p[i * r];
    const int64_t len = m.row_len(i);
    for (int64_t j = 0; j < len; ++j) {
      const double v = row[j];
      const float* qj = q + j * r;
      for (int k = 0; k < r; ++k) pi[k] += v * qj[k];
    }
  }
}

// Thresholds of the orthogonalisation (docs/codec-spec.md, "PowerSGD", step 2),
// relative to a column's norm before its earlier columns are removed.
// Below kReorthogonalize a second pass follows: one pass leaves the column
// orthogonal only to about (double rounding) / (what remains), so a large
// cancellation needs it; above it the second pass would change no fp32 bit.
constexpr double kReorthogonalize = 1e-3;
// At or below kDependent what remains is double rounding (about sqrt(rows) *
// 2^-53 of the norm): the column is in the span of the earlier ones and
// becomes exactly 0 (normalising it would duplicate an earlier column).
constexpr double kDependent = 1e-10;

double column_norm(const std::vector<double>& p, int64_t rows, int r, int k) {
  double sq = 0;
  for (int64_t i = 0; i < rows; ++i) sq += p[i * r + k] * p[i * r + k];
  return std::sqrt(sq);
}

// Column k of p minus its components along the (finished) columns 0..k-1, one
// after the other (modified Gram-Schmidt).
void remove_earlier(std::vector<double>& p, int64_t rows, int r, int k) {
  for (int l = 0; l < k; ++l) {
    double dot = 0;
    for (int64_t i = 0; i < rows; ++i) dot += p[i * r + l] * p[i * r + k];
    for (int64_t i = 0; i < rows; ++i) p[i * r + k] -= dot * p[i * r + l];
  }
}

// Gram-Schmidt on the columns of p [rows, r], in place, column by column:
// earlier components removed (twice when the first pass cancels below
// kReorthogonalize of the norm), then normalised, or set to exactly 0 when at
// most kDependent of the norm remains (M of rank below r, M = 0). The nonzero
// columns are orthonormal to double precision, so P^ P^T never scales M up.
void orthogonalize(std::vector<double>& p, int64_t rows, int r) {
  for (int k = 0; k < r; ++k) {
    const double before = column_norm(p, rows, r, k);
    remove_earlier(p, rows, r, k);
    double norm = column_norm(p, rows, r, k);
    if (norm <= kReorthogonalize * before) {
      remove_earlier(p, rows, r, k);
      norm = column_norm(p, rows, r, k);
    }
    const bool dependent = !(norm > kDependent * before);  // also before == 0
    for (int64_t i = 0; i < rows; ++i) p[i * r + k] = dependent ? 0.0 : p[i * r + k] / norm;
  }
}

// Q = M^T P^, in double. p_hat: [rows, r]; q: [cols, r].
void back_project(const MatrixRef& m, const float* p_hat, int r, std::vector<double>& q) {
  q.assign(static_cast<size_t>(m.cols * r), 0.0);
  for (int64_t i = 0; i < m.rows; ++i) {
    const float* row = m.x + i * m.cols;
    const float* pi = p_hat + i * r;
    const int64_t len = m.row_len(i);
    for (int64_t j = 0; j < len; ++j) {
      const double v = row[j];
      double* qj = &q[j * r];
      for (int k = 0; k < r; ++k) qj[k] += v * pi[k];
    }
  }
}

// Every column of q [cols, r] that is entirely zero (its P^ column was zero in
// the previous encode, or it underflowed fp16) becomes that column of the
// seeded init; without this a zero column stays zero for good (P = M Q).
void reseed_zero_columns(std::vector<float>& q, uint64_t seed, int64_t cols, int r) {
  std::vector<float> init;
  for (int k = 0; k < r; ++k) {
    bool zero = true;
    for (int64_t j = 0; j < cols && zero; ++j) zero = q[j * r + k] == 0.0F;
    if (!zero) continue;
    if (init.empty()) init = powersgd_init(seed, cols, r);
    for (int64_t j = 0; j < cols; ++j) q[j * r + k] = init[j * r + k];
  }
}

// A value as the receiver will see it (fp32, or fp16 when `fp16`).
float wire_value(double v, bool fp16) {
  const float f = static_cast<float>(v);
  return fp16 ? half_to_float(float_to_half(f)) : f;
}

void write_values(const float* v, int64_t n, bool fp16, uint8_t* out) {
  if (!fp16) {
    if (n > 0) std::memcpy(out, v, 4 * static_cast<size_t>(n));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = float_to_half(v[i]);
    out[2 * i] = static_cast<uint8_t>(h & 0xFF);
    out[2 * i + 1] = static_cast<uint8_t>(h >> 8);
  }
}

void read_values(const uint8_t* p, int64_t n, bool fp16, float* v) {
  if (!fp16) {
    if (n > 0) std::memcpy(v, p, 4 * static_cast<size_t>(n));
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    v[i] = half_to_float(static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8)));
}

// Largest magnitude fp16 holds without rounding to inf.
constexpr float kHalfLimit = 65519.0F;

}  // namespace

PowerSgd::PowerSgd(PowerSgdConfig config, uint64_t seed) : config_(config), seed_(seed) {}

uint64_t PowerSgd::payload_bytes(const Shape& shape) const {
  const LowRankGeometry g = lowrank_geometry(shape, config_.view, config_.rank);
  return static_cast<uint64_t>(g.values()) * (config_.fp16 ? 2 : 4);
}

void PowerSgd::encode_payload(const float* x, const Shape& shape, uint8_t* out) {
  const LowRankGeometry g = lowrank_geometry(shape, config_.view, config_.rank);
  if (const int64_t bad = first_non_finite(x, g.numel); bad >= 0)
    refuse_non_finite(spec(), x, g.numel, bad);
  if (!g.compressed) {  // the values as they are
    if (config_.fp16)
      for (int64_t i = 0; i < g.numel; ++i)
        if (std::fabs(x[i]) > kHalfLimit)
          throw DataError("cannot encode with '" + spec() + "': the value at index " +
                          std::to_string(i) + " does not fit fp16 (|x| > 65519)");
    write_values(x, g.numel, config_.fp16, out);
    return;
  }
  const int r = g.rank;
  const MatrixRef m{x, g.rows, g.cols, g.numel};
  const bool restart = !active_ || shape != shape_;
  std::vector<float> q_prev = restart ? powersgd_init(seed_, g.cols, r) : q_;
  if (!restart) reseed_zero_columns(q_prev, seed_, g.cols, r);

  std::vector<double> p;  // [rows, r]
  project(m, q_prev.data(), r, p);
  orthogonalize(p, g.rows, r);
  std::vector<float> p_hat(p.size());  // [rows, r], as sent; |entries| <= 1
  for (size_t i = 0; i < p.size(); ++i)
    p_hat[i] = std::fmax(-1.0F, std::fmin(1.0F, wire_value(p[i], config_.fp16)));

  std::vector<double> qd;  // [cols, r]
  back_project(m, p_hat.data(), r, qd);
  std::vector<float> q_new(qd.size());
  const double limit = config_.fp16 ? kHalfLimit : FLT_MAX;
  for (int64_t j = 0; j < g.cols; ++j) {
    double row_sum = 0;  // bounds |M^| in row j's column: |P^| <= 1
    for (int k = 0; k < r; ++k) {
      const double v = qd[j * r + k];
      if (!(std::fabs(v) <= limit))
        throw DataError("cannot encode with '" + spec() +
                        "': the factor Q overflows (the tensor's columns are too large for " +
                        (config_.fp16 ? "fp16" : "fp32") + ")");
      q_new[j * r + k] = wire_value(v, config_.fp16);
      row_sum += std::fabs(static_cast<double>(q_new[j * r + k]));
    }
    if (row_sum > FLT_MAX)
      throw DataError("cannot encode with '" + spec() +
                      "': the reconstruction would overflow fp32 (the tensor's values are too "
                      "large)");
  }
  write_values(p_hat.data(), g.rows * r, config_.fp16, out);
  write_values(q_new.data(), g.cols * r, config_.fp16, out + (config_.fp16 ? 2 : 4) * g.rows * r);
  active_ = true;
  shape_ = shape;
  q_ = std::move(q_new);
}

void PowerSgd::decode_payload(const uint8_t* p, const Shape& shape, float* out) const {
  const LowRankGeometry g = lowrank_geometry(shape, config_.view, config_.rank);
  if (!g.compressed) {
    read_values(p, g.numel, config_.fp16, out);
    for (int64_t i = 0; i < g.numel; ++i)
      if (!std::isfinite(out[i]))
        throw DataError("message for '" + spec() + "': a non-finite value");
    return;
  }
  const int r = g.rank;
  std::vector<float> p_hat(static_cast<size_t>(g.rows * r)), q(static_cast<size_t>(g.cols * r));
  read_values(p, g.rows * r, config_.fp16, p_hat.data());
  read_values(p + (config_.fp16 ? 2 : 4) * g.rows * r, g.cols * r, config_.fp16, q.data());
  for (float v : p_hat)
    if (!(std::fabs(v) <= 1.0F))
      throw DataError("message for '" + spec() +
                      "': a value of the orthonormal factor P is not in [-1, 1]");
  for (int64_t j = 0; j < g.cols; ++j) {
    double row_sum = 0;
    for (int k = 0; k < r; ++k) row_sum += std::fabs(static_cast<double>(q[j * r + k]));
    if (!(row_sum <= FLT_MAX))
      throw DataError("message for '" + spec() + "': the factor Q is not finite or too large");
  }
  for (int64_t i = 0; i < g.rows; ++i) {
    const float* pi = &p_hat[i * r];
    const int64_t len = std::min(g.cols, g.numel - i * g.cols);
    for (int64_t j = 0; j < len; ++j) {
      const float* qj = &q[j * r];
      double s = 0;
      for (int k = 0; k < r; ++k) s += static_cast<double>(pi[k]) * qj[k];
      out[i * g.cols + j] = static_cast<float>(s);
    }
  }
}

std::string PowerSgd::spec() const {
  std::string s = "powersgd:" + std::to_string(config_.rank);
  if (config_.view == MatrixView::kRows) s += ":rows";
  if (config_.view == MatrixView::kSquare) s += ":square";
  if (config_.fp16) s += ":fp16";
  return s;
}

void PowerSgd::save_state(const std::string& prefix, CodecState& out) const {
  put_u64(out, prefix + "active", active_ ? 1 : 0);
  if (!active_) return;
  put_u64(out, prefix + "dims", shape_.size());
  for (size_t i = 0; i < shape_.size(); ++i)
    put_u64(out, prefix + "shape." + std::to_string(i), static_cast<uint64_t>(shape_[i]));
}

void PowerSgd::load_state(const std::string& prefix, const CodecState& in) {
  active_ = get_u64(in, prefix + "active") != 0;
  shape_.clear();
  q_.clear();
  if (!active_) return;
  const uint64_t dims = get_u64(in, prefix + "dims");
  if (dims > 64) throw DataError("channel state: '" + prefix + "dims' is not a tensor rank");
  for (uint64_t i = 0; i < dims; ++i) {
    const auto d = static_cast<int64_t>(get_u64(in, prefix + "shape." + std::to_string(i)));
    if (d < 0 || d > (int64_t{1} << 40))
      throw DataError("channel state: '" + prefix + "shape." + std::to_string(i) +
                      "' is not a dimension");
    shape_.push_back(d);
  }
  if (!lowrank_geometry(shape_, config_.view, config_.rank).compressed)
    throw DataError("channel state: '" + prefix + "shape' is not a shape that '" + spec() +
                    "' compresses");
}

void PowerSgd::save_arrays(const std::string& prefix, CodecArrays& out) const {
  if (active_) out[prefix + "q"] = q_;
}

void PowerSgd::load_arrays(const std::string& prefix, const CodecArrays& in) {
  if (!active_) return;
  auto it = in.find(prefix + "q");
  if (it == in.end()) throw DataError("channel state: missing '" + prefix + "q'");
  const LowRankGeometry g = lowrank_geometry(shape_, config_.view, config_.rank);
  if (static_cast<int64_t>(it->second.size()) != g.cols * g.rank)
    throw DataError("channel state: '" + prefix + "q' has " + std::to_string(it->second.size()) +
                    " elements, expected " + std::to_string(g.cols * g.rank));
  q_ = it->second;
}

bool powersgd_view_given(const SpecStage& stage, MatrixView* view) {
  for (const SpecArg& a : stage.args) {
    if (!a.key.empty()) continue;
    if (a.value == "last" || a.value == "rows" || a.value == "square") {
      if (view)
        *view = a.value == "last"   ? MatrixView::kLast
                : a.value == "rows" ? MatrixView::kRows
                                    : MatrixView::kSquare;
      return true;
    }
  }
  return false;
}

GradientForm powersgd_gradient_form(const SpecStage& stage) {
  MatrixView view = MatrixView::kSquare;
  if (!powersgd_view_given(stage, &view)) return {"", SpecArg{"", "square", 0}};
  if (view == MatrixView::kSquare) return {};
  return {
      "gradients cross as one flat [1, N] tensor, a one-row matrix in this view, which "
      "PowerSGD sends uncompressed; leave the view out (compress.grad uses 'square')",
      std::nullopt};
}

std::unique_ptr<Codec> make_powersgd(const SpecStage& stage, const CodecBuildContext& ctx) {
  // Never a value stage: its entry is not a value codec, so make_codec refuses
  // it after '+' before this factory runs (listing the value codecs).
  if (stage.args.empty() || !stage.args.front().key.empty())
    stage_error(ctx, stage.args.empty() ? stage.pos + stage.name.size() : stage.args.front().pos,
                "expected ':R' after 'powersgd' (R = rank, 1.." + std::to_string(kMaxRank) +
                    ", e.g. powersgd:4)");
  PowerSgdConfig c;
  const SpecArg& first = stage.args.front();
  const std::string& r = first.value;
  const bool digits =
      !r.empty() && r.size() <= 5 && r.find_first_not_of("0123456789") == std::string::npos;
  c.rank = digits ? std::stoi(r) : 0;
  if (c.rank < 1 || c.rank > kMaxRank)
    stage_error(
        ctx, first.pos,
        "expected R, the rank, an integer in 1.." + std::to_string(kMaxRank) + ", got '" + r + "'");
  StageOptions options(ctx);
  for (size_t i = 1; i < stage.args.size(); ++i) {
    const SpecArg& arg = stage.args[i];
    const std::string& v = arg.value;
    if (arg.key.empty() && (v == "last" || v == "rows" || v == "square")) {
      options.claim("matrix view", arg);
      powersgd_view_given(SpecStage{stage.name, stage.pos, {arg}}, &c.view);
    } else if (arg.key.empty() && (v == "fp32" || v == "fp16")) {
      options.claim("value precision", arg);
      c.fp16 = v == "fp16";
    } else {
      stage_error(ctx, arg.pos,
                  "expected a powersgd option (last, rows, square, fp32, fp16), got '" +
                      (arg.key.empty() ? v : arg.key + "=" + v) + "'");
    }
  }
  return std::make_unique<PowerSgd>(c, ctx.seed);
}

}  // namespace slowpipe::compressors
