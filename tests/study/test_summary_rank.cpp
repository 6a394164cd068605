// `summary --rank` and the Pareto figures on hand-made run logs: ranks with
// ties, the direction rule, a dominated point, a diverged and an empty run,
// and the front in the Pareto figure's data file.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/errors.h"
#include "runlog/runlog.h"
#include "study/summary/plot_figures.h"
#include "study/summary/summary_inputs.h"
#include "study/summary/summary_rank.h"
#include "study/summary/summary_table.h"
#include "tests/runlog/runlog_scratch.h"

namespace sp = slowpipe;
namespace st = slowpipe::study;

namespace {

const double kRankNaN = std::numeric_limits<double>::quiet_NaN();
const double kRankInf = std::numeric_limits<double>::infinity();

struct Spec {
  std::string fw, seed, label, status;
  double loss_offset, fw_bytes, sim_time_s;
  int rows = 20;
};

// A log of `rows` steps: loss 3 - 0.1 i + offset (NaN from step 10 when
// diverged), fw_bytes forward and 80 B backward per step.
void write_log(const std::string& path, const Spec& s) {
  sp::runlog::RunLog log(path, /*overwrite=*/true);
  const std::map<std::string, std::string> config = {
      {"model.name", "mlp"},        {"model.layers", "2"},      {"model.hidden", "10"},
      {"pipeline.batch_size", "4"}, {"pipeline.replicas", "1"}, {"run.seed", s.seed},
      {"compress.fw", s.fw},        {"run.label", s.label},     {"run.out", path}};
  for (const auto& [k, v] : config) log.set_attribute("config." + k, v);
  log.set_attribute("pipeline.resolved_cuts", "0,1,3");
  log.set_attribute("status", s.status);
  log.set_attribute("sim_time_s", s.sim_time_s);
  log.declare("train", {{"step", "1", ""},
                        {"loss", "1", ""},
                        {"sim_time_s", "s", ""},
                        {"fw0_bytes", "bytes", ""},
                        {"bw0_bytes", "bytes", ""}});
  for (int i = 1; i <= s.rows; ++i) {
    const bool nan = s.status == "diverged" && i >= 10;
    log.append("train", {{"step", i},
                         {"loss", nan ? kRankNaN : 3 - 0.1 * i + s.loss_offset},
                         {"sim_time_s", s.sim_time_s * i / s.rows},
                         {"fw0_bytes", s.fw_bytes},
                         {"bw0_bytes", 80}});
  }
  log.declare("eval", {{"step", "1", ""}, {"loss", "1", ""}});
}

// Seven logs, six groups. Wire bytes (fw + 80): none 240, q4 120, q4:group=64
// 120, q2 140, q1 90, empty none. Losses: none lowest; q4 and q4:group=64
// equal (a tie); q2 dominated by q4 (more bytes, higher loss); q1 diverged.
std::string write_logs(const std::string& name) {
  std::string dir = sp::test::scratch(name);
  const std::vector<Spec> specs = {
      {"none", "1", "fp32", "complete", -0.01, 160, 20},
      {"none", "2", "fp32", "complete", 0.01, 160, 20},
      {"q4", "1", "direct q4", "complete", 0.1, 40, 10},
      {"q4:group=64", "1", "grouped q4", "complete", 0.1, 40, 10},
      {"q2", "1", "direct q2", "complete", 0.2, 60, 10},
      {"q1", "1", "direct q1", "diverged", 0.3, 10, 5},
      {"q3", "1", "empty", "running", 0, 30, 1, /*rows=*/0},
  };
  for (size_t i = 0; i < specs.size(); ++i) {
    write_log(dir + "/run" + std::to_string(i) + ".h5", specs[i]);
  }
  return dir;
}

st::SummaryTable ranked_table(const std::vector<st::RunStats>& runs, const std::string& by) {
  st::SummaryTable table = st::build_summary_table(runs, /*group_seeds=*/true, {});
  st::rank_summary_table(table, by);
  return table;
}

std::vector<std::string> fw_order(const st::SummaryTable& table) {
  std::vector<std::string> out;
  for (const auto& g : table.groups) out.push_back(st::group_key_value(g, "compress.fw"));
  return out;
}

}  // namespace

TEST_CASE("pareto_front: dominated points, ties, and non-finite points") {
  // (1,5) and (3,2) are on it, (2,5) is dominated by (1,5), (3,3) by (3,2);
  // the two (4,1) are equal and both on it; NaN and inf points never are,
  // and (0.5, inf) dominates nothing.
  const std::vector<double> x = {1, 2, 3, 3, 4, 4, kRankNaN, 0.5, 0.1};
  const std::vector<double> y = {5, 5, 2, 3, 1, 1, 0, kRankInf, kRankNaN};
  const std::vector<bool> expected = {true, false, true, false, true, true, false, false, false};
  CHECK(st::pareto_front(x, y) == expected);
  CHECK(st::pareto_front({}, {}).empty());
}

TEST_CASE("rank: the time front is taken per link bandwidth") {
  // Two codecs on two links. At 1 Gbps, q4 (1.0 nats, 8 s) is dominated by
  // none (0.9 nats, 5 s); at 100 Mbps both are on the front. Mixed, none at
  // 1 Gbps would dominate q4 at 100 Mbps too.
  auto run = [](const std::string& fw, const std::string& bw, double loss, double time_s) {
    st::RunStats r;
    r.path = fw + "_" + bw + ".h5";
    r.config = {{"compress.fw", fw}, {"net.bandwidth", bw}};
    r.status = "complete";
    r.values = {{"train_loss", loss}, {"sim_time_s", time_s}, {"wire_bytes", fw == "q4" ? 1 : 8.0}};
    return r;
  };
  const std::vector<st::RunStats> runs = {run("none", "100Mbps", 0.9, 40),
                                          run("q4", "100Mbps", 1.0, 10),
                                          run("none", "1Gbps", 0.9, 5), run("q4", "1Gbps", 1.0, 8)};
  const auto groups = st::group_runs(runs, true);
  REQUIRE(groups.size() == 4);
  using F = st::FrontMark;
  CHECK(st::time_front_marks(groups) == std::vector<F>{F::kOn, F::kOn, F::kOn, F::kOff});
  CHECK(st::front_marks(groups, "sim_time_s") == std::vector<F>{F::kOff, F::kOff, F::kOn, F::kOff});
}

TEST_CASE("summary --rank: order, ties, diverged last, no value unranked") {
  const std::string dir = write_logs("summary_rank");
  const auto runs = st::read_runs(st::expand_run_paths({dir}), {});
  const auto table = ranked_table(runs, "train_loss");
  CHECK(fw_order(table) == std::vector<std::string>{"none", "q4", "q4:group=64", "q2", "q1", "q3"});
  CHECK(table.ranks == std::vector<size_t>{1, 2, 2, 4, 5, 0});
  using F = st::FrontMark;
  // Bytes: none (240 B, lowest loss) and both q4 (120 B) are on it; q2 (140 B,
  // higher loss than q4) is not; q1 (diverged, 90 B) is placed off it.
  CHECK(table.front_bytes == std::vector<F>{F::kOn, F::kOn, F::kOn, F::kOff, F::kOff, F::kNone});
  CHECK(table.front_time == table.front_bytes);  // the times follow the bytes here
  // The wire column appears when ranking, never otherwise.
  auto has_wire = [](const st::SummaryTable& t) {
    for (const auto& c : t.columns)
      if (c.id == "wire_bytes") return true;
    return false;
  };
  CHECK(has_wire(table));
  CHECK_FALSE(has_wire(st::build_summary_table(runs, true, {})));

  std::ostringstream tsv;
  st::write_summary(table, st::SummaryFormat::kTsv, tsv);
  std::istringstream lines(tsv.str());
  std::string header, first;
  std::getline(lines, header);
  std::getline(lines, first);
  CHECK(header.rfind("rank\tcompress.fw\tn\tstatus\tfront_bytes\tfront_time\t", 0) == 0);
  CHECK(first.rfind("1\tnone\t2\tcomplete\t1\t1\t", 0) == 0);
  CHECK(tsv.str().find("nan\tq3\t1\t") != std::string::npos);
}

TEST_CASE("summary --rank: higher-is-better columns, wire bytes, bad column") {
  const std::string dir = write_logs("summary_rank_dir");
  const auto runs = st::read_runs(st::expand_run_paths({dir}), {});
  // fp32_ratio (higher is better) = 320 / wire bytes: the fewest bytes first;
  // the diverged q1 (90 B) counts as the worst value.
  const auto by_ratio = ranked_table(runs, "fp32_ratio");
  CHECK(fw_order(by_ratio) ==
        std::vector<std::string>{"q4", "q4:group=64", "q2", "none", "q1", "q3"});
  CHECK(by_ratio.ranks == std::vector<size_t>{1, 1, 3, 4, 5, 0});
  const auto by_wire = ranked_table(runs, "wire_bytes");
  CHECK(fw_order(by_wire) == fw_order(by_ratio));
  const auto group = by_wire.groups.front();
  CHECK(st::aggregate(group, "wire_bytes").stat.mean == 120);
  auto table = st::build_summary_table(runs, true, {});
  CHECK_THROWS_AS(st::rank_summary_table(table, "no_such_column"), sp::UsageError);
  CHECK_THROWS_AS(st::rank_summary_table(table, "time_to_target_s"), sp::UsageError);
}

TEST_CASE("plot: the Pareto figures' data files hold the front") {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    FAIL("gnuplot not found: install the Debian package gnuplot-nox (make test does)");
  }
  const std::string dir = write_logs("plot_pareto");
  const auto runs = st::read_runs(st::expand_run_paths({dir}), {});
  st::PlotOptions options;
  options.out_dir = dir + "/plots";
  const st::PlotReport report = st::make_plots(runs, options);
  CHECK(std::find(report.written.begin(), report.written.end(),
                  dir + "/plots/pareto_loss_vs_wire_bytes.png") != report.written.end());
  // Points: one line each, the label then its anchor, alignment and leader flag; the diverged
  // and the empty group left out.
  std::ifstream in(dir + "/plots/data/pareto_loss_vs_wire_bytes.tsv");
  std::string line;
  std::getline(in, line);
  std::map<std::string, std::string> front_of;  // label -> front flag
  std::map<std::string, double> x_of;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::istringstream s(line);
    for (std::string c; std::getline(s, c, '\t');) cells.push_back(c);
    REQUIRE(cells.size() == 11);
    CHECK(std::stod(cells[7]) > 0);  // the label's anchor, on the log x axis
    CHECK(std::isfinite(std::stod(cells[8])));
    CHECK((cells[9] == "0" || cells[9] == "1"));
    CHECK((cells[10] == "0" || cells[10] == "1"));
    front_of[cells[6]] = cells[5];
    x_of[cells[6]] = std::stod(cells[0]);
  }
  CHECK(front_of ==
        std::map<std::string, std::string>{
            {"fp32", "1"}, {"direct q4", "1"}, {"grouped q4", "1"}, {"direct q2", "0"}});
  CHECK(x_of["fp32"] == 240);
  // The front file: the front's points by x, for the step line.
  std::ifstream f(dir + "/plots/data/pareto_loss_vs_wire_bytes_front.tsv");
  std::vector<double> xs;
  std::getline(f, line);
  while (std::getline(f, line)) xs.push_back(std::stod(line.substr(0, line.find('\t'))));
  CHECK(xs == std::vector<double>{120, 120, 240});
  bool told = false;
  for (const auto& why : report.skipped)
    told = told || why.find("pareto_loss_vs_wire_bytes: 2 seed group(s) left out") == 0;
  CHECK(told);
}
