// `slowpipe summary RUN.h5... | DIR`: one table row per run, or per group of
// runs that differ only in run.seed, as aligned text, TSV or Markdown
// (definitions: docs/summary.md; the work: study/summary_*.h); `--rank BY`
// orders the rows and marks the Pareto fronts (study/summary/summary_rank.h);
// `--target L [--target-on train|eval]` adds the time, steps, samples and
// tokens to a loss (study/summary/summary_target.h).
#include <boost/program_options.hpp>
#include <cmath>
#include <iostream>

#include "cli/commands.h"
#include "cli/config_args.h"
#include "common/errors.h"
#include "study/summary/summary_inputs.h"
#include "study/summary/summary_table.h"
#include "study/summary/summary_target.h"

namespace po = boost::program_options;

namespace slowpipe::cli {

int cmd_summary(const Args& args) {
  po::options_description desc(
      "usage: slowpipe summary RUN.h5... | DIR [--target LOSS [--target-on train|eval]] "
      "[--smooth N] [--tsv | --md] [--no-group] [--rank BY] [--wide]\n\nOptions");
  std::vector<std::string> inputs;
  std::string target_on = "train";
  study::SummaryOptions options;
  desc.add_options()("help,h", "this help")("runs", po::value(&inputs)->multitoken(),
                                            "run logs, or folders of run logs (*.h5)")(
      "target", po::value(&options.target_loss),
      "train loss whose first (smoothed) reach is timed in simulated seconds")(
      "target-on", po::value(&target_on),
      "the rule for --target: train (the smoothed train loss, default) or eval (the earliest "
      "evaluation at or below it); --wide shows steps, samples and tokens to it too")(
      "smooth", po::value(&options.smooth_window)->default_value(10),
      "trailing-mean window in steps for --target")("tsv", "tab-separated values")(
      "md", "a Markdown table")("wide",
                                "text: every column and the full key names (default: the "
                                "most important columns, fitted to 100 columns)")(
      "no-group", "one row per run (do not pool seeds)")(
      "rank", po::value<std::string>(),
      "order the rows by this column id (train_loss, wire_bytes, sim_time_s, state_bytes, ...), "
      "with a rank and the Pareto fronts of train loss against bytes and time");
  po::variables_map vm;
  if (!parse_runs_command(args, desc, vm)) return 0;
  if (vm.count("tsv") + vm.count("md") + vm.count("wide") > 1) {
    throw UsageError("--tsv, --md and --wide exclude each other");
  }
  if (options.smooth_window < 1) throw UsageError("--smooth must be at least 1 step");
  options.has_target = vm.count("target") > 0;
  if (options.has_target && !std::isfinite(options.target_loss)) {
    throw UsageError("--target must be a finite loss");
  }
  options.target_on = study::parse_target_rule(target_on, "--target-on");
  if (vm.count("target-on") && !options.has_target) throw UsageError("--target-on needs --target");
  const auto runs = study::read_runs(study::expand_run_paths(inputs), options);
  auto table = study::build_summary_table(runs, !vm.count("no-group"), options);
  if (vm.count("rank")) study::rank_summary_table(table, vm["rank"].as<std::string>());
  const auto format = vm.count("tsv")    ? study::SummaryFormat::kTsv
                      : vm.count("md")   ? study::SummaryFormat::kMarkdown
                      : vm.count("wide") ? study::SummaryFormat::kTextWide
                                         : study::SummaryFormat::kText;
  study::write_summary(table, format, std::cout);
  return 0;
}

}  // namespace slowpipe::cli
