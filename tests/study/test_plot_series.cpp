// What the comparison plots are made of: spec facts, legends, and the summary
// plot points (seed means and sample std).
#include <catch2/catch.hpp>
#include <cmath>

#include "runlog/runlog.h"
#include "study/plot_figures.h"
#include "study/plot_series.h"
#include "study/summary_inputs.h"
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
