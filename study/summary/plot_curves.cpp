// The curves of `slowpipe plot` (docs/summary.md, "Plots"): train loss and
// the eval metric against step and simulated time, by default the seed mean of
// each group with its min-max band (seed_band, plot_series.h), with
// `--per-seed` one thin line per run; and the forward channel's delta norm and
// relative error per epoch and boundary. Per-run data go to
// data/runN_NAME.{train,eval}.tsv, the seed bands to data/*_groupG.tsv.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "runlog/runlog.h"
#include "study/summary/internal/plot_context.h"
#include "study/summary/internal/plot_gnuplot.h"
#include "study/summary/summary_stats.h"

namespace slowpipe::study::detail {
namespace {

namespace fs = std::filesystem;

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

std::vector<double> column_or_nan(const runlog::Table& t, const std::string& name) {
  return t.has_column(name) ? t.column(name) : std::vector<double>(t.rows(), NAN);
}

// data/<stem>.train.tsv: step, sim_time_s, loss, trailing mean of loss; the
// run's smoothed-loss curve and its per-epoch channel means into `ctx`.
void write_train_data(PlotContext& ctx, const RunStats& run, const std::string& stem) {
  const runlog::Table train = runlog::read_table(run.path, "train");
  const auto loss = column_or_nan(train, "loss");
  const int window = ctx.options.summary.smooth_window;
  const auto smooth = trailing_mean(loss, window);
  const auto step = column_or_nan(train, "step"), time = column_or_nan(train, "sim_time_s");
  ctx.train_values[&run] = columns_with_values(train);
  ctx.train_curve[&run] = {step, time, smooth};
  std::ostringstream t;
  t << "# step\tsim_time_s\tloss\tloss_smooth" << window << "\n";
  for (size_t r = 0; r < train.rows(); ++r) {
    t << plot_number(step[r]) << "\t" << plot_number(time[r]) << "\t" << plot_number(loss[r])
      << "\t" << plot_number(smooth[r]) << "\n";
  }
  write_text_file(ctx.out / "data" / (stem + ".train.tsv"), t.str());
  if (!train.has_column("epoch")) return;
  for (const auto& col : train.columns) {
    if (numbered_column(col.name, "fw", "_delta_norm") ||
        numbered_column(col.name, "fw", "_rel_error")) {
      ctx.epoch_curve[&run][col.name] = epoch_means(train.column("epoch"), train.column(col.name));
    }
  }
}

// data/<stem>.eval.tsv: step, sim_time_s, then value and compressed value of
// each metric; the run's eval curves into `ctx`.
void write_eval_data(PlotContext& ctx, const RunStats& run, const std::string& stem) {
  const runlog::Table eval = runlog::read_table(run.path, "eval");
  ctx.eval_values[&run] = columns_with_values(eval);
  std::ostringstream e;
  e << "# step\tsim_time_s";
  for (const auto& m : ctx.metrics) e << "\t" << m << "\t" << m << "_compressed";
  e << "\n";
  const auto step = column_or_nan(eval, "step"), time = column_or_nan(eval, "sim_time_s");
  std::vector<std::vector<double>> cols = {step, time};
  for (const auto& m : ctx.metrics) {
    for (const std::string& name : {m, m + "_compressed"}) {
      cols.push_back(column_or_nan(eval, name));
      ctx.eval_curve[&run][name] = {step, time, cols.back()};
    }
  }
  for (size_t r = 0; r < eval.rows(); ++r) {
    for (size_t c = 0; c < cols.size(); ++c) e << (c ? "\t" : "") << plot_number(cols[c][r]);
    e << "\n";
  }
  write_text_file(ctx.out / "data" / (stem + ".eval.tsv"), e.str());
}

// data/NAME.tsv: key, x, mean, min, max, n of a seed band; false when empty.
bool write_band(const PlotContext& ctx, const std::string& name,
                const std::vector<BandPoint>& band) {
  if (band.empty()) return false;
  std::ostringstream d;
  d << "# step\tsim_time_s\tmean\tmin\tmax\tn  (over the seeds with a value at that step)\n";
  for (const auto& p : band) {
    d << plot_number(p.key) << "\t" << plot_number(p.x) << "\t" << plot_number(p.mean) << "\t"
      << plot_number(p.min) << "\t" << plot_number(p.max) << "\t" << p.n << "\n";
  }
  write_text_file(ctx.out / "data" / (name + ".tsv"), d.str());
  return true;
}

// The seed curves of a group: `get(run)` for each run it returns one for (not null).
template <typename Get>
std::vector<SeedCurve> seeds_of(const RunGroup& group, Get get) {
  std::vector<SeedCurve> out;
  for (const RunStats* run : group.runs) {
    if (const SeedCurve* c = get(run)) out.push_back(*c);
  }
  return out;
}

// A mean line and its band for the plot command: (bands, lines) appended.
void band_series(const std::string& file, bool vs_time, const std::string& colour,
                 const std::string& legend, const std::string& style, double alpha,
                 std::string& bands, std::string& lines) {
  const std::string x = vs_time ? "2" : "1", q = gp_quote("data/" + file + ".tsv");
  std::ostringstream a;
  a << alpha;
  bands += ", \\\n     " + q + " using " + x + ":4:5 with filledcurves fc rgb " + gp_quote(colour) +
           " fs transparent solid " + a.str() + " noborder notitle";
  lines += ", \\\n     " + q + " using " + x + ":3 with " + style + " lc rgb " + gp_quote(colour) +
           (legend.empty() ? " notitle" : " title " + gp_quote(legend));
}

// "plot" followed by the series (each given with a leading ", \\\n     ").
std::string plot_command(const std::string& series) {
  return series.empty() ? "" : "plot " + series.substr(9) + "\n";
}

// One thin line per run of each curve (the old view, --per-seed).
std::string per_seed_train(PlotContext& ctx, bool vs_time) {
  std::string plots;
  for (const Curve& curve : plot_curves_of(ctx, vs_time)) {
    bool first = true;
    for (const RunStats* run : ctx.groups[curve.group].runs) {
      const auto& has = ctx.train_values[run];
      if (has.count("loss") == 0 || (vs_time && has.count("sim_time_s") == 0)) continue;
      plots += ", \\\n     " + gp_quote("data/" + ctx.stems[run] + ".train.tsv") + " using " +
               (vs_time ? "2" : "1") + ":4 with lines lw 1 lc rgb " +
               gp_quote(gp_colour(curve.colour)) + " " +
               (first ? "title " + gp_quote(curve.legend) : std::string("notitle"));
      first = false;
    }
  }
  return plot_command(plots);
}

// The legend entry of the bands, only when some group has two seeds or more
// (a one-seed band is the line itself).
std::string band_key(bool several_seeds) {
  if (!several_seeds) return "";
  return ", \\\n     keyentry with filledcurves fc rgb '#555555' fs transparent solid 0.2 "
         "noborder title 'min\u2013max over seeds'";
}

// The seed mean and min-max band of each curve.
std::string band_train(PlotContext& ctx, bool vs_time) {
  std::string bands, lines;
  bool several = false;
  for (const Curve& curve : plot_curves_of(ctx, vs_time)) {
    const auto seeds = seeds_of(ctx.groups[curve.group], [&](const RunStats* run) {
      const auto& has = ctx.train_values[run];
      const bool ok = has.count("loss") && (!vs_time || has.count("sim_time_s"));
      return ok ? &ctx.train_curve[run] : nullptr;
    });
    const std::string file = "train_loss_group" + std::to_string(curve.group + 1);
    if (!write_band(ctx, file, seed_band(seeds))) continue;
    several = several || seeds.size() > 1;
    band_series(file, vs_time, gp_colour(curve.colour), curve.legend, "lines lw 2", 0.2, bands,
                lines);
  }
  if (lines.empty()) return "";
  return plot_command(bands + lines + band_key(several));
}

// One line per run of each curve, compressed dashed (--per-seed); sets `compressed`.
std::string per_seed_eval(PlotContext& ctx, const std::string& metric, size_t m, bool vs_time,
                          bool& compressed) {
  std::string plots;
  const std::string x = vs_time ? "2" : "1";
  const std::string y = std::to_string(3 + 2 * m), yc = std::to_string(4 + 2 * m);
  for (const Curve& curve : plot_curves_of(ctx, vs_time)) {
    bool first = true;
    for (const RunStats* run : ctx.groups[curve.group].runs) {
      const auto& has = ctx.eval_values[run];
      if (has.count(metric) == 0 || (vs_time && has.count("sim_time_s") == 0)) continue;
      const std::string file = gp_quote("data/" + ctx.stems[run] + ".eval.tsv");
      const std::string colour = " lc rgb " + gp_quote(gp_colour(curve.colour));
      plots += ", \\\n     " + file + " using " + x + ":" + y +
               " with linespoints pt 7 ps 0.6 lw 1" + colour + " " +
               (first ? "title " + gp_quote(curve.legend) : std::string("notitle"));
      if (ctx.eval_values[run].count(metric + "_compressed") > 0) {
        plots += ", \\\n     " + file + " using " + x + ":" + yc +
                 " with linespoints pt 6 ps 0.6 lw 1 dt 2" + colour + " notitle";
        compressed = true;
      }
      first = false;
    }
  }
  return plots;
}

// The seed mean and band of each curve, uncompressed and compressed; sets `compressed`.
std::string band_eval(PlotContext& ctx, const std::string& metric, bool vs_time, bool& compressed) {
  std::string bands, lines;
  bool several = false;
  for (const Curve& curve : plot_curves_of(ctx, vs_time)) {
    for (const bool c : {false, true}) {
      const std::string column = metric + (c ? "_compressed" : "");
      const auto seeds = seeds_of(ctx.groups[curve.group], [&](const RunStats* run) {
        const auto& has = ctx.eval_values[run];
        const bool ok = has.count(column) && (!vs_time || has.count("sim_time_s"));
        return ok ? &ctx.eval_curve[run][column] : nullptr;
      });
      const std::string file = "eval_" + column + "_group" + std::to_string(curve.group + 1);
      if (!write_band(ctx, file, seed_band(seeds))) continue;
      several = several || seeds.size() > 1;
      compressed = compressed || c;
      band_series(file, vs_time, gp_colour(curve.colour), c ? "" : curve.legend,
                  c ? "linespoints pt 6 ps 0.7 lw 2 dt 2" : "linespoints pt 7 ps 0.7 lw 2",
                  c ? 0.1 : 0.2, bands, lines);
    }
  }
  if (lines.empty()) return "";
  return bands + lines + band_key(several);
}

// One line of a channel figure: a curve's seed band of fw{b}_KIND by epoch.
struct ChannelLine {
  size_t colour;
  int boundary;
  std::string legend;  // the group's
  std::vector<BandPoint> band;
};

// The lines of fw{b}_`kind` (delta_norm, rel_error): per curve (groups that
// differ only in net.* drawn once) and boundary, the ones with a nonzero value.
std::vector<ChannelLine> channel_lines(PlotContext& ctx, const std::string& kind) {
  std::set<int> boundaries;
  const std::string suffix = "_" + kind;
  for (const auto& [run, columns] : ctx.epoch_curve) {
    for (const auto& [name, curve] : columns) {
      if (name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        boundaries.insert(std::stoi(name.substr(2)));
    }
  }
  std::vector<ChannelLine> lines;
  for (const Curve& curve : plot_curves_of(ctx, /*vs_time=*/false)) {
    for (const int b : boundaries) {
      const std::string column = "fw" + std::to_string(b) + suffix;
      const auto seeds = seeds_of(ctx.groups[curve.group], [&](const RunStats* run) {
        const auto it = ctx.epoch_curve[run].find(column);
        return it == ctx.epoch_curve[run].end() ? nullptr : &it->second;
      });
      ChannelLine line{curve.colour, b, curve.legend, seed_band(seeds)};
      const bool nonzero = std::any_of(line.band.begin(), line.band.end(),
                                       [](const BandPoint& p) { return p.max > 0; });
      if (nonzero) lines.push_back(std::move(line));
    }
  }
  return lines;
}

// data/NAME_lineI.tsv for each line: epoch, mean, min, max, n.
std::vector<std::string> write_channel_data(PlotContext& ctx, const std::string& name,
                                            const std::vector<ChannelLine>& lines) {
  std::vector<std::string> files;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::ostringstream d;
    d << "# " << lines[i].legend << ", boundary " << lines[i].boundary
      << "\n# epoch\tmean\tmin\tmax\tn  (per-epoch means of each seed, then over seeds)\n";
    for (const auto& p : lines[i].band) {
      d << plot_number(p.key) << "\t" << plot_number(p.mean) << "\t" << plot_number(p.min) << "\t"
        << plot_number(p.max) << "\t" << p.n << "\n";
    }
    files.push_back("data/" + name + "_line" + std::to_string(i + 1) + ".tsv");
    write_text_file(ctx.out / files.back(), d.str());
  }
  return files;
}

// "set yrange [lo:hi]" shared by the panels: from 0 (linear) or the smallest
// positive min / 1.5 (log) to the largest max (x 1.05, log x 1.5).
std::string channel_yrange(const std::vector<ChannelLine>& lines, bool log_y) {
  double lo = INFINITY, hi = 0;
  for (const auto& line : lines) {
    for (const auto& p : line.band) {
      if (p.min > 0) lo = std::min(lo, p.min);
      hi = std::max(hi, p.max);
    }
  }
  if (!(hi > 0)) return "";
  if (!log_y) return "set yrange [0:" + plot_number(hi * 1.05) + "]\n";
  return "set yrange [" + plot_number(std::min(lo, hi) / 1.5) + ":" + plot_number(hi * 1.5) + "]\n";
}

// One panel per boundary side by side, a shared y range and one legend (the
// groups' colours) right of them; error bars min-max over seeds, each line's
// points shifted a little around their epoch so the bars stay apart.
std::string channel_panels(const std::vector<ChannelLine>& lines,
                           const std::vector<std::string>& files, const std::string& ylabel) {
  std::set<int> boundaries;
  std::map<size_t, std::string> legends;  // colour -> group legend
  for (const auto& line : lines)
    boundaries.insert(line.boundary), legends[line.colour] = line.legend;
  const double left = 0.06, right = 0.74, width = (right - left) / boundaries.size();
  std::string script = "unset key\nset ylabel " + gp_quote(ylabel) + " noenhanced\n";
  size_t panel = 0;
  for (const int b : boundaries) {
    script += "set lmargin at screen " + plot_number(left + width * panel + 0.04) +
              "\nset rmargin at screen " + plot_number(left + width * (panel + 1) - 0.005) +
              "\nset title " + gp_quote("boundary " + std::to_string(b)) + "\n";
    std::vector<size_t> here;
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i].boundary == b) here.push_back(i);
    std::string plots;
    for (size_t k = 0; k < here.size(); ++k) {
      const double shift =
          here.size() < 2 ? 0 : 0.3 * (static_cast<double>(k) / (here.size() - 1) - 0.5);
      plots += ", \\\n     " + gp_quote(files[here[k]]) + " using ($1+" + plot_number(shift) +
               "):2:3:4 with yerrorlines lw 1.5 pt 7 ps 0.8 lc rgb " +
               gp_quote(gp_colour(lines[here[k]].colour)) + " notitle";
    }
    if (panel == 0) {
      script += "set key at screen 0.76, screen 0.86 left top noenhanced Left reverse\n";
      for (const auto& [colour, legend] : legends)
        plots += ", \\\n     keyentry with linespoints lw 1.5 pt 7 lc rgb " +
                 gp_quote(gp_colour(colour)) + " title " + gp_quote(legend);
    }
    script += plot_command(plots) + (panel == 0 ? "unset key\nunset ylabel\n" : "");
    ++panel;
  }
  return script + "unset multiplot\n";
}

}  // namespace

void write_curve_data(PlotContext& ctx) {
  size_t i = 0;
  for (const auto& run : *ctx.runs) {
    const std::string stem = "run" + std::to_string(++i) + "_" + fs::path(run.path).stem().string();
    ctx.stems[&run] = stem;
    write_train_data(ctx, run, stem);
    write_eval_data(ctx, run, stem);
  }
}

void train_plots(PlotContext& ctx) {
  for (const bool vs_time : {false, true}) {
    const std::string name = vs_time ? "train_loss_vs_sim_time" : "train_loss_vs_step";
    const std::string how =
        ctx.options.per_seed ? "one line per run" : "mean over seeds, band min\u2013max over seeds";
    std::string script = gp_preamble(name + ".png", plot_title(ctx, "training loss (" + how + ")") +
                                                        (vs_time ? simulated_on(ctx) : ""));
    script += "set xlabel " + gp_quote(vs_time ? "simulated time [s]" : "step") + "\n";
    script += "set ylabel " +
              gp_quote("train loss [nats], trailing mean of " +
                       std::to_string(ctx.options.summary.smooth_window) + " steps") +
              "\n";
    const std::string plot =
        ctx.options.per_seed ? per_seed_train(ctx, vs_time) : band_train(ctx, vs_time);
    if (plot.empty()) {
      ctx.report.skipped.push_back(name + (vs_time ? ": no run has a train loss and simulated time"
                                                   : ": no run has a train loss"));
      continue;
    }
    render_plot(ctx, name, script + plot);
  }
}

namespace {

// With --target, the series of a horizontal line at the target on an eval plot
// of `metric`: the loss itself, or in bits per byte target / ln 2 (the log's
// bits_per_byte is loss / ln 2); none on accuracy.
std::string target_line(const PlotContext& ctx, const std::string& metric) {
  const SummaryOptions& o = ctx.options.summary;
  if (!o.has_target || (metric != "loss" && metric != "bits_per_byte")) return "";
  const double y = metric == "loss" ? o.target_loss : o.target_loss / std::log(2.0);
  std::ostringstream title;
  title << "target: loss \u2264 " << o.target_loss;
  if (metric == "bits_per_byte") title << " nats (" << std::setprecision(4) << y << " bits/byte)";
  return ", \\\n     " + plot_number(y) + " with lines lw 1.5 dt 3 lc rgb '#cc0000' title " +
         gp_quote(title.str());
}

}  // namespace

void eval_plots(PlotContext& ctx) {
  for (size_t m = 0; m < ctx.metrics.size(); ++m) {
    const std::string& metric = ctx.metrics[m];
    for (const bool vs_time : {false, true}) {
      const std::string name = "eval_" + metric + (vs_time ? "_vs_sim_time" : "_vs_step");
      const std::string how = ctx.options.per_seed
                                  ? "one line per run"
                                  : "mean over seeds, band min\u2013max over seeds";
      std::string script = gp_preamble(
          name + ".png", plot_title(ctx, "evaluation: " + metric_label(metric) + " (" + how + ")") +
                             (vs_time ? simulated_on(ctx) : ""));
      script += "set xlabel " + gp_quote(vs_time ? "simulated time [s]" : "step") + "\n";
      script += "set ylabel " + gp_quote(metric_label(metric)) + "\n";
      bool compressed = false;
      std::string plots = ctx.options.per_seed ? per_seed_eval(ctx, metric, m, vs_time, compressed)
                                               : band_eval(ctx, metric, vs_time, compressed);
      if (plots.empty()) {
        ctx.report.skipped.push_back(name + ": no run has a value of eval/" + metric +
                                     (vs_time ? " and a simulated time" : ""));
        continue;
      }
      if (compressed) {
        plots +=
            ", \\\n     keyentry with lines lw 2 lc rgb '#555555' title 'without compression'"
            ", \\\n     keyentry with lines lw 2 dt 2 lc rgb '#555555' title "
            "'with compression (forward codecs applied)'";
      }
      if (vs_time) plots += target_line(ctx, metric);
      render_plot(ctx, name, script + plot_command(plots));
    }
  }
}

void channel_plots(PlotContext& ctx) {
  struct Kind {
    std::string column, what, ylabel;
    bool log_y;
  };
  const std::vector<Kind> kinds = {
      {"delta_norm",
       "forward delta norm per epoch (AQ-SGD \u2016a \u2212 m(\u03be)\u2016, \u2016a\u2016 in its "
       "warm-up; EF21 "
       "\u2016x \u2212 g\u2016)",
       "fw{b}_delta_norm, mean over the epoch's steps", false},
      {"rel_error",
       "forward relative error per epoch (\u2016x \u2212 x\u0302\u2016 / \u2016x\u2016)",
       "fw{b}_rel_error, mean over the epoch's steps (log scale)", true},
  };
  for (const Kind& kind : kinds) {
    const std::string name = "channel_by_epoch_fw_" + kind.column;
    const auto lines = channel_lines(ctx, kind.column);
    if (lines.empty()) {
      ctx.report.skipped.push_back(name + ": no run logs a nonzero fw{b}_" + kind.column +
                                   " with an epoch");
      continue;
    }
    const auto files = write_channel_data(ctx, name, lines);
    std::string script = gp_preamble(name + ".png", "");
    script += "set multiplot title " +
              gp_quote(plot_title(ctx, kind.what + "; mean over seeds, bars min\u2013max")) +
              " noenhanced\nset tmargin at screen 0.86\nset bmargin at screen 0.1\n"
              "set xlabel 'epoch'\nset xtics 1\nset autoscale xfix\nset offsets 0.3, 0.3, 0, 0\n" +
              channel_yrange(lines, kind.log_y) + (kind.log_y ? "set logscale y\n" : "");
    render_plot(ctx, name, script + channel_panels(lines, files, kind.ylabel));
  }
}

}  // namespace slowpipe::study::detail
