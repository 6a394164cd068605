// What the comparison plots are made of: spec facts, legends and titles, the
// summary plot points (seed means and sample std), the seed bands of the
// curves and the per-epoch means (against naive computations).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "runlog/runlog.h"
#include "study/summary/plot_figures.h"
#include "study/summary/internal/plot_series.h"
#include "study/summary/summary_inputs.h"
#include "tests/runlog/runlog_scratch.h"

namespace st = slowpipe::study;
using Catch::Detail::Approx;

namespace {

st::RunStats run(const std::string& fw, const std::string& seed, const std::string& preset,
                 double metric, double time_to_target) {
  st::RunStats r;
  r.path = "results/x/" + fw + "_" + seed + ".h5";
  r.config = {
      {"compress.fw", fw}, {"run.seed", seed}, {"net.preset", preset}, {"net.bandwidth", "preset"}};
  r.status = "complete";
  r.values = {{"accuracy", metric},
              {"accuracy_compressed", metric - 0.1},
              {"time_to_target_s", time_to_target}};
  return r;
}

}  // namespace

TEST_CASE("plot: what a spec says about scheme, bits and K") {
  const st::SpecInfo aq = st::describe_spec("aq(q2)");
  CHECK(aq.scheme == "aq");
  CHECK(aq.bits == 2);
  CHECK(std::isnan(aq.k));
  CHECK(st::describe_spec("q4:group=64").bits == 4);
  CHECK(st::describe_spec("q4:group=64").scheme == "plain");
  const st::SpecInfo topk = st::describe_spec("ef(topk:0.1+q8)");
  CHECK(topk.scheme == "ef");
  CHECK(topk.k == Approx(0.1));
  CHECK(std::isnan(topk.bits));
  CHECK(st::describe_spec("none").bits == 32);
  CHECK(st::describe_spec("fp16").bits == 16);
  CHECK(st::describe_spec("((").scheme.empty());
}

TEST_CASE("plot: final metric against bits, one line per scheme, seeds pooled") {
  const std::vector<st::RunStats> runs = {
      run("q2", "1", "1Gbps", 0.60, 1), run("q2", "2", "1Gbps", 0.64, 1),
      run("q4", "1", "1Gbps", 0.70, 1), run("aq(q2)", "1", "1Gbps", 0.68, 1),
      run("none", "1", "1Gbps", 0.72, 1)};
  const auto groups = st::group_runs(runs, true);
  const auto keys = st::varying_keys(runs, true);
  CHECK(st::legend_of(groups[0], keys) == "fw=q2");
  std::vector<st::SummaryLine> reference;
  const auto lines = st::metric_lines(groups, keys, "compress.fw", "bits", "accuracy", reference);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].legend == "aq");
  CHECK(lines[1].legend == "plain");
  REQUIRE(lines[1].points.size() == 2);
  CHECK(lines[1].points[0].x == 2);
  CHECK(lines[1].points[0].y == Approx(0.62));
  CHECK(lines[1].points[0].y_std == Approx(0.04 / std::sqrt(2.0)));
  CHECK(lines[1].points[0].y_c == Approx(0.52));
  CHECK(lines[1].points[0].n == 2);
  CHECK(std::isnan(lines[1].points[1].y_std));  // one seed
  REQUIRE(reference.size() == 1);
  CHECK(reference[0].points[0].y == Approx(0.72));
  // K does not vary (no sparsifier): no points at all.
  CHECK(st::metric_lines(groups, keys, "compress.fw", "k", "accuracy", reference).empty());
}

TEST_CASE("plot: time to target against bandwidth leaves unreached points out") {
  const double inf = INFINITY;
  const std::vector<st::RunStats> runs = {
      run("q2", "1", "100Mbps", 0.6, 4), run("q2", "2", "100Mbps", 0.6, 6),
      run("q2", "1", "1Gbps", 0.6, 2), run("none", "1", "100Mbps", 0.6, inf),
      run("none", "1", "1Gbps", 0.6, 3)};
  CHECK(st::run_bandwidth_bps(runs[0]) == Approx(100e6));
  const auto groups = st::group_runs(runs, true);
  size_t unreached = 0;
  const auto lines = st::target_lines(groups, st::varying_keys(runs, true), unreached);
  CHECK(unreached == 1);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].legend == "fw=none");
  CHECK(lines[0].points.size() == 1);  // 100 Mbit/s never reached
  CHECK(lines[1].legend == "fw=q2");
  REQUIRE(lines[1].points.size() == 2);
  CHECK(lines[1].points[0].x == Approx(100e6));
  CHECK(lines[1].points[0].y == Approx(5));
  CHECK(lines[1].points[0].y_std == Approx(std::sqrt(2.0)));
}

TEST_CASE("plot: logs without rows give skipped plots, not a gnuplot error") {
  const std::string dir = slowpipe::test::scratch("plot_empty");
  {
    slowpipe::runlog::RunLog log(dir + "/empty.h5", true);
    log.set_attribute("config.compress.fw", "q4");
    log.set_attribute("status", "running");
    log.declare("train", {{"step", "1", ""}, {"loss", "1", ""}, {"sim_time_s", "s", ""}});
    log.declare("eval", {{"step", "1", ""}, {"loss", "1", ""}});
  }
  const auto runs = st::read_runs({dir + "/empty.h5"}, {});
  st::PlotOptions options;
  options.out_dir = dir + "/plots";
  const st::PlotReport report = st::make_plots(runs, options);
  CHECK(report.written.empty());
  REQUIRE(report.skipped.size() >= 4);
  CHECK(report.skipped[0] == "train_loss_vs_step: no run has a train loss");
  CHECK(report.skipped[2] == "eval_loss_vs_step: no run has a value of eval/loss");
}

namespace {

// A naive seed band: for every key any seed has, loop over all seeds and all
// their rows; the last row of a key in a seed counts.
struct Naive {
  double mean, min, max, x;
  size_t n;
};
std::map<double, Naive> naive_band(const std::vector<st::SeedCurve>& seeds) {
  std::map<double, Naive> out;
  std::set<double> keys;
  for (const auto& s : seeds) keys.insert(s.key.begin(), s.key.end());
  for (double key : keys) {
    double sum = 0, lo = INFINITY, hi = -INFINITY, xs = 0;
    size_t n = 0, nx = 0;
    for (const auto& s : seeds) {
      double y = NAN, x = NAN;
      for (size_t i = 0; i < s.key.size(); ++i) {
        if (s.key[i] == key) y = s.y[i], x = s.x[i];
      }
      if (!std::isfinite(y)) continue;
      sum += y, ++n, lo = std::min(lo, y), hi = std::max(hi, y);
      if (std::isfinite(x)) xs += x, ++nx;
    }
    if (n) out[key] = {sum / n, lo, hi, nx ? xs / nx : NAN, n};
  }
  return out;
}

}  // namespace

TEST_CASE("plot: seed bands agree with a naive mean, min and max per step") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<st::SeedCurve> seeds(1 + trial % 4);
    for (auto& s : seeds) {
      for (int step = 1; step <= 30; ++step) {
        if (u(rng) < 0.2) continue;  // steps only some seeds have
        s.key.push_back(step);
        s.x.push_back(u(rng) < 0.1 ? NAN : 0.5 * step + u(rng));
        s.y.push_back(u(rng) < 0.05 ? NAN : 3 - 0.05 * step + u(rng));  // a diverged row
      }
      if (!s.key.empty() && u(rng) < 0.3) {  // a repeated step: the last row counts
        s.key.push_back(s.key.back()), s.x.push_back(1), s.y.push_back(9);
      }
    }
    const auto band = st::seed_band(seeds);
    const auto want = naive_band(seeds);
    REQUIRE(band.size() == want.size());
    for (const auto& p : band) {
      const Naive& w = want.at(p.key);
      CHECK(p.mean == Approx(w.mean));
      CHECK(p.min == w.min);
      CHECK(p.max == w.max);
      CHECK(p.n == w.n);
      if (std::isnan(w.x)) CHECK(std::isnan(p.x));
      if (!std::isnan(w.x)) CHECK(p.x == Approx(w.x));
      CHECK(p.min <= p.mean);
      CHECK(p.mean <= p.max);
    }
  }
}

TEST_CASE("plot: a step only one seed has is that seed's value, n = 1") {
  const st::SeedCurve a{{1, 2, 3}, {0.1, 0.2, 0.3}, {5, 4, 3}};
  const st::SeedCurve b{{1, 2}, {0.1, 0.2}, {7, 2}};
  const auto band = st::seed_band({a, b});
  REQUIRE(band.size() == 3);
  CHECK(band[0].mean == 6);
  CHECK(band[0].min == 5);
  CHECK(band[0].max == 7);
  CHECK(band[1].mean == 3);
  CHECK(band[2].mean == 3);
  CHECK(band[2].n == 1);
  CHECK(band[2].min == band[2].max);
  CHECK(st::seed_band({}).empty());
}

TEST_CASE("plot: per-epoch means against a naive loop") {
  const std::vector<double> epoch = {0, 0, 0, 1, 1, 2, NAN, 2};
  const std::vector<double> value = {1, 2, 6, NAN, 4, 5, 100, 7};
  const st::SeedCurve m = st::epoch_means(epoch, value);
  REQUIRE(m.key == std::vector<double>{0, 1, 2});
  for (size_t e = 0; e < m.key.size(); ++e) {
    double sum = 0;
    int n = 0;
    for (size_t i = 0; i < epoch.size(); ++i) {
      if (epoch[i] == m.key[e] && std::isfinite(value[i])) sum += value[i], ++n;
    }
    CHECK(m.y[e] == Approx(sum / n));
  }
  CHECK(m.y[0] == Approx(3));  // the control: (1 + 2 + 6) / 3
  CHECK(std::isnan(st::epoch_means({0, 0}, {NAN, NAN}).y[0]));
}

TEST_CASE("plot: legends use run.label, fall back to the keys, stay distinct") {
  std::vector<st::RunStats> runs = {
      run("q2", "1", "1Gbps", 0.6, 1), run("q2", "2", "1Gbps", 0.6, 1),
      run("aq(q2)", "1", "1Gbps", 0.6, 1), run("q4", "1", "1Gbps", 0.6, 1),
      run("q8", "1", "1Gbps", 0.6, 1)};
  runs[0].config["run.label"] = runs[1].config["run.label"] = "direct q2";
  runs[2].config["run.label"] = "AQ-SGD q2";
  runs[3].config["run.label"] = runs[4].config["run.label"] = "direct";  // shared by two groups
  const auto groups = st::group_runs(runs, true);
  const auto keys = st::varying_keys(runs, true);
  REQUIRE(groups.size() == 4);
  CHECK(st::group_label(groups[0]) == "direct q2");
  const auto legends = st::group_legends(groups, keys);
  CHECK(legends[0] == "direct q2");
  CHECK(legends[1] == "AQ-SGD q2");
  CHECK(legends[2] == "direct (fw=q4)");
  CHECK(legends[3] == "direct (fw=q8)");
  runs[1].config["run.label"] = "other";  // seeds disagree: no label, the keys
  const auto mixed = st::group_runs(runs, true);
  CHECK(st::group_label(mixed[0]).empty());
  CHECK(st::group_legends(mixed, keys)[0] == "fw=q2");
}

TEST_CASE("plot: titles name the workload and the network") {
  std::vector<st::RunStats> runs = {run("q2", "1", "1Gbps", 0.6, 1),
                                    run("q4", "1", "1Gbps", 0.6, 1)};
  for (auto& r : runs) r.config["model.name"] = "gpt", r.config["data.name"] = "gcide";
  auto setting = [&] {
    std::vector<const st::RunStats*> p;
    p.reserve(runs.size());
    for (const auto& r : runs) p.push_back(&r);
    return st::runs_setting(p);
  };
  CHECK(setting() == "gpt on gcide, net 1Gbps");
  for (auto& r : runs) r.config["model.init_from"] = "pretrain.pt";
  CHECK(setting() == "gpt fine-tuned on gcide, net 1Gbps");
  runs[1].config["net.bandwidth"] = "250Mbps";
  CHECK(setting() == "gpt fine-tuned on gcide, several networks");
  runs[1].config["model.name"] = "mlp";
  CHECK(setting() == "several workloads, several networks");
}

TEST_CASE("plot: against bits a codec other than q<b> has its own line") {
  const std::vector<st::RunStats> runs = {
      run("q3", "1", "1Gbps", 0.60, 1), run("q4", "1", "1Gbps", 0.70, 1),
      run("tah:bits=3", "1", "1Gbps", 0.66, 1), run("tah:bits=4", "1", "1Gbps", 0.72, 1)};
  std::vector<st::SummaryLine> reference;
  const auto lines = st::metric_lines(st::group_runs(runs, true), st::varying_keys(runs, true),
                                      "compress.fw", "bits", "accuracy", reference);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].legend == "plain");
  CHECK(lines[0].points[0].y == Approx(0.60));  // q3 alone, not pooled with TAH-Quant 3
  CHECK(lines[1].legend.rfind("plain tah", 0) == 0);
  CHECK(lines[1].points[0].y == Approx(0.66));
}

namespace {

// A 3-stage log of 12 steps, 4 per epoch: loss 3 - 0.1 i + offset, one eval
// row (accuracy and its compressed value), fw0/fw1 delta norm (10 e + b + i/4,
// 0 for plain codecs) and relative error (0.1 b + 0.01 i).
void write_channel_log(const std::string& path, const std::string& fw, const std::string& seed,
                       double offset) {
  slowpipe::runlog::RunLog log(path, true);
  const std::map<std::string, std::string> config = {{"compress.fw", fw},
                                                     {"run.seed", seed},
                                                     {"model.name", "gpt"},
                                                     {"data.name", "gcide"},
                                                     {"net.preset", "100Mbps"}};
  for (const auto& [k, v] : config) log.set_attribute("config." + k, v);
  log.set_attribute("status", "complete");
  std::vector<slowpipe::runlog::ColumnInfo> cols = {
      {"step", "1", ""}, {"epoch", "1", ""}, {"loss", "1", ""}, {"sim_time_s", "s", ""}};
  for (const char* c : {"fw0_delta_norm", "fw1_delta_norm", "fw0_rel_error", "fw1_rel_error"})
    cols.push_back({c, "1", ""});
  log.declare("train", cols);
  const bool aq = fw.rfind("aq", 0) == 0;
  for (int i = 1; i <= 12; ++i) {
    const int epoch = (i - 1) / 4;  // 4 steps an epoch
    const double e = epoch;
    log.append("train", {{"step", i},
                         {"epoch", e},
                         {"loss", 3 - 0.1 * i + offset},
                         {"sim_time_s", 0.5 * i},
                         {"fw0_delta_norm", aq ? 10 * e + i / 4.0 + offset : 0},
                         {"fw1_delta_norm", aq ? 10 * e + 1 + i / 4.0 + offset : 0},
                         {"fw0_rel_error", 0.01 * i + offset},
                         {"fw1_rel_error", 0.1 + 0.01 * i + offset}});
  }
  log.declare("eval", {{"step", "1", ""}, {"accuracy", "1", ""}, {"accuracy_compressed", "1", ""}});
  log.append("eval", {{"step", 12}, {"accuracy", 0.5 + offset}, {"accuracy_compressed", 0.4}});
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The data rows (epoch, mean, min, max, n) of a channel line file.
std::vector<std::vector<double>> data_rows(const std::string& path) {
  std::vector<std::vector<double>> rows;
  std::istringstream in(read_text(path));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::vector<double> row;
    for (double v; f >> v;) row.push_back(v);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

TEST_CASE("plot: figures from small logs: channel by epoch, train loss by bits, offsets") {
  const std::string dir = slowpipe::test::scratch("plot_channel");
  write_channel_log(dir + "/aq_1.h5", "aq(q2)", "1", 0);
  write_channel_log(dir + "/aq_2.h5", "aq(q2)", "2", 0.02);
  write_channel_log(dir + "/q2_1.h5", "q2", "1", 0.05);
  write_channel_log(dir + "/q4_1.h5", "q4", "1", 0.01);
  const auto runs = st::read_runs(st::expand_run_paths({dir}), {});
  st::PlotOptions options;
  options.out_dir = dir + "/plots";
  const st::PlotReport report = st::make_plots(runs, options);
  auto wrote = [&](const std::string& name) {
    return std::find(report.written.begin(), report.written.end(),
                     options.out_dir + "/" + name + ".png") != report.written.end();
  };
  CHECK(wrote("channel_by_epoch_fw_delta_norm"));
  CHECK(wrote("channel_by_epoch_fw_rel_error"));
  CHECK(wrote("final_train_loss_vs_fw_bits"));
  CHECK(wrote("final_accuracy_vs_fw_bits"));
  // Delta norm: only aq(q2) has one (q2, q4 log 0): two lines, boundaries 0 and 1.
  const std::string data = options.out_dir + "/data/channel_by_epoch_fw_delta_norm_line";
  const auto b0 = data_rows(data + "1.tsv");
  CHECK(read_text(data + "1.tsv").find("boundary 0") != std::string::npos);
  CHECK(read_text(data + "2.tsv").find("boundary 1") != std::string::npos);
  CHECK_FALSE(std::ifstream(data + "3.tsv").good());
  REQUIRE(b0.size() == 3);
  for (int e = 0; e < 3; ++e) {
    // Seed 1: mean over steps 4e+1..4e+4 of 10 e + i/4; seed 2 the same + 0.02.
    double seed1 = 0;
    for (int i = 4 * e + 1; i <= 4 * e + 4; ++i) seed1 += (10.0 * e + i / 4.0) / 4;
    CHECK(b0[e][0] == e);
    CHECK(b0[e][1] == Approx(seed1 + 0.01));
    CHECK(b0[e][2] == Approx(seed1));
    CHECK(b0[e][3] == Approx(seed1 + 0.02));
    CHECK(b0[e][4] == 2);
  }
  // Relative error: every codec, 3 groups x 2 boundaries.
  CHECK(std::ifstream(options.out_dir + "/data/channel_by_epoch_fw_rel_error_line6.tsv").good());
  // On the log axis the two evaluations of a line are 1.04^2 apart, neighbouring
  // lines (aq, plain) 1.012; the train-loss figure has no compressed variant.
  auto factors = [&](const std::string& script, const std::string& columns) {
    std::vector<double> out;
    const std::regex x("using \\(\\$1\\*([0-9.e+-]+)\\):" + columns);
    for (auto it = std::sregex_iterator(script.begin(), script.end(), x);
         it != std::sregex_iterator(); ++it)
      out.push_back(std::stod((*it)[1]));
    return out;
  };
  const std::string accuracy = read_text(options.out_dir + "/final_accuracy_vs_fw_bits.gp");
  const auto plain = factors(accuracy, "2:3"), compressed = factors(accuracy, "4:5");
  REQUIRE(plain.size() == 2);
  REQUIRE(compressed.size() == 2);
  CHECK(compressed[0] / plain[0] == Approx(1.04 * 1.04));
  CHECK(compressed[1] / plain[1] == Approx(1.04 * 1.04));
  CHECK(plain[1] / plain[0] == Approx(1.012));
  CHECK(plain[0] * plain[1] == Approx(1 / (1.04 * 1.04)));  // centred on the true x
  const std::string loss = read_text(options.out_dir + "/final_train_loss_vs_fw_bits.gp");
  CHECK(factors(loss, "4:5").empty());
  CHECK(factors(loss, "2:3").size() == 2);
  // The title's second line: workload and network.
  CHECK(loss.find("gpt on gcide, net 100Mbps") != std::string::npos);
}
