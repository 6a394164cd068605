// Up-front validation of a training run (see preflight.h): the device and the
// model here, everything else in config/preflight.cpp.
#include "sim/internal/preflight.h"

#include <c10/core/Device.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>

#include <string>

#include "common/errors.h"
#include "config/preflight.h"
#include "models/model_limits.h"

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

}  // namespace

void preflight(const TrainConfig& c, bool resuming) {
  check_layout(c, resuming);
  check_device(c.run.device);
  check_outputs_and_network(c, resuming);
  models::MemoryBudget budget;
  budget.batch_samples = c.pipeline.batch_size / c.pipeline.replicas;
  budget.replicas = c.pipeline.replicas;
  models::validate_model_config(c.model, budget);
}

}  // namespace slowpipe::sim
