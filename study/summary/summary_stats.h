// What `slowpipe summary` computes from one run log, and the small statistics
// it is made of (definitions and units: docs/summary.md).
//
// A run's numbers are kept by column id (summary_columns.h), so seed groups,
// formatters and plots treat them alike; NaN means "not available" (a column
// the log lacks, a run that logged no row), +infinity in "time_to_target_s"
// means the target was never reached (every *_to_target column,
// summary_target.h). No libtorch here.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace slowpipe::study {

// True when `name` is `prefix`, one or more digits, then `suffix`: a
// per-channel run-log column ("fw", "_bytes": fw0_bytes, fw12_bytes).
bool numbered_column(std::string_view name, std::string_view prefix, std::string_view suffix);

// Mean of the last ceil(fraction x n) values (at least 1); NaN for no values.
// A NaN among them makes the mean NaN (a diverged step is not hidden).
double tail_mean(const std::vector<double>& values, double fraction = 0.1);

// Trailing mean: out[i] = mean of values[max(0, i - window + 1) .. i].
std::vector<double> trailing_mean(const std::vector<double>& values, int window);

// The first row i whose trailing mean (window rows) of `loss` is <= target
// returns times[i]; +infinity when none is (NaN never reaches the target).
double time_to_target(const std::vector<double>& loss, const std::vector<double>& times,
                      double target, int window);

// Mean, sample standard deviation (n - 1 in the denominator; NaN when n < 2)
// and n, over the finite values (NaN and infinities are left out).
struct MeanStd {
  double mean = 0, std = 0;
  size_t n = 0;
};
MeanStd mean_std(const std::vector<double>& values);

// Which rule the table's time-to-target columns follow (summary --target-on;
// summary_target.h): the smoothed train loss, or the evaluations.
enum class TargetRule { kTrain, kEval };

struct SummaryOptions {
  double target_loss = 0;  // the to-target columns (both rules) are computed when has_target
  bool has_target = false;
  int smooth_window = 10;                     // trailing-mean window (steps) for the train rule
  TargetRule target_on = TargetRule::kTrain;  // the rule the table shows
};

// One run log's summary row.
struct RunStats {
  std::string path;
  std::map<std::string, std::string> config;  // config.* attributes, prefix removed
  std::map<std::string, std::string> attrs;   // every root attribute
  std::string status;                         // runlog::display_status; "unknown": none
  std::map<std::string, double> values;       // by column id (summary_columns.h)
  std::vector<std::string> eval_metrics;      // task metric columns found: accuracy, bits_per_byte
};

// Reads one run log (missing file: UsageError; not a slowpipe run log or
// damaged: DataError naming the file) and computes its row.
RunStats read_run_stats(const std::string& path, const SummaryOptions& options);

}  // namespace slowpipe::study
