// `slowpipe plot`: which comparison plots a set of run logs gets, their data
// files, gnuplot scripts and PNGs (every plot is listed in docs/summary.md).
//
// Curves (always): train loss against step and against simulated time, a
// trailing mean over `smooth_window` steps; the eval task metric against step
// and simulated time, uncompressed solid and compressed dashed in one colour.
// One colour per seed group: the seed mean with a min-max band (per_seed: one
// line per run); legends from run.label, else the varying keys; titles name
// the workload and network. Channel figures: the forward delta norm and
// relative error per epoch, one panel per boundary. Summary plots, only when
// the runs vary that dimension: final train loss and final metric against the
// bits or K of the forward or backward channel, one line per scheme, error
// bars over seeds; time to the target loss against bandwidth when a target is
// given and the bandwidth varies; the Pareto figures, final train loss against
// bytes on the wire per step and against simulated run time, front drawn,
// points labelled with run.label (summary_rank.h). Data files go to OUT/data/,
// scripts and PNGs to OUT/, so a plot can be restyled and rerun by hand. No
// libtorch here.
#pragma once

#include <string>
#include <vector>

#include "study/summary/summary_stats.h"

namespace slowpipe::study {

struct PlotOptions {
  std::string out_dir;
  SummaryOptions summary;  // target and smoothing window
  // Curves: one thin line per run (the seeds of a group in its colour) instead
  // of the seed mean with its min-max band.
  bool per_seed = false;
};

struct PlotReport {
  std::vector<std::string> written;  // PNG paths
  std::vector<std::string> skipped;  // "NAME: why"
};

// Throws std::runtime_error with gnuplot's message when gnuplot fails.
PlotReport make_plots(const std::vector<RunStats>& runs, const PlotOptions& options);

// DIR/plots when the first argument is a folder, else the first log's folder.
std::string default_plot_dir(const std::vector<std::string>& args,
                             const std::vector<std::string>& paths);

}  // namespace slowpipe::study
