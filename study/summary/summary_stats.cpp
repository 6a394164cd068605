// One run log's summary row and its statistics (see summary_stats.h and
// docs/summary.md for every definition).
#include "study/summary/summary_stats.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>

#include "common/errors.h"
#include "common/numbers.h"
#include "runlog/export.h"
#include "runlog/runlog.h"
#include "study/summary/internal/summary_fp32.h"
#include "study/summary/summary_columns.h"
#include "study/summary/summary_target.h"

namespace slowpipe::study {
namespace {

double last_finite(const std::vector<double>& v) {
  for (auto it = v.rbegin(); it != v.rend(); ++it) {
    if (std::isfinite(*it)) return *it;
  }
  return kNaN;
}

double best_finite(const std::vector<double>& v, bool higher_is_better) {
  double best = kNaN;
  for (double x : v) {
    if (!std::isfinite(x)) continue;
    if (std::isnan(best) || (higher_is_better ? x > best : x < best)) best = x;
  }
  return best;
}

// Mean over the rows of the sum of every column PREFIX<digits>SUFFIX (e.g.
// fw0_bytes + fw1_bytes); NaN when no column matches or no row exists.
double mean_row_sum(const runlog::Table& table, std::string_view prefix, std::string_view suffix) {
  std::vector<const std::vector<double>*> cols;
  for (size_t c = 0; c < table.columns.size(); ++c) {
    if (numbered_column(table.columns[c].name, prefix, suffix)) cols.push_back(&table.values[c]);
  }
  if (cols.empty() || table.rows() == 0) return kNaN;
  double total = 0;
  for (size_t r = 0; r < table.rows(); ++r) {
    for (const auto* col : cols) total += (*col)[r];
  }
  return total / static_cast<double>(table.rows());
}

double attr_number(const std::map<std::string, std::string>& attrs, const std::string& key) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return kNaN;
  try {
    return std::stod(it->second);
  } catch (const std::exception&) {
    return kNaN;
  }
}

// Reads what the summary needs, mapping the readers' errors onto this file:
// a file that exists but is not a readable slowpipe run log is bad data.
template <class F>
auto read_or_data_error(const std::string& path, F&& read) {
  try {
    return read();
  } catch (const UsageError& e) {
    throw DataError(path + ": not a readable slowpipe run log (" + e.what() + ")");
  } catch (const DataError& e) {
    const std::string what = e.what();
    if (what.find(path) != std::string::npos) throw;
    throw DataError(path + ": " + what);
  }
}

void add_eval_stats(RunStats& run, const runlog::Table& eval) {
  auto add = [&](const std::string& column, const std::string& id, bool higher_is_better) {
    if (!eval.has_column(column)) return;
    const auto& v = eval.column(column);
    run.values[id] = last_finite(v);
    run.values[id + "_best"] = best_finite(v, higher_is_better);
  };
  add("loss", "eval_loss", false);
  add("loss_compressed", "eval_loss_compressed", false);
  for (const auto& metric : summary_metrics()) {
    if (!eval.has_column(metric)) continue;
    run.eval_metrics.push_back(metric);
    add(metric, metric, metric_higher_is_better(metric));
    add(metric + "_compressed", metric + "_compressed", metric_higher_is_better(metric));
  }
}

void add_traffic_stats(RunStats& run, const runlog::Table& train) {
  const double fw = mean_row_sum(train, "fw", "_bytes");
  const double bw = mean_row_sum(train, "bw", "_bytes");
  const double grad = mean_row_sum(train, "grad", "_bytes");
  run.values["fw_bytes"] = fw;
  run.values["bw_bytes"] = bw;
  run.values["grad_bytes"] = grad;
  // Everything on the wire per step: the parts the run has (grad: D > 1 only).
  double wire = kNaN;
  for (double part : {fw, bw, grad})
    if (std::isfinite(part)) wire = (std::isnan(wire) ? 0 : wire) + part;
  run.values["wire_bytes"] = wire;
  // The ratio over the traffic the run has: boundaries, and gradients when D > 1.
  const Fp32Bytes fp32 = fp32_bytes_per_step(run.attrs);
  double sent = 0, reference = 0;
  bool any = false;
  if (!std::isnan(fw) && !std::isnan(bw)) {
    sent += fw + bw;
    reference += fp32.fw + fp32.bw;
    any = true;
  }
  if (!std::isnan(grad)) {
    sent += grad;
    reference += fp32.grad > 0 ? fp32.grad : kNaN;
    any = true;
  }
  run.values["fp32_ratio"] = (any && sent > 0) ? reference / sent : kNaN;
  // Peak memory the channels keep (error-feedback residuals, AQ-SGD's
  // per-sample buffers): the largest channel_state_bytes of any logged step.
  double state = kNaN;
  if (train.has_column("channel_state_bytes"))
    for (double x : train.column("channel_state_bytes"))
      if (std::isfinite(x)) state = std::isnan(state) ? x : std::max(state, x);
  run.values["state_bytes"] = state;
}

}  // namespace

bool numbered_column(std::string_view name, std::string_view prefix, std::string_view suffix) {
  if (name.size() <= prefix.size() + suffix.size()) return false;
  if (name.substr(0, prefix.size()) != prefix) return false;
  if (name.substr(name.size() - suffix.size()) != suffix) return false;
  const std::string_view digits =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  return std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

double tail_mean(const std::vector<double>& values, double fraction) {
  if (values.empty()) return kNaN;
  const size_t n = values.size();
  const size_t k = std::max<size_t>(1, static_cast<size_t>(std::ceil(fraction * double(n))));
  double sum = 0;
  for (size_t i = n - std::min(k, n); i < n; ++i) sum += values[i];
  return sum / static_cast<double>(std::min(k, n));
}

std::vector<double> trailing_mean(const std::vector<double>& values, int window) {
  const size_t w = static_cast<size_t>(std::max(1, window));
  std::vector<double> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t first = i + 1 >= w ? i + 1 - w : 0;
    double sum = 0;
    for (size_t j = first; j <= i; ++j) sum += values[j];
    out[i] = sum / static_cast<double>(i + 1 - first);
  }
  return out;
}

double time_to_target(const std::vector<double>& loss, const std::vector<double>& times,
                      double target, int window) {
  const size_t row = first_smoothed_row_at_or_below(loss, target, window);
  return row < loss.size() && row < times.size() ? times[row] : kInf;
}

MeanStd mean_std(const std::vector<double>& values) {
  MeanStd out;
  double sum = 0;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    sum += v;
    ++out.n;
  }
  if (out.n == 0) return {kNaN, kNaN, 0};
  out.mean = sum / static_cast<double>(out.n);
  if (out.n < 2) {
    out.std = kNaN;
    return out;
  }
  double squares = 0;
  for (double v : values) {
    if (std::isfinite(v)) squares += (v - out.mean) * (v - out.mean);
  }
  out.std = std::sqrt(squares / static_cast<double>(out.n - 1));
  return out;
}

RunStats read_run_stats(const std::string& path, const SummaryOptions& options) {
  if (!std::filesystem::exists(path)) throw UsageError("no such run log: " + path);
  if (std::filesystem::is_directory(path)) {
    throw UsageError(path + " is a folder inside the folder given, not a run log");
  }
  RunStats run;
  run.path = path;
  run.attrs = read_or_data_error(path, [&] { return runlog::read_attributes(path); });
  for (const auto& [key, value] : run.attrs) {
    if (key.rfind("config.", 0) == 0) run.config[key.substr(7)] = value;
  }
  if (run.config.empty()) {
    throw DataError(path + ": not a slowpipe run log (it has no config.* attributes)");
  }
  const runlog::Table train =
      read_or_data_error(path, [&] { return runlog::read_table(path, "train"); });
  // A `running` log with a stale heartbeat says so (runlog/export.h).
  double longest_step_s = 0;
  if (train.has_column("step_time_s"))
    for (double x : train.column("step_time_s"))
      if (std::isfinite(x)) longest_step_s = std::max(longest_step_s, x);
  run.status =
      runlog::display_status(run.attrs, longest_step_s, static_cast<double>(std::time(nullptr)));
  const runlog::Table eval =
      read_or_data_error(path, [&] { return runlog::read_table(path, "eval"); });

  auto& v = run.values;
  v["steps"] = train.has_column("step") && train.rows() > 0 ? last_finite(train.column("step")) : 0;
  v["train_loss"] = train.has_column("loss") ? tail_mean(train.column("loss")) : kNaN;
  add_eval_stats(run, eval);
  auto last_of = [&](const std::string& column) {
    return train.has_column(column) ? last_finite(train.column(column)) : kNaN;
  };
  v["sim_time_s"] = attr_number(run.attrs, "sim_time_s");
  if (std::isnan(v["sim_time_s"])) v["sim_time_s"] = last_of("sim_time_s");
  v["wall_time_s"] = attr_number(run.attrs, "wall_time_s");
  if (std::isnan(v["wall_time_s"])) v["wall_time_s"] = last_of("wall_time_s");
  add_target_stats(run, train, eval, options);  // time_to_target_s and the rest
  add_traffic_stats(run, train);
  return run;
}

}  // namespace slowpipe::study
