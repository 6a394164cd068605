// A reproduction's results as committed to the repository
// (experiments/reproduce/results/NAME/, docs/reproduce.md "Committed results"):
// the numbers of every run and the outcome of every check, with what made them
// (commit, CPU, kernels, dates, scale), so a reader can compare a fresh run on
// their machine with them (verdict_compare.h). Three files per experiment:
//
//   summary.md   the verdict report (verdict_report.h), without the plots
//   runs.tsv     "# key: value" provenance lines, then one row per run:
//                point, run.label, run.seed, the keys that vary, status, then
//                the numbers (summary column ids; empty = no value)
//   checks.tsv   one row per check: its number, finding, outcome, A, B, d, t,
//                whether t is only a lower bound, the seed spread, its text
//
// Numbers are written with 17 significant digits, so a bit-identical run
// reads back identical. Plain text; no libtorch, no HDF5 here (the runs come
// in as RunStats).
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "study/summary/summary_stats.h"
#include "study/sweeps/verdict_claim.h"
#include "study/sweeps/verdict_eval.h"

namespace slowpipe::study {

// One run's numbers: what the verdict reads, and the final metrics a reader
// compares.
struct ResultRun {
  std::string point;                        // the run log's file stem
  std::map<std::string, std::string> keys;  // run.label, run.seed, the keys that vary
  std::string status;                       // complete, diverged, interrupted, ...
  std::map<std::string, double> values;     // by summary column id; NaN: no value
};

// One check's result as the report shows it.
struct ResultCheck {
  std::string finding, text;
  std::string outcome;  // outcome_name(): "reproduced", "not reproduced", "inconclusive"
  CheckResult numbers;  // lhs, rhs, diff, tolerance, spread (why is not kept)
};

struct Results {
  // Provenance in order: experiment, scale, commit, cpu, kernels, torch,
  // runs (their start times); --save adds saved (when).
  std::vector<std::pair<std::string, std::string>> provenance;
  std::vector<std::string> key_columns;    // after "point", before "status"
  std::vector<std::string> value_columns;  // after "status"
  std::vector<ResultRun> runs;
  std::vector<ResultCheck> checks;
  std::string provenance_of(const std::string& key) const;  // "" when absent
};

// The runs' and checks' numbers, with the provenance the run logs record
// (slowpipe.git_commit and git_dirty, host.cpu, kernels.*, torch.version,
// start_time; distinct values joined by ", "; a CPU missing from every log is
// this machine's /proc/cpuinfo model name). Columns: steps, train_loss,
// eval_loss, accuracy, wire_bytes, sim_time_s and every summary column a
// check reads, keeping those some run has a value of.
Results collect_results(const Claim& claim, const VerdictResult& result,
                        const std::vector<RunStats>& runs, const std::string& experiment,
                        int scale);

void write_runs_tsv(const Results& results, std::ostream& out);
void write_checks_tsv(const Results& results, std::ostream& out);

// Refuses (UsageError) to save a sweep that is not finished: fewer run logs
// than `points`, or a run neither complete nor diverged (running,
// interrupted, failed).
void check_finished(const std::vector<RunStats>& runs, size_t points, const std::string& dir);

// Writes DIR/summary.md (`summary_md`), DIR/runs.tsv and DIR/checks.tsv,
// creating DIR; each file whole, then renamed over the old one.
void save_results(const Results& results, const std::string& summary_md, const std::string& dir);

// Reads DIR/runs.tsv and DIR/checks.tsv. UsageError when DIR or a file is
// missing (the message says how to write them), DataError naming the file and
// line for a malformed one.
Results read_results(const std::string& dir);

// Where an experiment's committed results live: beside its sweep file,
// results/NAME[-xK]/ (experiments/reproduce/results/p1/).
std::string committed_results_dir(const std::string& sweep_path, const std::string& name,
                                  int scale);

// Now as 2026-11-26T04:50:00Z (for the "saved" line of runs.tsv).
std::string utc_now();

// The seed-group name of a point: its name without the "seed=N" part
// ("fw=q2_seed=3" -> "fw=q2"); a point of a sweep with one seed is its own.
std::string point_group(const std::string& point);

}  // namespace slowpipe::study
