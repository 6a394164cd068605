// StageOptimizer over its optimizer's implementation (sim/optimizers/, one
// file each, listed in config/optimizer_list.h) and the Stiefel step of the
// kStiefel parameters (sim/internal/stiefel.h), the implementations by name,
// and global-norm clipping.
#include "sim/optimizer.h"

#include <torch/torch.h>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/errors.h"
#include "common/registry.h"
#include "sim/internal/optimizer_impl.h"
#include "sim/internal/stiefel.h"

namespace slowpipe::sim {

// Each optimizer's file defines its entry (config/optimizer_list.h).
#define SLOWPIPE_OPTIMIZER(name, description) OptimizerEntry name##_optimizer();
#include "config/optimizer_list.h"
#undef SLOWPIPE_OPTIMIZER

namespace {

const Registry<OptimizerEntry>& implementations() {
  static const Registry<OptimizerEntry> registry("optimizer", {
#define SLOWPIPE_OPTIMIZER(name, description) name##_optimizer(),
#include "config/optimizer_list.h"
#undef SLOWPIPE_OPTIMIZER
                                                              });
  return registry;
}

}  // namespace

const std::vector<OptimizerEntry>& optimizer_entries() {
  static const std::vector<OptimizerEntry> entries(implementations().begin(),
                                                   implementations().end());
  return entries;
}

const OptimizerEntry& find_optimizer(const std::string& name) {
  return implementations().at("optim.name", name);
}

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

StageOptimizer::StageOptimizer(const config::OptimConfig& c, std::vector<at::Tensor> params,
                               const std::vector<models::ParamRole>& roles)
    : params_(std::move(params)) {
  if (!roles.empty() && roles.size() != params_.size()) {
    throw std::logic_error("StageOptimizer: one role per parameter");
  }
  const OptimizerEntry& entry = find_optimizer(c.name);
  const OptimizerStepCost cost = entry.cost(c);
  tensors_per_element_ = cost.tensors_per_element;
  flops_per_element_ = cost.flops_per_element;
  // The kStiefel parameters go to the Stiefel step, the others (with their
  // roles, in order) to optim.name's implementation.
  std::vector<at::Tensor> others, stiefel;
  std::vector<models::ParamRole> other_roles;
  for (size_t i = 0; i < params_.size(); ++i) {
    const models::ParamRole role = roles.empty() ? models::ParamRole::kOther : roles[i];
    stiefel_.push_back(role == models::ParamRole::kStiefel);
    if (stiefel_.back()) {
      stiefel.push_back(params_[i]);
    } else {
      others.push_back(params_[i]);
      other_roles.push_back(role);
    }
  }
  impl_ = entry.make(c, others, other_roles);
  if (!stiefel.empty()) stiefel_step_ = std::make_unique<StiefelStep>(c, std::move(stiefel));
}

StageOptimizer::~StageOptimizer() = default;
StageOptimizer::StageOptimizer(StageOptimizer&&) noexcept = default;
StageOptimizer& StageOptimizer::operator=(StageOptimizer&&) noexcept = default;

void StageOptimizer::set_lr(double lr) {
  for (auto& group : impl_->torch_optimizer().param_groups()) group.options().set_lr(lr);
  if (stiefel_step_) stiefel_step_->set_lr(lr);
}

void StageOptimizer::step() {
  impl_->torch_optimizer().step();
  if (stiefel_step_) stiefel_step_->step();
}

double StageOptimizer::flops_per_step() const {
  double n = 0, stiefel = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (stiefel_[i]) {
      stiefel += StiefelStep::flops(params_[i]);
    } else {
      n += static_cast<double>(params_[i].numel());
    }
  }
  return flops_per_element_ * n + stiefel;
}

double StageOptimizer::memory_bytes_per_step() const {
  double bytes = 0, stiefel = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& p = params_[i];
    if (stiefel_[i]) {
      stiefel += StiefelStep::memory_bytes(p);
    } else {
      bytes += static_cast<double>(p.numel() * p.element_size());
    }
  }
  return tensors_per_element_ * bytes + stiefel;
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

torch::optim::OptimizerParamState* param_state(torch::optim::Optimizer& opt, const at::Tensor& p) {
  auto& state = opt.state();
  auto it = state.find(state_key(state, p));
  return it == state.end() ? nullptr : it->second.get();
}

std::vector<at::Tensor> StageOptimizer::state_tensors() const {
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (stiefel_[i]) {
      stiefel_step_->append_state(params_[i], out);
    } else {
      impl_->append_state(params_[i], out);
    }
  }
  return out;
}

bool StageOptimizer::has_moments() const {
  for (size_t i = 0; i < params_.size(); ++i) {
    const bool has =
        stiefel_[i] ? stiefel_step_->has_moment(params_[i]) : impl_->has_moment(params_[i]);
    if (!has) return false;
  }
  return true;
}

at::Tensor StageOptimizer::next_momentum() const {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> parts;
  parts.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& p = params_[i];
    const at::Tensor g = p.grad().defined() ? p.grad() : at::zeros_like(p);
    parts.push_back(stiefel_[i] ? stiefel_step_->next_moment(p, g) : impl_->next_moment(p, g));
  }
  return torch::cat(parts).to(at::kFloat).unsqueeze(0);
}

void StageOptimizer::step_with_momentum(const at::Tensor& mean) {
  torch::NoGradGuard no_grad;
  const at::Tensor flat = mean.reshape({-1});
  const double lr = impl_->torch_optimizer().param_groups().front().options().get_lr();
  int64_t offset = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& p = params_[i];
    const int64_t n = p.numel();
    const at::Tensor m = flat.narrow(0, offset, n).view(p.sizes()).to(p.device(), p.dtype());
    offset += n;
    if (stiefel_[i]) {
      stiefel_step_->step_with_moment(p, m);
    } else {
      impl_->step_with_moment(p, m, lr);
    }
  }
  if (offset != flat.numel()) {
    throw std::logic_error("step_with_momentum: the momentum does not fit the parameters");
  }
}

void StageOptimizer::save(torch::serialize::OutputArchive& archive) const {
  impl_->torch_optimizer().save(archive);
  if (stiefel_step_) stiefel_step_->save(archive);
}

void StageOptimizer::load(torch::serialize::InputArchive& archive) {
  try {
    impl_->torch_optimizer().load(archive);
  } catch (const c10::Error& e) {
    throw DataError(std::string("optimizer state does not match this run: ") +
                    e.what_without_backtrace());
  }
  if (stiefel_step_) {
    stiefel_step_->load(archive);
  } else {
    StiefelStep::refuse_state(archive);
  }
}

void require_momentum(const config::OptimConfig& c) {
  const std::string no_moment = find_optimizer(c.name).no_moment(c);
  if (!no_moment.empty())
    throw UsageError("compress.grad_sync = momentum exchanges the optimizer's momentum, but " +
                     no_moment + " has none");
}

}  // namespace slowpipe::sim
