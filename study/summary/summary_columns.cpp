// The summary's statistic columns (see summary_columns.h, docs/summary.md).
#include "study/summary/summary_columns.h"

namespace slowpipe::study {
namespace {

// The eval statistics of one eval column: final and best, plain and compressed.
void add_eval_columns(std::vector<SummaryColumn>& cols, const std::string& id,
                      const std::string& title, const std::string& unit) {
  cols.push_back({id, title, unit, CellFormat::kLoss});
  cols.push_back({id + "_best", "best " + title, unit, CellFormat::kLoss});
  cols.push_back({id + "_compressed", title + " (c)", unit, CellFormat::kLoss});
  cols.push_back({id + "_compressed_best", "best " + title + " (c)", unit, CellFormat::kLoss});
}

std::vector<SummaryColumn> make_columns() {
  std::vector<SummaryColumn> cols = {
      {"steps", "steps", "1", CellFormat::kCount},
      {"train_loss", "train loss", "nats", CellFormat::kLoss},
  };
  add_eval_columns(cols, "eval_loss", "eval loss", "nats");
  add_eval_columns(cols, "accuracy", "acc", "1");
  add_eval_columns(cols, "bits_per_byte", "bits/byte", "bits/byte");
  const std::vector<SummaryColumn> rest = {
      {"sim_time_s", "sim time [s]", "s", CellFormat::kSeconds},
      {"time_to_target_s", "sim time to target [s]", "s", CellFormat::kSeconds},
      {"steps_to_target", "steps to target", "1", CellFormat::kCount},
      {"samples_to_target", "samples to target", "samples", CellFormat::kCount},
      {"tokens_to_target", "tokens to target", "tokens", CellFormat::kCount},
      {"eval_time_to_target_s", "sim time to eval target [s]", "s", CellFormat::kSeconds},
      {"eval_steps_to_target", "steps to eval target", "1", CellFormat::kCount},
      {"eval_samples_to_target", "samples to eval target", "samples", CellFormat::kCount},
      {"eval_tokens_to_target", "tokens to eval target", "tokens", CellFormat::kCount},
      {"wall_time_s", "wall time [s]", "s", CellFormat::kSeconds},
      {"fw_bytes", "fw/step", "bytes", CellFormat::kBytes},
      {"bw_bytes", "bw/step", "bytes", CellFormat::kBytes},
      {"grad_bytes", "grad/step", "bytes", CellFormat::kBytes},
      {"wire_bytes", "wire/step", "bytes", CellFormat::kBytes},
      {"fp32_ratio", "vs fp32", "1", CellFormat::kRatio},
      {"state_bytes", "channel state", "bytes", CellFormat::kBytes},
  };
  cols.insert(cols.end(), rest.begin(), rest.end());
  return cols;
}

}  // namespace

const std::vector<SummaryColumn>& summary_columns() {
  static const std::vector<SummaryColumn> columns = make_columns();
  return columns;
}

const std::vector<std::string>& summary_metrics() {
  static const std::vector<std::string> metrics = {"accuracy", "bits_per_byte"};
  return metrics;
}

bool metric_higher_is_better(const std::string& metric) {
  return metric == "accuracy";
}

bool column_higher_is_better(const std::string& id) {
  return id.rfind("accuracy", 0) == 0 || id.find("speedup") != std::string::npos ||
         id == "samples_per_s" || id == "fp32_ratio";
}

}  // namespace slowpipe::study
