// The report `slowpipe verdict` writes as a reproduction's summary.md: the
// claim as published, the verdict and every check with its numbers, the seed
// spreads, the assumptions, the summary table, the claim's extra tables and
// the plots. Generated from the run logs and the sweep file alone.
// No libtorch here.
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "study/summary/summary_table.h"
#include "study/sweeps/verdict_claim.h"
#include "study/sweeps/verdict_eval.h"

namespace slowpipe::study {

struct VerdictReport {
  const Claim* claim = nullptr;
  std::string sweep_path;  // as given, for the "how to rerun" line
  int scale = 1;           // --scale of the sweep
  const SummaryTable* summary = nullptr;
  const VerdictTables* tables = nullptr;
  const VerdictResult* result = nullptr;
  std::vector<std::string> plots;  // PNG paths relative to the report's folder
  double runs_wall_s = 0;          // sum of the runs' wall times
  double longest_run_s = 0;
  size_t run_count = 0;
  // What made the runs (commit, cpu, ...: verdict_results.h), for a report
  // committed with the results; empty: none written.
  std::vector<std::pair<std::string, std::string>> provenance;
};

void write_verdict_report(const VerdictReport& report, std::ostream& out);

// The pooled seed spread of `column` over every group of the summary that has
// two or more seeds (for the report's spread table).
PooledSpread summary_spread(const VerdictTable& summary, const std::string& column);

// Columns of the summary that the claim's checks read, in order of first use.
std::vector<std::string> checked_summary_columns(const Claim& claim);

}  // namespace slowpipe::study
