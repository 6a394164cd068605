// One optimizer's implementation behind StageOptimizer (sim/optimizer.h): the
// libtorch optimizer it steps, the cost of a step, and how its first moment is
// read and set for compress.grad_sync = momentum (docs/grad-sync.md). Each
// optimizer is one file sim/optimizers/<name>.cpp defining
// `OptimizerEntry <name>_optimizer()`, listed by one line of
// config/optimizer_list.h (sim/README.md, "Adding an optimizer"). The state a
// resume checkpoint holds is the libtorch optimizer's own archive, so its
// layout is libtorch's.
#pragma once

#include <ATen/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "config/section_configs.h"
#include "models/torch/param_role.h"

namespace torch::optim {
class Optimizer;
class OptimizerParamState;
}  // namespace torch::optim

namespace slowpipe::sim {

class OptimizerImpl {
 public:
  virtual ~OptimizerImpl() = default;
  // Steps, learning rate, save and load (the resume checkpoint's layout).
  virtual torch::optim::Optimizer& torch_optimizer() = 0;
  // Appends p's state tensors in a stable order (none before p's first step).
  virtual void append_state(const at::Tensor& p, std::vector<at::Tensor>& out) const = 0;
  // The momentum exchange, per parameter p (StageOptimizer::has_moments,
  // next_momentum, step_with_momentum): whether p has a first moment; its
  // next one from gradient `grad`, flat, state unchanged; and a step of p
  // with `moment` (p's shape) stored as its first moment, at rate `lr`.
  virtual bool has_moment(const at::Tensor& p) const = 0;
  virtual at::Tensor next_moment(const at::Tensor& p, const at::Tensor& grad) const = 0;
  virtual void step_with_moment(const at::Tensor& p, const at::Tensor& moment, double lr) = 0;
};

// Tensors streamed and FLOPs per parameter element of one step (analytic
// compute models, docs/netmodel.md "Compute-time models").
struct OptimizerStepCost {
  int tensors_per_element = 0;
  double flops_per_element = 0;
};

struct OptimizerEntry {
  std::string name;  // its name in config/optimizer_list.h
  // `roles`: one per parameter, as the model declared them (models/param_role.h);
  // only optimizers that treat roles differently (muon) read them.
  std::unique_ptr<OptimizerImpl> (*make)(const config::OptimConfig& c,
                                         const std::vector<at::Tensor>& params,
                                         const std::vector<models::ParamRole>& roles) = nullptr;
  OptimizerStepCost (*cost)(const config::OptimConfig& c) = nullptr;
  // Why `c` keeps no first moment to exchange ("optim.name = sgd with
  // optim.momentum = 0"); "" when it keeps one.
  std::string (*no_moment)(const config::OptimConfig& c) = nullptr;
};

// Every implementation, in config/optimizer_list.h's order.
const std::vector<OptimizerEntry>& optimizer_entries();
// The implementation of optim.name `name`; UsageError naming optim.name.
const OptimizerEntry& find_optimizer(const std::string& name);

// p's entry in `opt`'s state map; nullptr before p's first step.
torch::optim::OptimizerParamState* param_state(torch::optim::Optimizer& opt, const at::Tensor& p);

}  // namespace slowpipe::sim
