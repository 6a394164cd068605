// The summary's statistics against hand computations, on small run logs written
// here with runlog::RunLog; its grouping, varying keys and formats.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/errors.h"
#include "runlog/runlog.h"
#include "study/summary/internal/summary_fp32.h"
#include "study/summary/summary_inputs.h"
#include "study/summary/summary_stats.h"
#include "study/summary/summary_table.h"
#include "tests/runlog/runlog_scratch.h"

namespace sp = slowpipe;
namespace st = slowpipe::study;
using Catch::Detail::Approx;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// A 20-step log: loss 3 - 0.1 i, sim time 0.5 i, 40 B forward and 80 B backward
// per step; evaluations after steps 5, 10, 15, 20. An MLP (hidden 10, batch 4)
// cut after block 0, so fp32 would send 4 x 4 x 10 = 160 B each way.
void write_log(const std::string& path, const std::map<std::string, std::string>& config,
               double loss_offset = 0) {
  sp::runlog::RunLog log(path, /*overwrite=*/true);
  std::map<std::string, std::string> all = {
      {"model.name", "mlp"},        {"model.layers", "2"},      {"model.hidden", "10"},
      {"pipeline.batch_size", "4"}, {"pipeline.replicas", "1"}, {"run.seed", "1"},
      {"compress.fw", "q4"},        {"run.out", path},          {"run.progress", "none"}};
  for (const auto& [k, v] : config) all[k] = v;
  for (const auto& [k, v] : all) log.set_attribute("config." + k, v);
  log.set_attribute("pipeline.resolved_cuts", "0,1,3");
  log.set_attribute("status", "complete");
  log.set_attribute("sim_time_s", 10.0);
  log.set_attribute("wall_time_s", 2.5);
  log.declare("train", {{"step", "1", ""},
                        {"loss", "1", ""},
                        {"sim_time_s", "s", ""},
                        {"fw0_bytes", "bytes", ""},
                        {"bw0_bytes", "bytes", ""},
                        {"channel_state_bytes", "bytes", ""}});
  for (int i = 1; i <= 20; ++i) {
    log.append("train", {{"step", i},
                         {"loss", 3 - 0.1 * i + loss_offset},
                         {"sim_time_s", 0.5 * i},
                         {"fw0_bytes", 40},
                         {"bw0_bytes", 80},
                         // grows to a peak at step 12, then shrinks (a non-monotone control)
                         {"channel_state_bytes", 100.0 * (i <= 12 ? i : 24 - i)}});
  }
  log.declare("eval", {{"step", "1", ""},
                       {"loss", "1", ""},
                       {"accuracy", "1", ""},
                       {"loss_compressed", "1", ""},
                       {"accuracy_compressed", "1", ""}});
  const double loss[] = {2.0, 1.5, 1.6, 1.7}, acc[] = {0.5, 0.7, 0.65, 0.6};
  const double loss_c[] = {2.1, 1.6, 1.7, 1.8}, acc_c[] = {0.4, 0.6, 0.62, 0.55};
  for (int r = 0; r < 4; ++r) {
    log.append("eval", {{"step", 5 * (r + 1)},
                        {"loss", loss[r]},
                        {"accuracy", acc[r]},
                        {"loss_compressed", loss_c[r]},
                        {"accuracy_compressed", acc_c[r]}});
  }
}

st::SummaryOptions with_target(double target, int window) {
  st::SummaryOptions o;
  o.has_target = true;
  o.target_loss = target;
  o.smooth_window = window;
  return o;
}

}  // namespace

TEST_CASE("summary: per-channel columns are PREFIX, digits, SUFFIX") {
  CHECK(st::numbered_column("fw0_bytes", "fw", "_bytes"));
  CHECK(st::numbered_column("fw12_bytes", "fw", "_bytes"));
  CHECK(st::numbered_column("grad3_bytes", "grad", "_bytes"));
  CHECK(st::numbered_column("fw1_rel_error", "fw", "_rel_error"));
  CHECK_FALSE(st::numbered_column("fw_bytes", "fw", "_bytes"));   // no digit
  CHECK_FALSE(st::numbered_column("fwx_bytes", "fw", "_bytes"));  // not a digit
  CHECK_FALSE(st::numbered_column("fw0_sent_bytes", "fw", "_bytes"));
  CHECK_FALSE(st::numbered_column("bw0_bytes", "fw", "_bytes"));
  CHECK_FALSE(st::numbered_column("fw0_bytes_x", "fw", "_bytes"));
  CHECK_FALSE(st::numbered_column("fw", "fw", ""));
  CHECK(st::numbered_column("fw7", "fw", ""));
}

TEST_CASE("summary: tail mean over the last 10% of steps, at least one") {
  std::vector<double> v;
  for (int i = 1; i <= 20; ++i) v.push_back(i);
  CHECK(st::tail_mean(v) == Approx(19.5));  // 19, 20
  v.resize(25);
  for (int i = 20; i < 25; ++i) v[i] = i + 1;
  CHECK(st::tail_mean(v) == Approx(24.0));  // ceil(2.5) = 3: 23, 24, 25
  CHECK(st::tail_mean({7, 5}) == Approx(5.0));
  CHECK(std::isnan(st::tail_mean({})));
  CHECK(std::isnan(st::tail_mean({1, 2, kNaN})));  // a diverged last step is not hidden
}

TEST_CASE("summary: time to target is the first step whose trailing mean reaches it") {
  const std::vector<double> loss = {5, 4, 3, 2, 1}, time = {10, 20, 30, 40, 50};
  CHECK(st::trailing_mean(loss, 2) == std::vector<double>{5, 4.5, 3.5, 2.5, 1.5});
  CHECK(st::time_to_target(loss, time, 3, 2) == 40);  // 2.5 at the 4th step
  CHECK(st::time_to_target(loss, time, 3, 1) == 30);  // control: unsmoothed, the 3rd
  CHECK(std::isinf(st::time_to_target(loss, time, 0.5, 1)));
  CHECK(std::isinf(st::time_to_target({kNaN, kNaN}, {1, 2}, 100, 1)));
}

TEST_CASE("summary: mean, sample std (n - 1) and n over finite values") {
  const st::MeanStd m = st::mean_std({1, 2, 3, 4, kNaN, kInf});
  CHECK(m.n == 4);
  CHECK(m.mean == Approx(2.5));
  CHECK(m.std == Approx(std::sqrt(5.0 / 3.0)));  // sum of squares 5, over n - 1 = 3
  CHECK(std::isnan(st::mean_std({3}).std));
  CHECK(st::mean_std({}).n == 0);
}

TEST_CASE("summary: one run log's row against a hand computation") {
  const std::string dir = sp::test::scratch("summary_row");
  write_log(dir + "/a.h5", {});
  const st::RunStats run = st::read_run_stats(dir + "/a.h5", with_target(1.5, 2));
  auto v = [&](const std::string& id) { return run.values.at(id); };
  CHECK(run.status == "complete");
  CHECK(v("steps") == 20);
  CHECK(v("train_loss") == Approx((1.1 + 1.0) / 2));  // last 2 of 20 steps
  CHECK(v("eval_loss") == Approx(1.7));
  CHECK(v("eval_loss_best") == Approx(1.5));
  CHECK(v("eval_loss_compressed") == Approx(1.8));
  CHECK(v("eval_loss_compressed_best") == Approx(1.6));
  CHECK(v("accuracy") == Approx(0.6));
  CHECK(v("accuracy_best") == Approx(0.7));  // higher is better
  CHECK(v("accuracy_compressed_best") == Approx(0.62));
  CHECK(run.values.count("bits_per_byte") == 0);
  CHECK(v("sim_time_s") == 10);
  CHECK(v("wall_time_s") == 2.5);
  // Trailing mean of 2: 3.05 - 0.1 i <= 1.5 first at i = 16, sim time 8 s.
  CHECK(v("time_to_target_s") == Approx(8.0));
  CHECK(v("fw_bytes") == 40);
  CHECK(v("bw_bytes") == 80);
  CHECK(v("fp32_ratio") == Approx(320.0 / 120.0));
  CHECK(std::isnan(v("grad_bytes")));
  CHECK(v("state_bytes") == 1200);  // the peak, not the last row's 400

  const st::RunStats far = st::read_run_stats(dir + "/a.h5", with_target(0.5, 2));
  CHECK(std::isinf(far.values.at("time_to_target_s")));
  const st::RunStats none = st::read_run_stats(dir + "/a.h5", st::SummaryOptions{});
  CHECK(none.values.count("time_to_target_s") == 0);
}

TEST_CASE("summary: fp32 shapes of the three models from the logged config") {
  std::map<std::string, std::string> gpt = {
      {"config.model.name", "gpt"},        {"config.model.layers", "4"},
      {"config.model.seq_len", "16"},      {"config.model.d_model", "32"},
      {"config.pipeline.batch_size", "8"}, {"pipeline.resolved_cuts", "0,2,4,6"}};
  CHECK(st::block_output_elements(gpt, 1) == 16 * 32);
  CHECK(std::isnan(st::block_output_elements(gpt, 5)));  // the LM head's logits
  // Two boundaries of [8, 16, 32] floats each way.
  CHECK(st::fp32_bytes_per_step(gpt).fw == 2 * 8 * 16 * 32 * 4);
  std::map<std::string, std::string> cnn = {
      {"config.model.name", "cnn"}, {"config.model.layers", "4"}, {"config.model.channels", "16"}};
  CHECK(st::block_output_elements(cnn, 0) == 16 * 28 * 28);  // stem
  CHECK(st::block_output_elements(cnn, 2) == 16 * 28 * 28);  // residual block 1
  CHECK(st::block_output_elements(cnn, 3) == 32 * 14 * 14);  // block 2 = layers/2 halves
  gpt["config.pipeline.replicas"] = "2";
  gpt["model.parameters"] = "1000";
  CHECK(st::fp32_bytes_per_step(gpt).grad == 4 * 1000 * 2);
  CHECK(std::isnan(st::fp32_bytes_per_step({{"config.model.name", "other"},
                                            {"config.model.layers", "2"},
                                            {"config.pipeline.batch_size", "8"},
                                            {"pipeline.resolved_cuts", "0,1,2"}})
                       .fw));
}

TEST_CASE("summary: varying keys, seed groups and their statistics") {
  const std::string dir = sp::test::scratch("summary_groups");
  write_log(dir + "/a.h5", {{"run.seed", "1"}});
  write_log(dir + "/b.h5", {{"run.seed", "2"}, {"run.progress", "bar"}}, /*loss_offset=*/0.2);
  write_log(dir + "/c.h5", {{"compress.fw", "q2"}});
  const auto runs = st::read_runs(st::expand_run_paths({dir}), with_target(1.5, 2));
  REQUIRE(runs.size() == 3);
  CHECK(st::varying_keys(runs, true) == std::vector<std::string>{"compress.fw"});
  CHECK(st::varying_keys(runs, false) == std::vector<std::string>{"compress.fw", "run.seed"});

  const auto groups = st::group_runs(runs, true);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].runs.size() == 2);
  CHECK(groups[1].runs.size() == 1);
  CHECK(st::group_runs(runs, false).size() == 3);

  const st::GroupCell loss = st::aggregate(groups[0], "train_loss");
  CHECK(loss.stat.n == 2);
  CHECK(loss.stat.mean == Approx(1.05 + 0.1));  // 1.05 and 1.25
  CHECK(loss.stat.std == Approx(0.2 / std::sqrt(2.0)));
  // Seed 2 is 0.2 higher: 3.25 - 0.1 i <= 1.5 at i = 18 (9 s); seed 1 at 8 s.
  const st::GroupCell t = st::aggregate(groups[0], "time_to_target_s");
  CHECK(t.stat.mean == Approx(8.5));
  CHECK(st::group_status(groups[0]) == "complete");

  // A key only one run has varies too (absent is a value of its own).
  write_log(dir + "/d.h5", {{"eval.at_start", "true"}});
  const auto more = st::read_runs(st::expand_run_paths({dir}), st::SummaryOptions{});
  CHECK(st::varying_keys(more, true) == std::vector<std::string>{"compress.fw", "eval.at_start"});
}

TEST_CASE("summary: cells and the three formats") {
  const st::SummaryColumn loss{"train_loss", "train loss", "nats", st::CellFormat::kLoss};
  st::GroupCell one{{1.2345, kNaN, 1}, 1, 0};
  CHECK(st::format_cell(loss, one) == "1.234");
  st::GroupCell two{{1.15, 0.1414, 2}, 2, 0};
  CHECK(st::format_cell(loss, two) == "1.15 \u00b1 0.14");
  CHECK(st::format_cell(loss, {{kNaN, kNaN, 0}, 2, 0}) == "\u2013");
  CHECK(st::format_cell(loss, {{kNaN, kNaN, 0}, 2, 2}) == "not reached");
  CHECK(st::format_cell(loss, {{3.0, kNaN, 1}, 2, 1}) == "3 (1/2)");
  const st::SummaryColumn time{"sim_time_s", "sim time [s]", "s", st::CellFormat::kSeconds};
  CHECK(st::format_cell(time, {{0.10043, 0.003021, 2}, 2, 0}) == "0.1004 \u00b1 0.0030");
  CHECK(st::format_cell(time, {{12.04, 3.4, 3}, 3, 0}) == "12.0 \u00b1 3.4");
  CHECK(st::format_cell(time, {{0.349, 0, 2}, 2, 0}) == "0.349 \u00b1 0");  // deterministic
  const st::SummaryColumn steps{"steps", "steps", "1", st::CellFormat::kCount};
  CHECK(st::format_cell(steps, {{30, 0, 2}, 2, 0}) == "30");  // no "± 0" on a count
  CHECK(st::format_number(st::CellFormat::kBytes, 2112) == "2.06 KiB");
  CHECK(st::format_number(st::CellFormat::kRatio, 5.2245) == "5.22x");

  const std::string dir = sp::test::scratch("summary_formats");
  write_log(dir + "/a.h5", {{"run.seed", "1"}});
  write_log(dir + "/b.h5", {{"run.seed", "2"}}, 0.2);
  write_log(dir + "/c.h5", {{"compress.fw", "q2|x"}});
  const auto runs = st::read_runs(st::expand_run_paths({dir}), with_target(1.5, 2));
  const st::SummaryTable table = st::build_summary_table(runs, true, with_target(1.5, 2));

  std::ostringstream tsv;
  st::write_summary(table, st::SummaryFormat::kTsv, tsv);
  std::istringstream lines(tsv.str());
  std::string header, row1, row2;
  std::getline(lines, header);
  std::getline(lines, row1);
  std::getline(lines, row2);
  auto fields = [](const std::string& s) { return std::count(s.begin(), s.end(), '\t') + 1; };
  CHECK(header.rfind("compress.fw\tn\tstatus\tsteps\tsteps_std\ttrain_loss\ttrain_loss_std", 0) ==
        0);
  CHECK(fields(row1) == fields(header));
  // Rows sorted by the key's value: "q2|x" before "q4".
  CHECK(row1.rfind("q2|x\t1\t", 0) == 0);
  CHECK(row2.rfind("q4\t2\tcomplete\t20\t0\t1.15\t0.1414213562", 0) == 0);
  CHECK(header.find("bits_per_byte") == std::string::npos);  // no run has it: no column
  CHECK(header.find("time_to_target_reached") != std::string::npos);

  std::ostringstream md;
  st::write_summary(table, st::SummaryFormat::kMarkdown, md);
  CHECK(md.str().rfind("| compress.fw | n | status | steps | train loss |", 0) == 0);
  CHECK(md.str().find("|---|---:|---|---:|") != std::string::npos);
  CHECK(md.str().find("| q2\\|x | 1 |") != std::string::npos);  // '|' escaped
  CHECK(md.str().find("1.15 \u00b1 0.14") != std::string::npos);

  std::ostringstream text;
  st::write_summary(table, st::SummaryFormat::kTextWide, text);
  std::istringstream tl(text.str());
  std::string h, r1, r2;
  std::getline(tl, h);
  std::getline(tl, r1);
  std::getline(tl, r2);
  // Aligned: the status column starts at the same place in every line.
  const size_t at = h.find("status");
  CHECK(r1.substr(at, 8) == "complete");
  CHECK(r2.substr(at, 8) == "complete");
}

TEST_CASE("summary: bad inputs name the file") {
  const std::string dir = sp::test::scratch("summary_bad");
  CHECK_THROWS_AS(st::expand_run_paths({dir + "/missing.h5"}), sp::UsageError);
  CHECK_THROWS_AS(st::expand_run_paths({dir}), sp::UsageError);  // no *.h5
  CHECK_THROWS_AS(st::expand_run_paths({}), sp::UsageError);
  std::ofstream(dir + "/junk.h5") << "not hdf5 at all";
  CHECK_THROWS_WITH(st::read_run_stats(dir + "/junk.h5", {}),
                    Catch::Contains(dir + "/junk.h5") && Catch::Contains("not a readable"));
  CHECK_THROWS_AS(st::read_run_stats(dir + "/junk.h5", {}), sp::DataError);
  {
    sp::runlog::RunLog plain(dir + "/plain.h5", true);
    plain.declare("train", {{"step", "1", ""}});
  }
  CHECK_THROWS_AS(st::read_run_stats(dir + "/plain.h5", {}), sp::DataError);
}
