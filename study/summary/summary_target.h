// Time to a target loss, in steps, tokens (or samples) and simulated seconds,
// under two rules (definitions: docs/summary.md, "Time to target"):
//  - train: the first train row whose trailing mean of `loss` over the last
//    --smooth rows is <= the target (the summary's time_to_target_s);
//  - eval: the earliest evaluation row whose validation `loss` is <= the
//    target, on the run's own evaluation cadence (eval.every), as Protocol
//    NanoGPT's benchmark scores a record (the first validation at or below
//    3.276 nats).
// "Not reached" is +infinity in every count (a run that never gets there, a
// NaN loss, a run still going); a quantity the log cannot give is NaN. Values
// go into RunStats::values under the column ids below. No libtorch here.
#pragma once

#include <string>
#include <vector>

#include "runlog/runlog.h"
#include "study/summary/summary_stats.h"

namespace slowpipe::study {

// Where a run reaches the target: the step, the samples seen by that step,
// the tokens seen (samples x tokens per sample; NaN when a sample is not a
// token sequence) and the simulated seconds. All +infinity when not reached.
struct TargetReach {
  double steps = 0, samples = 0, tokens = 0, sim_time_s = 0;
};

// The first row whose trailing mean (window rows) of `loss` is <= target;
// loss.size() when none is (NaN never reaches it).
size_t first_smoothed_row_at_or_below(const std::vector<double>& loss, double target, int window);

// The column ids of one rule, in display order: seconds, steps, samples,
// tokens. kTrain: time_to_target_s, steps_to_target, samples_to_target,
// tokens_to_target; kEval: the same with the prefix "eval_".
std::vector<std::string> target_column_ids(TargetRule rule);
// Whether column `id` is a time-to-target column (needs a target), and of which rule.
bool is_target_column(const std::string& id);
TargetRule target_column_rule(const std::string& id);
// "train" or "eval", as --target-on spells it; parse_target_rule reads it back
// (UsageError "WHAT NAME: one of train, eval" otherwise).
std::string target_rule_name(TargetRule rule);
TargetRule parse_target_rule(const std::string& name, const std::string& what);

// A to-target column's title with "target" replaced by what it is:
// "sim time to target [s]" -> "sim time to loss ≤ 4.5 [s]", or for the eval
// rule's "steps to eval target" -> "steps to eval loss ≤ 4.5".
std::string target_column_title(const std::string& title, double target_loss);

// Tokens per sample of a run: config.model.seq_len for a language model (its
// eval table logs bits_per_byte, docs/hdf5-schema.md), NaN otherwise.
double tokens_per_sample(const RunStats& run, const runlog::Table& eval);

// The two rules on one run's tables. `batch_size`: config.pipeline.batch_size,
// the global batch, for samples where the train table has no `samples` row at
// that step.
TargetReach train_target_reach(const runlog::Table& train, double target, int window,
                               double tokens_per_sample, double batch_size);
TargetReach eval_target_reach(const runlog::Table& eval, const runlog::Table& train, double target,
                              double tokens_per_sample, double batch_size);

// Fills both rules' columns of `run` (options.has_target only): time_to_target_s
// where the train table has loss and sim_time_s, the train rule's steps,
// samples and tokens where it has loss, the eval rule's where the eval table
// has rows with loss. Samples are reported for every run, tokens for language
// models only.
void add_target_stats(RunStats& run, const runlog::Table& train, const runlog::Table& eval,
                      const SummaryOptions& options);

}  // namespace slowpipe::study
