// The statistic columns of `slowpipe summary`, each declared once: id (the TSV
// header and the key of RunStats::values), title (text and Markdown header),
// unit and how a cell is printed. docs/summary.md defines every one.
// No libtorch here.
#pragma once

#include <string>
#include <vector>

namespace slowpipe::study {

enum class CellFormat {
  kCount,    // integer
  kLoss,     // 4 significant digits
  kSeconds,  // 3 significant digits
  kBytes,    // B, KiB, MiB, GiB
  kRatio,    // 1 decimal and "x"
};

struct SummaryColumn {
  std::string id;     // "train_loss", "accuracy_compressed_best", ...
  std::string title;  // "train loss", "best acc (c)", ...
  std::string unit;   // "nats", "s", "bytes", "1", "bits/byte"
  CellFormat format;
};

// Every statistic column in display order (after the key columns, n and status).
// The time-to-target titles carry the target when one is given
// (target_column_title, summary_target.h): the train rule's time_to_target_s,
// steps_to_target, samples_to_target, tokens_to_target, then the eval rule's
// eval_time_to_target_s, eval_steps_to_target, ... .
const std::vector<SummaryColumn>& summary_columns();
// Task metric columns of the eval table that the summary knows: "accuracy"
// (higher is better) and "bits_per_byte" (lower is better).
const std::vector<std::string>& summary_metrics();
bool metric_higher_is_better(const std::string& metric);

// Whether a larger value of column `id` is better: accuracy*, *speedup*,
// samples_per_s and fp32_ratio; lower is better for every other column
// (losses, bits per byte, times, bytes). Verdicts and `summary --rank` share
// this rule (docs/reproduce.md, docs/summary.md).
bool column_higher_is_better(const std::string& id);

}  // namespace slowpipe::study
