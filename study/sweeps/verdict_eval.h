// Evaluating a claim's checks (verdict_claim.h) on tables of numbers: the
// seed-grouped summary of a sweep's run logs, and TSV tables written by the
// claim's table commands. Each check comes out reproduced, not reproduced or
// inconclusive by fixed rules (docs/reproduce.md, "How a check is decided"):
//
//   A > B by t     d = A - B:  d > t reproduced; d <= 0 not reproduced; else inconclusive
//   A < B by t     d = B - A:  the same
//   A ~ B within t d = |A - B|: d <= t reproduced; d > 2t not reproduced; else inconclusive
//
// t is the largest of K x spread, an amount, and P% of |B|; the spread is the
// pooled sample standard deviation over seeds of the groups the check reads.
// A check is inconclusive whenever its numbers are not there: a run missing
// or unfinished, a column without a value. A tolerance in spreads with no
// group of two seeds leaves t unknown above its other parts: '~' is then
// reproduced when d is within those parts, '>' and '<' not reproduced when
// d <= 0 (no margin needed), an infinite d (a diverged side) is beyond any
// finite t, and the rest is inconclusive. A group with a diverged run counts as the worst value of
// its column (+inf where lower is better, -inf where higher is better). The claim is not reproduced
// if any check is not, inconclusive if any check is, and reproduced otherwise. No libtorch here.
#pragma once

#include <cstddef>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "study/summary/summary_stats.h"
#include "study/sweeps/verdict_claim.h"

namespace slowpipe::study {

// A cell: mean, sample std and count over seeds (n = 1 and std NaN for a
// single number).
struct VerdictValue {
  double mean = std::numeric_limits<double>::quiet_NaN();
  double std = std::numeric_limits<double>::quiet_NaN();
  size_t n = 0;
};

struct VerdictRow {
  std::string name;                            // for messages: a run file or "row 3"
  std::map<std::string, std::string> keys;     // config keys (summary) or every cell (TSV)
  std::map<std::string, VerdictValue> values;  // by column id
  bool diverged = false;                       // a run of the group diverged
  std::string incomplete;                      // non-empty: why the group has no result yet
};

struct VerdictTable {
  std::string name;                 // "" = the summary
  std::vector<std::string> header;  // TSV: the columns in order
  std::vector<VerdictRow> rows;
};
using VerdictTables = std::map<std::string, VerdictTable>;

// One row per seed group (summary_group.h) with every summary column.
VerdictTable summary_verdict_table(const std::vector<RunStats>& runs);
// A TSV table: a header line, then rows; every cell is a key, numeric cells
// are values too; a column X_std gives the std of X, a column n the count.
// UsageError for a missing file, DataError for a malformed one.
VerdictTable read_tsv_table(const std::string& name, const std::string& path);

// Where lower is better (losses, bits per byte, times) a diverged group counts
// as +inf; where higher is better (accuracy*, *speedup*, samples_per_s), -inf.
bool verdict_higher_is_better(const std::string& column);

enum class Outcome { kReproduced, kNotReproduced, kInconclusive };
const char* outcome_name(Outcome outcome);  // "reproduced", "not reproduced", "inconclusive"

struct CheckResult {
  Outcome outcome = Outcome::kInconclusive;
  double lhs = std::numeric_limits<double>::quiet_NaN();
  double rhs = std::numeric_limits<double>::quiet_NaN();
  double diff = std::numeric_limits<double>::quiet_NaN();       // d of the rules above
  double tolerance = std::numeric_limits<double>::quiet_NaN();  // t
  // The tolerance has a part in spreads but no spread is known: `tolerance`
  // is only t's lower bound (its other parts), and the check is decided only
  // where every t from there up gives the same outcome.
  bool tolerance_is_lower_bound = false;
  double spread = std::numeric_limits<double>::quiet_NaN();  // pooled seed std, if any
  std::string why;                                           // the rule that decided, in words
};

// UsageError for a criterion that cannot be applied to these tables: a
// condition key that no row has, a TSV selection matching several rows.
CheckResult evaluate_check(const VerdictCheck& check, const VerdictTables& tables);

struct VerdictResult {
  Outcome outcome = Outcome::kInconclusive;  // of all checks
  std::vector<CheckResult> checks;           // as Claim::checks
  // Per finding (VerdictCheck::finding), in order of first check, by the same rule.
  std::vector<std::pair<std::string, Outcome>> findings;
};
// The worst of some outcomes: not reproduced, else inconclusive, else reproduced.
Outcome combine_outcomes(const std::vector<Outcome>& outcomes);
VerdictResult evaluate_claim(const Claim& claim, const VerdictTables& tables);

// Pooled sample standard deviation of cells with n >= 2:
// sqrt(sum (n_i - 1) s_i^2 / sum (n_i - 1)); NaN when there is none.
struct PooledSpread {
  double std = std::numeric_limits<double>::quiet_NaN();
  size_t groups = 0;  // cells that contributed
  size_t runs = 0;    // their runs
};
PooledSpread pooled_spread(const std::vector<VerdictValue>& cells);

}  // namespace slowpipe::study
