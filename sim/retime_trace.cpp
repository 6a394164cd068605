// The op trace of a logged run's step, rebuilt from its configuration by the
// pipeline engine, and the logged message bytes put into it
// (sim/internal/retime_trace.h, docs/retime.md).
#include "sim/internal/retime_trace.h"

#include <cmath>
#include <map>
#include <memory>
#include <string>

#include "common/errors.h"
#include "models/torch/data_registry.h"
#include "models/torch/model_limits.h"
#include "sim/engine.h"

namespace slowpipe::sim {

netmodel::StepTrace step_trace_skeleton(const config::TrainConfig& cfg, int64_t* samples) {
  const std::unique_ptr<models::Dataset> data =
      models::make_dataset(cfg.data, cfg.model.seq_len, models::model_vocab(cfg.model));
  EngineSetup setup;
  setup.model = cfg.model;
  setup.model.init_from.clear();  // the parameters' values do not change the trace
  setup.data = data->info();
  setup.pipeline = cfg.pipeline;
  setup.optim = cfg.optim;
  setup.compress = cfg.compress;  // the caller's: `none` channels (no per-sample state)
  setup.seed = cfg.run.seed;
  setup.device = cfg.run.device;
  setup.dtype = cfg.run.dtype;
  setup.train_samples = data->size(models::Split::kTrain);
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < cfg.pipeline.batch_size; ++i) idx.push_back(i);
  if (static_cast<int64_t>(idx.size()) > setup.train_samples) {
    throw UsageError("the run's training split (" + std::to_string(setup.train_samples) +
                     " samples) is smaller than one batch of " +
                     std::to_string(cfg.pipeline.batch_size) + ": its step cannot be rebuilt");
  }
  const models::Batch batch = data->get(models::Split::kTrain, idx);
  PipelineEngine engine(setup);
  StepResult r = engine.train_step(batch, /*step=*/0, /*total_steps=*/1);
  if (samples != nullptr) *samples = r.samples;
  return std::move(r.trace);
}

namespace {

// The logged total of column `name` (NaN or out of range: absent).
double total_of(const std::vector<double>& totals, int index, const std::string& name,
                int64_t step) {
  const double v = index >= 0 && index < static_cast<int>(totals.size()) ? totals[index] : NAN;
  if (!std::isfinite(v) || v < 0) {
    throw DataError("step " + std::to_string(step) + ": column " + name +
                    " is missing or not a byte count, but the step sends messages there");
  }
  return v;
}

struct Slot {
  const std::vector<double>* totals = nullptr;
  int index = -1;
  std::string name;
};

Slot slot_of(const netmodel::TraceOp& op, const LoggedBytes& bytes) {
  switch (op.kind) {
    case netmodel::OpKind::kSendActivation:
      return {&bytes.fw, op.chunk, "fw" + std::to_string(op.chunk) + "_bytes"};
    case netmodel::OpKind::kSendGradient:  // crosses boundary chunk - 1
      return {&bytes.bw, op.chunk - 1, "bw" + std::to_string(op.chunk - 1) + "_bytes"};
    case netmodel::OpKind::kAllReduce:
      return {&bytes.grad, op.chunk, "grad" + std::to_string(op.chunk) + "_bytes"};
    default:
      return {};
  }
}

}  // namespace

void set_message_bytes(netmodel::StepTrace& trace, const LoggedBytes& bytes, int64_t step) {
  std::map<std::string, int64_t> count;
  for (const auto& op : trace.ops) {
    const Slot s = slot_of(op, bytes);
    if (s.totals != nullptr) ++count[s.name];
  }
  for (auto& op : trace.ops) {
    const Slot s = slot_of(op, bytes);
    if (s.totals == nullptr) continue;
    const double total = total_of(*s.totals, s.index, s.name, step);
    const int64_t n = count[s.name];
    const double each = total / static_cast<double>(n);
    if (each != std::floor(each) || total > 9007199254740992.0) {
      throw DataError("step " + std::to_string(step) + ": " + s.name + " = " +
                      std::to_string(static_cast<uint64_t>(total)) + " bytes do not split into " +
                      std::to_string(n) +
                      " equal messages: the log holds only their sum, not each message's size");
    }
    op.bytes = static_cast<uint64_t>(each);
  }
}

}  // namespace slowpipe::sim
