// The Stiefel step: the optimizer of every parameter a model declares
// ParamRole::kStiefel (models/torch/param_role.h), a [d, k] matrix (k <= d)
// with orthonormal columns such as a learned projection at a pipeline cut,
// whatever optim.name is. StageOptimizer (sim/optimizer.h) hands it those
// parameters and optim.name's implementation the rest. The rule
// (docs/optimizers.md, "The Stiefel step"), per parameter U [d, k] with
// Euclidean gradient G and momentum M [d, k], computed in double:
//   xi = G - U sym(U^T G)                       tangent projection at U
//   M <- beta M + xi;  M <- M - U sym(U^T M)    momentum, kept tangent at U
//   D = M, or with optim.stiefel_direction = msign D = P_U(msign(M)),
//     msign(M) = polar(M / ||M||_F) (singular values -> 1; zero ones stay 0)
//   U <- polar(U - lr_s D)                      retraction onto the manifold
// sym(A) = (A + A^T) / 2, polar(X) = X (X^T X)^(-1/2) by Newton-Schulz
// (polar_newton_schulz), beta = optim.stiefel_momentum, lr_s = the scheduled
// lr x optim.stiefel_lr_scale. No weight decay. U and M are stored in U's
// dtype, rounded once per step. A parameter without a gradient is skipped
// (no state change), as libtorch's optimizers skip it.
//
// Determinism: only at::mm, elementwise operations and reductions (norm,
// sum, max) in double on CPU, none of which uses atomics or a
// nondeterministic algorithm (PyTorch's reproducibility notes list none of
// them for CPU): the same inputs and thread count give the same bits, so
// resume is bitwise. Nothing calls LAPACK.
//
// Left out: a Riemannian Adam (per-coordinate second moments have no
// meaning on the manifold), vector transport of M beyond the projection
// above, and the exact spectral-norm steepest descent on the manifold (msign
// of the projected momentum, re-projected, is its first-order stand-in).
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "config/section_configs.h"

namespace torch::serialize {
class OutputArchive;
class InputArchive;
}  // namespace torch::serialize

namespace slowpipe::sim {

// The tangent projection at u [d, k] (orthonormal columns) of a [d, k]:
// a - u sym(u^T a); double in, double out.
at::Tensor stiefel_tangent(const at::Tensor& u, const at::Tensor& a);

// The Newton-Schulz iteration for the polar factor (polar_newton_schulz).
constexpr int kPolarMaxIterations = 100;   // the cap; ~4 are typical (docs/optimizers.md)
constexpr double kPolarTolerance = 1e-12;  // stop when ||X^T X - I||_F is below this

// polar(x) = x (x^T x)^(-1/2) for x [d, k], k <= d, of full column rank, in
// double: x is first scaled by 1 / sqrt(||x^T x||_inf) when that bound on its
// largest squared singular value exceeds 1, then X <- 1.5 X - 0.5 X (X^T X)
// runs until ||X^T X - I||_F < kPolarTolerance, stops decreasing (double's
// floor), or kPolarMaxIterations. `iterations`: where to write how many ran.
at::Tensor polar_newton_schulz(const at::Tensor& x, int* iterations = nullptr);

class StiefelStep {
 public:
  // `params`: the kStiefel parameters, each [d, k] with k <= d (std::logic_error
  // otherwise: a model bug). The rate is optim.lr until the first set_lr.
  StiefelStep(const config::OptimConfig& c, std::vector<at::Tensor> params);

  void set_lr(double lr) { lr_ = lr; }  // the scheduled rate (x optim.stiefel_lr_scale)
  double lr() const { return lr_; }
  void step();

  // Per parameter p (one of this step's), as OptimizerImpl has them
  // (sim/internal/optimizer_impl.h): p's momentum after its first step; the
  // momentum exchange's next moment P_U(beta M + P_U(grad)) (flat, p's dtype,
  // state unchanged); and a step with `moment` (p's shape) as the exchanged
  // momentum, projected onto p's tangent space before the retraction.
  void append_state(const at::Tensor& p, std::vector<at::Tensor>& out) const;
  bool has_moment(const at::Tensor& p) const;
  at::Tensor next_moment(const at::Tensor& p, const at::Tensor& grad) const;
  void step_with_moment(const at::Tensor& p, const at::Tensor& moment);

  // The cost of one step of p [d, k], for analytic compute models (an
  // estimate): 8 d k^2 FLOPs in the two tangent projections, 2 d k^2 for the
  // first Gram matrix and 4 d k^2 per Newton-Schulz iteration (4 assumed),
  // plus 12 d k elementwise; memory: U, G, M read and M, U written in U's
  // dtype, plus a read and a write of [d, k] doubles per matrix product (13).
  static double flops(const at::Tensor& p);
  static double memory_bytes(const at::Tensor& p);

  // The state under keys `stiefel/...` of `archive` (the stage's optimizer
  // archive): the rate, the parameter count, and per parameter its step
  // count and momentum. load() throws DataError when the archive holds none
  // or holds another layout; nothing changes then. refuse_state(): DataError
  // when an archive loaded by a stage without kStiefel parameters holds some.
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);
  static void refuse_state(torch::serialize::InputArchive& archive);

 private:
  struct Slot {
    int64_t step = 0;
    at::Tensor momentum;  // M, p's shape and dtype; undefined before the first step
  };
  const Slot& slot(const at::Tensor& p) const;
  // Stores the tangent momentum `m` (double) and retracts p along it (or
  // along its msign).
  void update(const at::Tensor& p, Slot& s, const at::Tensor& u, const at::Tensor& m);

  double lr_scale_ = 1.0, beta_ = 0.9;
  bool msign_ = false;                             // optim.stiefel_direction = msign
  double lr_ = 0;                                  // the scheduled rate
  std::vector<at::Tensor> params_;                 // [d, k] each
  std::vector<Slot> slots_;                        // per parameter, in order
  std::unordered_map<const void*, size_t> index_;  // TensorImpl -> slot
};

}  // namespace slowpipe::sim
