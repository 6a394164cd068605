// The [claim] section of a reproduction's sweep file: the published finding it
// tests and the criterion that decides, from the numbers, whether slowpipe
// reproduces it. Written before the runs, evaluated after them
// (verdict_eval.h). The grammar and the rules are in docs/reproduce.md; in
// short:
//
//   [claim]
//   id       = A1
//   title    = AQ-SGD at 2-4 bits converges like fp32; direct quantization does not
//   source   = AQ-SGD (NeurIPS 2022), abstract and Section 5
//   claim    = the finding, as published
//   workload = what this experiment runs, and its CPU budget
//   note     = an assumption or a difference from the paper   (repeatable)
//   target   = 1.9                 loss target for time to target (optional)
//   target_on = eval               the rule of the report's to-target columns (optional)
//   scale    = run.epochs, data.limit   integer keys --scale K multiplies
//   table.act = timing --preset aqsgd-gpt2xl --fw aq(q4) --bw q8 --tsv
//   check    = eval_loss[compress.fw=aq(q2)] ~ eval_loss[compress.fw=none] within 2 spreads
//   check    = eval_loss[compress.fw=q2] > eval_loss[compress.fw=none] by 2 spreads
//   check    = act:fp32_run_speedup[bandwidth=100Mbps] ~ 4.3 within 25%
//   check.R3 = ...                 a check of finding R3 (one sweep, two findings)
//
// A side of a check is a term or a ratio of two terms; a term is a number or
// COLUMN[KEY=VALUE & ...] of the seed-grouped summary table, or
// TABLE:COLUMN[...] of a table.TABLE command's TSV output. Pure parsing here;
// no libtorch.
#pragma once

#include <string>
#include <vector>

#include "study/sweeps/sweep_file.h"
#include "study/sweeps/sweep_points.h"

namespace slowpipe::study {

// A number, or the value of COLUMN in the one row of TABLE ("" = the summary)
// that the conditions select.
struct VerdictTerm {
  bool is_number = false;
  double number = 0;
  std::string table;  // "" = the seed-grouped summary of the run logs
  std::string column;
  std::vector<SweepTerm> where;
  std::string text;  // as written
};

// One side of a check: a term, or the ratio of two terms.
struct VerdictSide {
  VerdictTerm num;
  bool ratio = false;
  VerdictTerm den;
  std::string text;
};

enum class VerdictOp {
  kLess,     // lhs < rhs by t
  kGreater,  // lhs > rhs by t
  kSimilar,  // lhs ~ rhs within t
};

// t = the largest of the parts given: K seed spreads, an absolute amount, a
// percentage of |rhs|. None given: t = 0 (only for < and >).
struct VerdictTolerance {
  double spreads = 0;   // K
  double absolute = 0;  // in the column's unit
  double percent = 0;   // of |rhs|
  std::string text;
};

struct VerdictCheck {
  std::string finding;  // `check.R3 = ...`: R3; plain `check`: the claim's id
  VerdictSide lhs, rhs;
  VerdictOp op = VerdictOp::kSimilar;
  VerdictTolerance tolerance;
  std::string text;
  int line = 0;
};

struct Claim {
  std::string id, title, source, claim, workload;
  std::vector<std::string> notes;
  bool has_target = false;
  double target = 0;
  // Which rule's to-target columns the report's summary table shows ("train"
  // or "eval", summary --target-on); checks may name either rule's columns.
  std::string target_on = "train";
  std::vector<std::string> scale_keys;
  struct Table {
    std::string name;
    std::vector<std::string> args;  // slowpipe arguments: a command and its options
    int line = 0;
  };
  std::vector<Table> tables;
  std::vector<VerdictCheck> checks;
};

// Parses one check ("A > B by 2 spreads"); UsageError saying what is wrong.
VerdictCheck parse_check(const std::string& text);

// Parses a sweep file's [claim] section; UsageError naming the file and line
// for an unknown or repeated key, a missing id, title, claim or check, a bad
// check, a table name that is not a plain name, a table a check names but no
// table.NAME defines, an unknown summary column.
Claim parse_claim(const SweepFile& sweep);

// Checks the claim against the sweep's points before anything runs: every
// summary term selects at least one point, and the points it selects differ
// only in run.seed (one row of the seed-grouped summary); every condition's
// key is a train key. UsageError naming the check's line.
void check_claim_points(const Claim& claim, const SweepFile& sweep, const ResolvedSweep& points);

// Splits a table command into arguments: whitespace separates, '...' and
// "..." quote.
std::vector<std::string> split_command(const std::string& text);

}  // namespace slowpipe::study
