// train() in its phases: set-up (preflight, build_run: data, engine, network;
// open_log: new or resumed log, the checkpoint loaded once), the banner
// (announce), the step loop (run_steps over train_one_step, with log_eval and
// checkpoint), and the end of a run (finish_run: status, closing attributes).
// The log's schema, every column with its unit, description and fill, is one
// table per log table in log_tables.cpp; resume checkpoints live in resume_checkpoint.cpp.
#include "sim/trainer.h"

#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "common/errors.h"
#include "common/host_info.h"
#include "common/units.h"
#include "common/version.h"
#include "compressors/channels/factory.h"
#include "compressors/codecs/config.h"
#include "models/torch/checkpoint.h"
#include "models/torch/data_registry.h"
#include "models/torch/model_limits.h"
#include "models/torch/model_registry.h"
#include "netmodel/chrome_trace.h"
#include "netmodel/compute_model.h"
#include "netmodel/replay.h"
#include "runlog/runlog.h"
#include "sim/engine.h"
#include "sim/internal/evaluation.h"
#include "sim/internal/log_rebuild.h"
#include "sim/internal/log_tables.h"
#include "sim/internal/preflight.h"
#include "sim/internal/progress.h"
#include "sim/internal/resume_checkpoint.h"
#include "sim/internal/shard_sampler.h"
#include "sim/kernel_policy.h"

namespace slowpipe::sim {
namespace {

using Clock = std::chrono::steady_clock;

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

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void warn(const std::string& text) {
  std::cerr << "slowpipe train: warning: " << text << "\n";
}

// FNV-1a over the resolved keys that shape the computation: ties resume
// checkpoints to the configuration they were written for.
std::string fingerprint(const ResolvedConfig& resolved) {
  uint64_t h = 1469598103934665603ULL;
  for (const auto& [k, v] : resolved) {
    if (config::resume_key_may_differ(k)) continue;
    for (const char ch : k + "=" + v + "\n") {
      h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
    }
  }
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// "3.97x": what fp32 would send for `shape` over `bytes`.
std::string fp32_ratio_text(const compressors::Shape& shape, uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx",
                4.0 * static_cast<double>(compressors::shape_numel(shape)) /
                    std::max<double>(1.0, static_cast<double>(bytes)));
  return std::string(buf);
}

// "[4,64,128]"
std::string dims_text(const compressors::Shape& shape) {
  std::string t;
  for (int64_t d : shape) t += (t.empty() ? "" : ",") + std::to_string(d);
  return "[" + t + "]";
}

// The banner's channel lines: every channel's message size against fp32 after
// warm-up (exact wire_bytes), with the shapes of one micro-batch. Boundary
// shapes come from one forward of replica 0 in eval mode without gradients
// (no dropout draw: the run trains as it would without the banner).
std::vector<std::string> channel_lines(const config::TrainConfig& cfg, const StepEngine& engine,
                                       const models::Dataset& data) {
  namespace cx = compressors;
  std::vector<std::string> out;
  const auto& cuts = engine.cuts();
  const int S = engine.stages();
  if (S > 1) {
    const int64_t mb = std::max<int64_t>(
        1, cfg.pipeline.batch_size / (int64_t{cfg.pipeline.replicas} * cfg.pipeline.microbatches));
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < mb; ++i) idx.push_back(i);
    torch::NoGradGuard no_grad;
    const models::Model& model = engine.model();
    model.train(false);
    const at::Tensor inputs =
        data.get(models::Split::kTrain, idx).inputs.to(torch::Device(cfg.run.device));
    at::Tensor h = inputs;
    const auto fw = engine.fw_specs(), bw = engine.bw_specs();
    for (int s = 0; s + 1 < S; ++s) {
      for (size_t b = cuts[s]; b < cuts[s + 1]; ++b) h = model.blocks[b]->forward(h);
      // What crosses: the block output, or its reduction by the model's boundary map.
      const models::BoundaryMap* map = models::boundary_at(model, cuts[s + 1]);
      const at::Tensor sent = map ? map->reduce(h, inputs) : h;
      const cx::Shape shape(sent.sizes().begin(), sent.sizes().end());
      const uint64_t side = models::side_bytes(model, cuts[s + 1], inputs);
      const cx::ChannelSpec &fw_spec = cfg.compress.fw_for(s), &bw_spec = cfg.compress.bw_for(s);
      out.push_back("  boundary " + std::to_string(s) + " " + dims_text(shape) +
                    (side ? " + token ids " + std::to_string(side) + " B" : std::string()) +
                    ": fw " + fw[s] + " " + fp32_ratio_text(shape, cx::wire_bytes(fw_spec, shape)) +
                    ", bw " + bw[s] + " " +
                    fp32_ratio_text(shape, cx::wire_bytes(fw_spec, bw_spec, shape)));
    }
    model.train(true);
    const bool aq = cx::uses_aq(cfg.compress, S - 1);
    const int w = cfg.compress.warmup_epochs;
    const int aq_w = std::max(w, cfg.compress.aq_warmup_epochs);
    if (w > 0)
      out.push_back("  warm-up: every boundary channel sends fp32 in the first " +
                    std::to_string(w) + " epoch(s) (compress.warmup_epochs)");
    if (aq && aq_w > w)
      out.push_back("  warm-up: AQ-SGD channels send fp32 in the first " + std::to_string(aq_w) +
                    " epoch(s) (compress.aq_warmup_epochs)");
  }
  if (engine.replicas() > 1) {
    const cx::ChannelSpec& spec = cfg.compress.grad.resolved();
    std::string line = "  gradients " + spec.text() + ":";
    for (int s = 0; s < S; ++s) {
      const cx::Shape shape = {1, engine.model().parameter_count(cuts[s], cuts[s + 1])};
      line += std::string(s ? "," : "") + " stage " + std::to_string(s) + " " + dims_text(shape) +
              " " + fp32_ratio_text(shape, cx::wire_bytes(spec, shape));
    }
    out.push_back(line);
  }
  if (!out.empty()) out.insert(out.begin(), "channels against fp32 (per message, after warm-up):");
  return out;
}

// Root attributes of a new log: the resolved config and provenance.
void write_attributes(RunLog& log, const config::TrainConfig& cfg, const ResolvedConfig& resolved,
                      const StepEngine& engine, const models::Dataset& data) {
  for (const auto& [k, v] : resolved) log.set_attribute("config." + k, v);
  log.set_attribute("slowpipe.version", kVersion);
  log.set_attribute("slowpipe.git_commit", git_commit());
  log.set_attribute("slowpipe.git_dirty", git_dirty());
  log.set_attribute("slowpipe.build_type", kBuildType);
  log.set_attribute("slowpipe.compiler", kCompiler);
  log.set_attribute("host.cpu", cpu_model_name());
  log.set_attribute("compute.dtype", cfg.run.dtype);
  log.set_attribute("compute.dtype_note", describe_compute_dtype(cfg.run.dtype, cfg.run.device));
  for (const auto& [k, v] : kernel_provenance(cfg.run.kernels)) log.set_attribute(k, v);
  log.set_attribute("torch.version", TORCH_VERSION);
  log.set_attribute("host", host_name());
  log.set_attribute("start_time", iso_utc_now());
  log.set_attribute("seed", std::to_string(cfg.run.seed));
  std::vector<std::string> cut_text;
  for (size_t c : engine.cuts()) cut_text.push_back(std::to_string(c));
  log.set_attribute("pipeline.resolved_cuts", join(cut_text, ","));
  log.set_attribute("compress.fw_specs", join(engine.fw_specs(), ","));
  log.set_attribute("compress.bw_specs", join(engine.bw_specs(), ","));
  log.set_attribute("compress.grad_spec", cfg.compress.grad.resolved().text());
  log.set_attribute("data.train_samples", static_cast<double>(data.size(models::Split::kTrain)));
  log.set_attribute("data.validation_samples",
                    static_cast<double>(data.size(models::Split::kValidation)));
  if (cfg.dist.enabled()) {
    log.set_attribute("dist.world_size", std::to_string(cfg.dist.world_size));
    log.set_attribute("dist.rank_map", engine.rank_map());
    log.set_attribute("dist.backend", engine.dist_backend());
  }
  log.set_attribute("model.parameters", static_cast<double>(engine.model().parameter_count(
                                            0, engine.model().blocks.size())));
}

// Everything a run is made of, built before the first step.
struct Run {
  std::unique_ptr<models::Dataset> data;
  std::unique_ptr<ShardSampler> sampler;
  std::unique_ptr<StepEngine> engine;
  std::unique_ptr<netmodel::Simulator> network;
  std::unique_ptr<RunLog> log;
  std::vector<Column<StepRecord>> train_cols;
  std::vector<Column<EvalRecord>> eval_cols;
  int64_t total_steps = 0;
  TrainerCursor cursor;
  bool evaluates = true;              // false: the validation split is empty
  std::vector<std::string> warnings;  // said on stderr, kept in the log's `warnings`
};

// A warning: on stderr now, and in the run log's `warnings` attribute (one a line).
void add_warning(Run& run, const std::string& text) {
  warn(text);
  if (std::find(run.warnings.begin(), run.warnings.end(), text) == run.warnings.end())
    run.warnings.push_back(text);
}

void build_run(Run& run, const config::TrainConfig& cfg, const ResolvedConfig& resolved,
               const DistEngineFactory& distributed) {
  run.data = models::make_dataset(cfg.data, cfg.model.seq_len, models::model_vocab(cfg.model));
  const int64_t train_n = run.data->size(models::Split::kTrain);
  run.sampler = std::make_unique<ShardSampler>(train_n, cfg.pipeline.batch_size,
                                               cfg.pipeline.replicas, cfg.run.seed);
  const int64_t per_epoch = run.sampler->batches_per_epoch();
  run.total_steps = cfg.run.steps > 0 ? cfg.run.steps : cfg.run.epochs * per_epoch;

  EngineSetup setup;
  setup.model = cfg.model;
  setup.data = run.data->info();
  setup.pipeline = cfg.pipeline;
  setup.optim = cfg.optim;
  setup.compress = cfg.compress;
  setup.seed = cfg.run.seed;
  setup.device = cfg.run.device;
  setup.dtype = cfg.run.dtype;
  setup.train_samples = train_n;
  setup.shard_samples = cfg.pipeline.replicas > 1 ? run.sampler->shard_size() : 0;
  models::Batch probe;
  if (cfg.pipeline.balance == "time") {
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < cfg.pipeline.batch_size; ++i) idx.push_back(i);
    probe = run.data->get(models::Split::kTrain, idx);
    setup.probe = &probe;
  }
  if (cfg.dist.enabled()) {
    if (!distributed)
      throw UsageError("dist.world_size > 0, but this build has no distributed mode");
    run.engine = distributed(setup, cfg, resolved);
  } else {
    run.engine = std::make_unique<PipelineEngine>(setup);  // loads model.init_from (build_model)
  }
  run.network = std::make_unique<netmodel::Simulator>(config::timed_net(cfg));
  if (run.data->size(models::Split::kValidation) == 0) {
    run.evaluates = false;
    add_warning(run, std::string("the validation split is empty") +
                         (cfg.data.val_fraction == 0 ? " (data.val_fraction = 0)" : "") +
                         ": this run logs no evaluation (eval.* is ignored)");
  }
  const int S = run.engine->stages();
  run.train_cols = train_columns(S, run.engine->replicas(), cfg.dist.enabled());
  run.eval_cols = eval_columns(run.engine->task() == models::Task::kLanguageModel);
  if (cfg.run.warmup_passes > 0) {
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < cfg.pipeline.batch_size; ++i) idx.push_back(i);
    run.engine->warm_up(run.data->get(models::Split::kTrain, idx), cfg.run.warmup_passes);
  }
}

// Resuming: the log is written anew from what the old one holds up to the
// checkpoint (attributes, the kept rows, the blobs of those steps) and renamed
// over it. A kill in the middle of an HDF5 flush can leave the old file's
// metadata inconsistent beyond its flushed rows (readable, but not safely
// writable); the rebuilt file is whole.
void rebuild_log(Run& run, const config::TrainConfig& cfg, const ResolvedConfig& resolved) {
  const std::string& out = cfg.run.out;
  const auto old_attrs = read_attributes(out);
  const auto old = [&old_attrs](const std::string& k) {
    const auto it = old_attrs.find(k);
    return it == old_attrs.end() ? std::string() : it->second;
  };
  const std::map<std::string, int64_t> keep = {{"train", run.cursor.train_rows},
                                               {"eval", run.cursor.eval_rows}};
  const std::map<std::string, Table> tables = kept_tables(out, keep);
  const auto blobs = kept_blobs(out, run.cursor.steps_done);
  const std::string tmp = out + ".resume.tmp";
  {
    RunLog fresh(tmp, /*overwrite=*/true, cfg.run.flush_every);
    write_attributes(fresh, cfg, resolved, *run.engine, *run.data);
    if (!old("start_time").empty()) fresh.set_attribute("start_time", old("start_time"));
    const std::string prev = old("resumed_at_steps");
    fresh.set_attribute("resumed_at_steps",
                        (prev.empty() ? "" : prev + ",") + std::to_string(run.cursor.steps_done));
    fresh.set_attribute("status", "running");
    run.warnings = merged_warnings(old("warnings"), run.warnings);
    declare_table(fresh, "train", run.train_cols);
    declare_table(fresh, "eval", run.eval_cols);
    copy_kept(fresh, tables, keep, blobs);
    fresh.flush();
  }
  sync_file(tmp);
  std::error_code ec;
  std::filesystem::rename(tmp, out, ec);
  if (ec) throw UsageError("cannot replace " + out + " with its rebuilt log: " + ec.message());
  run.log = RunLog::reopen(out, keep, cfg.run.flush_every);
}

// Opens the run log: a new one, or the resumed one cut back to the checkpoint.
void open_log(Run& run, const config::TrainConfig& cfg, const ResolvedConfig& resolved, bool resume,
              const std::string& fp, TrainSummary& summary) {
  if (!resume) {
    remove_checkpoints(cfg.run.out);  // stale ones of a replaced run
    run.log = std::make_unique<RunLog>(cfg.run.out, /*overwrite=*/true, cfg.run.flush_every);
    write_attributes(*run.log, cfg, resolved, *run.engine, *run.data);
  } else {
    const auto counts = read_row_counts(cfg.run.out);
    const auto rows = [&counts](const char* t) {
      const auto it = counts.find(t);
      return it == counts.end() ? int64_t{0} : it->second;
    };
    const std::optional<TrainerCursor> c = load_resume_checkpoint(
        cfg.run.out, *run.engine, fp, LogRows{rows("train"), rows("eval")}, warn);
    if (c) {
      run.cursor = *c;
      run.network->restore(c->net);
      if (c->epoch >= 0) run.engine->set_epoch(c->epoch);
      if (c->steps_done > 0) {
        const int64_t per_epoch = run.sampler->batches_per_epoch();
        run.sampler->seek(c->steps_done / per_epoch, c->steps_done % per_epoch);
      }
      summary.resumed_from = c->steps_done;
    } else {
      summary.resumed_from = 0;  // killed before its first checkpoint: start over
      const std::string dir = checkpoint_dir(cfg.run.out);
      std::error_code ec;
      if (rows("train") > 0) {
        add_warning(run, "--resume " + cfg.run.out + ": " +
                             (std::filesystem::exists(dir, ec)
                                  ? dir + " holds no usable resume checkpoint"
                                  : "its checkpoint folder " + dir + " does not exist") +
                             "; the run starts over from step 0 and its " +
                             std::to_string(rows("train")) + " logged train row(s) are replaced");
      }
    }
    rebuild_log(run, cfg, resolved);
    run.log->set_attribute("error", "");
  }
  run.log->set_attribute("status", "running");
  if (!run.warnings.empty()) run.log->set_attribute("warnings", join(run.warnings, "\n"));
  declare_table(*run.log, "train", run.train_cols);
  declare_table(*run.log, "eval", run.eval_cols);
  run.log->flush();
}

// When the next resume checkpoint is due.
class CheckpointClock {
 public:
  explicit CheckpointClock(const config::RunConfig& cfg) : cfg_(cfg), last_(Clock::now()) {}
  bool due(int64_t steps_done) const {
    if (cfg_.checkpoint_every == config::RunConfig::kCheckpointOff) return false;
    if (cfg_.checkpoint_every > 0) return steps_done % cfg_.checkpoint_every == 0;
    // auto: the time since the last checkpoint is at least 50x what writing
    // one costs (<= 2% overhead), and at least 30 s.
    return seconds_since(last_) >= std::max(30.0, 50.0 * last_write_s_);
  }
  // Counts the auto interval from now.
  void start() { last_ = Clock::now(); }
  void written(double seconds) {
    last_write_s_ = seconds;
    total_s_ += seconds;
    ++count_;
    last_ = Clock::now();
  }
  double total_s() const { return total_s_; }
  int count() const { return count_; }

 private:
  const config::RunConfig& cfg_;
  Clock::time_point last_;
  double last_write_s_ = 0;
  double total_s_ = 0;
  int count_ = 0;
};

// The step loop's shared state: the run, its summary, the progress display and
// the checkpoint clock.
struct Session {
  Session(const config::TrainConfig& c, Run& r, TrainSummary& out, std::string config_fp,
          Clock::time_point started)
      : cfg(c),
        run(r),
        summary(out),
        fp(std::move(config_fp)),
        wall_start(started),
        wall_before(r.cursor.wall_time_s),
        progress(c.run.progress, r.total_steps),
        checkpoints(c.run) {}
  // Wall seconds of the whole run, earlier attempts included.
  double wall_now() const { return wall_before + seconds_since(wall_start); }

  const config::TrainConfig& cfg;
  Run& run;
  TrainSummary& summary;
  const std::string fp;
  const Clock::time_point wall_start;
  const double wall_before;  // of the attempts before a resume
  Progress progress;
  CheckpointClock checkpoints;
  Heartbeat heartbeat;  // the log's `heartbeat` attribute (log_tables.h)
};

// The banner: steps, stages, cuts, channels and network, then each channel's size.
void announce(Session& s, bool resume) {
  const StepEngine& engine = *s.run.engine;
  const int S = engine.stages();
  std::vector<std::string> cut_text;
  for (size_t c : engine.cuts()) cut_text.push_back(std::to_string(c));
  const std::string channels =
      S > 1 ? ", fw " + join(engine.fw_specs(), ",") + ", bw " + join(engine.bw_specs(), ",")
            : ", no boundaries";
  const config::PipelineConfig& p = s.cfg.pipeline;
  const std::string layout =
      std::to_string(p.stages) + " stage(s)" +
      (p.virtual_stages > 1 ? " x " + std::to_string(p.virtual_stages) +
                                  " virtual = " + std::to_string(S) + " chunks"
                            : "") +
      ", schedule " + p.schedule;
  s.progress.message(
      "slowpipe train: " + std::to_string(s.run.total_steps) + " steps, " + layout +
      " (block cuts " + join(cut_text, ",") + "), " + std::to_string(engine.replicas()) +
      " replica(s)" + channels + ", network " + netmodel::describe(s.cfg.net) +
      ", simulated device " + netmodel::compute_device_label(s.cfg.net.compute) +
      (s.cfg.run.dtype == "fp32" ? "" : ", computing in " + s.cfg.run.dtype) + " -> " +
      s.cfg.run.out +
      (!resume ? ""
       : s.run.cursor.steps_done == 0
           ? " (resumed: no resume checkpoint, started over from step 0)"
           : " (resumed after step " + std::to_string(s.run.cursor.steps_done) + ")"));
  for (const std::string& line : channel_lines(s.cfg, engine, *s.run.data))
    s.progress.message(line);
  if (s.cfg.run.dtype != "fp32")
    s.progress.message("run.dtype " + describe_compute_dtype(s.cfg.run.dtype, s.cfg.run.device));
}

// One eval row at `step`, and its line on the display.
void log_eval(Session& s, int64_t step) {
  if (!s.run.evaluates) return;
  TrainerCursor& cur = s.run.cursor;
  fault_point("eval");
  EvalRecord e = evaluate(*s.run.engine, *s.run.data, s.cfg.eval, s.cfg.pipeline.batch_size, step);
  e.step = step;
  e.epoch = std::max(cur.epoch, 0);
  e.sim_time_s = cur.sim_time_s;
  s.run.log->append("eval", make_row(s.run.eval_cols, e));
  ++cur.eval_rows;
  s.summary.final_eval_loss = e.loss;
  char buf[200];
  std::snprintf(buf, sizeof buf, "eval @ step %lld: loss %.4f  %s %.4f  (compressed: %.4f, %.4f)",
                static_cast<long long>(step), e.loss, s.run.eval_cols[4].info.name.c_str(),
                e.metric, e.loss_c, e.metric_c);
  s.progress.message(buf);
}

// A resume checkpoint of where the run is now.
void checkpoint(Session& s) {
  TrainerCursor& cur = s.run.cursor;
  s.run.log->flush();  // rows up to the checkpoint are on disk before it exists
  sync_file(s.cfg.run.out);
  cur.net = s.run.network->carry();
  cur.wall_time_s = s.wall_now();
  s.checkpoints.written(
      write_resume_checkpoint(s.cfg.run.out, *s.run.engine, cur, s.fp, s.cfg.run.checkpoint_keep));
}

// One optimizer step: the batch, the engine's step, its simulated time, the
// train row, the optional trace, the display, and what is due after it (an
// evaluation, a checkpoint).
void train_one_step(Session& s) {
  Run& run = s.run;
  TrainerCursor& cur = run.cursor;
  const int64_t step = cur.steps_done;
  const auto t0 = Clock::now();
  const models::SampledBatch sampled = run.sampler->next();
  if (sampled.epoch != cur.epoch) {
    cur.epoch = static_cast<int>(sampled.epoch);
    run.engine->set_epoch(cur.epoch);
  }
  const models::Batch batch = run.data->get(models::Split::kTrain, sampled.indices);
  const StepResult r = run.engine->train_step(batch, step, run.total_steps);
  const netmodel::Timeline timeline = run.network->replay(r.trace);
  cur.sim_time_s += timeline.step_s;
  cur.samples += r.samples;
  cur.steps_done = step + 1;
  StepRecord rec;
  rec.step = step + 1;
  rec.epoch = cur.epoch;
  rec.result = &r;
  rec.samples = cur.samples;
  rec.step_s = seconds_since(t0);
  rec.wall_s = s.wall_now();
  rec.sim_step_s = timeline.step_s;
  rec.sim_time_s = cur.sim_time_s;
  rec.channel_state_bytes = run.engine->channel_state_bytes();
  rec.dist_step_s = r.dist_step_s;
  run.log->append("train", make_row(run.train_cols, rec));
  s.heartbeat.beat(*run.log);
  ++cur.train_rows;
  fault_point("step");
  fault_point("error-step");
  const config::RunConfig& rc = s.cfg.run;
  if (rc.trace_every > 0 && (step + 1) % rc.trace_every == 0) {
    std::ostringstream os;
    netmodel::write_chrome_trace(timeline, os);
    run.log->put_text("trace_step_" + std::to_string(step + 1), os.str());
  }
  s.summary.final_loss = r.loss;
  s.progress.update(step + 1, cur.epoch, r.loss, "sim " + format_duration(cur.sim_time_s));
  const bool last = step + 1 >= run.total_steps;
  if (s.cfg.eval.every > 0 && (step + 1) % s.cfg.eval.every == 0 && !last) log_eval(s, step + 1);
  if (!last && s.checkpoints.due(step + 1)) checkpoint(s);
}

// The step loop, until the last step or a signal, then the final evaluation.
// A diverged run ends with its status; any other error marks the log failed
// and is rethrown.
void run_steps(Session& s) {
  TrainerCursor& cur = s.run.cursor;
  TrainSummary& summary = s.summary;
  RunLog& log = *s.run.log;
  s.heartbeat.beat(log, /*force=*/true);
  try {
    // Where the run starts (a fine-tuning run: the loaded model), once: a
    // resumed run's log already holds this row.
    if (s.cfg.eval.at_start && cur.steps_done == 0 && cur.eval_rows == 0) log_eval(s, 0);
    while (cur.steps_done < s.run.total_steps && !g_stop) train_one_step(s);
    s.progress.finish();
    summary.status = g_stop ? RunStatus::kInterrupted : RunStatus::kComplete;
    // An interrupted run is checkpointed first: its final evaluation row lies
    // beyond the checkpoint and is rewritten by the resumed run.
    if (summary.status == RunStatus::kInterrupted &&
        s.cfg.run.checkpoint_every != config::RunConfig::kCheckpointOff) {
      checkpoint(s);
    }
    if (cur.steps_done > 0) log_eval(s, cur.steps_done);
    s.run.engine->finish();  // distributed: every rank ends here
  } catch (const NonFiniteError& e) {
    s.progress.finish();
    summary.status = RunStatus::kDiverged;
    summary.message = e.what();
    log.set_attribute("error", error_attribute(summary.message));
    s.progress.message("slowpipe train: diverged: " + summary.message);
  } catch (const std::exception& e) {
    s.progress.finish();
    log.set_attribute("status", "failed");
    const auto* c10 = dynamic_cast<const c10::Error*>(&e);
    log.set_attribute("error", error_attribute(c10 ? c10->what_without_backtrace() : e.what()));
    log.flush();
    throw;
  }
}

// The end of a run: the model checkpoint (run.save), the summary and the log's
// closing attributes and blobs.
void finish_run(Session& s) {
  TrainSummary& summary = s.summary;
  RunLog& log = *s.run.log;
  if (summary.status == RunStatus::kComplete && !s.cfg.run.save.empty()) {
    models::save_checkpoint(s.run.engine->model(), s.cfg.run.save);
    s.progress.message("checkpoint written to " + s.cfg.run.save);
  }
  summary.steps = s.run.cursor.steps_done;
  summary.sim_time_s = s.run.cursor.sim_time_s;
  summary.wall_time_s = s.wall_now();
  log.set_attribute("status", status_name(summary.status));
  log.set_attribute("steps_done", static_cast<double>(summary.steps));
  log.set_attribute("wall_time_s", summary.wall_time_s);
  log.set_attribute("sim_time_s", summary.sim_time_s);
  // What the compute model assumed (docs/hdf5-schema.md, blob `calibration`).
  log.put_text("calibration", s.run.network->compute_description());
  // What resume checkpoints cost this attempt (after a resume: since then).
  log.set_attribute("checkpoints_written", static_cast<double>(s.checkpoints.count()));
  log.set_attribute("checkpoint_time_s", s.checkpoints.total_s());
  log.flush();
  if (summary.status == RunStatus::kComplete) remove_checkpoints(s.cfg.run.out);
}

}  // namespace

const char* status_name(RunStatus s) {
  switch (s) {
    case RunStatus::kComplete:
      return "complete";
    case RunStatus::kInterrupted:
      return "interrupted";
    case RunStatus::kDiverged:
      return "diverged";
  }
  return "unknown";
}

TrainSummary train(const config::TrainConfig& cfg, const ResolvedConfig& resolved, bool resume,
                   const DistEngineFactory& distributed) {
  const auto wall_start = Clock::now();
  set_compute_threads(cfg.run.threads);  // libtorch and OpenBLAS
  config::preflight(cfg, resume, libtorch_checks());
  const std::string fp = fingerprint(resolved);

  TrainSummary summary;
  summary.out = cfg.run.out;
  summary.final_eval_loss = NAN;  // until an evaluation runs (none on an empty split)
  Run run;
  build_run(run, cfg, resolved, distributed);
  if (run.engine->follower()) {  // a distributed rank other than 0: rank 0 logs
    run.engine->serve(*run.data);
    summary.steps = run.total_steps;
    summary.out = "(rank " + std::to_string(cfg.dist.rank) + " of " + cfg.run.out + ")";
    return summary;
  }
  open_log(run, cfg, resolved, resume, fp, summary);
  SignalScope signals;
  Session session(cfg, run, summary, fp, wall_start);
  announce(session, resume);
  session.checkpoints.start();  // the banner's forward pass is not run time
  run_steps(session);
  finish_run(session);
  return summary;
}

}  // namespace slowpipe::sim
