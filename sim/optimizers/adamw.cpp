// AdamW (Loshchilov & Hutter 2019: Adam with decoupled weight decay;
// optim.beta1, optim.beta2, optim.weight_decay), as libtorch's
// torch::optim::AdamW computes it. State per parameter: the step count and the
// first and second moments, created at the first step. Its first moment for
// the momentum exchange is exp_avg; a step with an exchanged moment keeps the
// second moment as it is (frozen) while the step count and the bias
// corrections go on. Step cost: an elementwise pass reading parameter,
// gradient and both moments and writing parameter and moments (7 tensors, 10
// FLOPs per element).
#include <torch/torch.h>

#include <cmath>

#include "sim/internal/optimizer_impl.h"

namespace slowpipe::sim {
namespace {

class AdamW : public OptimizerImpl {
 public:
  AdamW(const config::OptimConfig& c, const std::vector<at::Tensor>& params)
      : config_(c),
        opt_(params, torch::optim::AdamWOptions(c.lr)
                         .betas({c.beta1, c.beta2})
                         .weight_decay(c.weight_decay)) {}

  torch::optim::Optimizer& torch_optimizer() override { return opt_; }

  void append_state(const at::Tensor& p, std::vector<at::Tensor>& out) const override {
    if (const auto* a = state(p)) {
      out.push_back(a->exp_avg());
      out.push_back(a->exp_avg_sq());
    }
  }

  bool has_moment(const at::Tensor& p) const override { return state(p) != nullptr; }

  // beta1 x m + (1 - beta1) x g
  at::Tensor next_moment(const at::Tensor& p, const at::Tensor& g) const override {
    return (state(p)->exp_avg() * config_.beta1 + g * (1.0 - config_.beta1)).reshape({-1});
  }

  // AdamW as libtorch computes it, with the exchanged first moment and the
  // second moment frozen.
  void step_with_moment(const at::Tensor& p, const at::Tensor& m, double lr) override {
    auto* a = state(p);
    a->step(a->step() + 1);
    a->exp_avg().copy_(m);
    p.mul_(1.0 - lr * config_.weight_decay);
    const double bc1 = 1.0 - std::pow(config_.beta1, static_cast<double>(a->step()));
    const double bc2 = 1.0 - std::pow(config_.beta2, static_cast<double>(a->step()));
    const at::Tensor denom = (a->exp_avg_sq().sqrt() / std::sqrt(bc2)).add_(1e-8);
    p.addcdiv_(a->exp_avg(), denom, -lr / bc1);
  }

 private:
  torch::optim::AdamWParamState* state(const at::Tensor& p) const {
    return dynamic_cast<torch::optim::AdamWParamState*>(param_state(opt_, p));
  }

  config::OptimConfig config_;
  mutable torch::optim::AdamW opt_;
};

}  // namespace

OptimizerEntry adamw_optimizer() {
  return {"adamw",
          [](const config::OptimConfig& c, const std::vector<at::Tensor>& params,
             const std::vector<models::ParamRole>& /*roles*/) {
            return std::unique_ptr<OptimizerImpl>(std::make_unique<AdamW>(c, params));
          },
          [](const config::OptimConfig&) {
            return OptimizerStepCost{7, 10};
          },
          [](const config::OptimConfig&) { return std::string(); }};
}

}  // namespace slowpipe::sim
