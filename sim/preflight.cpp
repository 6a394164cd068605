// The preflight's two checks that need libtorch or the models (see
// internal/preflight.h); the preflight itself, every other check and their
// order are config/preflight.cpp.
#include "sim/internal/preflight.h"

#include <c10/core/Device.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>

#include <string>

#include "common/errors.h"
#include "models/torch/model_limits.h"

namespace slowpipe::sim {
namespace {

void check_device(const std::string& device) {
  try {
    const c10::Device d(device);
    if (d.is_cuda() && !torch::cuda::is_available()) {
      throw UsageError("run.device = " + device +
                       ": this libtorch build has no CUDA device available (use cpu)");
    }
    if (d.is_cuda() && d.has_index() &&
        d.index() >= static_cast<int>(torch::cuda::device_count())) {
      throw UsageError("run.device = " + device + ": there are only " +
                       std::to_string(torch::cuda::device_count()) + " CUDA devices");
    }
  } catch (const c10::Error&) {
    throw UsageError("bad value for 'run.device': '" + device + "' (expected cpu, cuda or cuda:N)");
  }
}

void check_model(const config::TrainConfig& c) {
  models::MemoryBudget budget;
  budget.batch_samples = c.pipeline.batch_size / c.pipeline.replicas;
  budget.replicas = c.pipeline.replicas;
  models::validate_model_config(c.model, budget);
}

}  // namespace

config::LibtorchChecks libtorch_checks() {
  return {&check_device, &check_model};
}

}  // namespace slowpipe::sim
