// Reproduction verdicts: the [claim] grammar, and every rule that decides a
// check, on hand-made summaries whose outcome is worked out by hand here
// (reproduced, not reproduced, inconclusive, missing and diverged runs, one
// seed); the committed results files read back bit for bit, and their
// comparison with a fresh run (tolerances, missing runs, differing outcomes).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/errors.h"
#include "study/sweeps/verdict_claim.h"
#include "study/sweeps/verdict_compare.h"
#include "study/sweeps/verdict_eval.h"
#include "study/sweeps/verdict_report.h"
#include "study/sweeps/verdict_results.h"

namespace st = slowpipe::study;
using Catch::Detail::Approx;

namespace {

const double kVerdictNaN = std::numeric_limits<double>::quiet_NaN();

st::VerdictRow row(const std::string& fw, double mean, double std, size_t n,
                   const std::string& column = "eval_loss") {
  st::VerdictRow r;
  r.name = fw;
  r.keys = {{"compress.fw", fw}, {"run.seed", "1"}};
  r.values[column] = {mean, std, n};
  return r;
}

// fp32 1.60 +- 0.01 and direct q2 2.00 +- 0.02 over 3 seeds each: the pooled
// spread of the two is sqrt((2 x 0.01^2 + 2 x 0.02^2) / 4) = 0.0158114.
st::VerdictTables tables_with(std::vector<st::VerdictRow> rows) {
  st::VerdictTables t;
  t[""].rows = std::move(rows);
  return t;
}

st::CheckResult eval(const std::string& check, const st::VerdictTables& tables) {
  return st::evaluate_check(st::parse_check(check), tables);
}

}  // namespace

TEST_CASE("verdict: a check is parsed into sides, comparison and tolerance") {
  SECTION("greater with a margin in spreads") {
    const auto c =
        st::parse_check("eval_loss[compress.fw=q2] > eval_loss[compress.fw=none] by 2 spreads");
    CHECK(c.op == st::VerdictOp::kGreater);
    CHECK(c.lhs.num.column == "eval_loss");
    REQUIRE(c.lhs.num.where.size() == 1);
    CHECK(c.lhs.num.where[0].key == "compress.fw");
    CHECK(c.lhs.num.where[0].value == "q2");
    CHECK(c.rhs.num.where[0].value == "none");
    CHECK(c.tolerance.spreads == 2);
  }
  SECTION("similar with parts joined by or, values with brackets and colons") {
    const auto c = st::parse_check(
        "accuracy[compress.fw=aq(topk:0.1) & run.label!=x] ~ accuracy[compress.fw=none] within 2 "
        "spreads or 0.01 or 5%");
    CHECK(c.op == st::VerdictOp::kSimilar);
    REQUIRE(c.lhs.num.where.size() == 2);
    CHECK(c.lhs.num.where[0].value == "aq(topk:0.1)");
    CHECK_FALSE(c.lhs.num.where[1].equal);
    CHECK(c.tolerance.spreads == 2);
    CHECK(c.tolerance.absolute == 0.01);
    CHECK(c.tolerance.percent == 5);
  }
  SECTION("a table column, a ratio and a number") {
    const auto c = st::parse_check(
        "act:step_s[bandwidth=500Mbps] / act:fp32_step_s[bandwidth=10Gbps] ~ 1.31 within 15%");
    CHECK(c.lhs.ratio);
    CHECK(c.lhs.num.table == "act");
    CHECK(c.lhs.den.column == "fp32_step_s");
    CHECK(c.rhs.num.is_number);
    CHECK(c.rhs.num.number == 1.31);
    CHECK(c.tolerance.percent == 15);
  }
  SECTION("less without a margin: t = 0") {
    const auto c = st::parse_check("sim_time_s[compress.fw=q2] < sim_time_s[compress.fw=none]");
    CHECK(c.op == st::VerdictOp::kLess);
    CHECK(c.tolerance.spreads == 0);
    CHECK(c.tolerance.absolute == 0);
  }
  SECTION("errors say what is wrong") {
    CHECK_THROWS_WITH(st::parse_check("eval_loss[a=b] eval_loss[a=c]"),
                      Catch::Contains("no comparison"));
    CHECK_THROWS_WITH(st::parse_check("eval_loss[a=b] ~ eval_loss[a=c]"),
                      Catch::Contains("needs a tolerance"));
    CHECK_THROWS_WITH(st::parse_check("eval_loss[a=b] > eval_loss[a=c] within 2 spreads"),
                      Catch::Contains("take 'by T'"));
    CHECK_THROWS_WITH(st::parse_check("eval_loss[a=b] ~ eval_loss[a=c] by 2 spreads within 1"),
                      Catch::Contains("'~' takes 'within'"));
    CHECK_THROWS_WITH(st::parse_check("eval_loss > 2"), Catch::Contains("neither a number"));
    CHECK_THROWS_WITH(st::parse_check("1 < 2"), Catch::Contains("both sides are numbers"));
    CHECK_THROWS_WITH(st::parse_check("eval_loss[a] > 1"), Catch::Contains("not KEY=VALUE"));
    CHECK_THROWS_WITH(st::parse_check("eval_loss[a=b] > 1 by two spreads"),
                      Catch::Contains("K spreads needs K"));
    CHECK_THROWS_WITH(st::parse_check("eval_loss[a=b] > 1 by 2 furlongs"),
                      Catch::Contains("is not 'K spreads'"));
    CHECK_THROWS_WITH(st::parse_check("a/b/c[x=y] > 1"), Catch::Contains("at most one '/'"));
  }
}

TEST_CASE("verdict: pooled seed spread by hand") {
  const auto s = st::pooled_spread({{1.6, 0.01, 3}, {2.0, 0.02, 3}, {1.0, kVerdictNaN, 1}});
  CHECK(s.std == Approx(std::sqrt((2 * 0.0001 + 2 * 0.0004) / 4)));
  CHECK(s.groups == 2);
  CHECK(s.runs == 6);
  CHECK(std::isnan(st::pooled_spread({{1.0, kVerdictNaN, 1}}).std));
}

TEST_CASE("verdict: 'A > B by t' is reproduced, inconclusive or not by the margin") {
  // Pooled spread of fp32 and each other group: sqrt((2 x 0.01^2 + 2 x 0.02^2)/4).
  const double s = std::sqrt((2 * 0.0001 + 2 * 0.0004) / 4);
  const auto t = tables_with({row("none", 1.60, 0.01, 3), row("q2", 2.00, 0.02, 3),
                              row("q3", 1.62, 0.02, 3), row("q4", 1.59, 0.02, 3)});
  const auto big = eval("eval_loss[compress.fw=q2] > eval_loss[compress.fw=none] by 2 spreads", t);
  CHECK(big.outcome == st::Outcome::kReproduced);
  CHECK(big.diff == Approx(0.40));
  CHECK(big.spread == Approx(s));
  CHECK(big.tolerance == Approx(2 * s));
  // 0 < 0.02 <= 2s = 0.0316: the right direction, within the noise.
  const auto small =
      eval("eval_loss[compress.fw=q3] > eval_loss[compress.fw=none] by 2 spreads", t);
  CHECK(small.outcome == st::Outcome::kInconclusive);
  CHECK(small.diff == Approx(0.02));
  // -0.01: not even the claimed direction.
  const auto wrong =
      eval("eval_loss[compress.fw=q4] > eval_loss[compress.fw=none] by 2 spreads", t);
  CHECK(wrong.outcome == st::Outcome::kNotReproduced);
  // '<' mirrors '>': B - A.
  CHECK(eval("eval_loss[compress.fw=none] < eval_loss[compress.fw=q2] by 2 spreads", t).outcome ==
        st::Outcome::kReproduced);
  // A control: the same numbers with a margin larger than the gap.
  CHECK(eval("eval_loss[compress.fw=q2] > eval_loss[compress.fw=none] by 0.5", t).outcome ==
        st::Outcome::kInconclusive);
}

TEST_CASE("verdict: 'A ~ B within t' has a band of inconclusive between t and 2t") {
  const double s = std::sqrt((2 * 0.0001 + 2 * 0.0001) / 4);  // both std 0.01: s = 0.01
  const auto t = tables_with({row("none", 1.60, 0.01, 3), row("aq(q2)", 1.61, 0.01, 3),
                              row("aq(q3)", 1.625, 0.01, 3), row("aq(q4)", 1.65, 0.01, 3)});
  const auto close =
      eval("eval_loss[compress.fw=aq(q2)] ~ eval_loss[compress.fw=none] within 2 spreads", t);
  CHECK(close.outcome == st::Outcome::kReproduced);  // 0.01 <= 0.02
  CHECK(close.tolerance == Approx(2 * s));
  const auto band =
      eval("eval_loss[compress.fw=aq(q3)] ~ eval_loss[compress.fw=none] within 2 spreads", t);
  CHECK(band.outcome == st::Outcome::kInconclusive);  // 0.02 < 0.025 <= 0.04
  const auto far =
      eval("eval_loss[compress.fw=aq(q4)] ~ eval_loss[compress.fw=none] within 2 spreads", t);
  CHECK(far.outcome == st::Outcome::kNotReproduced);  // 0.05 > 0.04
  // An absolute floor widens t: max(2 x 0.01, 0.06) = 0.06 >= 0.05.
  CHECK(eval("eval_loss[compress.fw=aq(q4)] ~ eval_loss[compress.fw=none] within 2 spreads or 0.06",
             t)
            .outcome == st::Outcome::kReproduced);
}

TEST_CASE("verdict: missing, unfinished and diverged runs") {
  auto diverged = row("q2", 1.9, 0.05, 2);
  diverged.diverged = true;
  auto running = row("q3", 1.7, 0.01, 3);
  running.incomplete = "run q3.h5 is interrupted";
  const auto t = tables_with({row("none", 1.60, 0.01, 3), diverged, running,
                              row("q4", 1.7, kVerdictNaN, 1), row("q8", 1.61, kVerdictNaN, 1)});
  SECTION("a diverged group is the worst value of its column") {
    const auto r = eval("eval_loss[compress.fw=q2] > eval_loss[compress.fw=none] by 2 spreads", t);
    CHECK(r.outcome == st::Outcome::kReproduced);
    CHECK(std::isinf(r.lhs));
    CHECK(eval("eval_loss[compress.fw=q2] ~ eval_loss[compress.fw=none] within 2 spreads", t)
              .outcome == st::Outcome::kNotReproduced);
    // Where higher is better, diverged is -inf.
    auto acc = row("q2", 0.5, 0.01, 2, "accuracy");
    acc.diverged = true;
    const auto ta = tables_with({row("none", 0.8, 0.01, 3, "accuracy"), acc});
    CHECK(eval("accuracy[compress.fw=q2] < accuracy[compress.fw=none] by 2 spreads", ta).outcome ==
          st::Outcome::kReproduced);
  }
  SECTION("an unfinished group or a missing one leaves the check inconclusive") {
    const auto r = eval("eval_loss[compress.fw=q3] > eval_loss[compress.fw=none] by 2 spreads", t);
    CHECK(r.outcome == st::Outcome::kInconclusive);
    CHECK_THAT(r.why, Catch::Contains("interrupted"));
    const auto m = eval("eval_loss[compress.fw=q5] > eval_loss[compress.fw=none]", t);
    CHECK(m.outcome == st::Outcome::kInconclusive);
    CHECK_THAT(m.why, Catch::Contains("selects no row"));
  }
  SECTION("a gap in the claimed direction with no spread to size it is inconclusive") {
    const auto r = eval("eval_loss[compress.fw=q4] > eval_loss[compress.fw=q8] by 2 spreads", t);
    CHECK(r.outcome == st::Outcome::kInconclusive);
    CHECK_THAT(r.why, Catch::Contains("two seeds"));
    // The same pair with an absolute margin is decided: 0.09 > 0.05.
    CHECK(eval("eval_loss[compress.fw=q4] > eval_loss[compress.fw=q8] by 0.05", t).outcome ==
          st::Outcome::kReproduced);
  }
  SECTION("a criterion that cannot apply is an error, not a verdict") {
    CHECK_THROWS_WITH(eval("eval_loss[compress.bw=q2] > 1", t),
                      Catch::Contains("has a key 'compress.bw'"));
    CHECK_THROWS_WITH(eval("eval_loss[run.seed=1] > 1", t), Catch::Contains("selects 5 rows"));
  }
}

TEST_CASE("verdict: with one seed per group, what every spread would give is decided") {
  // One seed each: no spread, so t = max(K x spread, P% of |B|) is only known
  // to be >= P% of |B| (and finite). 2% of 1.60 = 0.032.
  const auto t =
      tables_with({row("none", 1.60, kVerdictNaN, 1), row("aq(q4)", 1.61, kVerdictNaN, 1),
                   row("aq(q2)", 1.65, kVerdictNaN, 1), row("q2", 1.90, kVerdictNaN, 1),
                   row("q4", 1.60, kVerdictNaN, 1), row("q8", 1.55, kVerdictNaN, 1)});
  const std::string none = "eval_loss[compress.fw=none]";
  const auto check = [&](const std::string& lhs, const std::string& op_and_rhs_tail) {
    return eval("eval_loss[compress.fw=" + lhs + "] " + op_and_rhs_tail, t);
  };
  SECTION("'~': within the margin's known part holds whatever the spread") {
    const auto r = check("aq(q4)", "~ " + none + " within 2 spreads or 2%");
    CHECK(r.outcome == st::Outcome::kReproduced);  // 0.01 <= 0.032 <= t
    CHECK(r.tolerance_is_lower_bound);
    CHECK(r.tolerance == Approx(0.032));
    CHECK(std::isnan(r.spread));
    // 0.05 > 0.032: a spread could widen t past it, or not: undecided. Even
    // 0.30 > 2 x 0.032 stays undecided (a large spread would make it hold).
    CHECK(check("aq(q2)", "~ " + none + " within 2 spreads or 2%").outcome ==
          st::Outcome::kInconclusive);
    CHECK(check("q2", "~ " + none + " within 2 spreads or 2%").outcome ==
          st::Outcome::kInconclusive);
    // Spreads alone: t >= 0, so only d = 0 is decided.
    CHECK(check("q4", "~ " + none + " within 2 spreads").outcome == st::Outcome::kReproduced);
    CHECK(check("aq(q4)", "~ " + none + " within 2 spreads").outcome == st::Outcome::kInconclusive);
    // A control: the same 0.01 with a seed spread that makes t = 0.002 is
    // not reproduced, so the rule above rests on the 2% part.
    const auto spread = tables_with({row("none", 1.60, 0.001, 3), row("aq(q4)", 1.61, 0.001, 3)});
    CHECK(eval("eval_loss[compress.fw=aq(q4)] ~ " + none + " within 2 spreads", spread).outcome ==
          st::Outcome::kNotReproduced);
  }
  SECTION("'>' and '<': the wrong direction needs no margin; the right one needs a spread") {
    const auto wrong = check("q8", "> " + none + " by 2 spreads");
    CHECK(wrong.outcome == st::Outcome::kNotReproduced);  // d = -0.05 <= 0
    CHECK(check("q4", "> " + none + " by 2 spreads").outcome == st::Outcome::kNotReproduced);
    CHECK(eval(none + " < eval_loss[compress.fw=q8] by 2 spreads", t).outcome ==
          st::Outcome::kNotReproduced);  // '<': d = B - A = -0.05
    // d = 0.30 > 0: t could be larger; a percentage part does not bound t from above.
    const auto right = check("q2", "> " + none + " by 2 spreads or 5%");
    CHECK(right.outcome == st::Outcome::kInconclusive);
    CHECK(right.tolerance == Approx(0.08));
    CHECK(right.tolerance_is_lower_bound);
    CHECK(eval(none + " < eval_loss[compress.fw=q2] by 2 spreads", t).outcome ==
          st::Outcome::kInconclusive);
  }
  SECTION("a diverged side is beyond any finite tolerance") {
    auto gone = row("q3", kVerdictNaN, kVerdictNaN, 1);
    gone.diverged = true;
    const auto td = tables_with({row("none", 1.60, kVerdictNaN, 1), gone});
    CHECK(eval("eval_loss[compress.fw=q3] > " + none + " by 2 spreads", td).outcome ==
          st::Outcome::kReproduced);
    CHECK(eval("eval_loss[compress.fw=q3] ~ " + none + " within 2 spreads or 2%", td).outcome ==
          st::Outcome::kNotReproduced);
  }
}

TEST_CASE("verdict: numbers, ratios and percentages on a TSV table") {
  const std::string path = "verdict_test_timing.tsv";
  {
    std::ofstream f(path);
    f << "bandwidth\tbandwidth_bps\tstep_s\tfp32_step_s\tfp32_run_speedup\n"
      << "10Gbps\t1e10\t1.29\t1.35\t1.04\n"
      << "500Mbps\t5e8\t1.80\t8.57\t3.45\n"
      << "100Mbps\t1e8\t8.07\t41.9\t3.66\n";
  }
  st::VerdictTables t;
  t["act"] = st::read_tsv_table("act", path);
  std::remove(path.c_str());
  REQUIRE(t["act"].rows.size() == 3);
  // |3.66 - 4.3| = 0.64 <= 25% of 4.3 = 1.075.
  const auto up = eval("act:fp32_run_speedup[bandwidth=100Mbps] ~ 4.3 within 25%", t);
  CHECK(up.outcome == st::Outcome::kReproduced);
  CHECK(up.tolerance == Approx(1.075));
  // 0.64 > 2 x 5% of 4.3 = 0.43.
  CHECK(eval("act:fp32_run_speedup[bandwidth=100Mbps] ~ 4.3 within 5%", t).outcome ==
        st::Outcome::kNotReproduced);
  // 1.80 / 1.35 = 1.3333; |1.3333 - 1.31| = 0.0233 <= 15% of 1.31.
  const auto ratio = eval(
      "act:step_s[bandwidth=500Mbps] / act:fp32_step_s[bandwidth=10Gbps] ~ 1.31 within 15%", t);
  CHECK(ratio.lhs == Approx(1.80 / 1.35));
  CHECK(ratio.outcome == st::Outcome::kReproduced);
  // No spread in a table of single numbers: a tolerance in spreads is inconclusive.
  CHECK(eval("act:fp32_run_speedup[bandwidth=100Mbps] > 3 by 1 spread", t).outcome ==
        st::Outcome::kInconclusive);
  CHECK_THROWS_WITH(st::read_tsv_table("x", "no-such-file.tsv"), Catch::Contains("cannot open"));
}

TEST_CASE("verdict: the claim is the worst of its checks") {
  st::Claim claim;
  const auto t = tables_with({row("none", 1.60, 0.01, 3), row("q2", 2.00, 0.02, 3),
                              row("q3", 1.62, 0.02, 3), row("q4", 1.59, 0.02, 3)});
  const auto with = [&](const std::vector<std::string>& checks) {
    claim.checks.clear();
    for (const auto& c : checks) claim.checks.push_back(st::parse_check(c));
    return st::evaluate_claim(claim, t).outcome;
  };
  const std::string yes = "eval_loss[compress.fw=q2] > eval_loss[compress.fw=none] by 2 spreads";
  const std::string maybe = "eval_loss[compress.fw=q3] > eval_loss[compress.fw=none] by 2 spreads";
  const std::string no = "eval_loss[compress.fw=q4] > eval_loss[compress.fw=none] by 2 spreads";
  CHECK(with({yes}) == st::Outcome::kReproduced);
  CHECK(with({yes, maybe}) == st::Outcome::kInconclusive);
  CHECK(with({yes, maybe, no}) == st::Outcome::kNotReproduced);
  CHECK(with({no, yes}) == st::Outcome::kNotReproduced);
  // Findings are decided apart, by the same rule.
  claim.checks.clear();
  for (const auto& [finding, text] : std::vector<std::pair<std::string, std::string>>{
           {"R2", yes}, {"R3", maybe}, {"R2", yes}, {"R3", no}}) {
    claim.checks.push_back(st::parse_check(text));
    claim.checks.back().finding = finding;
  }
  const auto result = st::evaluate_claim(claim, t);
  REQUIRE(result.findings.size() == 2);
  CHECK(result.findings[0] == std::make_pair(std::string("R2"), st::Outcome::kReproduced));
  CHECK(result.findings[1] == std::make_pair(std::string("R3"), st::Outcome::kNotReproduced));
  CHECK(result.outcome == st::Outcome::kNotReproduced);
}

TEST_CASE("verdict: summary rows pool seeds, and keep diverged and unfinished runs apart") {
  const auto run = [](const std::string& fw, int seed, double loss, const std::string& status) {
    st::RunStats r;
    r.path = fw + std::to_string(seed) + ".h5";
    r.config = {{"compress.fw", fw}, {"run.seed", std::to_string(seed)}, {"run.out", r.path}};
    r.status = status;
    r.values["eval_loss"] = loss;
    return r;
  };
  const std::vector<st::RunStats> runs = {
      run("none", 1, 1.5, "complete"), run("none", 2, 1.7, "complete"),
      run("q2", 1, 2.0, "diverged"), run("q2", 2, 2.1, "complete"),
      run("q4", 1, 1.6, "interrupted")};
  const st::VerdictTable table = st::summary_verdict_table(runs);
  REQUIRE(table.rows.size() == 3);
  CHECK(table.rows[0].values.at("eval_loss").mean == Approx(1.6));
  CHECK(table.rows[0].values.at("eval_loss").std == Approx(std::sqrt(0.02)));
  CHECK(table.rows[0].values.at("eval_loss").n == 2);
  CHECK(table.rows[1].diverged);
  CHECK_THAT(table.rows[2].incomplete, Catch::Contains("interrupted"));
  CHECK(st::summary_spread(table, "eval_loss").std == Approx(std::sqrt(0.02)));
}

TEST_CASE("verdict: the [claim] section of a sweep file") {
  const std::string base =
      "[run]\nepochs = 2\n[sweep]\ncompress.fw = none | q2\nrun.seed = 1 | 2\n[claim]\n"
      "id = X1\ntitle = q2 is worse\nclaim = direct 2-bit activations converge worse\n";
  SECTION("parsed, and kept out of the base configuration") {
    const auto sweep = st::parse_sweep_text(
        base +
            "note = one\nnote = two\ntarget = 1.5\nscale = run.epochs, data.limit\n"
            "table.act = timing --preset aqsgd-gpt2xl --fw 'aq(q4)' --tsv\n"
            "check = eval_loss[compress.fw=q2] > eval_loss[compress.fw=none] by 2 spreads\n"
            "check = act:fp32_run_speedup[bandwidth=100Mbps] ~ 4.3 within 25%\n",
        "x.ini", ".");
    REQUIRE(sweep.has_claim);
    CHECK(sweep.base_text.find("title") == std::string::npos);
    CHECK(sweep.base_text.find("epochs = 2") != std::string::npos);
    const st::Claim c = st::parse_claim(sweep);
    CHECK(c.id == "X1");
    CHECK(c.notes.size() == 2);
    CHECK(c.has_target);
    CHECK(c.scale_keys == std::vector<std::string>{"run.epochs", "data.limit"});
    REQUIRE(c.tables.size() == 1);
    CHECK(c.tables[0].args == std::vector<std::string>{"timing", "--preset", "aqsgd-gpt2xl", "--fw",
                                                       "aq(q4)", "--tsv"});
    CHECK(c.checks.size() == 2);
    CHECK(c.checks[0].line == 15);
    CHECK(c.checks[0].finding == "X1");
  }
  SECTION("errors name the file and line") {
    const auto claim_of = [](const std::string& text) {
      return st::parse_claim(st::parse_sweep_text(text, "x.ini", "."));
    };
    CHECK_THROWS_WITH(claim_of(base), Catch::Contains("at least one 'check"));
    CHECK_THROWS_WITH(claim_of(base + "colour = red\n"),
                      Catch::Contains("x.ini:10: [claim] colour: unknown key"));
    CHECK_THROWS_WITH(claim_of(base + "id = again\n"), Catch::Contains("'id' given twice"));
    CHECK_THROWS_WITH(claim_of(base + "check = loss_of_nerve[compress.fw=q2] > 1\n"),
                      Catch::Contains("not a summary column"));
    CHECK_THROWS_WITH(claim_of(base + "check = t:x[a=b] > 1\n"),
                      Catch::Contains("table 't' is not defined"));
    CHECK_THROWS_WITH(claim_of(base + "check = time_to_target_s[compress.fw=q2] > 1\n"),
                      Catch::Contains("needs 'target"));
    CHECK_THROWS_WITH(
        claim_of(
            "[sweep]\nrun.seed = 1\n[claim]\ntitle = t\nclaim = c\ncheck = eval_loss[a=b] > 1\n"),
        Catch::Contains("needs 'id"));
    CHECK_THROWS_WITH(claim_of(base + "[claim]\n"), Catch::Contains("a second [claim]"));
  }
  SECTION("split_command quotes") {
    CHECK(st::split_command("timing --fw 'aq(q4)' --bw \"q 8\"") ==
          std::vector<std::string>{"timing", "--fw", "aq(q4)", "--bw", "q 8"});
    CHECK_THROWS_WITH(st::split_command("timing 'open"), Catch::Contains("unbalanced"));
  }
}

// --- committed results and the comparison with a fresh run ------------------

namespace {

// Two groups (fp32, q2) of two seeds: train loss, wire bytes; one check.
st::Results hand_results() {
  st::Results r;
  r.provenance = {{"experiment", "x1"}, {"commit", "abc"}};
  r.key_columns = {"run.label", "run.seed", "compress.fw"};
  r.value_columns = {"train_loss", "wire_bytes"};
  const auto add = [&r](const std::string& fw, int seed, double loss) {
    st::ResultRun run;
    run.point = "fw=" + fw + "_seed=" + std::to_string(seed);
    run.keys = {{"run.label", fw}, {"run.seed", std::to_string(seed)}, {"compress.fw", fw}};
    run.status = "complete";
    run.values = {{"train_loss", loss}, {"wire_bytes", fw == "none" ? 4096.0 : 512.0}};
    r.runs.push_back(run);
  };
  add("none", 1, 1.60);
  add("none", 2, 1.62);  // seed spread of fp32: std(1.60, 1.62) = 0.0141
  add("q2", 1, 2.00);
  add("q2", 2, 2.00);  // q2: spread 0
  st::ResultCheck c;
  c.finding = "X1";
  c.text = "train_loss[compress.fw=q2] > train_loss[compress.fw=none] by 2 spreads";
  c.outcome = "reproduced";
  c.numbers.lhs = 2.00;
  c.numbers.rhs = 1.61;
  r.checks.push_back(c);
  return r;
}

st::ResultRun& run_named(st::Results& r, const std::string& point) {
  for (auto& run : r.runs) {
    if (run.point == point) return run;
  }
  throw std::runtime_error("no run " + point);
}

}  // namespace

TEST_CASE("verdict results: names, folders and which columns no CPU changes") {
  CHECK(st::point_group("fw=q2_net=100Mbps_seed=3") == "fw=q2_net=100Mbps");
  CHECK(st::point_group("seed=3_fw=q2") == "fw=q2");
  CHECK(st::point_group("fw=q2") == "fw=q2");  // one seed: its own group
  CHECK(st::committed_results_dir("experiments/reproduce/p1.ini", "p1", 1) ==
        "experiments/reproduce/results/p1");
  CHECK(st::committed_results_dir("x/r23.ini", "r23", 4) == "x/results/r23-x4");
  CHECK(st::machine_independent_column("wire_bytes"));
  CHECK(st::machine_independent_column("sim_time_s"));
  CHECK_FALSE(st::machine_independent_column("train_loss"));
  CHECK_FALSE(st::machine_independent_column("time_to_target_s"));
}

TEST_CASE("verdict results: runs.tsv and checks.tsv read back bit for bit") {
  const auto run = [](const std::string& fw, int seed, double loss, const std::string& status) {
    st::RunStats r;
    r.path = "some/dir/fw=" + fw + "_seed=" + std::to_string(seed) + ".h5";
    r.config = {{"compress.fw", fw}, {"run.seed", std::to_string(seed)}, {"run.label", fw}};
    r.attrs = {{"slowpipe.git_commit", "abc123"},
               {"slowpipe.git_dirty", seed == 2 ? "true" : "false"},
               {"host.cpu", "Test CPU"},
               {"start_time", "2026-01-0" + std::to_string(seed) + "T00:00:00Z"}};
    r.status = status;
    r.values = {{"train_loss", loss}, {"eval_loss", loss + 0.1}, {"wire_bytes", 100.0 * seed}};
    return r;
  };
  const std::vector<st::RunStats> runs = {run("none", 1, 0.1 + 0.2, "complete"),
                                          run("none", 2, 1.0 / 3, "complete"),
                                          run("q2", 1, kVerdictNaN, "diverged")};
  st::Claim claim;
  claim.checks.push_back(
      st::parse_check("eval_loss[compress.fw=q2] > eval_loss[compress.fw=none]"));
  st::VerdictTables tables;
  tables[""] = st::summary_verdict_table(runs);
  const st::VerdictResult result = st::evaluate_claim(claim, tables);
  const st::Results saved = st::collect_results(claim, result, runs, "x1", 1);
  CHECK(saved.provenance_of("commit") == "abc123, abc123 (uncommitted changes)");
  CHECK(saved.provenance_of("cpu") == "Test CPU");
  CHECK_THAT(saved.provenance_of("runs"), Catch::StartsWith("2026-01-01T00:00:00Z .. 2026-01-02"));
  CHECK(saved.key_columns == std::vector<std::string>{"run.label", "run.seed", "compress.fw"});
  // accuracy, steps and sim time have no value in any run: left out.
  CHECK(saved.value_columns == std::vector<std::string>{"train_loss", "eval_loss", "wire_bytes"});

  const std::string dir = "verdict_test_results";
  st::save_results(saved, "# report\n", dir);
  CHECK(std::filesystem::file_size(dir + "/summary.md") == 9);
  const st::Results back = st::read_results(dir);
  REQUIRE(back.runs.size() == 3);
  CHECK(back.runs[0].point == "fw=none_seed=1");
  CHECK(back.runs[0].values.at("train_loss") == 0.1 + 0.2);  // exactly
  CHECK(back.runs[1].values.at("train_loss") == 1.0 / 3);
  CHECK(std::isnan(back.runs[2].values.at("train_loss")));
  CHECK(back.runs[2].status == "diverged");
  CHECK(back.provenance == saved.provenance);
  REQUIRE(back.checks.size() == 1);
  CHECK(back.checks[0].outcome == "reproduced");  // a diverged q2 is +inf
  CHECK(std::isinf(back.checks[0].numbers.lhs));
  CHECK(back.checks[0].text == claim.checks[0].text);
  // Comparing a folder with what was just saved of it: identical.
  const st::Comparison same = st::compare_results(saved, back);
  CHECK(same.agreement == st::Agreement::kIdentical);
  CHECK(same.runs_matched == 3);

  SECTION("only a finished sweep is saved") {
    CHECK_NOTHROW(st::check_finished(runs, 3, dir));  // a diverged run is a result
    CHECK_THROWS_WITH(st::check_finished(runs, 4, dir),
                      Catch::Contains("3 of the sweep's 4 points have a run log"));
    auto running = runs;
    running[1].status = "running";
    CHECK_THROWS_WITH(st::check_finished(running, 3, dir),
                      Catch::Contains("fw=none_seed=2.h5 is running"));
  }
  SECTION("missing and malformed files are refused with their names") {
    CHECK_THROWS_AS(st::read_results("no-such-results-folder"), slowpipe::UsageError);
    std::filesystem::remove(dir + "/checks.tsv");
    CHECK_THROWS_WITH(st::read_results(dir), Catch::Contains("checks.tsv: missing"));
    std::ofstream(dir + "/checks.tsv") << "check\tfinding\n1\tX1\n";
    CHECK_THROWS_AS(st::read_results(dir), slowpipe::DataError);
    std::ofstream(dir + "/runs.tsv")
        << "# experiment: x1\npoint\tstatus\ttrain_loss\na\tcomplete\t1.5x\n";
    CHECK_THROWS_WITH(st::read_results(dir), Catch::Contains("runs.tsv:3: '1.5x' is not a number"));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("verdict compare: tolerances per column, missing runs, differing verdicts") {
  const st::Results committed = hand_results();
  st::Results fresh = hand_results();
  CHECK(st::compare_results(fresh, committed).agreement == st::Agreement::kIdentical);
  CHECK(st::agreement_summary(st::compare_results(fresh, committed)) ==
        "agrees (identical numbers)");
  SECTION("a loss within 1e-3 relative agrees, beyond it and half a seed spread not") {
    run_named(fresh, "fw=q2_seed=1").values["train_loss"] = 2.0 * (1 + 5e-4);
    CHECK(st::compare_results(fresh, committed).agreement == st::Agreement::kWithinTolerance);
    run_named(fresh, "fw=q2_seed=1").values["train_loss"] = 2.0 * (1 + 2e-3);  // q2's spread: 0
    const st::Comparison c = st::compare_results(fresh, committed);
    CHECK(c.agreement == st::Agreement::kDiffers);
    CHECK_THAT(c.reasons.at(0), Catch::Contains("fw=q2_seed=1: train_loss"));
  }
  SECTION("half the committed group's seed spread widens the tolerance of its losses") {
    // fp32's spread is 0.01414: 0.007 > 1e-3 x 1.60 is still within half of it.
    run_named(fresh, "fw=none_seed=1").values["train_loss"] = 1.607;
    CHECK(st::compare_results(fresh, committed).agreement == st::Agreement::kWithinTolerance);
    run_named(fresh, "fw=none_seed=1").values["train_loss"] = 1.608;  // 0.008 > 0.00707
    CHECK(st::compare_results(fresh, committed).agreement == st::Agreement::kDiffers);
  }
  SECTION("bytes must match to 1e-9: a different build, not a different CPU") {
    run_named(fresh, "fw=q2_seed=2").values["wire_bytes"] = 513;  // 0.2% off
    CHECK(st::compare_results(fresh, committed).agreement == st::Agreement::kDiffers);
  }
  SECTION("a run missing, added or with another status differs") {
    fresh.runs.pop_back();
    const st::Comparison c = st::compare_results(fresh, committed);
    CHECK(c.agreement == st::Agreement::kDiffers);
    CHECK_THAT(st::agreement_summary(c), Catch::Contains("fw=q2_seed=2 is committed but not here"));
    fresh = hand_results();
    auto extra = fresh.runs.back();
    extra.point = "fw=q2_seed=3";
    fresh.runs.push_back(extra);
    CHECK_THAT(st::compare_results(fresh, committed).reasons.at(0),
               Catch::Contains("fw=q2_seed=3 is here but not committed"));
    fresh = hand_results();
    run_named(fresh, "fw=q2_seed=1").status = "diverged";
    CHECK_THAT(st::compare_results(fresh, committed).reasons.at(0),
               Catch::Contains("diverged here, complete committed"));
  }
  SECTION("the same numbers with another outcome, or another check, differ") {
    fresh.checks[0].outcome = "inconclusive";
    const st::Comparison c = st::compare_results(fresh, committed);
    CHECK(c.agreement == st::Agreement::kDiffers);
    CHECK_THAT(c.reasons.at(0),
               Catch::Contains("check 1: inconclusive here, reproduced committed"));
    fresh = hand_results();
    fresh.checks[0].text += " or 5%";
    CHECK_THAT(st::compare_results(fresh, committed).reasons.at(0), Catch::Contains("has changed"));
    fresh = hand_results();
    fresh.checks.clear();
    CHECK_THAT(st::compare_results(fresh, committed).reasons.at(0),
               Catch::Contains("committed but not here"));
  }
  SECTION("the report says it at a glance") {
    run_named(fresh, "fw=q2_seed=1").values["train_loss"] = 2.0005;
    const st::Comparison c = st::compare_results(fresh, committed);
    st::CompareReport report;
    report.claim_id = "X1";
    report.fresh = &fresh;
    report.committed = &committed;
    report.comparison = &c;
    std::ostringstream out;
    st::write_comparison(report, out);
    CHECK_THAT(out.str(),
               Catch::Contains("**Agrees with the committed results, within tolerance.**"));
    CHECK_THAT(out.str(),
               Catch::Contains("| 2.00025 | 2 | +0.00025 | 0.0005 | 0.002 | within tolerance |"));
  }
}
