// The optimizer of one pipeline stage on one replica (optim.name: each one's
// implementation is its file in sim/optimizers/, listed in
// config/optimizer_list.h) and global-norm gradient clipping across all stages
// of a replica, as a real pipeline does it (the stages agree on the global
// norm before stepping). The optimizer and learning-rate schedule registries
// and learning_rate() are plain C++ in config/optim_registry.h.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/section_configs.h"
#include "models/torch/param_role.h"

namespace torch::serialize {
class OutputArchive;
class InputArchive;
}  // namespace torch::serialize

namespace slowpipe::sim {

class OptimizerImpl;  // one per optimizer, sim/optimizers/ (sim/internal/optimizer_impl.h)
class StiefelStep;    // the kStiefel parameters' step (sim/internal/stiefel.h)

// Scales the gradients of `params` so that their global L2 norm is at most
// `max_norm` (no-op for max_norm = 0). Returns the norm before clipping.
double clip_global_norm(const std::vector<at::Tensor>& params, double max_norm);

class StageOptimizer {
 public:
  // `roles`: one per parameter as the model declared them
  // (Block::parameter_roles); empty: every parameter kOther. Only optimizers
  // that treat roles differently (muon) read them. Parameters of role
  // ParamRole::kStiefel ([d, k], k <= d) are stepped by the Stiefel step
  // whatever optim.name is (docs/optimizers.md, "The Stiefel step": no weight
  // decay, rate optim.stiefel_lr_scale x the scheduled lr, momentum
  // optim.stiefel_momentum); optim.name's implementation gets only the others,
  // with their roles, so a stage without kStiefel parameters steps exactly as
  // before. clip_global_norm, zero_grad and params() still cover every
  // parameter, in order.
  StageOptimizer(const config::OptimConfig& c, std::vector<at::Tensor> params,
                 const std::vector<models::ParamRole>& roles = {});
  ~StageOptimizer();
  StageOptimizer(StageOptimizer&&) noexcept;
  StageOptimizer& operator=(StageOptimizer&&) noexcept;

  void set_lr(double lr);
  void step();
  // The cost of one step, for analytic compute models: an elementwise pass
  // over the parameters (docs/netmodel.md, "Compute-time models"). AdamW reads
  // parameter, gradient and both moments and writes parameter and moments (7
  // tensors, 10 FLOPs per element); SGD with momentum 5 tensors, 4 FLOPs;
  // plain SGD 3 tensors, 2 FLOPs. A kStiefel parameter [d, k] counts the
  // Stiefel step's estimate instead (sim/internal/stiefel.h).
  double flops_per_step() const;
  double memory_bytes_per_step() const;
  void zero_grad();
  const std::vector<at::Tensor>& params() const { return params_; }
  // Every optimizer state tensor (momentum buffers, Adam moments), in a stable order.
  std::vector<at::Tensor> state_tensors() const;
  // compress.grad_sync = momentum (docs/grad-sync.md). has_moments(): every
  // parameter has optimizer state (after the first step). next_momentum():
  // this replica's next first moment from its own gradients, flat [1, N] in
  // parameter order (SGD: momentum x m + (g + weight_decay x p); AdamW:
  // beta1 x m + (1 - beta1) x g; a kStiefel parameter: its tangent momentum
  // P_U(beta x M + P_U(g))), the parameters and state unchanged.
  // step_with_momentum(mean): stores the exchanged first moment `mean` ([1, N]
  // or [N]) as the optimizer's and updates the parameters with it (AdamW: the
  // second moment stays as it is, frozen; the step count and bias corrections
  // go on; a kStiefel parameter: the mean projected onto its tangent space,
  // then the retraction). With every replica passing the same mean, replicas
  // stay identical.
  bool has_moments() const;
  at::Tensor next_momentum() const;
  void step_with_momentum(const at::Tensor& mean);
  // Every piece of optimizer state (moments, step counts, the current lr), for
  // bitwise resume; the Stiefel step's under its own keys (`stiefel/...`),
  // written only when the stage has kStiefel parameters. load() throws
  // DataError when the archive does not fit (e.g. no Stiefel state where this
  // stage has kStiefel parameters).
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 private:
  std::vector<at::Tensor> params_;             // every parameter, in the model's order
  std::vector<bool> stiefel_;                  // per parameter of params_: role kStiefel
  std::unique_ptr<OptimizerImpl> impl_;        // optim.name's (find_optimizer), the others
  std::unique_ptr<StiefelStep> stiefel_step_;  // the kStiefel ones'; nullptr when none
  int tensors_per_element_ = 0;                // tensors streamed per parameter element
  double flops_per_element_ = 0;
};

// compress.grad_sync = momentum needs an optimizer with a first moment:
// UsageError naming optim.name's reason when it has none (plain SGD).
void require_momentum(const config::OptimConfig& c);

}  // namespace slowpipe::sim
