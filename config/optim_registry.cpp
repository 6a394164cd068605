// The optimizer and learning-rate schedule registries, and learning_rate (see
// optim_registry.h).
#include "config/optim_registry.h"

#include <algorithm>
#include <cmath>

namespace slowpipe::config {

const Registry<OptimizerInfo>& optimizer_registry() {
  static const Registry<OptimizerInfo> registry("optimizer", {
#define SLOWPIPE_OPTIMIZER(name, description) {#name, description},
#include "config/optimizer_list.h"
#undef SLOWPIPE_OPTIMIZER
                                                             });
  return registry;
}

namespace {
double constant_factor(double /*p*/, const OptimConfig& /*c*/) {
  return 1.0;
}
double cosine_factor(double p, const OptimConfig& c) {
  const double lo = c.min_lr_ratio;
  return lo + (1.0 - lo) * 0.5 * (1.0 + std::cos(M_PI * p));
}
double linear_factor(double p, const OptimConfig& c) {
  return 1.0 - (1.0 - c.min_lr_ratio) * p;
}
// Protocol NanoGPT's train_gpt.py (set_hparams, docs/optimizers.md): 1 while
// p < 1 - f, then (1 - p) / f, here ending at min_lr_ratio instead of 0.
double stable_linear_factor(double p, const OptimConfig& c) {
  const double f = c.cooldown_fraction, lo = c.min_lr_ratio;
  if (p < 1.0 - f || f <= 0) return 1.0;
  return lo + (1.0 - lo) * (1.0 - p) / f;
}
}  // namespace

const Registry<LrScheduleInfo>& lr_schedule_registry() {
  static const Registry<LrScheduleInfo> registry(
      "learning-rate schedule",
      {
          {"constant", "optim.lr after warm-up", &constant_factor},
          {"cosine", "cosine decay from optim.lr to optim.min_lr_ratio x optim.lr", &cosine_factor},
          {"linear", "linear decay from optim.lr to optim.min_lr_ratio x optim.lr", &linear_factor},
          {"stable-linear",
           "optim.lr, then over the last optim.cooldown_fraction linear decay to "
           "optim.min_lr_ratio x optim.lr (Protocol NanoGPT's)",
           &stable_linear_factor},
      });
  return registry;
}

double learning_rate(const OptimConfig& c, int64_t step, int64_t total_steps) {
  const LrScheduleInfo& schedule = lr_schedule_registry().at("optim.schedule", c.schedule);
  if (c.warmup_steps > 0 && step < c.warmup_steps) {
    return c.lr * static_cast<double>(step + 1) / static_cast<double>(c.warmup_steps);
  }
  const int64_t decay_steps = std::max<int64_t>(1, total_steps - c.warmup_steps);
  const double p =
      std::min(1.0, static_cast<double>(step - c.warmup_steps) / static_cast<double>(decay_steps));
  return c.lr * schedule.factor(p, c);
}

}  // namespace slowpipe::config
