// The Stiefel step of the kStiefel parameters (sim/internal/stiefel.h,
// docs/optimizers.md "The Stiefel step"): tangent projection, momentum kept
// tangent, and the retraction by the polar factor, computed by a Newton-Schulz
// iteration in double (no LAPACK); its state in the resume archive.
#include "sim/internal/stiefel.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "common/errors.h"

namespace slowpipe::sim {

namespace {

constexpr double kAssumedIterations = 4;  // Newton-Schulz iterations in the cost estimate

// (a + a^T) / 2 of a square a
at::Tensor sym(const at::Tensor& a) {
  return (a + a.t()) * 0.5;
}

at::Tensor double_scalar(double x) {
  return torch::tensor(x, torch::kDouble);
}

std::string slot_key(size_t i) {
  return "stiefel/" + std::to_string(i) + "/";
}

}  // namespace

at::Tensor stiefel_tangent(const at::Tensor& u, const at::Tensor& a) {
  return a - u.mm(sym(u.t().mm(a)));  // [d, k] - [d, k][k, k]
}

at::Tensor polar_newton_schulz(const at::Tensor& x_in, int* iterations) {
  TORCH_CHECK(x_in.dim() == 2 && x_in.size(1) <= x_in.size(0),
              "polar_newton_schulz: expects [d, k] with k <= d");
  at::Tensor x = x_in.to(at::kDouble);                     // [d, k]
  const at::Tensor eye = at::eye(x.size(1), x.options());  // [k, k]
  at::Tensor gram = x.t().mm(x);                           // [k, k]
  // The largest row sum of |X^T X| bounds its largest eigenvalue, sigma_max^2.
  const double bound = gram.abs().sum(1).max().item<double>();
  if (bound > 1.0) {
    x = x / std::sqrt(bound);
    gram = gram / bound;
  }
  double residual = (gram - eye).norm().item<double>();
  int n = 0;
  while (n < kPolarMaxIterations && residual >= kPolarTolerance) {
    x = x * 1.5 - x.mm(gram) * 0.5;  // X (1.5 I - 0.5 X^T X), [d, k]
    gram = x.t().mm(x);
    ++n;
    const double next = (gram - eye).norm().item<double>();
    if (!(next < residual)) break;  // at double's floor (or not finite)
    residual = next;
  }
  if (iterations != nullptr) *iterations = n;
  return x;
}

StiefelStep::StiefelStep(const config::OptimConfig& c, std::vector<at::Tensor> params)
    : lr_scale_(c.stiefel_lr_scale),
      beta_(c.stiefel_momentum),
      msign_(c.stiefel_direction == "msign"),
      lr_(c.lr),
      params_(std::move(params)) {
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& p = params_[i];
    if (p.dim() != 2 || p.size(1) > p.size(0) || !p.is_floating_point()) {
      throw std::logic_error("a kStiefel parameter must be a floating [d, k] matrix with k <= d");
    }
    slots_.emplace_back();
    index_[p.unsafeGetTensorImpl()] = i;
  }
}

const StiefelStep::Slot& StiefelStep::slot(const at::Tensor& p) const {
  return slots_.at(index_.at(p.unsafeGetTensorImpl()));
}

void StiefelStep::update(const at::Tensor& p, Slot& s, const at::Tensor& u, const at::Tensor& m) {
  s.step += 1;
  if (!s.momentum.defined()) s.momentum = at::empty_like(p, at::MemoryFormat::Contiguous);
  s.momentum.copy_(m);
  at::Tensor direction = m;  // [d, k]
  if (msign_) {
    const double norm = m.norm().item<double>();
    if (norm == 0) return;  // no direction: U stays
    direction = stiefel_tangent(u, polar_newton_schulz(m / norm));
  }
  p.copy_(polar_newton_schulz(u - direction * (lr_ * lr_scale_)));
}

void StiefelStep::step() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& p = params_[i];
    if (!p.grad().defined()) continue;
    Slot& s = slots_[i];
    const at::Tensor u = p.to(at::kDouble);                              // [d, k]
    const at::Tensor xi = stiefel_tangent(u, p.grad().to(at::kDouble));  // [d, k]
    const at::Tensor m = s.momentum.defined() ? s.momentum.to(at::kDouble) * beta_ + xi : xi;
    update(p, s, u, stiefel_tangent(u, m));
  }
}

void StiefelStep::append_state(const at::Tensor& p, std::vector<at::Tensor>& out) const {
  const Slot& s = slot(p);
  if (s.step > 0) out.push_back(s.momentum);
}

bool StiefelStep::has_moment(const at::Tensor& p) const {
  return slot(p).step > 0;
}

at::Tensor StiefelStep::next_moment(const at::Tensor& p, const at::Tensor& grad) const {
  torch::NoGradGuard no_grad;
  const Slot& s = slot(p);
  const at::Tensor u = p.to(at::kDouble);
  const at::Tensor xi = stiefel_tangent(u, grad.to(at::kDouble));
  const at::Tensor m = s.momentum.defined() ? s.momentum.to(at::kDouble) * beta_ + xi : xi;
  return stiefel_tangent(u, m).to(p.dtype()).reshape({-1});
}

void StiefelStep::step_with_moment(const at::Tensor& p, const at::Tensor& moment) {
  torch::NoGradGuard no_grad;
  const at::Tensor u = p.to(at::kDouble);
  update(p, slots_.at(index_.at(p.unsafeGetTensorImpl())), u,
         stiefel_tangent(u, moment.to(at::kDouble).view(p.sizes())));
}

double StiefelStep::flops(const at::Tensor& p) {
  const double d = static_cast<double>(p.size(0)), k = static_cast<double>(p.size(1));
  return d * k * k * (8 + 2 + 4 * kAssumedIterations) + 12 * d * k;
}

double StiefelStep::memory_bytes(const at::Tensor& p) {
  const double dk = static_cast<double>(p.numel());
  const double products = 4 + 1 + 2 * kAssumedIterations;
  return dk * (5 * static_cast<double>(p.element_size()) + products * 2 * sizeof(double));
}

void StiefelStep::save(torch::serialize::OutputArchive& archive) const {
  archive.write("stiefel/lr", double_scalar(lr_), /*is_buffer=*/true);
  archive.write("stiefel/count", double_scalar(static_cast<double>(slots_.size())), true);
  for (size_t i = 0; i < slots_.size(); ++i) {
    archive.write(slot_key(i) + "step", torch::tensor(slots_[i].step, torch::kLong), true);
    if (slots_[i].step > 0) archive.write(slot_key(i) + "momentum", slots_[i].momentum, true);
  }
}

void StiefelStep::load(torch::serialize::InputArchive& archive) {
  at::Tensor lr, count;
  if (!archive.try_read("stiefel/count", count, true)) {
    throw DataError(
        "optimizer state does not match this run: it holds no Stiefel-step state "
        "(stiefel/...), and this stage has " +
        std::to_string(slots_.size()) +
        " parameter(s) of role kStiefel (written by a run without them?)");
  }
  std::vector<Slot> loaded(slots_.size());
  try {
    TORCH_CHECK(count.item<double>() == static_cast<double>(slots_.size()),
                "the archive holds the Stiefel state of another number of parameters");
    archive.read("stiefel/lr", lr, true);
    for (size_t i = 0; i < loaded.size(); ++i) {
      at::Tensor step, m;
      archive.read(slot_key(i) + "step", step, true);
      loaded[i].step = step.item<int64_t>();
      if (loaded[i].step == 0) continue;
      archive.read(slot_key(i) + "momentum", m, true);
      TORCH_CHECK(m.sizes() == params_[i].sizes(), "a Stiefel momentum of another shape");
      loaded[i].momentum = m.to(params_[i].options()).clone();
    }
  } catch (const c10::Error& e) {
    throw DataError(std::string("optimizer state does not match this run: ") +
                    e.what_without_backtrace());
  }
  slots_ = std::move(loaded);
  lr_ = lr.item<double>();
}

void StiefelStep::refuse_state(torch::serialize::InputArchive& archive) {
  at::Tensor count;
  if (archive.try_read("stiefel/count", count, true)) {
    throw DataError(
        "optimizer state does not match this run: it holds the Stiefel-step state "
        "of parameter(s) of role kStiefel, and this stage has none");
  }
}

}  // namespace slowpipe::sim
