// The optimizers and learning-rate schedules by name, and the learning rate of
// a step: what `optim.name` and `optim.schedule` may be, known without
// libtorch, so that the option set (and the sweeps that check points against
// it) need none. The optimizers themselves, on tensors, are sim/optimizers/
// (sim/optimizer.h).
// Leaves out per-parameter-group rates and restarts.
#pragma once

#include <cstdint>
#include <string>

#include "common/registry.h"
#include "config/section_configs.h"

namespace slowpipe::config {

// The optimizers by name (optim.name; its choices are read from here), one
// entry per line of config/optimizer_list.h. Each one's implementation (the
// libtorch optimizer, the cost of a step, how its first moment is read and set
// for compress.grad_sync = momentum) is its file in sim/optimizers/; no other
// code names an optimizer.
struct OptimizerInfo {
  std::string name;
  std::string description;  // one line
};
const Registry<OptimizerInfo>& optimizer_registry();

// The learning-rate decays after warm-up by name (optim.schedule; its choices
// are read from here).
struct LrScheduleInfo {
  std::string name;
  std::string description;  // one line
  // The factor of optim.lr at decay progress p in [0, 1], ending at
  // c.min_lr_ratio.
  double (*factor)(double p, const OptimConfig& c) = nullptr;
};
const Registry<LrScheduleInfo>& lr_schedule_registry();

// Learning rate at optimizer step `step` (0-based) of `total_steps`: linear
// warm-up over optim.warmup_steps, then optim.schedule's decay. UsageError
// for an unknown optim.schedule.
double learning_rate(const OptimConfig& c, int64_t step, int64_t total_steps);

}  // namespace slowpipe::config
