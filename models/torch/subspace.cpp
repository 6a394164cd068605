// The fixed subspace of a subspace-constrained GPT: the draws (double
// precision, a SplitMix64 stream and Box-Muller, plain C++) and the boundary
// map built on them. See subspace.h and docs/models.md.
#include "models/torch/internal/subspace.h"

#include <torch/torch.h>

#include <cmath>
#include <string>

#include "common/errors.h"

namespace slowpipe::models {
namespace {

// Fixed seeds: the subspace is part of the architecture, not of a run's seed.
constexpr uint64_t kBasisSeed = 0x5375627370616365ULL;  // "Subspace"
constexpr uint64_t kFixedSeed = 0x4669786564506172ULL;  // "FixedPar"

class Normal {
 public:
  explicit Normal(uint64_t seed) : state_(seed) {}
  double next() {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    // Uniforms in (0, 1): 53 bits, offset by half a step so log() never sees 0.
    const double u1 = (static_cast<double>(bits() >> 11) + 0.5) * 0x1.0p-53;
    const double u2 = (static_cast<double>(bits() >> 11) + 0.5) * 0x1.0p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * M_PI * u2;
    spare_ = r * std::sin(angle);
    have_spare_ = true;
    return r * std::cos(angle);
  }

 private:
  uint64_t bits() {  // SplitMix64
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  uint64_t state_;
  double spare_ = 0;
  bool have_spare_ = false;
};

// Removes from row vector `v` [C] its component in the span of the first `cols`
// columns of `u` [C, k] (row-major).
void project_out(double* v, const std::vector<double>& u, int64_t c, int64_t k, int64_t cols) {
  for (int64_t j = 0; j < cols; ++j) {
    double dot = 0;
    for (int64_t i = 0; i < c; ++i) dot += u[i * k + j] * v[i];
    for (int64_t i = 0; i < c; ++i) v[i] -= dot * u[i * k + j];
  }
}

// Rows of `n` x C N(0, form.fixed_std^2) draws, with their span(U) component
// removed when form.fixed_outside (then all zero when U spans everything).
std::vector<double> fixed_rows(Normal& rng, int64_t n, const std::vector<double>& u, int64_t c,
                               int64_t k, const SubspaceForm& form) {
  std::vector<double> out(static_cast<size_t>(n * c));
  for (auto& x : out) x = form.fixed_std * rng.next();
  if (!form.fixed_outside) return out;
  if (k == c) {
    std::fill(out.begin(), out.end(), 0.0);
    return out;
  }
  for (int64_t r = 0; r < n; ++r) project_out(&out[r * c], u, c, k, k);
  return out;
}

at::Tensor to_float(const std::vector<double>& v, int64_t rows, int64_t cols) {
  return torch::from_blob(const_cast<double*>(v.data()), {rows, cols}, torch::kDouble)
      .to(torch::kFloat)
      .clone();
}

}  // namespace

SubspaceDraws draw_subspace(int64_t d_model, int64_t rank, int64_t vocab, int64_t seq_len,
                            const SubspaceForm& form) {
  const int64_t c = d_model, k = rank;
  SubspaceDraws d;
  d.basis.assign(static_cast<size_t>(c * k), 0.0);
  Normal basis_rng(kBasisSeed);
  std::vector<double> col(static_cast<size_t>(c));
  for (int64_t j = 0; j < k; ++j) {
    for (auto& x : col) x = basis_rng.next();
    // Gram-Schmidt twice against the columns so far: orthogonal to ~1e-16.
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t p = 0; p < j; ++p) {
        double dot = 0;
        for (int64_t i = 0; i < c; ++i) dot += d.basis[i * k + p] * col[i];
        for (int64_t i = 0; i < c; ++i) col[i] -= dot * d.basis[i * k + p];
      }
    }
    double norm = 0;
    for (double x : col) norm += x * x;
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < c; ++i) d.basis[i * k + j] = col[i] / norm;
  }
  Normal fixed_rng(kFixedSeed);
  d.fixed_tok = fixed_rows(fixed_rng, vocab, d.basis, c, k, form);
  d.fixed_pos = form.positions ? fixed_rows(fixed_rng, seq_len, d.basis, c, k, form)
                               : std::vector<double>(static_cast<size_t>(seq_len * c), 0.0);
  return d;
}

Subspace::Subspace(int64_t d_model, int64_t rank, int64_t vocab, int64_t seq_len, SubspaceForm form)
    : d_model_(d_model), rank_(rank), seq_len_(seq_len), form_(form) {
  if (rank < 1 || rank > d_model) {
    throw UsageError("model.subspace=" + std::to_string(rank) + " must lie in [1, model.d_model=" +
                     std::to_string(d_model) + "] (0 = no subspace constraint)");
  }
  const SubspaceDraws d = draw_subspace(d_model, rank, vocab, seq_len, form_);
  cpu_.basis = to_float(d.basis, d_model, rank);
  cpu_.fixed_tok = to_float(d.fixed_tok, vocab, d_model);
  cpu_.fixed_pos = to_float(d.fixed_pos, seq_len, d_model);
}

const Subspace::OnDevice& Subspace::on(const at::Device& device) const {
  if (device.is_cpu()) return cpu_;
  const std::lock_guard<std::mutex> lock(mutex_);
  auto it = devices_.find(device.str());
  if (it == devices_.end()) {
    OnDevice d{cpu_.basis.to(device), cpu_.fixed_tok.to(device), cpu_.fixed_pos.to(device)};
    it = devices_.emplace(device.str(), std::move(d)).first;
  }
  return it->second;
}

at::Tensor Subspace::basis(const at::Device& device) const {
  return on(device).basis;
}

at::Tensor Subspace::lift(const at::Tensor& coefficients) const {
  return torch::matmul(coefficients, on(coefficients.device()).basis.t());  // [..., C]
}

at::Tensor Subspace::fixed(const at::Tensor& tokens) const {
  const OnDevice& d = on(tokens.device());
  const int64_t t = tokens.size(1);
  TORCH_CHECK(t <= seq_len_, "sequence of ", t, " tokens exceeds model.seq_len ", seq_len_);
  return d.fixed_tok.index_select(0, tokens.reshape({-1})).view({tokens.size(0), t, d_model_}) +
         d.fixed_pos.narrow(0, 0, t).unsqueeze(0);  // [B, T, C]
}

at::Tensor Subspace::reduce(const at::Tensor& output, const at::Tensor& inputs) const {
  const at::Tensor& u = on(output.device()).basis;
  // Default form: fixed(tokens) is orthogonal to U, so U^T h is the coefficient vector itself.
  if (form_.fixed_outside) return torch::matmul(output, u);             // [B, T, k]
  return torch::matmul(output - fixed(inputs.to(output.device())), u);  // [B, T, k]
}

uint64_t Subspace::side_bytes(const at::Tensor& inputs) const {
  return static_cast<uint64_t>(inputs.numel() * form_.id_bytes);
}

at::Tensor Subspace::expand(const at::Tensor& sent, const at::Tensor& inputs) const {
  return lift(sent) + fixed(inputs.to(sent.device()));  // [B, T, C]
}

}  // namespace slowpipe::models
