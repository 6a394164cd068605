// SGD with momentum (optim.momentum; 0: plain SGD) and weight decay, as
// libtorch's torch::optim::SGD computes it. State per parameter: the momentum
// buffer, created at the first step when the momentum is not 0. Its first
// moment for the momentum exchange is that buffer. Step cost: an elementwise
// pass reading parameter, gradient and momentum and writing parameter and
// momentum (5 tensors, 4 FLOPs per element); plain SGD 3 tensors, 2 FLOPs.
#include <torch/torch.h>

#include "sim/internal/optimizer_impl.h"

namespace slowpipe::sim {
namespace {

class Sgd : public OptimizerImpl {
 public:
  Sgd(const config::OptimConfig& c, const std::vector<at::Tensor>& params)
      : config_(c),
        opt_(params,
             torch::optim::SGDOptions(c.lr).momentum(c.momentum).weight_decay(c.weight_decay)) {}

  torch::optim::Optimizer& torch_optimizer() override { return opt_; }

  void append_state(const at::Tensor& p, std::vector<at::Tensor>& out) const override {
    if (const auto* s = state(p)) out.push_back(s->momentum_buffer());
  }

  bool has_moment(const at::Tensor& p) const override {
    return config_.momentum != 0 && state(p) != nullptr;
  }

  // momentum x m + (g + weight_decay x p)
  at::Tensor next_moment(const at::Tensor& p, const at::Tensor& g) const override {
    const at::Tensor d = config_.weight_decay != 0 ? g + config_.weight_decay * p : g;
    return (state(p)->momentum_buffer() * config_.momentum + d).reshape({-1});
  }

  void step_with_moment(const at::Tensor& p, const at::Tensor& m, double lr) override {
    auto* s = state(p);
    s->momentum_buffer().copy_(m);
    p.add_(s->momentum_buffer(), -lr);
  }

 private:
  torch::optim::SGDParamState* state(const at::Tensor& p) const {
    return dynamic_cast<torch::optim::SGDParamState*>(param_state(opt_, p));
  }

  config::OptimConfig config_;
  mutable torch::optim::SGD opt_;
};

}  // namespace

OptimizerEntry sgd_optimizer() {
  return {"sgd",
          [](const config::OptimConfig& c, const std::vector<at::Tensor>& params,
             const std::vector<models::ParamRole>& /*roles*/) {
            return std::unique_ptr<OptimizerImpl>(std::make_unique<Sgd>(c, params));
          },
          [](const config::OptimConfig& c) {
            return c.momentum != 0 ? OptimizerStepCost{5, 4} : OptimizerStepCost{3, 2};
          },
          [](const config::OptimConfig& c) {
            return c.momentum == 0 ? std::string("optim.name = sgd with optim.momentum = 0")
                                   : std::string();
          }};
}

}  // namespace slowpipe::sim
