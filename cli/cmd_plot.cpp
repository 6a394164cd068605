// `slowpipe plot RUN.h5... | DIR [--out DIR] [--smooth N] [--target LOSS
// [--target-on train|eval]] [--per-seed]`:
// comparison plots (gnuplot PNGs, with their scripts and data files) of run
// logs or a sweep folder; which plots exist and when: docs/summary.md.
#include <boost/program_options.hpp>
#include <cmath>
#include <iostream>

#include "cli/commands.h"
#include "cli/config_args.h"
#include "common/errors.h"
#include "study/summary/plot_figures.h"
#include "study/summary/summary_inputs.h"
#include "study/summary/summary_target.h"

namespace po = boost::program_options;

namespace slowpipe::cli {

int cmd_plot(const Args& args) {
  po::options_description desc(
      "usage: slowpipe plot RUN.h5... | DIR [--out DIR] [--smooth N] [--target LOSS "
      "[--target-on train|eval]] [--per-seed]\n\nOptions");
  std::vector<std::string> inputs;
  std::string target_on = "train";
  study::PlotOptions options;
  desc.add_options()("help,h", "this help")("runs", po::value(&inputs)->multitoken(),
                                            "run logs, or folders of run logs (*.h5)")(
      "out", po::value(&options.out_dir),
      "folder for the PNGs, their .gp scripts and data/ (default: DIR/plots for a folder, "
      "else the first log's folder)")("smooth",
                                      po::value(&options.summary.smooth_window)->default_value(10),
                                      "trailing-mean window of the train loss, in steps (1: raw)")(
      "target", po::value(&options.summary.target_loss),
      "train loss for the time-to-target plot against bandwidth")(
      "target-on", po::value(&target_on),
      "the rule for --target: train (smoothed train loss, default) or eval (earliest "
      "evaluation); adds the time-to-target Pareto figures and the target line on eval plots")(
      "per-seed",
      "curves: one thin line per run (a seed group's runs in its colour) instead of the seed "
      "mean with its min-max band");
  po::variables_map vm;
  if (!parse_runs_command(args, desc, vm)) return 0;
  options.per_seed = vm.count("per-seed") > 0;
  if (options.summary.smooth_window < 1) throw UsageError("--smooth must be at least 1 step");
  options.summary.has_target = vm.count("target") > 0;
  if (options.summary.has_target && !std::isfinite(options.summary.target_loss)) {
    throw UsageError("--target must be a finite loss");
  }
  options.summary.target_on = study::parse_target_rule(target_on, "--target-on");
  if (vm.count("target-on") && !options.summary.has_target)
    throw UsageError("--target-on needs --target");
  const auto paths = study::expand_run_paths(inputs);
  const auto runs = study::read_runs(paths, options.summary);
  if (options.out_dir.empty()) options.out_dir = study::default_plot_dir(inputs, paths);
  const study::PlotReport report = study::make_plots(runs, options);
  for (const auto& png : report.written) std::cout << "wrote " << png << "\n";
  for (const auto& why : report.skipped) std::cout << "skipped " << why << "\n";
  return 0;
}

}  // namespace slowpipe::cli
