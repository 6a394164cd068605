// `slowpipe clock PUBLISHED.csv`: the compute clock against published
// training throughput (whatif/clock_check.h, docs/compute-clock.md): each
// row's predicted tokens per second and GPU, its error, and the median and
// worst |error| of each split; `--fit` first chooses the shape-aware model's
// constants on the calibration rows.
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <optional>

#include "cli/commands.h"
#include "cli/config_args.h"
#include "common/errors.h"
#include "whatif/clock_check.h"

namespace po = boost::program_options;

namespace slowpipe::cli {

namespace {

void print_constants(const netmodel::ShapedConstants& c, const char* what) {
  std::printf(
      "# %s constants: gemm_ceiling %.3g, half_dim %.4g, attention_ceiling %.3g, "
      "backward_ratio %.3g, memory_efficiency %.3g\n",
      what, c.gemm_ceiling, c.half_dim, c.attention_ceiling, c.backward_ratio, c.memory_efficiency);
}

using SourceScaled = std::vector<std::optional<whatif::Prediction>>;

// `scaled`: the per-source column (--per-source), or null.
void print_rows(const std::vector<whatif::PublishedRow>& rows,
                const std::vector<whatif::Prediction>& p, const SourceScaled* scaled, bool tsv,
                const std::string& split) {
  std::printf(
      tsv ? "id\tsource\tgpu\tdtype\tmode\tmodel\tseq\tsplit\tpublished\tpredicted\terror%s\n"
          : "| id | source | gpu | dtype | mode | model | seq | split | published tok/s/GPU "
            "| predicted | error |%s\n|---|---|---|---|---|---|---|---|---|---|---|%s\n",
      scaled ? (tsv ? "\tper_source_error" : " error, scaled per source |") : "",
      scaled && !tsv ? "---|" : "");
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (!split.empty() && r.split != split) continue;
    std::printf(tsv ? "%s\t%s\t%s\t%s\t%s\t%s\t%lld\t%s\t%.0f\t%.0f\t%.4f"
                    : "| %s | %s | %s | %s | %s | %s | %lld | %s | %.0f | %.0f | %+.1f%% |",
                r.id.c_str(), r.source_id.c_str(), r.gpu.c_str(), r.dtype.c_str(),
                r.execution.c_str(), r.model.c_str(), static_cast<long long>(r.seq),
                r.split.c_str(), r.published_tokens_per_s, p[i].tokens_per_s,
                tsv ? p[i].error : 100 * p[i].error);
    if (scaled && (*scaled)[i])
      std::printf(tsv ? "\t%.4f" : " %+.1f%% |", (tsv ? 1 : 100) * (*scaled)[i]->error);
    else if (scaled)
      std::printf(tsv ? "\t" : " (alone) |");
    std::printf("\n");
  }
}

void print_counts(size_t rows, const std::vector<std::string>& skipped, const std::string& layout,
                  int laid_out) {
  std::printf("# %zu rows predicted, %zu skipped (no tokens/s per GPU or incomplete shape)\n", rows,
              skipped.size());
  for (const std::string& s : skipped) std::printf("# skipped %s\n", s.c_str());
  if (!layout.empty())
    std::printf("# %d of %zu rows with a parallel layout (%s)\n", laid_out, rows, layout.c_str());
}

void print_summaries(const std::vector<whatif::PublishedRow>& rows,
                     const std::vector<whatif::Prediction>& predictions, const SourceScaled* scaled,
                     const std::vector<std::string>& parts) {
  for (const std::string& part : parts) {
    const auto s = whatif::summarise(rows, predictions, part);
    const char* name = part.empty() ? "all" : part.c_str();
    std::printf("# %s: %d rows, median |error| %.1f%%, worst %.1f%%\n", name, s.rows,
                100 * s.median_abs, 100 * s.worst_abs);
    if (!scaled) continue;
    const auto t = whatif::summarise(rows, *scaled, part);
    std::printf(
        "# %s, scaled per source (leave one out): %d rows, median |error| %.1f%%, worst %.1f%%\n",
        name, t.rows, 100 * t.median_abs, 100 * t.worst_abs);
  }
}

netmodel::ShapedConstants parse_constants(const std::string& given) {
  double v[5];
  if (std::sscanf(given.c_str(), "%lf,%lf,%lf,%lf,%lf", &v[0], &v[1], &v[2], &v[3], &v[4]) != 5 ||
      !(v[0] > 0 && v[1] >= 0 && v[2] > 0 && v[3] > 0 && v[4] > 0)) {
    throw UsageError("bad value for '--constants': '" + given + "' (five positive numbers)");
  }
  return {v[0], v[1], v[2], v[3], v[4]};
}

// The splits to summarise: `only`, or the set's splits in order of
// appearance; then "" (all rows). UsageError when `only` is not among them.
std::vector<std::string> splits_of(const std::vector<whatif::PublishedRow>& rows,
                                   const std::string& only) {
  std::vector<std::string> parts;
  for (const auto& r : rows) {
    if (std::find(parts.begin(), parts.end(), r.split) == parts.end()) parts.push_back(r.split);
  }
  if (only.empty()) {
    parts.push_back("");
    return parts;
  }
  if (std::find(parts.begin(), parts.end(), only) == parts.end()) {
    std::string known;
    for (const auto& p : parts) known += (known.empty() ? "" : ", ") + p;
    throw UsageError("bad value for '--split': '" + only + "' (the set's splits: " + known + ")");
  }
  return {only};
}

}  // namespace

int cmd_clock(const Args& args) {
  po::options_description desc(
      "usage: slowpipe clock PUBLISHED.csv [--layout LAYOUT.csv] [--model shaped|analytic]\n"
      "                      [--fit] [--per-source] [--tsv]\n\n"
      "Predicts each published row's training throughput (tokens per second and GPU)\n"
      "with a compute model and prints the errors, and the median and worst |error|\n"
      "of each split (docs/compute-clock.md). Options");
  std::string path, model = "shaped", split, given, layout;
  desc.add_options()("help,h", "this help")("published", po::value(&path), "the published set")(
      "model", po::value(&model), "shaped (default) or analytic")(
      "fit", "choose the shaped model's constants on the calibration rows first")(
      "constants", po::value(&given),
      "the shaped model's constants instead of its own: GEMM_CEILING,HALF_DIM,ATTENTION_CEILING,"
      "BACKWARD_RATIO,MEMORY_EFFICIENCY")("tsv",
                                          "tab-separated output (default: a markdown table)")(
      "split", po::value(&split),
      "print only this split's rows and summary (e.g. calibration, held-out)")(
      "layout", po::value(&layout),
      "the rows' parallel layouts (experiments/clock/layout.csv): tensor, pipeline "
      "(interleaved) and data parallel exchanges, CPU offload; rows it does not list are timed "
      "as one device")(
      "per-source",
      "also each row scaled by the median published / predicted of its source's other rows "
      "(leave one out; docs/compute-clock.md, \"One stack at a time\")");
  po::positional_options_description pos;
  pos.add("published", 1);
  const po::variables_map vm = parse_command_line(args, desc, pos);
  if (vm.count("help")) {
    std::cout << desc << "\nThe set: experiments/clock/published.csv.\n";
    return 0;
  }
  if (path.empty()) throw UsageError("no published set given (slowpipe clock PUBLISHED.csv)");
  if (model != "shaped" && model != "analytic") {
    throw UsageError("bad value for '--model': '" + model + "' (shaped or analytic)");
  }
  if (vm.count("fit") && model != "shaped") throw UsageError("--fit needs --model shaped");
  std::vector<std::string> skipped;
  auto rows = whatif::read_published(path, &skipped);
  if (rows.empty()) {
    throw DataError(path + ": no row can be timed" +
                    (skipped.empty() ? std::string(" (no rows)") : " (" + skipped.front() + ")"));
  }
  const int laid_out = layout.empty() ? 0 : whatif::apply_layouts(layout, rows);
  const std::vector<std::string> parts = splits_of(rows, split);
  netmodel::ShapedConstants constants;
  if (vm.count("fit")) constants = whatif::fit_constants(rows);
  if (!given.empty()) constants = parse_constants(given);
  if (model == "shaped") print_constants(constants, vm.count("fit") ? "fitted" : "the model's");
  std::vector<whatif::Prediction> predictions;
  predictions.reserve(rows.size());
  for (const auto& r : rows) predictions.push_back(whatif::predict(r, model, constants));
  SourceScaled scaled;
  if (vm.count("per-source")) scaled = whatif::per_source(rows, predictions);
  const SourceScaled* const by_source = vm.count("per-source") ? &scaled : nullptr;
  print_rows(rows, predictions, by_source, vm.count("tsv") > 0, split);
  print_counts(rows.size(), skipped, layout, laid_out);
  print_summaries(rows, predictions, by_source, parts);
  return 0;
}

}  // namespace slowpipe::cli
