// Time to a target loss under the train and eval rules (see summary_target.h,
// docs/summary.md "Time to target").
#include "study/summary/summary_target.h"

#include <cmath>
#include <sstream>

#include "common/errors.h"
#include "common/numbers.h"

namespace slowpipe::study {
namespace {

const char* const kEvalPrefix = "eval_";

const TargetReach kNotReached{kInf, kInf, kInf, kInf};

double number_of(const std::map<std::string, std::string>& config, const std::string& key) {
  const auto it = config.find(key);
  if (it == config.end()) return kNaN;
  try {
    return std::stod(it->second);
  } catch (const std::exception&) {
    return kNaN;
  }
}

// Column `name` at `row`; NaN when the table lacks the column.
double cell(const runlog::Table& table, const std::string& name, size_t row) {
  return table.has_column(name) ? table.column(name)[row] : kNaN;
}

// Samples seen by the end of step `step`: the train table's `samples` at the
// row of that step, else step x the global batch (step 0: none).
double samples_at_step(const runlog::Table& train, double step, double batch_size) {
  if (train.has_column("step") && train.has_column("samples")) {
    const auto& steps = train.column("step");
    for (size_t r = 0; r < steps.size(); ++r)
      if (steps[r] == step && std::isfinite(train.column("samples")[r]))
        return train.column("samples")[r];
  }
  return step * batch_size;
}

TargetReach reach_at(double step, double samples, double sim_time_s, double tokens_per_sample) {
  return {step, samples, samples * tokens_per_sample, sim_time_s};
}

// The steps, samples and (language models: `with_tokens`) tokens of one rule.
void put(RunStats& run, TargetRule rule, const TargetReach& reach, bool with_tokens) {
  const std::vector<std::string> ids = target_column_ids(rule);
  run.values[ids[1]] = reach.steps;
  run.values[ids[2]] = reach.samples;
  if (with_tokens) run.values[ids[3]] = reach.tokens;
}

}  // namespace

size_t first_smoothed_row_at_or_below(const std::vector<double>& loss, double target, int window) {
  const std::vector<double> smooth = trailing_mean(loss, window);
  for (size_t i = 0; i < smooth.size(); ++i)
    if (smooth[i] <= target) return i;
  return loss.size();
}

std::vector<std::string> target_column_ids(TargetRule rule) {
  const std::string p = rule == TargetRule::kEval ? kEvalPrefix : "";
  return {p + "time_to_target_s", p + "steps_to_target", p + "samples_to_target",
          p + "tokens_to_target"};
}

bool is_target_column(const std::string& id) {
  return id.find("_to_target") != std::string::npos;
}

TargetRule target_column_rule(const std::string& id) {
  return id.rfind(kEvalPrefix, 0) == 0 ? TargetRule::kEval : TargetRule::kTrain;
}

std::string target_rule_name(TargetRule rule) {
  return rule == TargetRule::kEval ? "eval" : "train";
}

TargetRule parse_target_rule(const std::string& name, const std::string& what) {
  if (name == "train") return TargetRule::kTrain;
  if (name == "eval") return TargetRule::kEval;
  throw UsageError(what + " " + name + ": one of train, eval");
}

std::string target_column_title(const std::string& title, double target_loss) {
  const size_t at = title.find("target");
  if (at == std::string::npos) return title;
  std::ostringstream s;
  s << "loss \u2264 " << target_loss;
  return title.substr(0, at) + s.str() + title.substr(at + 6);
}

double tokens_per_sample(const RunStats& run, const runlog::Table& eval) {
  if (!eval.has_column("bits_per_byte")) return kNaN;
  return number_of(run.config, "model.seq_len");
}

TargetReach train_target_reach(const runlog::Table& train, double target, int window,
                               double tokens_per_sample, double batch_size) {
  if (!train.has_column("loss")) return {kNaN, kNaN, kNaN, kNaN};
  const size_t row = first_smoothed_row_at_or_below(train.column("loss"), target, window);
  if (row >= train.rows()) return kNotReached;
  const double step = cell(train, "step", row);
  double samples = cell(train, "samples", row);
  if (std::isnan(samples)) samples = step * batch_size;
  return reach_at(step, samples, cell(train, "sim_time_s", row), tokens_per_sample);
}

TargetReach eval_target_reach(const runlog::Table& eval, const runlog::Table& train, double target,
                              double tokens_per_sample, double batch_size) {
  if (!eval.has_column("loss") || !eval.has_column("step") || eval.rows() == 0)
    return {kNaN, kNaN, kNaN, kNaN};
  const auto& loss = eval.column("loss");
  for (size_t r = 0; r < eval.rows(); ++r) {
    if (!(loss[r] <= target)) continue;  // NaN never reaches it
    const double step = eval.column("step")[r];
    return reach_at(step, samples_at_step(train, step, batch_size), cell(eval, "sim_time_s", r),
                    tokens_per_sample);
  }
  return kNotReached;
}

void add_target_stats(RunStats& run, const runlog::Table& train, const runlog::Table& eval,
                      const SummaryOptions& options) {
  if (!options.has_target) return;
  const double tokens = tokens_per_sample(run, eval);
  const double batch = number_of(run.config, "pipeline.batch_size");
  if (train.has_column("loss") && train.rows() > 0) {
    const TargetReach reach =
        train_target_reach(train, options.target_loss, options.smooth_window, tokens, batch);
    put(run, TargetRule::kTrain, reach, std::isfinite(tokens));
    // time_to_target_s as before this file: only where the train table has sim_time_s.
    if (train.has_column("sim_time_s")) run.values["time_to_target_s"] = reach.sim_time_s;
  }
  const TargetReach reach = eval_target_reach(eval, train, options.target_loss, tokens, batch);
  if (std::isnan(reach.steps)) return;
  put(run, TargetRule::kEval, reach, std::isfinite(tokens));
  if (eval.has_column("sim_time_s")) run.values["eval_time_to_target_s"] = reach.sim_time_s;
}

}  // namespace slowpipe::study
