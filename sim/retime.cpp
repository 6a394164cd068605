// `slowpipe retime`: a logged run's steps replayed at other network settings
// and written as a copy of its log (sim/retime.h, docs/retime.md).
#include "sim/retime.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>
#include <sstream>

#include "common/errors.h"
#include "common/options.h"
#include "common/version.h"
#include "config/logged_config.h"
#include "netmodel/chrome_trace.h"
#include "netmodel/replay.h"
#include "runlog/runlog.h"
#include "sim/internal/retime_trace.h"

namespace slowpipe::sim {

bool machine_independent_clock(const netmodel::ComputeSpec& spec) {
  return spec.model == "analytic" || spec.model == "shaped" || spec.model == "fixed";
}

namespace {

using Attrs = std::map<std::string, std::string>;

// What the log's configuration says: the skeleton's configuration and the two networks.
struct Configs {
  config::TrainConfig skeleton;
  netmodel::NetConfig logged, wanted;
  std::vector<std::pair<std::string, std::string>> net_values;  // the wanted net.* keys
};

void check_retimable(const config::TrainConfig& cfg, const std::string& source) {
  if (!machine_independent_clock(cfg.net.compute)) {
    throw UsageError(source + ": net.compute = " + cfg.net.compute.text +
                     " times compute on the machine that ran it; the log holds each step's "
                     "sums, not each op's seconds, so a replay at another network would not be "
                     "exact (retime needs analytic:DEVICE or fixed:S[/B])");
  }
  if (cfg.compress.grad_sync == compressors::GradSync::kMomentum) {
    throw UsageError(source +
                     ": compress.grad_sync = momentum replaces the all-reduce by a "
                     "sharded exchange after its warm-up; retime does not rebuild it");
  }
  if (cfg.dist.enabled()) {
    throw UsageError(source +
                     ": a distributed run (dist.world_size > 0); retime rebuilds the "
                     "step of a single-process run only");
  }
}

// The skeleton's settings: every channel `none`, the run's resolved cuts.
void skeleton_options(OptionSet& options, const Attrs& attrs, const std::string& source) {
  for (const char* key : {"compress.fw", "compress.bw", "compress.grad"}) options.set(key, "none");
  options.set("compress.fw_at", "");
  options.set("compress.bw_at", "");
  options.set("compress.warmup_epochs", "0");
  const auto cuts = attrs.find("pipeline.resolved_cuts");
  if (cuts == attrs.end()) {
    if (options.get("pipeline.balance") == "time" && options.get("pipeline.cuts").empty()) {
      throw UsageError(source +
                       ": balanced by measured time and no pipeline.resolved_cuts "
                       "logged: the stages cannot be rebuilt");
    }
    return;
  }
  const std::string& all = cuts->second;  // "0,2,3,4,6": the inner ones are pipeline.cuts
  const auto first = all.find(','), last = all.rfind(',');
  options.set("pipeline.cuts", first == last ? "" : all.substr(first + 1, last - first - 1));
}

Configs load_configs(const RetimeRequest& rq, const Attrs& attrs) {
  config::TrainConfig cfg;
  OptionSet options;
  config::describe_options(cfg, options);
  config::apply_logged_config(attrs, options, rq.source);
  check_retimable(cfg, rq.source);
  Configs c;
  c.logged = config::timed_net(cfg);
  for (const auto& s : rq.sets) {
    if (s.rfind("net.", 0) != 0) {
      throw UsageError("--set " + s +
                       ": retime changes the network only (net.* keys); any "
                       "other key changes what the run computes: train it");
    }
    options.set_assignment(s);
  }
  if (!machine_independent_clock(cfg.net.compute)) {
    throw UsageError(
        "--set net.compute=" + cfg.net.compute.text +
        ": a retime needs a machine-independent clock (analytic:DEVICE, shaped:DEVICE, fixed:S)");
  }
  c.wanted = config::timed_net(cfg);
  for (const auto& [k, v] : options.resolved()) {
    if (k.rfind("net.", 0) == 0) c.net_values.emplace_back(k, v);
  }
  skeleton_options(options, attrs, rq.source);
  c.skeleton = cfg;
  return c;
}

// The train table's steps: their logged bytes and simulated times.
struct Logged {
  std::vector<int64_t> steps;
  std::vector<LoggedBytes> bytes;
  std::vector<double> step_s, time_s;
};

std::vector<double> column_or_nan(const runlog::Table& t, const std::string& name) {
  return t.has_column(name) ? t.column(name) : std::vector<double>(t.rows(), NAN);
}

// UsageError unless the rows are steps 1, 2, ... each of `batch` samples.
void check_steps(const runlog::Table& t, int64_t batch, const std::string& source) {
  const auto& step = t.column("step");
  const auto samples = column_or_nan(t, "samples");
  for (size_t i = 0; i < t.rows(); ++i) {
    if (step[i] != static_cast<double>(i + 1)) {
      throw DataError(source + ": train row " + std::to_string(i + 1) + " is step " +
                      std::to_string(step[i]) + ", not " + std::to_string(i + 1));
    }
    const double b = samples[i] - (i == 0 ? 0.0 : samples[i - 1]);
    if (b != static_cast<double>(batch)) {
      throw UsageError(source + ": step " + std::to_string(i + 1) + " has a batch of " +
                       std::to_string(b) + " samples, the rebuilt step " + std::to_string(batch) +
                       ": its trace differs, and the log does not hold it");
    }
  }
}

Logged read_logged(const std::string& source, int chunks, int64_t batch) {
  const runlog::Table t = runlog::read_table(source, "train");
  for (const char* c : {"step", "samples", "sim_step_time_s", "sim_time_s"}) {
    if (!t.has_column(c)) {
      throw UsageError(source + ": its train table has no " + c + " column: nothing to retime");
    }
  }
  check_steps(t, batch, source);
  std::map<std::string, std::vector<double>> cols;
  for (int b = 0; b < chunks; ++b) {
    for (const std::string& n :
         {"fw" + std::to_string(b) + "_bytes", "bw" + std::to_string(b) + "_bytes",
          "grad" + std::to_string(b) + "_bytes"}) {
      cols[n] = column_or_nan(t, n);
    }
  }
  Logged lg;
  lg.step_s = t.column("sim_step_time_s");
  lg.time_s = t.column("sim_time_s");
  for (size_t i = 0; i < t.rows(); ++i) {
    lg.steps.push_back(static_cast<int64_t>(i + 1));
    LoggedBytes b;
    for (int k = 0; k < chunks; ++k) {
      b.fw.push_back(cols["fw" + std::to_string(k) + "_bytes"][i]);
      b.bw.push_back(cols["bw" + std::to_string(k) + "_bytes"][i]);
      b.grad.push_back(cols["grad" + std::to_string(k) + "_bytes"][i]);
    }
    lg.bytes.push_back(std::move(b));
  }
  return lg;
}

double rel_diff(double got, double logged) {
  if (got == logged) return 0;
  return std::fabs(got - logged) / std::max(std::fabs(logged), 1e-300);
}

// Every step replayed at the logged network (checked) and at the wanted one.
struct Replayed {
  std::vector<double> step_s, time_s;
  std::map<int64_t, std::string> traces;  // Chrome traces of the steps the source kept
  double own_max_rel_diff = 0;
  int64_t slower_steps = 0;
};

void check_own(double got, double logged, const char* what, int64_t step, double tol,
               const std::string& source, double& max_rel) {
  const double d = rel_diff(got, logged);
  max_rel = std::max(max_rel, d);
  if (d <= tol) return;
  std::ostringstream os;
  os.precision(17);
  os << source << ": step " << step << ": the rebuilt trace replayed at the logged network gives "
     << what << " = " << got << ", the log " << logged << " (relative difference " << d << " > "
     << tol << "): the rebuilt step is not this run's (another slowpipe build, or a "
     << "trace the log does not describe); not retimed";
  throw UsageError(os.str());
}

Replayed replay_all(const netmodel::StepTrace& skeleton, const Logged& lg, const Configs& c,
                    const std::vector<int64_t>& trace_steps, double tol,
                    const std::string& source) {
  netmodel::Simulator own(c.logged), wanted(c.wanted);
  Replayed r;
  double own_time_s = 0, time_s = 0;
  for (size_t i = 0; i < lg.steps.size(); ++i) {
    const int64_t step = lg.steps[i];
    netmodel::StepTrace t = skeleton;
    set_message_bytes(t, lg.bytes[i], step);
    const double own_s = own.replay(t).step_s;
    own_time_s += own_s;
    check_own(own_s, lg.step_s[i], "sim_step_time_s", step, tol, source, r.own_max_rel_diff);
    check_own(own_time_s, lg.time_s[i], "sim_time_s", step, tol, source, r.own_max_rel_diff);
    const netmodel::Timeline tl = wanted.replay(t);
    time_s += tl.step_s;
    r.step_s.push_back(tl.step_s);
    r.time_s.push_back(time_s);
    if (tl.step_s > own_s) ++r.slower_steps;
    if (std::find(trace_steps.begin(), trace_steps.end(), step) != trace_steps.end()) {
      std::ostringstream os;
      netmodel::write_chrome_trace(tl, os);
      r.traces[step] = os.str();
    }
  }
  return r;
}

std::vector<int64_t> trace_steps_of(const std::string& source) {
  std::vector<int64_t> steps;
  const std::string prefix = "trace_step_";
  for (const auto& b : runlog::list_blobs(source)) {
    if (b.rfind(prefix, 0) == 0) steps.push_back(std::stoll(b.substr(prefix.size())));
  }
  return steps;
}

// Root attributes the trainer writes as numbers (docs/hdf5-schema.md); every
// other one is a string.
bool numeric_attribute(const std::string& key) {
  static const char* const kNumeric[] = {"steps_done",
                                         "wall_time_s",
                                         "sim_time_s",
                                         "checkpoints_written",
                                         "checkpoint_time_s",
                                         "data.train_samples",
                                         "data.validation_samples",
                                         "model.parameters"};
  return std::find_if(std::begin(kNumeric), std::end(kNumeric),
                      [&key](const char* k) { return key == k; }) != std::end(kNumeric);
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

void write_attributes(runlog::RunLog& log, const RetimeRequest& rq, const Attrs& attrs,
                      const Configs& c, const Replayed& r, double source_sim_time_s) {
  for (const auto& [k, v] : attrs) {
    if (k.rfind("config.net.", 0) == 0 || k.rfind("retime.", 0) == 0) continue;
    if (numeric_attribute(k)) {
      log.set_attribute(k, std::strtod(v.c_str(), nullptr));
    } else {
      log.set_attribute(k, v);
    }
  }
  for (const auto& [k, v] : c.net_values) log.set_attribute("config." + k, v);
  if (attrs.count("sim_time_s") != 0 && !r.time_s.empty()) {
    log.set_attribute("sim_time_s", r.time_s.back());
  }
  std::string sets;
  for (const auto& s : rq.sets) sets += (sets.empty() ? "" : " ") + s;
  const auto prior = attrs.find("retime.source");  // a copy of a copy names the first source
  log.set_attribute("retime.source", prior != attrs.end()
                                         ? prior->second
                                         : std::filesystem::absolute(rq.source).string());
  log.set_attribute("retime.sets", sets);
  log.set_attribute("retime.source_sim_time_s", source_sim_time_s);
  log.set_attribute("retime.own_max_rel_diff", r.own_max_rel_diff);
  log.set_attribute("retime.git_commit", git_commit());
  log.set_attribute("retime.time", utc_now());
}

// The new value of a sim_* column at each row of table `name`.
std::vector<double> new_sim_column(const std::string& table, const runlog::Table& t,
                                   const std::string& column, const Replayed& r,
                                   const std::string& source) {
  if (table == "train" && column == "sim_step_time_s") return r.step_s;
  if (table == "train" && column == "sim_time_s") return r.time_s;
  if (table == "eval" && column == "sim_time_s" && t.has_column("step")) {
    std::vector<double> out;
    for (const double step : t.column("step")) {
      const auto k = static_cast<size_t>(step);
      if (!(step >= 0) || k > r.time_s.size() || static_cast<double>(k) != step) {
        throw DataError(source + ": an eval row at step " + std::to_string(step) +
                        ", which the train table does not reach");
      }
      out.push_back(k == 0 ? 0.0 : r.time_s[k - 1]);
    }
    return out;
  }
  throw DataError(source + ": column " + table + "/" + column +
                  " is simulated, but retime does not know how to recompute it");
}

void copy_tables(runlog::RunLog& log, const std::string& source, const Replayed& r) {
  for (const auto& name : runlog::list_tables(source)) {
    runlog::Table t = runlog::read_table(source, name);
    for (size_t c = 0; c < t.columns.size(); ++c) {
      if (t.columns[c].name.rfind("sim_", 0) == 0) {
        t.values[c] = new_sim_column(name, t, t.columns[c].name, r, source);
      }
    }
    log.declare(name, t.columns);
    for (size_t row = 0; row < t.rows(); ++row) {
      std::map<std::string, double> values;
      for (size_t c = 0; c < t.columns.size(); ++c) values[t.columns[c].name] = t.values[c][row];
      log.append(name, values);
    }
  }
}

void copy_blobs(runlog::RunLog& log, const std::string& source, const Replayed& r,
                const Configs& c) {
  for (const auto& b : runlog::list_blobs(source)) {
    if (b.rfind("trace_step_", 0) == 0) continue;  // replaced below
    if (b == "calibration") {                      // what the (possibly new) compute model assumes
      netmodel::Simulator sim(c.wanted);
      log.put_text(b, sim.compute_description());
      continue;
    }
    log.put_text(b, runlog::read_text(source, b));
  }
  for (const auto& [step, text] : r.traces)
    log.put_text("trace_step_" + std::to_string(step), text);
}

// UsageError unless `out` is free or a copy an earlier retime wrote.
void check_out(const RetimeRequest& rq) {
  std::error_code ec;
  if (std::filesystem::equivalent(rq.source, rq.out, ec)) {
    throw UsageError(rq.out + " is the source run log: give another --out folder");
  }
  if (!std::filesystem::exists(rq.out, ec)) return;
  Attrs attrs;
  try {
    attrs = runlog::read_attributes(rq.out);
  } catch (const std::exception&) {
  }
  if (attrs.count("retime.source") == 0) {
    throw UsageError(rq.out + " exists and is not a retimed copy: not replaced");
  }
}

}  // namespace

RetimeReport retime_run(const RetimeRequest& rq) {
  const Attrs attrs = runlog::read_attributes(rq.source);
  const Configs c = load_configs(rq, attrs);
  check_out(rq);
  int64_t batch = 0;
  const netmodel::StepTrace skeleton = step_trace_skeleton(c.skeleton, &batch);
  const Logged lg = read_logged(rq.source, skeleton.chunks, batch);
  const Replayed r =
      replay_all(skeleton, lg, c, trace_steps_of(rq.source), rq.tolerance, rq.source);
  RetimeReport rep;
  rep.steps = static_cast<int64_t>(lg.steps.size());
  rep.source_sim_time_s = lg.time_s.empty() ? 0 : lg.time_s.back();
  rep.sim_time_s = r.time_s.empty() ? 0 : r.time_s.back();
  rep.own_max_rel_diff = r.own_max_rel_diff;
  rep.slower_steps = r.slower_steps;
  const std::string tmp = rq.out + ".retime.tmp";
  std::error_code ec;
  try {
    runlog::RunLog log(tmp, /*overwrite=*/true, /*flush_every=*/1 << 20);
    write_attributes(log, rq, attrs, c, r, rep.source_sim_time_s);
    copy_tables(log, rq.source, r);
    copy_blobs(log, rq.source, r, c);
    log.flush();
  } catch (...) {
    std::filesystem::remove(tmp, ec);  // a refused copy leaves no half-written file
    throw;
  }
  std::filesystem::rename(tmp, rq.out, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    throw UsageError("cannot write " + rq.out + ": " + why);
  }
  return rep;
}

}  // namespace slowpipe::sim
