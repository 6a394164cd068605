// train(): the run loop. Builds data and engine, steps the optimizer, replays
// every step's trace on the simulated network, evaluates, and logs to HDF5.
#include "sim/trainer.h"

#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <sstream>

#include "common/errors.h"
#include "common/units.h"
#include "common/version.h"
#include "models/checkpoint.h"
#include "models/data_registry.h"
#include "models/registry.h"
#include "models/sampler.h"
#include "netmodel/chrome_trace.h"
#include "netmodel/replay.h"
#include "sim/engine.h"
#include "sim/progress.h"
#include "sim/runlog.h"

namespace slowpipe::sim {
namespace {

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_signal(int) {
  g_stop = 1;
}

// Restores the previous SIGINT/SIGTERM handlers when the run ends.
class SignalScope {
 public:
  SignalScope() {
    g_stop = 0;
    prev_int_ = std::signal(SIGINT, on_signal);
    prev_term_ = std::signal(SIGTERM, on_signal);
  }
  ~SignalScope() {
    std::signal(SIGINT, prev_int_);
    std::signal(SIGTERM, prev_term_);
  }

 private:
  void (*prev_int_)(int);
  void (*prev_term_)(int);
};

std::string iso_utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

struct EvalRow {
  double loss = 0, metric = 0;  // metric: accuracy or bits/byte
  double loss_c = 0, metric_c = 0;
};

EvalRow evaluate(PipelineEngine& engine, const models::Dataset& data, const EvalConfig& cfg,
                 int batch_size) {
  const int64_t n = data.size(models::Split::kValidation);
  const int64_t limit = cfg.batches > 0 ? std::min<int64_t>(n, cfg.batches * batch_size) : n;
  const bool lm = engine.task() == models::Task::kLanguageModel;
  EvalRow row;
  for (int pass = 0; pass < (cfg.compressed ? 2 : 1); ++pass) {
    EvalResult total;
    for (int64_t i = 0; i < limit; i += batch_size) {
      std::vector<int64_t> idx;
      for (int64_t j = i; j < std::min(limit, i + batch_size); ++j) idx.push_back(j);
      const EvalResult r =
          engine.evaluate(data.get(models::Split::kValidation, idx), /*compressed=*/pass == 1);
      total.loss_sum += r.loss_sum;
      total.correct += r.correct;
      total.items += r.items;
    }
    const double loss = total.items > 0 ? total.loss_sum / total.items : NAN;
    const double metric =
        lm ? loss / std::log(2.0)
           : static_cast<double>(total.correct) / std::max<int64_t>(1, total.items);
    (pass == 0 ? row.loss : row.loss_c) = loss;
    (pass == 0 ? row.metric : row.metric_c) = metric;
  }
  if (!cfg.compressed) {
    row.loss_c = NAN;
    row.metric_c = NAN;
  }
  return row;
}

}  // namespace

TrainSummary train(const TrainConfig& cfg,
                   const std::vector<std::pair<std::string, std::string>>& resolved) {
  const auto wall_start = std::chrono::steady_clock::now();
  at::set_num_threads(cfg.run.threads);
  validate(cfg.pipeline);

  auto data = models::make_dataset(cfg.data, cfg.model.seq_len);
  const int64_t train_n = data->size(models::Split::kTrain);
  if (train_n < cfg.pipeline.batch_size) {
    throw UsageError(
        "the training split has " + std::to_string(train_n) +
        " samples, fewer than pipeline.batch_size = " + std::to_string(cfg.pipeline.batch_size));
  }
  models::EpochSampler sampler(train_n, cfg.pipeline.batch_size, cfg.run.seed, /*shuffle=*/true,
                               /*drop_last=*/true);
  const int64_t per_epoch = sampler.batches_per_epoch();
  const int64_t total_steps = cfg.run.steps > 0 ? cfg.run.steps : cfg.run.epochs * per_epoch;

  EngineSetup setup;
  setup.model = cfg.model;
  setup.data = data->info();
  setup.pipeline = cfg.pipeline;
  setup.optim = cfg.optim;
  setup.compress = cfg.compress;
  setup.seed = cfg.run.seed;
  setup.device = cfg.run.device;
  setup.train_samples = train_n;
  models::Batch probe;
  if (cfg.pipeline.balance == "time") {
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < cfg.pipeline.batch_size; ++i) idx.push_back(i);
    probe = data->get(models::Split::kTrain, idx);
    setup.probe = &probe;
  }
  PipelineEngine engine(setup);
  if (!cfg.model.init_from.empty()) {
    for (int r = 0; r < engine.replicas(); ++r)
      models::load_checkpoint(engine.model(r), cfg.model.init_from);
  }
  netmodel::Simulator network(cfg.net);

  RunLog log(cfg.run.out, cfg.run.overwrite, cfg.run.flush_every);
  for (const auto& [k, v] : resolved) log.set_attribute("config." + k, v);
  log.set_attribute("slowpipe.version", kVersion);
  log.set_attribute("slowpipe.git_commit", kGitCommit);
  log.set_attribute("torch.version", TORCH_VERSION);
  log.set_attribute("host", host_name());
  log.set_attribute("start_time", iso_utc_now());
  log.set_attribute("seed", std::to_string(cfg.run.seed));
  log.set_attribute("status", "running");
  std::vector<std::string> cut_text;
  for (size_t c : engine.cuts()) cut_text.push_back(std::to_string(c));
  log.set_attribute("pipeline.resolved_cuts", join(cut_text, ","));
  log.set_attribute("compress.fw_specs", join(engine.fw_specs(), ","));
  log.set_attribute("compress.bw_specs", join(engine.bw_specs(), ","));
  log.set_attribute("data.train_samples", static_cast<double>(train_n));
  log.set_attribute("data.validation_samples",
                    static_cast<double>(data->size(models::Split::kValidation)));
  log.set_attribute("model.parameters", static_cast<double>(engine.model().parameter_count(
                                            0, engine.model().blocks.size())));

  const int S = engine.stages();
  std::vector<ColumnInfo> train_cols = {
      {"step", "1", "optimizer step (1-based)"},
      {"epoch", "1", "epoch the step's batch came from (0-based)"},
      {"loss", "1", "mean training loss of the batch (nats per item)"},
      {"lr", "1", "learning rate used by the step"},
      {"grad_norm", "1", "global gradient norm before clipping"},
      {"samples", "1", "samples seen so far"},
      {"step_time_s", "s", "measured wall time of the step on this machine"},
      {"wall_time_s", "s", "measured wall time since the run started"},
      {"compute_s", "s", "measured compute (forward, backward, optimizer) of the step"},
      {"sim_step_time_s", "s", "simulated time of the step on the configured network"},
      {"sim_time_s", "s", "cumulative simulated time"},
      {"channel_state_bytes", "bytes", "feedback state held by all channels (EF, AQ-SGD buffers)"},
  };
  for (int b = 0; b + 1 < S; ++b) {
    const std::string f = "fw" + std::to_string(b), g = "bw" + std::to_string(b);
    train_cols.push_back(
        {f + "_bytes", "bytes", "bytes sent forward across boundary " + std::to_string(b)});
    train_cols.push_back({f + "_rel_error", "1", "mean ||x - x_hat|| / ||x|| of activations"});
    train_cols.push_back({f + "_delta_norm", "1", "AQ-SGD: mean norm of the compressed delta"});
    train_cols.push_back(
        {g + "_bytes", "bytes", "bytes sent backward across boundary " + std::to_string(b)});
    train_cols.push_back(
        {g + "_rel_error", "1", "mean ||g - g_hat|| / ||g|| of activation-gradients"});
  }
  if (engine.replicas() > 1) {
    for (int s = 0; s < S; ++s) {
      train_cols.push_back({"grad" + std::to_string(s) + "_bytes", "bytes",
                            "gradient bytes sent by all replicas for stage " + std::to_string(s)});
      train_cols.push_back({"grad" + std::to_string(s) + "_rel_error", "1",
                            "mean relative error of stage gradients"});
    }
  }
  log.declare("train", train_cols);
  const bool lm = engine.task() == models::Task::kLanguageModel;
  const std::string metric = lm ? "bits_per_byte" : "accuracy";
  log.declare("eval", {{"step", "1", "optimizer steps done"},
                       {"epoch", "1", "epoch"},
                       {"sim_time_s", "s", "cumulative simulated time"},
                       {"loss", "1", "validation loss without compression"},
                       {metric, lm ? "bits/byte" : "1", "validation metric without compression"},
                       {"loss_compressed", "1", "validation loss with the forward codecs active"},
                       {metric + "_compressed", lm ? "bits/byte" : "1",
                        "validation metric with the forward codecs active"}});
  if (lm) {
    log.declare("eval", {{"perplexity", "1", "exp(loss) without compression"},
                         {"perplexity_compressed", "1", "exp(loss_compressed)"}});
  }
  if (lm) {
    log.declare("eval", {{"perplexity", "1", "exp(loss) without compression"},
                         {"perplexity_compressed", "1", "exp(loss_compressed)"}});
  }

  SignalScope signals;
  Progress progress(cfg.run.progress, total_steps);
  const std::string channels =
      S > 1 ? ", fw " + join(engine.fw_specs(), ",") + ", bw " + join(engine.bw_specs(), ",")
            : ", no boundaries";
  progress.message("slowpipe train: " + std::to_string(total_steps) + " steps, " +
                   std::to_string(S) + " stage(s) (block cuts " + join(cut_text, ",") + "), " +
                   std::to_string(engine.replicas()) + " replica(s)" + channels + ", network " +
                   netmodel::describe(cfg.net) + " -> " + cfg.run.out);

  TrainSummary summary;
  summary.out = cfg.run.out;
  double sim_time_s = 0;
  int epoch = -1;
  int64_t samples = 0;
  const auto log_eval = [&](int64_t step) {
    const EvalRow e = evaluate(engine, *data, cfg.eval, cfg.pipeline.batch_size);
    std::map<std::string, double> row = {{"step", double(step)},
                                         {"epoch", double(std::max(epoch, 0))},
                                         {"sim_time_s", sim_time_s},
                                         {"loss", e.loss},
                                         {metric, e.metric},
                                         {"loss_compressed", e.loss_c},
                                         {metric + "_compressed", e.metric_c}};
    if (lm) {
      row["perplexity"] = std::exp(e.loss);
      row["perplexity_compressed"] = std::exp(e.loss_c);
    }
    log.append("eval", row);
    summary.final_eval_loss = e.loss;
    char buf[200];
    std::snprintf(buf, sizeof buf, "eval @ step %lld: loss %.4f  %s %.4f  (compressed: %.4f, %.4f)",
                  static_cast<long long>(step), e.loss, metric.c_str(), e.metric, e.loss_c,
                  e.metric_c);
    progress.message(buf);
  };

  if (cfg.run.warmup_passes > 0) {
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < cfg.pipeline.batch_size; ++i) idx.push_back(i);
    engine.warm_up(data->get(models::Split::kTrain, idx), cfg.run.warmup_passes);
  }
  for (int64_t step = 0; step < total_steps && !g_stop; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    const models::SampledBatch sampled = sampler.next();
    if (sampled.epoch != epoch) {
      epoch = static_cast<int>(sampled.epoch);
      engine.set_epoch(epoch);
    }
    const models::Batch batch = data->get(models::Split::kTrain, sampled.indices);
    const StepResult r = engine.train_step(batch, step, total_steps);
    if (!std::isfinite(r.loss)) {
      progress.message("warning: non-finite loss at step " + std::to_string(step + 1));
    }
    const netmodel::Timeline timeline = network.replay(r.trace);
    sim_time_s += timeline.step_s;
    samples += r.samples;
    const double step_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    std::map<std::string, double> row = {
        {"step", double(step + 1)}, {"epoch", double(epoch)},
        {"loss", r.loss},           {"lr", r.lr},
        {"grad_norm", r.grad_norm}, {"samples", double(samples)},
        {"step_time_s", step_s},    {"wall_time_s", wall_s},
        {"compute_s", r.compute_s}, {"sim_step_time_s", timeline.step_s},
        {"sim_time_s", sim_time_s}, {"channel_state_bytes", double(engine.channel_state_bytes())}};
    for (int b = 0; b + 1 < S; ++b) {
      const std::string f = "fw" + std::to_string(b), g = "bw" + std::to_string(b);
      row[f + "_bytes"] = double(r.fw[b].bytes);
      row[f + "_rel_error"] = r.fw[b].rel_error;
      row[f + "_delta_norm"] = r.fw[b].delta_norm;
      row[g + "_bytes"] = double(r.bw[b].bytes);
      row[g + "_rel_error"] = r.bw[b].rel_error;
    }
    for (size_t s = 0; s < r.grad.size(); ++s) {
      row["grad" + std::to_string(s) + "_bytes"] = double(r.grad[s].bytes);
      row["grad" + std::to_string(s) + "_rel_error"] = r.grad[s].rel_error;
    }
    log.append("train", row);
    if (cfg.run.trace_every > 0 && (step + 1) % cfg.run.trace_every == 0) {
      std::ostringstream os;
      netmodel::write_chrome_trace(timeline, os);
      log.put_text("trace_step_" + std::to_string(step + 1), os.str());
    }
    summary.steps = step + 1;
    summary.final_loss = r.loss;
    progress.update(step + 1, epoch, r.loss, "sim " + format_duration(sim_time_s));
    if (cfg.eval.every > 0 && (step + 1) % cfg.eval.every == 0 && step + 1 < total_steps) {
      log_eval(step + 1);
    }
  }
  progress.finish();
  summary.interrupted = g_stop != 0;
  if (summary.steps > 0) log_eval(summary.steps);
  if (!cfg.run.save.empty()) {
    models::save_checkpoint(engine.model(), cfg.run.save);
    progress.message("checkpoint written to " + cfg.run.save);
  }
  summary.sim_time_s = sim_time_s;
  summary.wall_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  log.set_attribute("status", summary.interrupted ? "interrupted" : "complete");
  log.set_attribute("steps_done", static_cast<double>(summary.steps));
  log.set_attribute("wall_time_s", summary.wall_time_s);
  log.set_attribute("sim_time_s", summary.sim_time_s);
  log.flush();
  return summary;
}

}  // namespace slowpipe::sim
