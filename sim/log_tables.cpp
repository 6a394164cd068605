// The train and eval table schemas (see log_tables.h).
#include "sim/internal/log_tables.h"

#include <algorithm>
#include <cmath>
#include <ctime>

namespace slowpipe::sim {
namespace {

using StepColumns = std::vector<Column<StepRecord>>;

// Per pipeline boundary b: what crossed it forward (fw<b>_*) and backward (bw<b>_*).
void add_boundary_columns(StepColumns& cols, int S) {
  using R = StepRecord;
  for (int b = 0; b + 1 < S; ++b) {
    const std::string f = "fw" + std::to_string(b), g = "bw" + std::to_string(b);
    const size_t i = static_cast<size_t>(b);
    cols.push_back(
        {{f + "_bytes", "bytes", "bytes sent forward across boundary " + std::to_string(b)},
         [i](const R& r) { return double(r.result->fw[i].bytes); }});
    cols.push_back({{f + "_rel_error", "1", "mean ||x - x_hat|| / ||x|| of activations"},
                    [i](const R& r) { return r.result->fw[i].rel_error; }});
    cols.push_back(
        {{f + "_delta_norm", "1", "AQ-SGD, EF21: mean norm of the compressed difference"},
         [i](const R& r) { return r.result->fw[i].delta_norm; }});
    cols.push_back(
        {{g + "_bytes", "bytes", "bytes sent backward across boundary " + std::to_string(b)},
         [i](const R& r) { return double(r.result->bw[i].bytes); }});
    cols.push_back({{g + "_rel_error", "1", "mean ||g - g_hat|| / ||g|| of activation-gradients"},
                    [i](const R& r) { return r.result->bw[i].rel_error; }});
  }
}

// Per stage s, with replicas: the gradient all-reduce (grad<s>_*).
void add_gradient_columns(StepColumns& cols, int S) {
  using R = StepRecord;
  for (int s = 0; s < S; ++s) {
    const size_t i = static_cast<size_t>(s);
    cols.push_back({{"grad" + std::to_string(s) + "_bytes", "bytes",
                     "gradient bytes sent by all replicas for stage " + std::to_string(s)},
                    [i](const R& r) { return double(r.result->grad[i].bytes); }});
    cols.push_back(
        {{"grad" + std::to_string(s) + "_rel_error", "1", "mean relative error of stage gradients"},
         [i](const R& r) { return r.result->grad[i].rel_error; }});
  }
}

// A distributed run's own measures: the step's wall time and the bytes
// handed to c10d.
void add_dist_columns(StepColumns& cols, int S, int D) {
  using R = StepRecord;
  cols.push_back({{"dist_step_time_s", "s",
                   "measured wall time of the distributed step: from rank 0's step command to "
                   "every rank's report (compare with sim_step_time_s)"},
                  [](const R& r) { return r.result->dist_step_s; }});
  for (int b = 0; b + 1 < S; ++b) {
    const size_t i = static_cast<size_t>(b);
    cols.push_back({{"fw" + std::to_string(b) + "_sent_bytes", "bytes",
                     "bytes handed to c10d forward across boundary " + std::to_string(b) +
                         " (codec bytes plus a 64-byte header per message)"},
                    [i](const R& r) { return double(r.result->fw_wire[i]); }});
    cols.push_back({{"bw" + std::to_string(b) + "_sent_bytes", "bytes",
                     "bytes handed to c10d backward across boundary " + std::to_string(b) +
                         " (codec bytes plus a 64-byte header per message)"},
                    [i](const R& r) { return double(r.result->bw_wire[i]); }});
  }
  for (int s = 0; D > 1 && s < S; ++s) {
    const size_t i = static_cast<size_t>(s);
    cols.push_back({{"grad" + std::to_string(s) + "_sent_bytes", "bytes",
                     "gradient bytes handed to c10d by all replicas for stage " +
                         std::to_string(s) + " (all-reduce input, or codec message + size)"},
                    [i](const R& r) { return double(r.result->grad_wire[i]); }});
  }
}

}  // namespace

std::vector<Column<StepRecord>> train_columns(int S, int D, bool distributed) {
  using R = StepRecord;
  std::vector<Column<StepRecord>> cols = {
      {{"step", "1", "optimizer step (1-based)"}, [](const R& r) { return double(r.step); }},
      {{"epoch", "1", "epoch the step's batch came from (0-based)"},
       [](const R& r) { return double(r.epoch); }},
      {{"loss", "1", "mean training loss of the batch (nats per item)"},
       [](const R& r) { return r.result->loss; }},
      {{"lr", "1", "learning rate used by the step"}, [](const R& r) { return r.result->lr; }},
      {{"grad_norm", "1", "global gradient norm before clipping"},
       [](const R& r) { return r.result->grad_norm; }},
      {{"samples", "1", "samples seen so far"}, [](const R& r) { return double(r.samples); }},
      {{"step_time_s", "s", "measured wall time of the step on this machine"},
       [](const R& r) { return r.step_s; }},
      {{"wall_time_s", "s", "measured wall time since the run started"},
       [](const R& r) { return r.wall_s; }},
      {{"compute_s", "s", "measured compute (forward, backward, optimizer) of the step"},
       [](const R& r) { return r.result->compute_s; }},
      {{"sim_step_time_s", "s", "simulated time of the step on the configured network"},
       [](const R& r) { return r.sim_step_s; }},
      {{"sim_time_s", "s", "cumulative simulated time"}, [](const R& r) { return r.sim_time_s; }},
      {{"channel_state_bytes", "bytes", "feedback state held by all channels (EF, AQ-SGD buffers)"},
       [](const R& r) { return double(r.channel_state_bytes); }},
  };
  add_boundary_columns(cols, S);
  if (D > 1) add_gradient_columns(cols, S);
  if (distributed) add_dist_columns(cols, S, D);
  return cols;
}

namespace {
// What the *_compressed eval columns measure (docs/hdf5-schema.md).
const std::string kCompressedEval =
    "every forward channel's inner codec applied directly to the activation (ef: no residual, "
    "ef21: no g, aq: to a, not a - m(xi); also during warm-up); no channel state used or changed";
}  // namespace

std::vector<Column<EvalRecord>> eval_columns(bool lm) {
  using R = EvalRecord;
  const std::string metric = lm ? "bits_per_byte" : "accuracy";
  const std::string unit = lm ? "bits/byte" : "1";
  std::vector<Column<EvalRecord>> cols = {
      {{"step", "1", "optimizer steps done (0: before training, eval.at_start)"},
       [](const R& r) { return double(r.step); }},
      {{"epoch", "1", "epoch"}, [](const R& r) { return double(r.epoch); }},
      {{"sim_time_s", "s", "cumulative simulated time"}, [](const R& r) { return r.sim_time_s; }},
      {{"loss", "1", "validation loss without compression"}, [](const R& r) { return r.loss; }},
      {{metric, unit, "validation metric without compression"},
       [](const R& r) { return r.metric; }},
      {{"loss_compressed", "1", "validation loss with " + kCompressedEval},
       [](const R& r) { return r.loss_c; }},
      {{metric + "_compressed", unit, "validation metric with " + kCompressedEval},
       [](const R& r) { return r.metric_c; }},
  };
  if (lm) {
    cols.push_back({{"perplexity", "1", "exp(loss) without compression"},
                    [](const R& r) { return std::exp(r.loss); }});
    cols.push_back({{"perplexity_compressed", "1", "exp(loss_compressed), " + kCompressedEval},
                    [](const R& r) { return std::exp(r.loss_c); }});
  }
  return cols;
}

void Heartbeat::beat(RunLog& log, bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (!force && written_ && std::chrono::duration<double>(now - last_).count() < kHeartbeatEvery_s)
    return;
  const std::time_t t = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  log.set_attribute("heartbeat", buf);
  log.flush();
  last_ = now;
  written_ = true;
}

std::string error_attribute(std::string text) {
  constexpr size_t kMaxErrorBytes = 16000;
  text.erase(std::remove(text.begin(), text.end(), '\0'), text.end());
  if (text.size() > kMaxErrorBytes) text = text.substr(0, kMaxErrorBytes) + " ... (cut)";
  return text;
}

}  // namespace slowpipe::sim
