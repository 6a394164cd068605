// The comparison plots (see plot_figures.h).
#include "study/plot_figures.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/errors.h"
#include "common/units.h"
#include "netmodel/compute_model.h"
#include "runlog/runlog.h"
#include "study/plot_gnuplot.h"
#include "study/plot_series.h"
#include "study/summary_columns.h"
#include "study/summary_group.h"

namespace slowpipe::study {
namespace {

namespace fs = std::filesystem;

std::string number(double v) {
  if (std::isnan(v)) return "nan";
  std::ostringstream s;
  s.precision(10);
  s << v;
  return s.str();
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw UsageError("cannot write " + path.string());
}

std::string metric_label(const std::string& metric) {
  if (metric == "accuracy") return "validation accuracy [fraction correct]";
  if (metric == "bits_per_byte") return "validation loss [bits/byte]";
  return "validation loss [nats]";
}

struct Context {
  fs::path out;
  const std::vector<RunStats>* runs;
  std::vector<RunGroup> groups;
  std::vector<std::string> keys;  // varying, seed pooled
  std::vector<std::string> legends;
  std::vector<std::string> metrics;  // eval metrics to plot
  SummaryOptions options;
  PlotReport report;
  std::map<const RunStats*, std::string> stems;  // data file prefix per run
  // Train and eval columns with at least one finite value, per run.
  std::map<const RunStats*, std::set<std::string>> train_values, eval_values;
};

// The curves of a plot: (group, colour, legend). Against simulated time every
// seed group; against step, groups that differ only in net.* keys give the same
// curves (the network changes no number the run computes, only its simulated
// time), so only the first of them is drawn, named without the net.* keys.
struct Curve {
  size_t group, colour;
  std::string legend;
};
std::vector<Curve> curves(const Context& ctx, bool vs_time) {
  std::vector<Curve> out;
  if (vs_time) {
    for (size_t g = 0; g < ctx.groups.size(); ++g) out.push_back({g, g, ctx.legends[g]});
    return out;
  }
  std::vector<std::string> keys;
  for (const auto& key : ctx.keys) {
    if (key.rfind("net.", 0) != 0) keys.push_back(key);
  }
  std::set<std::string> seen;
  for (size_t g = 0; g < ctx.groups.size(); ++g) {
    const std::string legend = legend_of(ctx.groups[g], keys);
    if (seen.insert(legend).second) out.push_back({g, out.size(), legend});
  }
  return out;
}

void render(Context& ctx, const std::string& name, const std::string& script) {
  write_file(ctx.out / (name + ".gp"), script);
  run_gnuplot(ctx.out.string(), name + ".gp");
  ctx.report.written.push_back((ctx.out / (name + ".png")).string());
}

// The columns of `table` that hold at least one finite value.
std::set<std::string> columns_with_values(const runlog::Table& table) {
  std::set<std::string> out;
  for (size_t c = 0; c < table.columns.size(); ++c) {
    const auto& v = table.values[c];
    if (std::any_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); })) {
      out.insert(table.columns[c].name);
    }
  }
  return out;
}

// data/<stem>.train.tsv: step, sim_time_s, loss, trailing mean of loss.
// data/<stem>.eval.tsv: step, sim_time_s, then value and compressed value of each metric.
void write_curve_data(Context& ctx) {
  size_t i = 0;
  for (const auto& run : *ctx.runs) {
    const std::string stem = "run" + std::to_string(++i) + "_" + fs::path(run.path).stem().string();
    ctx.stems[&run] = stem;
    const runlog::Table train = runlog::read_table(run.path, "train");
    const runlog::Table eval = runlog::read_table(run.path, "eval");
    auto col = [](const runlog::Table& t, const std::string& name) {
      return t.has_column(name) ? t.column(name) : std::vector<double>(t.rows(), NAN);
    };
    const auto loss = col(train, "loss");
    const auto smooth = trailing_mean(loss, ctx.options.smooth_window);
    const auto step = col(train, "step"), time = col(train, "sim_time_s");
    ctx.train_values[&run] = columns_with_values(train);
    ctx.eval_values[&run] = columns_with_values(eval);
    std::ostringstream t;
    t << "# step\tsim_time_s\tloss\tloss_smooth" << ctx.options.smooth_window << "\n";
    for (size_t r = 0; r < train.rows(); ++r) {
      t << number(step[r]) << "\t" << number(time[r]) << "\t" << number(loss[r]) << "\t"
        << number(smooth[r]) << "\n";
    }
    write_file(ctx.out / "data" / (stem + ".train.tsv"), t.str());
    std::ostringstream e;
    e << "# step\tsim_time_s";
    for (const auto& m : ctx.metrics) e << "\t" << m << "\t" << m << "_compressed";
    e << "\n";
    std::vector<std::vector<double>> ecols = {col(eval, "step"), col(eval, "sim_time_s")};
    for (const auto& m : ctx.metrics) {
      ecols.push_back(col(eval, m));
      ecols.push_back(col(eval, m + "_compressed"));
    }
    for (size_t r = 0; r < eval.rows(); ++r) {
      for (size_t c = 0; c < ecols.size(); ++c) e << (c ? "\t" : "") << number(ecols[c][r]);
      e << "\n";
    }
    write_file(ctx.out / "data" / (stem + ".eval.tsv"), e.str());
  }
}

// ", simulated on RTX4090": the devices of the runs' net.compute
// (netmodel::compute_device_label), for the titles of plots against simulated
// time; "" when no run names one.
std::string simulated_on(const Context& ctx) {
  std::set<std::string> devices;
  for (const RunStats& run : *ctx.runs) {
    const auto it = run.config.find("net.compute");
    if (it != run.config.end()) devices.insert(netmodel::compute_device_label(it->second));
  }
  std::string list;
  for (const auto& d : devices) list += (list.empty() ? "" : ", ") + d;
  return list.empty() ? "" : ", simulated on " + list;
}

void train_plots(Context& ctx) {
  for (const bool vs_time : {false, true}) {
    const std::string name = vs_time ? "train_loss_vs_sim_time" : "train_loss_vs_step";
    std::string script =
        gp_preamble(name + ".png", "training loss" + (vs_time ? simulated_on(ctx) : ""));
    script += "set xlabel " + gp_quote(vs_time ? "simulated time [s]" : "step") + "\n";
    script += "set ylabel " +
              gp_quote("train loss [nats], trailing mean of " +
                       std::to_string(ctx.options.smooth_window) + " steps") +
              "\n";
    std::string plots;
    for (const Curve& curve : curves(ctx, vs_time)) {
      bool first = true;
      for (const RunStats* run : ctx.groups[curve.group].runs) {
        const auto& has = ctx.train_values[run];
        if (has.count("loss") == 0 || (vs_time && has.count("sim_time_s") == 0)) continue;
        plots += std::string(plots.empty() ? "plot " : ", \\\n     ") +
                 gp_quote("data/" + ctx.stems[run] + ".train.tsv") + " using " +
                 (vs_time ? "2" : "1") + ":4 with lines lw 1.5 lc rgb " +
                 gp_quote(gp_colour(curve.colour)) + " " +
                 (first ? "title " + gp_quote(curve.legend) : std::string("notitle"));
        first = false;
      }
    }
    if (plots.empty()) {
      ctx.report.skipped.push_back(name + (vs_time ? ": no run has a train loss and simulated time"
                                                   : ": no run has a train loss"));
      continue;
    }
    render(ctx, name, script + plots + "\n");
  }
}

void eval_plots(Context& ctx) {
  for (size_t m = 0; m < ctx.metrics.size(); ++m) {
    const std::string& metric = ctx.metrics[m];
    for (const bool vs_time : {false, true}) {
      const std::string name = "eval_" + metric + (vs_time ? "_vs_sim_time" : "_vs_step");
      std::string script = gp_preamble(name + ".png", "evaluation: " + metric_label(metric) +
                                                          (vs_time ? simulated_on(ctx) : ""));
      script += "set xlabel " + gp_quote(vs_time ? "simulated time [s]" : "step") + "\n";
      script += "set ylabel " + gp_quote(metric_label(metric)) + "\n";
      std::string plots;
      bool any_compressed = false;
      const std::string x = vs_time ? "2" : "1";
      const std::string y = std::to_string(3 + 2 * m), yc = std::to_string(4 + 2 * m);
      for (const Curve& curve : curves(ctx, vs_time)) {
        bool first = true;
        for (const RunStats* run : ctx.groups[curve.group].runs) {
          if (ctx.eval_values[run].count(metric) == 0) continue;
          const std::string file = gp_quote("data/" + ctx.stems[run] + ".eval.tsv");
          const std::string colour = " lc rgb " + gp_quote(gp_colour(curve.colour));
          plots += std::string(plots.empty() ? "plot " : ", \\\n     ") + file + " using " + x +
                   ":" + y + " with linespoints pt 7 ps 0.7 lw 1.5" + colour + " " +
                   (first ? "title " + gp_quote(curve.legend) : std::string("notitle"));
          if (ctx.eval_values[run].count(metric + "_compressed") > 0) {
            plots += ", \\\n     " + file + " using " + x + ":" + yc +
                     " with linespoints pt 6 ps 0.7 lw 1.5 dt 2" + colour + " notitle";
            any_compressed = true;
          }
          first = false;
        }
      }
      if (plots.empty()) {
        ctx.report.skipped.push_back(name + ": no run has a value of eval/" + metric);
        continue;
      }
      if (any_compressed) {
        plots +=
            ", \\\n     NaN with lines lw 1.5 lc rgb '#555555' title 'without compression'"
            ", \\\n     NaN with lines lw 1.5 dt 2 lc rgb '#555555' title "
            "'with compression (forward codecs applied)'";
      }
      render(ctx, name, script + plots + "\n");
    }
  }
}

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
  for (double x : distinct_x(lines)) tics += (tics.empty() ? "" : ", ") + number(x);
  script += "set xtics (" + tics + ")\n";
  std::string plots;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::ostringstream d;
    d << "# x\tmean\tstd\tmean_compressed\tstd_compressed\tn\n";
    bool compressed = false;
    for (const auto& p : lines[i].points) {
      // One seed: no error bar (0), not a missing point.
      d << number(p.x) << "\t" << number(p.y) << "\t" << number(std::isnan(p.y_std) ? 0 : p.y_std)
        << "\t" << number(p.y_c) << "\t" << number(std::isnan(p.y_c_std) ? 0 : p.y_c_std) << "\t"
        << p.n << "\n";
      compressed = compressed || std::isfinite(p.y_c);
    }
    const std::string file = "data/" + name + "_line" + std::to_string(i + 1) + ".tsv";
    write_file(ctx.out / file, d.str());
    const std::string colour = " lc rgb " + gp_quote(gp_colour(i));
    plots += std::string(plots.empty() ? "plot " : ", \\\n     ") + gp_quote(file) +
             " using 1:2:3 with yerrorlines pt 7 lw 1.5" + colour + " title " +
             gp_quote(lines[i].legend);
    if (with_compressed && compressed) {
      plots += ", \\\n     " + gp_quote(file) + " using 1:4:5 with yerrorlines pt 6 lw 1.5 dt 2" +
               colour + " title " + gp_quote(lines[i].legend + " (compressed eval)");
    }
  }
  for (const auto& ref : reference) {
    plots += ", \\\n     " + number(ref.points.front().y) +
             " with lines lw 1.5 dt 3 lc rgb '#555555' title " + gp_quote(ref.legend);
  }
  render(ctx, name, script + plots + "\n");
}

void metric_summary_plots(Context& ctx) {
  const std::vector<std::pair<std::string, std::string>> channels = {{"compress.fw", "fw"},
                                                                     {"compress.bw", "bw"}};
  for (const auto& metric : ctx.metrics) {
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
        summary_plot(ctx, name, "final " + metric_label(metric) + " (mean ± std over seeds)",
                     xlabel, "final " + metric_label(metric), dimension == "bits", lines, reference,
                     true);
      }
    }
  }
}

void target_plot(Context& ctx) {
  const std::string name = "time_to_target_vs_bandwidth";
  if (!ctx.options.has_target) {
    ctx.report.skipped.push_back(name + ": no --target loss given");
    return;
  }
  size_t unreached = 0;
  auto lines = target_lines(ctx.groups, ctx.keys, unreached);
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
  title << "simulated time to train loss \u2264 " << ctx.options.target_loss
        << " (trailing mean of " << ctx.options.smooth_window << " steps)" << simulated_on(ctx);
  summary_plot(ctx, name, title.str(), "bandwidth [Mbit/s]", "simulated time to target [s]", false,
               lines, {}, false);
  if (unreached > 0) {
    ctx.report.skipped.push_back(name + ": " + std::to_string(unreached) +
                                 " point(s) left out, the target was never reached");
  }
}

// The x range (a margin of 1.3x each side) and "set xtics (...)" at 1, 2 and 5 times the powers of
// ten between the points' smallest and largest x (with a margin), so a log axis spanning less than
// a decade still has labelled tics.
std::string log_tics(const std::vector<ParetoPoint>& points) {
  double lo = points.front().x, hi = lo;
  for (const auto& p : points) lo = std::min(lo, p.x), hi = std::max(hi, p.x);
  if (!(lo > 0)) return "";
  std::string tics;
  for (double decade = std::pow(10, std::floor(std::log10(lo / 1.3))); decade <= hi * 1.3;
       decade *= 10) {
    for (const double m : {1.0, 2.0, 5.0}) {
      const double x = m * decade;
      if (x >= lo / 1.3 && x <= hi * 1.3) tics += (tics.empty() ? "" : ", ") + number(x);
    }
  }
  const std::string range = "set xrange [" + number(lo / 1.3) + ":" + number(hi * 1.3) + "]\n";
  return range + (tics.empty() ? "" : "set xtics (" + tics + ")\n");
}

// data/NAME.tsv: one row per point (x, x_std, loss, loss_std, n, front, label);
// data/NAME_front.tsv: the front's points by x, drawn as a step line.
void write_pareto_data(Context& ctx, const std::string& name,
                       const std::vector<ParetoPoint>& points) {
  std::ostringstream d, f;
  d << "# x\tx_std\tloss\tloss_std\tn\tfront\tlabel\n";
  std::vector<std::pair<double, double>> front;
  for (const auto& p : points) {
    d << number(p.x) << "\t" << number(p.x_std) << "\t" << number(p.loss) << "\t"
      << number(p.loss_std) << "\t" << p.n << "\t" << (p.front ? 1 : 0) << "\t" << p.label << "\n";
    if (p.front) front.emplace_back(p.x, p.loss);
  }
  std::sort(front.begin(), front.end());
  f << "# x\tloss\n";
  for (const auto& [x, loss] : front) f << number(x) << "\t" << number(loss) << "\n";
  write_file(ctx.out / "data" / (name + ".tsv"), d.str());
  write_file(ctx.out / "data" / (name + "_front.tsv"), f.str());
}

// Final train loss against wire bytes per step or simulated run time, the
// Pareto front as a step line, points labelled (docs/summary.md).
// `groups`: the seed groups drawn; `at`: " at 100Mbps" for one bandwidth of several.
// `keys`: the varying keys that name a point without a run.label.
void pareto_plot(Context& ctx, const std::string& x_column, const std::string& name,
                 const std::vector<RunGroup>& groups, const std::vector<std::string>& keys,
                 const std::string& at) {
  const bool bytes = x_column == "wire_bytes";
  size_t left_out = 0;
  const auto points = pareto_points(groups, keys, x_column, left_out);
  if (points.size() < 2) {
    ctx.report.skipped.push_back(name + ": fewer than 2 seed groups with a train loss and " +
                                 x_column);
    return;
  }
  write_pareto_data(ctx, name, points);
  std::string script = gp_preamble(
      name + ".png", "final train loss (mean \u00b1 std over seeds) against " +
                         std::string(bytes ? "bytes on the wire per step" : "simulated run time") +
                         (bytes ? "" : at + simulated_on(ctx)));
  script += "set xlabel " +
            gp_quote(bytes ? "bytes on the wire per step, fw + bw + grad [bytes]"
                           : "simulated time of the whole run [s]") +
            "\nset ylabel " + gp_quote("final train loss [nats], mean of the last 10% of steps") +
            "\nset logscale x 10\n"
            "set offsets 0, 0, graph 0.08, graph 0.05\n";
  if (bytes) script += "set format x '%.0s %cB'\n";  // 500 kB, 3 MB (powers of 1000)
  script += log_tics(points);
  const std::string data = gp_quote("data/" + name + ".tsv");
  script += "plot " + gp_quote("data/" + name + "_front.tsv") +
            " using 1:2 with steps lw 2 dt 2 lc rgb '#555555' title 'Pareto front', \\\n     " +
            data + " using 1:3:4 with yerrorbars pt 7 ps 1.2 lc rgb " + gp_quote(gp_colour(0)) +
            " title 'seed group', \\\n     " + data +
            " using 1:($6 > 0 ? $3 : NaN) with points pt 6 ps 2.5 lw 1.5 lc rgb " +
            gp_quote(gp_colour(1)) + " title 'on the front', \\\n     " + data +
            " using 1:3:7 with labels left offset char 1,0.6 font ',9' noenhanced notitle\n";
  render(ctx, name, script);
  if (left_out > 0) {
    ctx.report.skipped.push_back(name + ": " + std::to_string(left_out) +
                                 " seed group(s) left out (diverged, or no train loss or " +
                                 x_column + ")");
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
  if (by_bandwidth.size() <= 1) {
    pareto_plot(ctx, "sim_time_s", "pareto_loss_vs_sim_time", ctx.groups, ctx.keys, "");
    return;
  }
  for (const auto& [bps, groups] : by_bandwidth) {
    const std::string bw = bps < 0 ? "unknown" : format_bandwidth(bps);
    pareto_plot(ctx, "sim_time_s", "pareto_loss_vs_sim_time_" + bw, groups, no_bandwidth,
                " at " + bw);
  }
}

}  // namespace

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
  ctx.options = options.summary;
  ctx.groups = group_runs(runs, /*group_seeds=*/true);
  ctx.keys = varying_keys(runs, /*group_seeds=*/true);
  for (const auto& group : ctx.groups) ctx.legends.push_back(legend_of(group, ctx.keys));
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
  write_curve_data(ctx);
  train_plots(ctx);
  eval_plots(ctx);
  metric_summary_plots(ctx);
  target_plot(ctx);
  pareto_plots(ctx);
  return ctx.report;
}

}  // namespace slowpipe::study
