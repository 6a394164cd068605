// The table `slowpipe summary` prints: key columns (the config keys that vary),
// "run" (one row per log) or "n" (one row per seed group), status, and every
// statistic column that at least one row has (summary_columns.h), rows in the
// order of their key values (sort_groups), as aligned text (fitted to a
// 100-column terminal, or every column), TSV or Markdown (docs/summary.md).
// No libtorch here.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "study/summary/summary_columns.h"
#include "study/summary/summary_group.h"
#include "study/summary/summary_rank.h"
#include "study/summary/summary_stats.h"

namespace slowpipe::study {

struct SummaryTable {
  bool grouped = true;
  std::vector<std::string> keys;       // varying config keys
  std::vector<RunGroup> groups;        // one row each
  std::vector<SummaryColumn> columns;  // statistic columns with at least one value
  SummaryOptions options;
  // Set by rank_summary_table, parallel to `groups`; empty `rank_by`: not ranked.
  std::string rank_by;
  std::vector<size_t> ranks;  // 0: no value
  std::vector<FrontMark> front_bytes, front_time;
};

// `runs` must outlive the table (groups point into it).
SummaryTable build_summary_table(const std::vector<RunStats>& runs, bool group_seeds,
                                 const SummaryOptions& options);

// The column ids `--rank` accepts: every statistic column, time_to_target_s
// only with a target.
bool rankable_column(const std::string& id, const SummaryOptions& options);

// Orders the table's groups by column `by` (summary_rank.h), records the ranks
// and the two Pareto fronts, and shows the wire/step column. `by` must be
// rankable (UsageError naming the ids otherwise).
void rank_summary_table(SummaryTable& table, const std::string& by);

enum class SummaryFormat {
  kText,      // aligned columns and notes fitted to kTextWidth (the most important columns)
  kTextWide,  // aligned columns and notes, every column
  kTsv,       // one header line; numbers in full precision; group std in "<id>_std"
  kMarkdown,  // a table and its notes, to paste into a paper draft
};
void write_summary(const SummaryTable& table, SummaryFormat format, std::ostream& out);

// The terminal width kText fits: key columns (by their short names,
// key_names.h), rank and n/run always; then status (left out when every row is
// "complete"), train loss, the --rank column, the fronts, the task metric,
// sim time, time to target, vs fp32, bytes per step, channel state, while they
// fit; the notes name the columns left out. Notes are wrapped to this width.
constexpr size_t kTextWidth = 100;

// A text/Markdown cell: "–" with no value, "not reached" when only infinite
// values (time to target), "m" for one value, "m ± s" for several, with
// " (k/n)" appended when only k of the group's n runs have a finite value.
// Losses and seconds print the std to 2 significant digits and the mean to the
// same decimal place ("0.1004 ± 0.0030"); counts, bytes and ratios equal in
// every run of the group show no "± 0".
std::string format_cell(const SummaryColumn& column, const GroupCell& cell);
// A number in the column's format ("4.892", "16 KiB", "12.3x").
std::string format_number(CellFormat format, double value);

}  // namespace slowpipe::study
