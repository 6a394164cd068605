// Time to target (study/summary/summary_target.h) against hand computations: steps,
// samples, tokens and simulated seconds under the train rule (trailing mean of
// the train loss) and the eval rule (the earliest evaluation at or below the
// target), on small run logs written here with runlog::RunLog: a language
// model of two seeds where only one reaches the target by evaluation, a run
// that never reaches it, a classifier (samples, no tokens) without a `samples`
// column. Then the table (which rule's columns, titles, "not reached", (k/n),
// TSV), --rank, and verdict claims naming the columns.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <sstream>

#include "common/errors.h"
#include "runlog/runlog.h"
#include "study/summary/internal/plot_series.h"
#include "study/summary/summary_inputs.h"
#include "study/summary/summary_table.h"
#include "study/summary/summary_target.h"
#include "study/sweeps/verdict_claim.h"
#include "study/sweeps/verdict_eval.h"
#include "tests/runlog/runlog_scratch.h"

namespace sp = slowpipe;
namespace st = slowpipe::study;
using Catch::Detail::Approx;

namespace {

struct EvalRow {
  double step, loss;
};

// A 10-step run: train loss 5 - 0.3 i + offset at step i, sim time 1.5 i s;
// `samples` 4 i when `with_samples` (pipeline.batch_size is 999 there, so a
// fallback to step x batch would show); evaluations at the given steps, with
// sim time 1.5 x step. A language model (gpt, seq_len 8: its eval table logs
// bits_per_byte) unless `classifier` (mlp, accuracy, batch 16).
struct LogSpec {
  std::string fw = "q4", seed = "1";
  double offset = 0;
  bool constant = false;  // train loss 4.0 at every step (never reaches 3.0)
  bool classifier = false, with_samples = true;
  std::vector<EvalRow> evals;
};

void write_log(const std::string& path, const LogSpec& s) {
  sp::runlog::RunLog log(path, /*overwrite=*/true);
  std::map<std::string, std::string> config = {{"model.name", s.classifier ? "mlp" : "gpt"},
                                               {"model.seq_len", "8"},
                                               {"pipeline.batch_size", s.classifier ? "16" : "999"},
                                               {"run.seed", s.seed},
                                               {"compress.fw", s.fw}};
  for (const auto& [k, v] : config) log.set_attribute("config." + k, v);
  log.set_attribute("status", "complete");
  std::vector<sp::runlog::ColumnInfo> train = {
      {"step", "1", ""}, {"loss", "1", ""}, {"sim_time_s", "s", ""}};
  if (s.with_samples) train.push_back({"samples", "1", ""});
  log.declare("train", train);
  for (int i = 1; i <= 10; ++i) {
    std::map<std::string, double> row = {
        {"step", i}, {"loss", s.constant ? 4.0 : 5 - 0.3 * i + s.offset}, {"sim_time_s", 1.5 * i}};
    if (s.with_samples) row["samples"] = 4 * i;
    log.append("train", row);
  }
  const std::string metric = s.classifier ? "accuracy" : "bits_per_byte";
  log.declare("eval",
              {{"step", "1", ""}, {"sim_time_s", "s", ""}, {"loss", "1", ""}, {metric, "1", ""}});
  for (const auto& e : s.evals) {
    log.append("eval", {{"step", e.step},
                        {"sim_time_s", 1.5 * e.step},
                        {"loss", e.loss},
                        {metric, e.loss / std::log(2.0)}});
  }
}

st::SummaryOptions target(double loss, int window, st::TargetRule rule = st::TargetRule::kTrain) {
  st::SummaryOptions o;
  o.has_target = true;
  o.target_loss = loss;
  o.smooth_window = window;
  o.target_on = rule;
  return o;
}

// Seed 1 and 2 of q4 (seed 2 0.15 higher), q2 that never reaches 3.0.
// Evaluations every 3 steps from step 0.
std::string write_three(const std::string& name) {
  std::string dir = sp::test::scratch(name);
  LogSpec a;
  a.evals = {{0, 5.5}, {3, 4.2}, {6, 3.1}, {9, 2.95}};
  write_log(dir + "/a.h5", a);
  LogSpec b = a;
  b.seed = "2", b.offset = 0.15;
  b.evals = {{0, 5.6}, {3, 4.3}, {6, 3.2}, {9, 3.05}};
  write_log(dir + "/b.h5", b);
  LogSpec c = a;
  c.fw = "q2", c.constant = true;
  c.evals = {{0, 5.5}, {3, 4.0}, {6, 4.0}, {9, 4.0}};
  write_log(dir + "/c.h5", c);
  return dir;
}

std::string tsv_cell(const std::string& tsv, size_t row, const std::string& column) {
  std::istringstream lines(tsv);
  std::string line;
  std::vector<std::vector<std::string>> cells;
  while (std::getline(lines, line)) {
    std::vector<std::string> fields;
    std::istringstream f(line);
    std::string x;
    while (std::getline(f, x, '\t')) fields.push_back(x);
    cells.push_back(fields);
  }
  for (size_t c = 0; c < cells[0].size(); ++c)
    if (cells[0][c] == column) return cells.at(row)[c];
  return "NO_COLUMN";
}

}  // namespace

TEST_CASE("target: the first row whose trailing mean reaches the target") {
  const std::vector<double> loss = {5, 4, 3, 2, 1};
  CHECK(st::first_smoothed_row_at_or_below(loss, 3, 2) == 3);  // 2.5 at the 4th row
  CHECK(st::first_smoothed_row_at_or_below(loss, 3, 1) == 2);  // control: unsmoothed
  CHECK(st::first_smoothed_row_at_or_below(loss, 0.5, 1) == 5);
  CHECK(st::first_smoothed_row_at_or_below({NAN, NAN}, 100, 1) == 2);
  CHECK(st::target_column_title("sim time to target [s]", 4.5) ==
        "sim time to loss \u2264 4.5 [s]");
  CHECK(st::target_column_title("steps to eval target", 3) == "steps to eval loss \u2264 3");
  CHECK(st::is_target_column("eval_tokens_to_target"));
  CHECK(!st::is_target_column("eval_loss"));
  CHECK(st::target_column_rule("eval_steps_to_target") == st::TargetRule::kEval);
  CHECK(st::target_column_rule("steps_to_target") == st::TargetRule::kTrain);
}

TEST_CASE("target: steps, samples, tokens and seconds of one run by hand") {
  const std::string dir = write_three("target_runs");
  const st::RunStats a = st::read_run_stats(dir + "/a.h5", target(3.0, 3));
  auto v = [&](const std::string& id) { return a.values.at(id); };
  // Train rule, window 3: the mean of steps i-2..i is 5 - 0.3 (i - 1) = 5.3 - 0.3 i,
  // first <= 3.0 at i = 8 (2.9; at i = 7 it is 3.2).
  CHECK(v("steps_to_target") == 8);
  CHECK(v("samples_to_target") == 32);           // the `samples` column (4 x 8), not 8 x 999
  CHECK(v("tokens_to_target") == 256);           // 32 samples x seq_len 8
  CHECK(v("time_to_target_s") == Approx(12.0));  // 1.5 x 8
  // Eval rule: 5.5, 4.2, 3.1 (> 3.0 at step 6), then 2.95 at step 9.
  CHECK(v("eval_steps_to_target") == 9);
  CHECK(v("eval_samples_to_target") == 36);
  CHECK(v("eval_tokens_to_target") == 288);
  CHECK(v("eval_time_to_target_s") == Approx(13.5));
  // Control: unsmoothed, the train rule reaches 3.0 at step 7 (loss 2.9).
  const st::RunStats raw = st::read_run_stats(dir + "/a.h5", target(3.0, 1));
  CHECK(raw.values.at("steps_to_target") == 7);
  CHECK(raw.values.at("time_to_target_s") == Approx(10.5));
  // The run that never gets there: +infinity in every count, under both rules.
  const st::RunStats c = st::read_run_stats(dir + "/c.h5", target(3.0, 3));
  for (const auto& id : {"time_to_target_s", "steps_to_target", "samples_to_target",
                         "tokens_to_target", "eval_time_to_target_s", "eval_steps_to_target",
                         "eval_samples_to_target", "eval_tokens_to_target"}) {
    INFO(id);
    CHECK(std::isinf(c.values.at(id)));
  }
  // Without a target: none of the columns.
  const st::RunStats none = st::read_run_stats(dir + "/a.h5", st::SummaryOptions{});
  CHECK(none.values.count("steps_to_target") == 0);
  CHECK(none.values.count("eval_steps_to_target") == 0);
}

TEST_CASE("target: a classifier counts samples, from step x batch without a samples column") {
  const std::string dir = sp::test::scratch("target_classifier");
  LogSpec d;
  d.classifier = true, d.with_samples = false;
  d.evals = {{0, 5.5}, {5, 2.5}, {10, 1.0}};
  write_log(dir + "/d.h5", d);
  const st::RunStats run = st::read_run_stats(dir + "/d.h5", target(3.0, 3));
  CHECK(run.values.at("steps_to_target") == 8);
  CHECK(run.values.at("samples_to_target") == 128);  // 8 x batch 16
  CHECK(run.values.count("tokens_to_target") == 0);  // not a language model
  CHECK(run.values.at("eval_steps_to_target") == 5);
  CHECK(run.values.at("eval_samples_to_target") == 80);
  CHECK(run.values.at("eval_time_to_target_s") == Approx(7.5));
  CHECK(run.values.count("eval_tokens_to_target") == 0);
}

TEST_CASE("target: seed groups average the seeds that reached it, (k/n)") {
  const std::string dir = write_three("target_groups");
  const auto runs = st::read_runs(st::expand_run_paths({dir}), target(3.0, 3));
  const auto groups = st::group_runs(runs, true);
  REQUIRE(groups.size() == 2);  // q4 (seeds 1, 2), q2
  // Train rule: seed 2 is 0.15 higher, 5.45 - 0.3 i <= 3.0 first at i = 9.
  const st::GroupCell steps = st::aggregate(groups[0], "steps_to_target");
  CHECK(steps.stat.n == 2);
  CHECK(steps.stat.mean == Approx(8.5));
  CHECK(steps.stat.std == Approx(std::sqrt(0.5)));
  CHECK(st::aggregate(groups[0], "tokens_to_target").stat.mean == Approx((256 + 288) / 2.0));
  CHECK(st::aggregate(groups[0], "time_to_target_s").stat.mean == Approx(12.75));
  // Eval rule: seed 2's evaluations stay above 3.0 (3.05 at step 9): 1 of 2.
  const st::GroupCell eval = st::aggregate(groups[0], "eval_steps_to_target");
  CHECK(eval.stat.n == 1);
  CHECK(eval.infinite == 1);
  CHECK(eval.stat.mean == 9);
  const st::GroupCell never = st::aggregate(groups[1], "eval_tokens_to_target");
  CHECK(never.stat.n == 0);
  CHECK(never.infinite == 1);
}

TEST_CASE("target: the table shows the chosen rule's columns") {
  const std::string dir = write_three("target_table");
  const auto train_runs = st::read_runs(st::expand_run_paths({dir}), target(3.0, 3));
  const st::SummaryTable train = st::build_summary_table(train_runs, true, target(3.0, 3));
  auto has = [](const st::SummaryTable& t, const std::string& id) {
    for (const auto& c : t.columns)
      if (c.id == id) return true;
    return false;
  };
  CHECK(has(train, "time_to_target_s"));
  CHECK(has(train, "steps_to_target"));
  CHECK(has(train, "tokens_to_target"));
  CHECK(!has(train, "eval_steps_to_target"));

  const st::SummaryOptions on_eval = target(3.0, 3, st::TargetRule::kEval);
  const auto eval_runs = st::read_runs(st::expand_run_paths({dir}), on_eval);
  st::SummaryTable eval = st::build_summary_table(eval_runs, true, on_eval);
  CHECK(!has(eval, "time_to_target_s"));
  CHECK(has(eval, "eval_steps_to_target"));
  std::ostringstream text;
  st::write_summary(eval, st::SummaryFormat::kTextWide, text);
  CHECK(text.str().find("steps to eval loss \u2264 3") != std::string::npos);
  CHECK(text.str().find("tokens to eval loss \u2264 3") != std::string::npos);
  CHECK(text.str().find("9 (1/2)") != std::string::npos);      // steps, q4
  CHECK(text.str().find("288 (1/2)") != std::string::npos);    // tokens, q4
  CHECK(text.str().find("13.5 (1/2)") != std::string::npos);   // seconds, q4
  CHECK(text.str().find("not reached") != std::string::npos);  // q2
  CHECK(text.str().find("earliest evaluation") != std::string::npos);

  std::ostringstream tsv;
  st::write_summary(eval, st::SummaryFormat::kTsv, tsv);
  // Rows by key value: q2 first, then q4.
  CHECK(tsv_cell(tsv.str(), 1, "compress.fw") == "q2");
  CHECK(tsv_cell(tsv.str(), 1, "eval_steps_to_target") == "inf");
  CHECK(tsv_cell(tsv.str(), 1, "eval_time_to_target_reached") == "0");
  CHECK(tsv_cell(tsv.str(), 2, "eval_steps_to_target") == "9");
  CHECK(tsv_cell(tsv.str(), 2, "eval_tokens_to_target") == "288");
  CHECK(tsv_cell(tsv.str(), 2, "eval_time_to_target_reached") == "1");
  CHECK(tsv_cell(tsv.str(), 2, "time_to_target_s") == "NO_COLUMN");

  // --rank: the chosen rule's columns; q4 first, q2 (never) after it.
  st::rank_summary_table(eval, "eval_steps_to_target");
  CHECK(eval.ranks == std::vector<size_t>{1, 2});
  CHECK(eval.groups[0].runs.front()->config.at("compress.fw") == "q4");
  CHECK_THROWS_WITH(st::rank_summary_table(eval, "steps_to_target"),
                    Catch::Contains("--target-on train"));
  st::SummaryTable plain = st::build_summary_table(eval_runs, true, st::SummaryOptions{});
  CHECK_THROWS_AS(st::rank_summary_table(plain, "eval_steps_to_target"), sp::UsageError);
}

TEST_CASE("target: verdict checks name the columns of either rule") {
  const std::string dir = write_three("target_verdict");
  const auto runs = st::read_runs(st::expand_run_paths({dir}), target(3.0, 3));
  const st::VerdictTable table = st::summary_verdict_table(runs);
  REQUIRE(table.rows.size() == 2);
  const auto& q4 = table.rows[0].values;
  CHECK(q4.at("steps_to_target").mean == Approx(8.5));
  CHECK(q4.at("steps_to_target").n == 2);
  CHECK(q4.at("eval_steps_to_target").mean == 9);
  CHECK(q4.at("eval_steps_to_target").n == 1);
  CHECK(std::isinf(table.rows[1].values.at("eval_tokens_to_target").mean));

  const std::string base = "[sweep]\nrun.seed = 1 | 2\n[claim]\nid = T1\ntitle = t\nclaim = c\n";
  const auto claim_of = [](const std::string& text) {
    return st::parse_claim(st::parse_sweep_text(text, "x.ini", "."));
  };
  const std::string check = "check = eval_steps_to_target[compress.fw=q4] < 10\n";
  CHECK_THROWS_WITH(claim_of(base + check), Catch::Contains("needs 'target"));
  const st::Claim c = claim_of(base + "target = 3\ntarget_on = eval\n" + check);
  CHECK(c.target_on == "eval");
  CHECK_THROWS_WITH(claim_of(base + "target = 3\ntarget_on = val\n" + check),
                    Catch::Contains("one of train, eval"));
}

TEST_CASE("target: the Pareto points of time to target against wire bytes") {
  // Three groups by hand: A (2 seeds, 10 and 14 s, 100 B), B (one seed of two
  // reached it: 8 s, 300 B), C (none reached it: left out), D (50 s, 50 B).
  auto run = [](const std::string& fw, const std::string& seed, double t, double bytes) {
    st::RunStats r;
    r.path = fw + seed;
    r.config = {{"compress.fw", fw}, {"run.seed", seed}};
    r.status = "complete";
    r.values = {{"eval_time_to_target_s", t}, {"wire_bytes", bytes}, {"train_loss", 1.0}};
    return r;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<st::RunStats> runs = {run("a", "1", 10, 100), run("a", "2", 14, 100),
                                          run("b", "1", 8, 300),  run("b", "2", inf, 300),
                                          run("c", "1", inf, 20), run("d", "1", 50, 50)};
  const auto groups = st::group_runs(runs, true);
  size_t left_out = 0;
  const auto points = st::pareto_points(groups, st::varying_keys(runs, true), "wire_bytes",
                                        left_out, "eval_time_to_target_s");
  REQUIRE(points.size() == 3);
  CHECK(left_out == 1);                 // c
  CHECK(points[0].loss == Approx(12));  // a: the mean of 10 and 14 s
  CHECK(points[0].loss_std == Approx(std::sqrt(8.0)));
  CHECK(points[1].loss == 8);  // b: the seed that reached it
  CHECK(points[1].n == 1);
  // Fewer bytes or less time: all three are on the front (d least bytes, b least time).
  CHECK(points[0].front);
  CHECK(points[1].front);
  CHECK(points[2].front);
  // The train-loss default is unchanged: every group with a loss, c included.
  st::pareto_points(groups, st::varying_keys(runs, true), "wire_bytes", left_out);
  CHECK(left_out == 0);
  // Time to target against bandwidth reads the rule's column.
  size_t unreached = 0;
  st::target_lines(groups, {}, unreached, "eval_time_to_target_s");
  CHECK(unreached == 0);  // no run has a bandwidth: no point at all
}
