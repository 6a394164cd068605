// The fixed subspace of a subspace-constrained GPT (model.subspace = k), after
// "Protocol Models" (Ramasinghe et al., arXiv 2506.01260, 2025): every
// projection that writes into the residual stream writes into the column
// space of one fixed orthonormal basis U [C, k], and the embedding is a
// trainable part in that subspace plus a fixed part outside it that any stage
// recomputes from the token ids and positions. The residual at every cut is
// then fixed(tokens) + U a, and only the k coordinates a cross a boundary,
// forward and backward, exactly (docs/models.md, "Subspace-constrained GPT").
//
// Everything here is derived from (d_model, k, vocabulary, seq_len) alone, in
// double precision from a fixed 64-bit generator (no libtorch RNG, no LAPACK),
// so every stage, rank, run and checkpoint agrees on it without sending it.
// Left out: updating U during training, per-stage subspaces.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "models/torch/model.h"

namespace slowpipe::models {

// How the fixed part is drawn and what a message carries besides the
// coordinates. The default is `gpt`'s form (Protocol Models); `record()` is
// Protocol NanoGPT's ReparamSSN record (`protocol-gpt`, docs/models.md):
// a N(0, 1) token part left as drawn (not projected out of span(U), so a
// stage subtracts it before reading the coordinates), no position part (the
// model has rotary positions), and the token ids sent with the coordinates,
// 2 bytes (uint16) per token each way.
struct SubspaceForm {
  double fixed_std = 0.02;    // standard deviation of the fixed part's draws
  bool fixed_outside = true;  // fixed part projected out of span(U)
  bool positions = true;      // a fixed part per position as well as per token
  int64_t id_bytes = 0;       // bytes per token of the ids each message carries
  static SubspaceForm record() { return {1.0, false, false, 2}; }
};

class Subspace : public BoundaryMap {
 public:
  // 1 <= rank <= d_model (UsageError otherwise).
  Subspace(int64_t d_model, int64_t rank, int64_t vocab, int64_t seq_len,
           SubspaceForm form = SubspaceForm());

  int64_t rank() const { return rank_; }
  int64_t d_model() const { return d_model_; }
  // U: float [C, k], orthonormal columns, on `device`.
  at::Tensor basis(const at::Device& device) const;
  // coefficients [..., k] -> U a [..., C]: how a constrained layer writes.
  at::Tensor lift(const at::Tensor& coefficients) const;
  // int64 [B, T] tokens -> float [B, T, C]: the fixed token plus position part
  // (default form: orthogonal to U, zero when k = C).
  at::Tensor fixed(const at::Tensor& tokens) const;
  // BoundaryMap: residual [B, T, C] -> U^T (residual - fixed(tokens)) [B, T, k]
  // (the default form's fixed part is orthogonal to U: U^T residual);
  // coefficients [B, T, k] -> U a + fixed(tokens) [B, T, C].
  at::Tensor reduce(const at::Tensor& output, const at::Tensor& inputs) const override;
  at::Tensor expand(const at::Tensor& sent, const at::Tensor& inputs) const override;
  // form.id_bytes per token of `inputs` [B, T].
  uint64_t side_bytes(const at::Tensor& inputs) const override;

 private:
  struct OnDevice {
    at::Tensor basis;      // [C, k]
    at::Tensor fixed_tok;  // [V, C]
    at::Tensor fixed_pos;  // [T_max, C]
  };
  const OnDevice& on(const at::Device& device) const;
  int64_t d_model_, rank_, seq_len_;
  SubspaceForm form_;
  OnDevice cpu_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, OnDevice> devices_;
};

// The draws behind a Subspace, in double precision, row-major (tests read them):
// `basis` [d_model * rank] orthonormal columns by modified Gram-Schmidt
// (twice) of N(0, 1) draws, column by column, so the basis of rank k is the
// first k columns of any larger one; `fixed_tok` [vocab * d_model] and
// `fixed_pos` [seq_len * d_model]: N(0, form.fixed_std^2) draws (a stream of
// their own, the same for every k) with their component in span(U) removed
// when form.fixed_outside; `fixed_pos` all zero without form.positions.
struct SubspaceDraws {
  std::vector<double> basis, fixed_tok, fixed_pos;
};
SubspaceDraws draw_subspace(int64_t d_model, int64_t rank, int64_t vocab, int64_t seq_len,
                            const SubspaceForm& form = SubspaceForm());

}  // namespace slowpipe::models
