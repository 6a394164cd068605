// The comparison plots (see plot_figures.h).
#include "study/summary/plot_figures.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "common/errors.h"
#include "common/units.h"
#include "netmodel/compute_model.h"
#include "runlog/runlog.h"
#include "study/summary/internal/plot_context.h"
#include "study/summary/internal/plot_gnuplot.h"
#include "study/summary/internal/plot_labels.h"
#include "study/summary/internal/plot_series.h"
#include "study/summary/summary_columns.h"
#include "study/summary/summary_group.h"
#include "study/summary/summary_target.h"

namespace slowpipe::study {
namespace {

namespace fs = std::filesystem;
using detail::Curve;
using detail::plot_number;
using detail::plot_title;
using detail::PlotContext;
using detail::render_plot;
using detail::simulated_on;
using detail::write_text_file;
using Context = PlotContext;

// The factor by which the two evaluations of a summary plot are shifted apart.
constexpr double kEvalShift = 1.04;
// The factor between neighbouring lines of a summary plot.
constexpr double kLineSpread = 1.012;

std::set<double> distinct_x(const std::vector<SummaryLine>& lines) {
  std::set<double> xs;
  for (const auto& line : lines) {
    for (const auto& p : line.points) xs.insert(p.x);
  }
  return xs;
}

// One summary plot: lines with error bars (compressed variant dashed), and
// horizontal reference lines (fp32).
void summary_plot(Context& ctx, const std::string& name, const std::string& title,
                  const std::string& xlabel, const std::string& ylabel, bool log_x2,
                  const std::vector<SummaryLine>& lines, const std::vector<SummaryLine>& reference,
                  bool with_compressed) {
  std::string script = gp_preamble(name + ".png", title);
  script += "set xlabel " + gp_quote(xlabel) + "\nset ylabel " + gp_quote(ylabel) + "\n";
  script += log_x2 ? "set logscale x 2\n" : "set logscale x 10\n";
  // The x range ends at the data (not the next power of ten), with a margin.
  script += "set autoscale xfix\nset offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05\n";
  std::string tics;  // a tic at every x that has a point
  for (double x : distinct_x(lines)) tics += (tics.empty() ? "" : ", ") + plot_number(x);
  script += "set xtics (" + tics + ")\n";
  std::string plots;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::ostringstream d;
    d << "# x\tmean\tstd\tmean_compressed\tstd_compressed\tn\n";
    bool compressed = false;
    for (const auto& p : lines[i].points) {
      // One seed: no error bar (0), not a missing point.
      d << plot_number(p.x) << "\t" << plot_number(p.y) << "\t"
        << plot_number(std::isnan(p.y_std) ? 0 : p.y_std) << "\t" << plot_number(p.y_c) << "\t"
        << plot_number(std::isnan(p.y_c_std) ? 0 : p.y_c_std) << "\t" << p.n << "\n";
      compressed = compressed || std::isfinite(p.y_c);
    }
    const std::string file = "data/" + name + "_line" + std::to_string(i + 1) + ".tsv";
    write_text_file(ctx.out / file, d.str());
    const std::string colour = " lc rgb " + gp_quote(gp_colour(i));
    // On the log x axis, line i of L is shifted by kLineSpread^(i - (L-1)/2) and,
    // with both evaluations, the uncompressed one by 1/kEvalShift and the
    // compressed one by kEvalShift, so error bars at one x do not overlap.
    const double spread =
        std::pow(kLineSpread, static_cast<double>(i) - (static_cast<double>(lines.size()) - 1) / 2);
    const bool both = with_compressed && compressed;
    const double plain_x = both ? spread / kEvalShift : spread;
    plots += std::string(plots.empty() ? "plot " : ", \\\n     ") + gp_quote(file) + " using " +
             (plain_x == 1 ? std::string("1") : "($1*" + plot_number(plain_x) + ")") +
             ":2:3 with yerrorlines pt 7 lw 1.5" + colour + " title " + gp_quote(lines[i].legend);
    if (both) {
      plots += ", \\\n     " + gp_quote(file) + " using ($1*" + plot_number(spread * kEvalShift) +
               "):4:5 with yerrorlines pt 6 lw 1.5 dt 2" + colour + " title " +
               gp_quote(lines[i].legend + " (compressed eval)");
    }
  }
  for (size_t r = 0; r < reference.size(); ++r) {  // dotted, each in a colour of its own
    const std::string colour = reference.size() == 1 ? "#555555" : gp_colour(lines.size() + r);
    plots += ", \\\n     " + plot_number(reference[r].points.front().y) +
             " with lines lw 1.5 dt 3 lc rgb " + gp_quote(colour) + " title " +
             gp_quote(reference[r].legend);
  }
  render_plot(ctx, name, script + plots + "\n");
}

// Final train loss (no compressed variant), then each eval metric, against
// the bits and the K of each channel.
void metric_summary_plots(Context& ctx) {
  const std::vector<std::pair<std::string, std::string>> channels = {{"compress.fw", "fw"},
                                                                     {"compress.bw", "bw"}};
  std::vector<std::string> metrics = {"train_loss"};
  metrics.insert(metrics.end(), ctx.metrics.begin(), ctx.metrics.end());
  for (const auto& metric : metrics) {
    for (const auto& [key, dir] : channels) {
      for (const std::string dimension : {"bits", "k"}) {
        const std::string name = "final_" + metric + "_vs_" + dir + "_" + dimension;
        std::vector<SummaryLine> reference;
        const auto lines = metric_lines(ctx.groups, ctx.keys, key, dimension, metric, reference);
        const size_t xs = distinct_x(lines).size();
        if (xs < 2) {
          ctx.report.skipped.push_back(name + ": the runs do not vary the " + dimension + " of " +
                                       key + " (" + std::to_string(xs) + " value" +
                                       (xs == 1 ? "" : "s") + ")");
          continue;
        }
        const std::string xlabel = dimension == "bits" ? dir + " bits per value (" + key + ")"
                                                       : dir + " fraction kept K (" + key + ")";
        const std::string what = "final " + detail::metric_label(metric);
        summary_plot(ctx, name, plot_title(ctx, what + " (mean \u00b1 std over seeds)"), xlabel,
                     what, dimension == "bits", lines, reference, metric != "train_loss");
      }
    }
  }
}

// The seconds column of the rule --target-on chose (summary_target.h).
std::string target_seconds_column(const Context& ctx) {
  return target_column_ids(ctx.options.summary.target_on)[0];
}

// "train loss ≤ 4.5 (trailing mean of 10 steps)" or "eval loss ≤ 4.5 (earliest evaluation)".
std::string target_what(const Context& ctx) {
  const SummaryOptions& o = ctx.options.summary;
  std::ostringstream s;
  if (o.target_on == TargetRule::kEval) {
    s << "eval loss \u2264 " << o.target_loss << " (earliest evaluation)";
  } else {
    s << "train loss \u2264 " << o.target_loss << " (trailing mean of " << o.smooth_window
      << " steps)";
  }
  return s.str();
}

void target_plot(Context& ctx) {
  const std::string name = "time_to_target_vs_bandwidth";
  if (!ctx.options.summary.has_target) {
    ctx.report.skipped.push_back(name + ": no --target loss given");
    return;
  }
  size_t unreached = 0;
  auto lines = target_lines(ctx.groups, ctx.keys, unreached, target_seconds_column(ctx));
  for (auto& line : lines) {
    for (auto& p : line.points) p.x /= 1e6;  // Mbit/s
  }
  const size_t xs = distinct_x(lines).size();
  if (xs < 2) {
    ctx.report.skipped.push_back(name + ": fewer than 2 bandwidths with the target reached (" +
                                 std::to_string(unreached) + " point(s) never reached it)");
    return;
  }
  std::ostringstream title;
  title << "simulated time to " << target_what(ctx) << simulated_on(ctx);
  summary_plot(ctx, name, plot_title(ctx, title.str()), "bandwidth [Mbit/s]",
               "simulated time to target [s]", false, lines, {}, false);
  if (unreached > 0) {
    ctx.report.skipped.push_back(name + ": " + std::to_string(unreached) +
                                 " point(s) left out, the target was never reached");
  }
}

// The x range of a Pareto figure: the points' smallest and largest positive x with a margin of
// 1.3x each side ({1, 10} when none is positive).
std::pair<double, double> pareto_x_range(const std::vector<ParetoPoint>& points) {
  double lo = INFINITY, hi = 0;
  for (const auto& p : points) {
    if (p.x > 0) lo = std::min(lo, p.x), hi = std::max(hi, p.x);
  }
  if (!(hi > 0)) return {1, 10};
  return {lo / 1.3, hi * 1.3};
}

// The y range: the points' loss ± std, with 8% of that span below and 10% above (a span of 0
// counts as 10% of the loss, or 1), so the label placement knows where the points fall.
std::pair<double, double> pareto_y_range(const std::vector<ParetoPoint>& points) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& p : points) {
    const double sd = std::isfinite(p.loss_std) ? p.loss_std : 0;
    lo = std::min(lo, p.loss - sd), hi = std::max(hi, p.loss + sd);
  }
  double span = hi - lo;
  if (!(span > 0)) span = std::abs(hi) > 0 ? 0.1 * std::abs(hi) : 1;
  return {lo - 0.08 * span, hi + 0.1 * span};
}

// "set xrange" to `range` and "set xtics (...)" at 1, 2 and 5 times the powers of ten inside it,
// so a log axis spanning less than a decade still has labelled tics.
std::string log_tics(const std::pair<double, double>& range) {
  const auto [lo, hi] = range;
  std::string tics;
  for (double decade = std::pow(10, std::floor(std::log10(lo))); decade <= hi; decade *= 10) {
    for (const double m : {1.0, 2.0, 5.0}) {
      const double x = m * decade;
      if (x >= lo && x <= hi) tics += (tics.empty() ? "" : ", ") + plot_number(x);
    }
  }
  const std::string range_cmd = "set xrange [" + plot_number(lo) + ":" + plot_number(hi) + "]\n";
  return range_cmd + (tics.empty() ? "" : "set xtics (" + tics + ")\n");
}

// The plot area of a Pareto figure, fixed (fractions of the PNG) so the label placement knows
// its size in pixels: room for the title above, the key to the right.
constexpr double kParetoLeft = 0.07, kParetoRight = 0.83, kParetoBottom = 0.08, kParetoTop = 0.88;

// Where the points' labels go (plot_labels.h), for the figure's ranges and plot area; labels in
// font size 9 (about 7 pixels a character, 14 a line with pngcairo).
std::vector<LabelPlacement> pareto_labels(const std::vector<ParetoPoint>& points) {
  LabelFrame frame;
  std::tie(frame.x_min, frame.x_max) = pareto_x_range(points);
  std::tie(frame.y_min, frame.y_max) = pareto_y_range(points);
  frame.log_x = true;
  frame.width_px = (kParetoRight - kParetoLeft) * kPngWidthPx;
  frame.height_px = (kParetoTop - kParetoBottom) * kPngHeightPx;
  frame.char_width_px = 7, frame.line_height_px = 14, frame.point_radius_px = 7;
  std::vector<LabelledPoint> labelled;
  labelled.reserve(points.size());
  for (const auto& p : points) labelled.push_back({p.x, p.loss, p.loss_std, p.label});
  return place_labels(labelled, frame);
}

// data/NAME.tsv: one row per point (x, x_std, loss, loss_std, n, front, label, then its label's
// anchor label_x, label_y, right-aligned 1/0, leader line 1/0);
// data/NAME_front.tsv: the front's points by x, drawn as a step line.
void write_pareto_data(Context& ctx, const std::string& name,
                       const std::vector<ParetoPoint>& points,
                       const std::vector<LabelPlacement>& labels) {
  std::ostringstream d, f;
  d << "# x\tx_std\tloss\tloss_std\tn\tfront\tlabel\tlabel_x\tlabel_y\tlabel_right\tleader\n";
  std::vector<std::pair<double, double>> front;
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    const auto& l = labels[i];
    d << plot_number(p.x) << "\t" << plot_number(p.x_std) << "\t" << plot_number(p.loss) << "\t"
      << plot_number(p.loss_std) << "\t" << p.n << "\t" << (p.front ? 1 : 0) << "\t" << p.label
      << "\t" << plot_number(l.x) << "\t" << plot_number(l.y) << "\t" << (l.right_aligned ? 1 : 0)
      << "\t" << (l.leader ? 1 : 0) << "\n";
    if (p.front) front.emplace_back(p.x, p.loss);
  }
  std::sort(front.begin(), front.end());
  f << "# x\tloss\n";
  for (const auto& [x, loss] : front) f << plot_number(x) << "\t" << plot_number(loss) << "\n";
  write_text_file(ctx.out / "data" / (name + ".tsv"), d.str());
  write_text_file(ctx.out / "data" / (name + "_front.tsv"), f.str());
}

// The plot command of a Pareto figure: the front's steps, leader lines, points with error bars,
// the front's points circled, and the labels at their anchors (left- or right-aligned).
std::string pareto_plot_command(const std::string& name) {
  const std::string data = gp_quote("data/" + name + ".tsv");
  const std::string label_style = " font ',9' noenhanced notitle";
  return "plot " + gp_quote("data/" + name + "_front.tsv") +
         " using 1:2 with steps lw 2 dt 2 lc rgb '#555555' title 'Pareto front', \\\n     " + data +
         " using 1:($11 > 0 ? $3 : NaN):($8 - $1):($9 - $3) with vectors nohead lw 1 "
         "lc rgb '#999999' notitle, \\\n     " +
         data + " using 1:3:4 with yerrorbars pt 7 ps 1.2 lc rgb " + gp_quote(gp_colour(0)) +
         " title 'seed group', \\\n     " + data +
         " using 1:($6 > 0 ? $3 : NaN) with points pt 6 ps 2.5 lw 1.5 lc rgb " +
         gp_quote(gp_colour(1)) + " title 'on the front', \\\n     " + data +
         " using 8:($10 > 0 ? NaN : $9):7 with labels left" + label_style + ", \\\n     " + data +
         " using 8:($10 > 0 ? $9 : NaN):7 with labels right" + label_style + "\n";
}

// Final train loss (or, `y_column` a to-target seconds column, the simulated
// time to the target) against wire bytes per step or simulated run time, the
// Pareto front as a step line, points labelled (docs/summary.md).
// `groups`: the seed groups drawn; `at`: " at 100Mbps" for one bandwidth of several.
// `keys`: the varying keys that name a point without a run.label.
void pareto_plot(Context& ctx, const std::string& x_column, const std::string& name,
                 const std::vector<RunGroup>& groups, const std::vector<std::string>& keys,
                 const std::string& at, const std::string& y_column = "train_loss") {
  const bool bytes = x_column == "wire_bytes", to_target = y_column != "train_loss";
  size_t left_out = 0;
  const auto points = pareto_points(groups, keys, x_column, left_out, y_column);
  if (points.size() < 2) {
    ctx.report.skipped.push_back(name + ": fewer than 2 seed groups with a " +
                                 (to_target ? "reached target" : std::string("train loss")) +
                                 " and " + x_column);
    return;
  }
  write_pareto_data(ctx, name, points, pareto_labels(points));
  const std::string what = to_target ? "simulated time to " + target_what(ctx)
                                     : "final train loss (mean \u00b1 std over seeds)";
  std::string script = gp_preamble(
      name + ".png",
      plot_title(ctx,
                 what + " against " +
                     std::string(bytes ? "bytes on the wire per step" : "simulated run time") +
                     (bytes && !to_target ? "" : at + simulated_on(ctx)),
                 &groups));
  script += "set xlabel " +
            gp_quote(bytes ? "bytes on the wire per step, fw + bw + grad [bytes]"
                           : "simulated time of the whole run [s]") +
            "\nset ylabel " +
            gp_quote(to_target ? "simulated time to target [s], mean over the seeds that reached it"
                               : "final train loss [nats], mean of the last 10% of steps") +
            "\nset logscale x 10\n";
  script += "set lmargin at screen " + plot_number(kParetoLeft) + "\nset rmargin at screen " +
            plot_number(kParetoRight) + "\nset bmargin at screen " + plot_number(kParetoBottom) +
            "\nset tmargin at screen " + plot_number(kParetoTop) + "\n";
  const auto [y_lo, y_hi] = pareto_y_range(points);
  script += "set yrange [" + plot_number(y_lo) + ":" + plot_number(y_hi) + "]\n";
  if (bytes) script += "set format x '%.0s %cB'\n";  // 500 kB, 3 MB (powers of 1000)
  script += log_tics(pareto_x_range(points)) + pareto_plot_command(name);
  render_plot(ctx, name, script);
  if (left_out > 0) {
    ctx.report.skipped.push_back(
        name + ": " + std::to_string(left_out) + " seed group(s) left out (diverged, or no " +
        (to_target ? "reached target" : std::string("train loss")) + " or " + x_column + ")");
  }
}

// Against bytes, groups that differ only in net.* keys are one point (the
// network changes no computed number; the first of them is drawn). Against
// time, one figure per link bandwidth when the runs have several
// (pareto_loss_vs_sim_time_100Mbps.png), else one.
void pareto_plots(Context& ctx) {
  std::vector<std::string> keys, no_bandwidth;
  for (const auto& key : ctx.keys) {
    if (key.rfind("net.", 0) != 0) keys.push_back(key);
    if (key != "net.preset" && key != "net.bandwidth") no_bandwidth.push_back(key);
  }
  std::set<std::string> seen;
  std::vector<RunGroup> by_bytes;
  std::map<double, std::vector<RunGroup>> by_bandwidth;  // NaN: unknown
  for (const auto& group : ctx.groups) {
    if (seen.insert(legend_of(group, keys)).second) by_bytes.push_back(group);
    const double bps = run_bandwidth_bps(*group.runs.front());
    by_bandwidth[std::isnan(bps) ? -1 : bps].push_back(group);
  }
  pareto_plot(ctx, "wire_bytes", "pareto_loss_vs_wire_bytes", by_bytes, keys, "");
  // With a target: its simulated time against wire bytes, per bandwidth as against time.
  const bool target = ctx.options.summary.has_target;
  const std::string to_target = target_seconds_column(ctx);
  if (by_bandwidth.size() <= 1) {
    pareto_plot(ctx, "sim_time_s", "pareto_loss_vs_sim_time", ctx.groups, ctx.keys, "");
    if (target)
      pareto_plot(ctx, "wire_bytes", "pareto_time_to_target_vs_wire_bytes", ctx.groups, ctx.keys,
                  "", to_target);
    return;
  }
  for (const auto& [bps, groups] : by_bandwidth) {
    const std::string bw = bps < 0 ? "unknown" : format_bandwidth(bps);
    pareto_plot(ctx, "sim_time_s", "pareto_loss_vs_sim_time_" + bw, groups, no_bandwidth,
                " at " + bw);
    if (target)
      pareto_plot(ctx, "wire_bytes", "pareto_time_to_target_vs_wire_bytes_" + bw, groups,
                  no_bandwidth, " at " + bw, to_target);
  }
}

}  // namespace

namespace detail {

std::vector<Curve> plot_curves_of(const PlotContext& ctx, bool vs_time) {
  std::vector<std::string> keys;
  for (const auto& key : ctx.keys) {
    if (!vs_time && key.rfind("net.", 0) == 0) continue;
    keys.push_back(key);
  }
  std::vector<size_t> chosen;
  std::set<std::string> seen;
  for (size_t g = 0; g < ctx.groups.size(); ++g) {
    if (vs_time || seen.insert(legend_of(ctx.groups[g], keys)).second) chosen.push_back(g);
  }
  std::vector<RunGroup> groups;
  groups.reserve(chosen.size());
  for (size_t g : chosen) groups.push_back(ctx.groups[g]);
  const std::vector<std::string> legends = group_legends(groups, keys);
  std::vector<Curve> out;
  for (size_t i = 0; i < chosen.size(); ++i) out.push_back({chosen[i], i, legends[i]});
  return out;
}

std::string plot_number(double v) {
  if (std::isnan(v)) return "nan";
  std::ostringstream s;
  s.precision(10);
  s << v;
  return s.str();
}

void write_text_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw UsageError("cannot write " + path.string());
}

void render_plot(PlotContext& ctx, const std::string& name, const std::string& script) {
  write_text_file(ctx.out / (name + ".gp"), script);
  run_gnuplot(ctx.out.string(), name + ".gp");
  ctx.report.written.push_back((ctx.out / (name + ".png")).string());
}

std::string plot_title(const PlotContext& ctx, const std::string& what,
                       const std::vector<RunGroup>* groups) {
  std::string setting = ctx.setting;
  if (groups) {
    std::vector<const RunStats*> runs;
    for (const auto& group : *groups) runs.insert(runs.end(), group.runs.begin(), group.runs.end());
    setting = runs_setting(runs);
  }
  return setting.empty() ? what : what + "\n" + setting;
}

std::string simulated_on(const PlotContext& ctx) {
  std::set<std::string> devices;
  for (const RunStats& run : *ctx.runs) {
    const auto it = run.config.find("net.compute");
    if (it != run.config.end()) devices.insert(netmodel::compute_device_label(it->second));
  }
  std::string list;
  for (const auto& d : devices) list += (list.empty() ? "" : ", ") + d;
  return list.empty() ? "" : ", simulated on " + list;
}

std::string metric_label(const std::string& metric) {
  if (metric == "train_loss") return "train loss [nats], mean of the last 10% of steps";
  if (metric == "accuracy") return "validation accuracy [fraction correct]";
  if (metric == "bits_per_byte") return "validation loss [bits/byte]";
  return "validation loss [nats]";
}

}  // namespace detail

std::string default_plot_dir(const std::vector<std::string>& args,
                             const std::vector<std::string>& paths) {
  if (!args.empty() && fs::is_directory(args.front())) {
    return (fs::path(args.front()) / "plots").string();
  }
  const fs::path parent = fs::path(paths.front()).parent_path();
  return parent.empty() ? "." : parent.string();
}

PlotReport make_plots(const std::vector<RunStats>& runs, const PlotOptions& options) {
  Context ctx;
  ctx.out = options.out_dir;
  ctx.runs = &runs;
  ctx.options = options;
  ctx.keys = varying_keys(runs, /*group_seeds=*/true);
  ctx.groups = group_runs(runs, /*group_seeds=*/true);
  sort_groups(ctx.groups, ctx.keys);
  std::vector<const RunStats*> all;
  all.reserve(runs.size());
  for (const auto& run : runs) all.push_back(&run);
  ctx.setting = runs_setting(all);
  for (const auto& metric : summary_metrics()) {
    for (const auto& run : runs) {
      if (std::find(run.eval_metrics.begin(), run.eval_metrics.end(), metric) !=
          run.eval_metrics.end()) {
        ctx.metrics.push_back(metric);
        break;
      }
    }
  }
  if (ctx.metrics.empty()) ctx.metrics.push_back("loss");
  std::error_code ec;
  fs::create_directories(ctx.out / "data", ec);
  if (ec) throw UsageError("cannot create " + (ctx.out / "data").string() + ": " + ec.message());
  detail::write_curve_data(ctx);
  detail::train_plots(ctx);
  detail::eval_plots(ctx);
  metric_summary_plots(ctx);
  detail::channel_plots(ctx);
  target_plot(ctx);
  pareto_plots(ctx);
  return ctx.report;
}

}  // namespace slowpipe::study
