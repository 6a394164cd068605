// Tables for the verdict and the rules that decide a check (verdict_eval.h).
#include "study/sweeps/verdict_eval.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "common/numbers.h"
#include "study/summary/summary_columns.h"
#include "study/summary/summary_group.h"

namespace slowpipe::study {
namespace {

bool parse_cell(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(text.c_str(), &end);
  return errno == 0 && end == text.c_str() + text.size();
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, '\t')) out.push_back(cell);
  if (!line.empty() && line.back() == '\t') out.emplace_back();
  return out;
}

// The value a term names, with the cell it came from (for the spread), or a
// reason why there is none.
struct TermValue {
  double value = kNaN;
  bool has_cell = false;
  VerdictValue cell;
  std::string missing;  // non-empty: no value, and why
};

TermValue term_value(const VerdictTerm& t, const VerdictTables& tables) {
  TermValue out;
  if (t.is_number) {
    out.value = t.number;
    return out;
  }
  const auto table = tables.find(t.table);
  if (table == tables.end() || table->second.rows.empty()) {
    out.missing = t.table.empty() ? "no run log" : "table '" + t.table + "' has no row";
    return out;
  }
  for (const auto& w : t.where) {
    const bool known = std::any_of(table->second.rows.begin(), table->second.rows.end(),
                                   [&w](const VerdictRow& r) { return r.keys.count(w.key) != 0; });
    if (!known) {
      throw UsageError("'" + t.text + "': no row of " +
                       (t.table.empty() ? std::string("the summary") : "table " + t.table) +
                       " has a key '" + w.key + "'");
    }
  }
  std::vector<const VerdictRow*> match;
  for (const auto& row : table->second.rows) {
    bool all = true;
    for (const auto& w : t.where) {
      const auto kv = row.keys.find(w.key);
      all = all && kv != row.keys.end() && ((kv->second == w.value) == w.equal);
    }
    if (all) match.push_back(&row);
  }
  if (match.empty()) {
    out.missing = "'" + t.text + "' selects no row (runs missing?)";
    return out;
  }
  if (match.size() > 1) {
    throw UsageError("'" + t.text + "' selects " + std::to_string(match.size()) + " rows (" +
                     match[0]->name + ", " + match[1]->name +
                     "): add conditions so that it selects one");
  }
  const VerdictRow& row = *match[0];
  if (!row.incomplete.empty()) {
    out.missing = "'" + t.text + "': " + row.incomplete;
    return out;
  }
  if (row.diverged) {
    out.value = verdict_higher_is_better(t.column) ? -kInf : kInf;
    return out;
  }
  const auto v = row.values.find(t.column);
  if (v == row.values.end() || std::isnan(v->second.mean)) {
    out.missing = "'" + t.text + "' has no value of " + t.column;
    return out;
  }
  out.value = v->second.mean;
  out.has_cell = true;
  out.cell = v->second;
  return out;
}

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(4);
  s << v;
  return s.str();
}

// A ~ B: reproduced within the tolerance t, not reproduced beyond 2t.
void judge_similar(CheckResult& r) {
  r.diff = std::fabs(r.lhs - r.rhs);
  if (std::isnan(r.diff)) {
    r.why = "both sides diverged";
  } else if (r.diff <= r.tolerance) {
    r.outcome = Outcome::kReproduced;
    r.why = "|A - B| = " + fmt(r.diff) + " <= t = " + fmt(r.tolerance);
  } else if (r.diff > 2 * r.tolerance) {
    r.outcome = Outcome::kNotReproduced;
    r.why = "|A - B| = " + fmt(r.diff) + " > 2t = " + fmt(2 * r.tolerance);
  } else {
    r.why = "t < |A - B| = " + fmt(r.diff) + " <= 2t (t = " + fmt(r.tolerance) + ")";
  }
}

// A > B or A < B: reproduced beyond the tolerance, not reproduced in the
// other direction.
void judge_direction(VerdictOp op, CheckResult& r) {
  r.diff = op == VerdictOp::kGreater ? r.lhs - r.rhs : r.rhs - r.lhs;
  const std::string d = op == VerdictOp::kGreater ? "A - B" : "B - A";
  if (std::isnan(r.diff)) {
    r.why = "both sides diverged";
  } else if (r.diff > r.tolerance) {
    r.outcome = Outcome::kReproduced;
    r.why = d + " = " + fmt(r.diff) + " > t = " + fmt(r.tolerance);
  } else if (r.diff <= 0) {
    r.outcome = Outcome::kNotReproduced;
    r.why = d + " = " + fmt(r.diff) + " <= 0: not in the claimed direction";
  } else {
    r.why = "0 < " + d + " = " + fmt(r.diff) + " <= t = " + fmt(r.tolerance) +
            ": the claimed direction, within the tolerance";
  }
}

// The tolerance has a part in spreads and no spread is known (no group the
// check reads has two seeds): t is only known to be at least t_lo, the
// largest of the other parts, and finite (a spread of finite numbers is).
// A larger t can only widen '~' and only raise the bar of '>' and '<', so
// what holds for every t >= t_lo is decided and the rest is inconclusive:
//   ~      d <= t_lo: reproduced; d = inf (a diverged side): not reproduced
//   > <    d <= 0: not reproduced (no margin needed); d = inf: reproduced
void judge_without_spread(VerdictOp op, double t_lo, CheckResult& r) {
  r.tolerance = t_lo;
  r.tolerance_is_lower_bound = true;
  const bool similar = op == VerdictOp::kSimilar;
  r.diff = similar                     ? std::fabs(r.lhs - r.rhs)
           : op == VerdictOp::kGreater ? r.lhs - r.rhs
                                       : r.rhs - r.lhs;
  const std::string d = similar ? "|A - B|" : op == VerdictOp::kGreater ? "A - B" : "B - A";
  const std::string no_spread =
      "no group it reads has two seeds, so t is only known to be >= " + fmt(t_lo);
  if (std::isnan(r.diff)) {
    r.why = "both sides diverged";
  } else if (std::isinf(r.diff)) {
    r.outcome = similar ? Outcome::kNotReproduced : Outcome::kReproduced;
    r.why = d + " is infinite (a diverged side): beyond any finite tolerance";
  } else if (similar && r.diff <= t_lo) {
    r.outcome = Outcome::kReproduced;
    r.why = d + " = " + fmt(r.diff) + " <= " + fmt(t_lo) + " <= t, whatever the seed spread";
  } else if (!similar && r.diff <= 0) {
    r.outcome = Outcome::kNotReproduced;
    r.why = d + " = " + fmt(r.diff) + " <= 0: not in the claimed direction";
  } else {
    r.why = d + " = " + fmt(r.diff) + ": " + no_spread + (similar ? "" : " (t could exceed d)");
  }
}

}  // namespace

VerdictTable summary_verdict_table(const std::vector<RunStats>& runs) {
  VerdictTable table;
  for (const auto& group : group_runs(runs, /*group_seeds=*/true)) {
    VerdictRow row;
    row.name = group.runs.front()->path;
    row.keys = group.runs.front()->config;
    for (const RunStats* r : group.runs) {
      if (r->status == "diverged") {
        row.diverged = true;
      } else if (r->status != "complete" && row.incomplete.empty()) {
        row.incomplete = "run " + r->path + " is " + r->status;
      }
    }
    for (const auto& column : summary_columns()) {
      const GroupCell cell = aggregate(group, column.id);
      VerdictValue v;
      v.n = cell.stat.n;
      if (cell.stat.n > 0) {
        v.mean = cell.stat.mean;
        v.std = cell.stat.n > 1 ? cell.stat.std : kNaN;
      } else if (cell.infinite > 0) {
        v.mean = kInf;  // a target that no run reached
      }
      row.values[column.id] = v;
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

VerdictTable read_tsv_table(const std::string& name, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot open table " + name + " (" + path + ")");
  VerdictTable table;
  table.name = name;
  std::string line;
  if (!std::getline(in, line)) throw DataError(path + ": empty table (no header line)");
  const std::vector<std::string> header = split_tabs(line);
  table.header = header;
  int lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    const std::vector<std::string> cells = split_tabs(line);
    if (cells.size() != header.size()) {
      throw DataError(path + ":" + std::to_string(lineno) + ": " + std::to_string(cells.size()) +
                      " cells, the header has " + std::to_string(header.size()));
    }
    VerdictRow row;
    row.name = path + ":" + std::to_string(lineno);
    double n = 1;
    for (size_t c = 0; c < cells.size(); ++c) {
      row.keys[header[c]] = cells[c];
      if (header[c] == "n") parse_cell(cells[c], n);
    }
    for (size_t c = 0; c < cells.size(); ++c) {
      double v = 0;
      const std::string& h = header[c];
      if (!parse_cell(cells[c], v) || (h.size() > 4 && h.substr(h.size() - 4) == "_std")) continue;
      VerdictValue value;
      value.mean = v;
      value.n = static_cast<size_t>(n);
      const auto s = row.keys.find(h + "_std");
      double std_v = 0;
      if (s != row.keys.end() && parse_cell(s->second, std_v)) value.std = std_v;
      row.values[h] = value;
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

bool verdict_higher_is_better(const std::string& column) {
  return column_higher_is_better(column);
}

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::kReproduced:
      return "reproduced";
    case Outcome::kNotReproduced:
      return "not reproduced";
    case Outcome::kInconclusive:
      return "inconclusive";
  }
  return "?";
}

PooledSpread pooled_spread(const std::vector<VerdictValue>& cells) {
  PooledSpread out;
  double sum = 0, dof = 0;
  for (const auto& c : cells) {
    if (c.n < 2 || !std::isfinite(c.std)) continue;
    sum += (static_cast<double>(c.n) - 1) * c.std * c.std;
    dof += static_cast<double>(c.n) - 1;
    ++out.groups;
    out.runs += c.n;
  }
  if (dof > 0) out.std = std::sqrt(sum / dof);
  return out;
}

CheckResult evaluate_check(const VerdictCheck& check, const VerdictTables& tables) {
  CheckResult r;
  std::vector<VerdictValue> cells;
  const auto side = [&](const VerdictSide& s, double& value) -> std::string {
    const TermValue num = term_value(s.num, tables);
    if (!num.missing.empty()) return num.missing;
    if (num.has_cell) cells.push_back(num.cell);
    value = num.value;
    if (!s.ratio) return "";
    const TermValue den = term_value(s.den, tables);
    if (!den.missing.empty()) return den.missing;
    if (den.has_cell) cells.push_back(den.cell);
    value = num.value / den.value;
    return "";
  };
  std::string missing = side(check.lhs, r.lhs);
  if (missing.empty()) missing = side(check.rhs, r.rhs);
  if (!missing.empty()) {
    r.why = missing;
    return r;
  }
  const VerdictTolerance& tol = check.tolerance;
  r.tolerance = std::max(tol.absolute, tol.percent / 100 * std::fabs(r.rhs));
  if (tol.spreads > 0) {
    const PooledSpread spread = pooled_spread(cells);
    r.spread = spread.std;
    if (std::isnan(spread.std)) {
      judge_without_spread(check.op, r.tolerance, r);
      return r;
    }
    r.tolerance = std::max(r.tolerance, tol.spreads * spread.std);
  } else {
    r.spread = pooled_spread(cells).std;
  }
  if (check.op == VerdictOp::kSimilar) {
    judge_similar(r);
  } else {
    judge_direction(check.op, r);
  }
  return r;
}

Outcome combine_outcomes(const std::vector<Outcome>& outcomes) {
  const auto any = [&outcomes](Outcome o) {
    return std::find(outcomes.begin(), outcomes.end(), o) != outcomes.end();
  };
  return any(Outcome::kNotReproduced)  ? Outcome::kNotReproduced
         : any(Outcome::kInconclusive) ? Outcome::kInconclusive
                                       : Outcome::kReproduced;
}

VerdictResult evaluate_claim(const Claim& claim, const VerdictTables& tables) {
  VerdictResult out;
  std::vector<Outcome> all;
  std::vector<std::string> order;
  std::map<std::string, std::vector<Outcome>> by_finding;
  for (const auto& c : claim.checks) {
    CheckResult r;
    try {
      r = evaluate_check(c, tables);
    } catch (const UsageError& e) {
      throw UsageError("check on line " + std::to_string(c.line) + ": " + e.what());
    }
    all.push_back(r.outcome);
    if (by_finding.count(c.finding) == 0) order.push_back(c.finding);
    by_finding[c.finding].push_back(r.outcome);
    out.checks.push_back(std::move(r));
  }
  out.outcome = combine_outcomes(all);
  for (const auto& f : order) out.findings.emplace_back(f, combine_outcomes(by_finding[f]));
  return out;
}

}  // namespace slowpipe::study
