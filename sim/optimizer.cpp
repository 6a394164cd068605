// StageOptimizer, learning-rate schedule and global-norm clipping.
#include "sim/optimizer.h"

#include <torch/torch.h>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/errors.h"

namespace slowpipe::sim {

double clip_global_norm(const std::vector<at::Tensor>& params, double max_norm) {
  std::vector<at::Tensor> norms;
  for (const auto& p : params) {
    if (p.grad().defined()) norms.push_back(p.grad().norm(2));
  }
  if (norms.empty()) return 0.0;
  const double total = torch::stack(norms).norm(2).item<double>();
  if (max_norm > 0 && total > max_norm) {
    const double coef = max_norm / (total + 1e-6);
    for (const auto& p : params) {
      if (p.grad().defined()) p.grad().mul_(coef);
    }
  }
  return total;
}

StageOptimizer::StageOptimizer(const config::OptimConfig& c, std::vector<at::Tensor> params)
    : params_(std::move(params)),
      config_(c),
      kind_(config::optimizer_registry().at("optim.name", c.name).kind) {
  const bool adamw = kind_ == config::OptimizerKind::kAdamW;
  tensors_per_element_ = adamw ? 7 : c.momentum != 0 ? 5 : 3;
  flops_per_element_ = adamw ? 10 : c.momentum != 0 ? 4 : 2;
  if (!adamw) {
    opt_ = std::make_unique<torch::optim::SGD>(
        params_, torch::optim::SGDOptions(c.lr).momentum(c.momentum).weight_decay(c.weight_decay));
  } else {
    opt_ = std::make_unique<torch::optim::AdamW>(
        params_,
        torch::optim::AdamWOptions(c.lr).betas({c.beta1, c.beta2}).weight_decay(c.weight_decay));
  }
}

StageOptimizer::~StageOptimizer() = default;
StageOptimizer::StageOptimizer(StageOptimizer&&) noexcept = default;
StageOptimizer& StageOptimizer::operator=(StageOptimizer&&) noexcept = default;

void StageOptimizer::set_lr(double lr) {
  for (auto& group : opt_->param_groups()) group.options().set_lr(lr);
}

void StageOptimizer::step() {
  opt_->step();
}

double StageOptimizer::flops_per_step() const {
  double n = 0;
  for (const auto& p : params_) n += static_cast<double>(p.numel());
  return flops_per_element_ * n;
}

double StageOptimizer::memory_bytes_per_step() const {
  double bytes = 0;
  for (const auto& p : params_) bytes += static_cast<double>(p.numel() * p.element_size());
  return tensors_per_element_ * bytes;
}

void StageOptimizer::zero_grad() {
  for (auto& p : params_) {
    if (p.grad().defined()) p.grad().zero_();
  }
}

namespace {

// The key of a parameter in torch::optim's state map: the printed address of its
// TensorImpl in libtorch 1.x (a string), the address itself in 2.x (void*).
template <class Map>
typename Map::key_type state_key(const Map&, const at::Tensor& p) {
  if constexpr (std::is_same_v<typename Map::key_type, std::string>) {
    std::ostringstream key;
    key << p.unsafeGetTensorImpl();
    return key.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

}  // namespace

std::vector<at::Tensor> StageOptimizer::state_tensors() const {
  std::vector<at::Tensor> out;
  const auto& state = opt_->state();
  for (const auto& p : params_) {
    auto it = state.find(state_key(state, p));
    if (it == state.end()) continue;
    if (auto* s = dynamic_cast<torch::optim::SGDParamState*>(it->second.get())) {
      out.push_back(s->momentum_buffer());
    } else if (auto* a = dynamic_cast<torch::optim::AdamWParamState*>(it->second.get())) {
      out.push_back(a->exp_avg());
      out.push_back(a->exp_avg_sq());
    }
  }
  return out;
}

namespace {

template <class State>
State* state_of(torch::optim::Optimizer& opt, const at::Tensor& p) {
  auto& state = opt.state();
  auto it = state.find(state_key(state, p));
  return it == state.end() ? nullptr : dynamic_cast<State*>(it->second.get());
}

}  // namespace

bool StageOptimizer::has_moments() const {
  for (const auto& p : params_) {
    const bool sgd = kind_ == config::OptimizerKind::kSgd;
    if (sgd && config_.momentum == 0) return false;  // no momentum to exchange
    if (sgd ? !state_of<torch::optim::SGDParamState>(*opt_, p)
            : !state_of<torch::optim::AdamWParamState>(*opt_, p)) {
      return false;
    }
  }
  return true;
}

at::Tensor StageOptimizer::next_momentum() const {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> parts;
  parts.reserve(params_.size());
  for (const auto& p : params_) {
    const at::Tensor g = p.grad().defined() ? p.grad() : at::zeros_like(p);
    if (kind_ == config::OptimizerKind::kSgd) {
      const auto* s = state_of<torch::optim::SGDParamState>(*opt_, p);
      at::Tensor d = config_.weight_decay != 0 ? g + config_.weight_decay * p : g;
      parts.push_back((s->momentum_buffer() * config_.momentum + d).reshape({-1}));
    } else {
      const auto* a = state_of<torch::optim::AdamWParamState>(*opt_, p);
      parts.push_back((a->exp_avg() * config_.beta1 + g * (1.0 - config_.beta1)).reshape({-1}));
    }
  }
  return torch::cat(parts).to(at::kFloat).unsqueeze(0);
}

void StageOptimizer::step_with_momentum(const at::Tensor& mean) {
  torch::NoGradGuard no_grad;
  const at::Tensor flat = mean.reshape({-1});
  const double lr = opt_->param_groups().front().options().get_lr();
  int64_t offset = 0;
  for (auto& p : params_) {
    const int64_t n = p.numel();
    const at::Tensor m = flat.narrow(0, offset, n).view(p.sizes()).to(p.device(), p.dtype());
    offset += n;
    if (kind_ == config::OptimizerKind::kSgd) {
      auto* s = state_of<torch::optim::SGDParamState>(*opt_, p);
      s->momentum_buffer().copy_(m);
      p.add_(s->momentum_buffer(), -lr);
    } else {
      // AdamW as libtorch computes it, with the exchanged first moment and the
      // second moment frozen.
      auto* a = state_of<torch::optim::AdamWParamState>(*opt_, p);
      a->step(a->step() + 1);
      a->exp_avg().copy_(m);
      p.mul_(1.0 - lr * config_.weight_decay);
      const double bc1 = 1.0 - std::pow(config_.beta1, static_cast<double>(a->step()));
      const double bc2 = 1.0 - std::pow(config_.beta2, static_cast<double>(a->step()));
      const at::Tensor denom = (a->exp_avg_sq().sqrt() / std::sqrt(bc2)).add_(1e-8);
      p.addcdiv_(a->exp_avg(), denom, -lr / bc1);
    }
  }
  if (offset != flat.numel()) {
    throw std::logic_error("step_with_momentum: the momentum does not fit the parameters");
  }
}

void StageOptimizer::save(torch::serialize::OutputArchive& archive) const {
  opt_->save(archive);
}

void StageOptimizer::load(torch::serialize::InputArchive& archive) {
  try {
    opt_->load(archive);
  } catch (const c10::Error& e) {
    throw DataError(std::string("optimizer state does not match this run: ") +
                    e.what_without_backtrace());
  }
}

}  // namespace slowpipe::sim
