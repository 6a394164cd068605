// What the figure code of `slowpipe plot` shares between its files: the runs,
// their seed groups and legends, the output folder, the report, and small
// helpers (numbers in data files, writing a script and running gnuplot).
// plot_curves.cpp draws the curves against step, simulated time and epoch;
// plot_figures.cpp the summary and Pareto figures. Internal to the study
// libraries (and their tests).
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "study/summary/plot_figures.h"
#include "study/summary/internal/plot_series.h"
#include "study/summary/summary_group.h"

namespace slowpipe::study::detail {

struct PlotContext {
  std::filesystem::path out;
  const std::vector<RunStats>* runs = nullptr;
  std::vector<RunGroup> groups;      // seed groups, sorted by their varying keys
  std::vector<std::string> keys;     // varying, seed pooled
  std::vector<std::string> metrics;  // eval metrics to plot
  std::string setting;               // runs_setting(): workload and network, for titles
  PlotOptions options;
  PlotReport report;
  std::map<const RunStats*, std::string> stems;  // data file prefix per run
  // Train and eval columns with at least one finite value, per run.
  std::map<const RunStats*, std::set<std::string>> train_values, eval_values;
  // Per run: the smoothed train loss by step (x: sim time); each eval metric and
  // METRIC_compressed by step; the per-epoch means of fw{b}_delta_norm and
  // fw{b}_rel_error (by column name).
  std::map<const RunStats*, SeedCurve> train_curve;
  std::map<const RunStats*, std::map<std::string, SeedCurve>> eval_curve, epoch_curve;
};

// The curves of a plot: (group, colour, legend). Against simulated time every
// seed group; against step or epoch, groups that differ only in net.* keys
// give the same curves (the network changes no number the run computes, only
// its simulated time), so only the first of them is drawn, named without the
// net.* keys. Legends: run.label where the group has one (group_legends).
struct Curve {
  size_t group, colour;
  std::string legend;
};
std::vector<Curve> plot_curves_of(const PlotContext& ctx, bool vs_time);

// A number for a data file ("nan" for NaN, 10 significant digits).
std::string plot_number(double v);
void write_text_file(const std::filesystem::path& path, const std::string& text);
// Writes NAME.gp into the output folder, runs gnuplot on it, records NAME.png.
void render_plot(PlotContext& ctx, const std::string& name, const std::string& script);
// "training loss" -> "training loss\ngpt on gcide, net 100Mbps" (ctx.setting,
// or the setting of `groups`' runs when given; a second title line).
std::string plot_title(const PlotContext& ctx, const std::string& what,
                       const std::vector<RunGroup>* groups = nullptr);
// ", simulated on RTX4090": the devices of the runs' net.compute; "" when none.
std::string simulated_on(const PlotContext& ctx);
// The y label of an eval metric ("validation loss [bits/byte]").
std::string metric_label(const std::string& metric);

// plot_curves.cpp: the per-run data files (data/runN_NAME.{train,eval}.tsv),
// the train and eval curves, the channel figures by epoch.
void write_curve_data(PlotContext& ctx);
void train_plots(PlotContext& ctx);
void eval_plots(PlotContext& ctx);
void channel_plots(PlotContext& ctx);

}  // namespace slowpipe::study::detail
