// The verdict report in Markdown (verdict_report.h, docs/reproduce.md).
#include "study/sweeps/verdict_report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <utility>

namespace slowpipe::study {
namespace {

std::string num(double v) {
  if (std::isnan(v)) return "–";
  if (std::isinf(v)) return v > 0 ? "+inf (diverged)" : "-inf (diverged)";
  std::ostringstream s;
  if (std::fabs(v) >= 1e4 && std::fabs(v) < 1e15) {
    s << std::fixed << std::setprecision(0) << v;  // 41877, not 4.188e+04
  } else {
    s << std::setprecision(4) << v;
  }
  return s.str();
}

std::string escape(const std::string& s) {
  std::string out;
  for (const char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string minutes(double s) {
  std::ostringstream o;
  o.precision(3);
  o << s / 60 << " min";
  return o.str();
}

void write_checks(const VerdictReport& r, std::ostream& out) {
  out << "## Checks\n\nStated in the sweep file before the runs; decided by the rules below "
         "the table.\n\n| # | finding | check | A | B | d | t | seed spread | result | why |\n"
         "|---|---|---|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < r.claim->checks.size(); ++i) {
    const auto& c = r.claim->checks[i];
    const auto& x = r.result->checks[i];
    out << "| " << i + 1 << " | " << c.finding << " | `" << escape(c.text) << "` | " << num(x.lhs)
        << " | " << num(x.rhs) << " | " << num(x.diff) << " | "
        << (x.tolerance_is_lower_bound ? "≥ " : "") << num(x.tolerance) << " | " << num(x.spread)
        << " | **" << outcome_name(x.outcome) << "** | " << escape(x.why) << " |\n";
  }
  out << "\nA and B are the two sides of a check: a group's mean over seeds, a number, or a "
         "ratio. `A > B by T`: d = A − B, reproduced when d > t, not reproduced when d ≤ 0, "
         "inconclusive in between (`<` alike with d = B − A). `A ~ B within T`: d = |A − B|, "
         "reproduced when d ≤ t, not reproduced when d > 2t, inconclusive in between. t is the "
         "largest of the tolerance's parts (K seed spreads, an amount, P% of |B|); the seed "
         "spread is the pooled sample standard deviation over seeds of the groups the check "
         "reads; where none of them has two seeds, t is only known to be ≥ its other parts, and "
         "only what holds for every such t is decided (`~` reproduced when d is within them, "
         "`>` and `<` not reproduced when d ≤ 0). Missing or unfinished runs make a check "
         "inconclusive; a diverged group counts "
         "as the worst value of its column. The claim is not reproduced if any check is not, "
         "inconclusive if any check is, reproduced otherwise (docs/reproduce.md).\n\n";
}

void write_spreads(const VerdictReport& r, std::ostream& out) {
  const auto summary = r.tables->find("");
  const std::vector<std::string> columns = checked_summary_columns(*r.claim);
  if (summary == r.tables->end() || columns.empty()) return;
  out << "## Seed spreads\n\nSample standard deviation over seeds, per group of runs that "
         "differ only in run.seed (groups with two or more seeds, complete and not diverged): "
         "pooled over all groups, their median, and the largest with its group. A single "
         "unstable group can dominate the pooled value; each check uses only the groups it "
         "reads.\n\n| column | pooled std | median group std | largest group std | groups | runs "
         "|\n|---|---|---|---|---|---|\n";
  for (const auto& c : columns) {
    const PooledSpread s = summary_spread(summary->second, c);
    std::vector<std::pair<double, std::string>> stds;
    for (const auto& row : summary->second.rows) {
      const auto v = row.values.find(c);
      if (v == row.values.end() || v->second.n < 2 || !std::isfinite(v->second.std) ||
          row.diverged || !row.incomplete.empty()) {
        continue;
      }
      const auto label = row.keys.find("run.label");
      stds.emplace_back(v->second.std, label != row.keys.end() ? label->second : row.name);
    }
    std::sort(stds.begin(), stds.end());
    const double median =
        stds.empty() ? std::nan("")
                     : (stds[(stds.size() - 1) / 2].first + stds[stds.size() / 2].first) / 2;
    out << "| " << c << " | " << num(s.std) << " | " << num(median) << " | "
        << (stds.empty() ? "–" : num(stds.back().first) + " (" + escape(stds.back().second) + ")")
        << " | " << s.groups << " | " << s.runs << " |\n";
  }
  out << "\n";
}

void write_tables(const VerdictReport& r, std::ostream& out) {
  for (const auto& t : r.claim->tables) {
    const auto found = r.tables->find(t.name);
    out << "### Table `" << t.name << "`: `slowpipe";
    for (const auto& a : t.args) out << " " << a;
    out << "`\n\n";
    if (found == r.tables->end() || found->second.rows.empty()) {
      out << "(not available)\n\n";
      continue;
    }
    const std::vector<std::string>& cols = found->second.header;
    out << "|";
    for (const auto& c : cols) out << " " << c << " |";
    out << "\n|";
    for (size_t i = 0; i < cols.size(); ++i) out << "---|";
    out << "\n";
    for (const auto& row : found->second.rows) {
      out << "|";
      for (const auto& c : cols) {
        const auto v = row.values.find(c);
        out << " " << (v != row.values.end() ? num(v->second.mean) : escape(row.keys.at(c)))
            << " |";
      }
      out << "\n";
    }
    out << "\n";
  }
}

}  // namespace

PooledSpread summary_spread(const VerdictTable& summary, const std::string& column) {
  std::vector<VerdictValue> cells;
  for (const auto& row : summary.rows) {
    const auto v = row.values.find(column);
    if (v != row.values.end() && row.incomplete.empty() && !row.diverged)
      cells.push_back(v->second);
  }
  return pooled_spread(cells);
}

std::vector<std::string> checked_summary_columns(const Claim& claim) {
  std::vector<std::string> out;
  for (const auto& c : claim.checks) {
    for (const VerdictTerm* t : {&c.lhs.num, &c.lhs.den, &c.rhs.num, &c.rhs.den}) {
      if (t->is_number || t->column.empty() || !t->table.empty()) continue;
      if (std::find(out.begin(), out.end(), t->column) == out.end()) out.push_back(t->column);
    }
  }
  return out;
}

void write_verdict_report(const VerdictReport& r, std::ostream& out) {
  const Claim& c = *r.claim;
  size_t counts[3] = {0, 0, 0};
  for (const auto& x : r.result->checks) ++counts[static_cast<int>(x.outcome)];
  out << "# " << c.id << ": " << c.title << "\n\n";
  if (r.result->findings.size() > 1) {
    for (const auto& [finding, outcome] : r.result->findings) {
      out << "**Verdict " << finding << ": " << outcome_name(outcome) << "**  \n";
    }
    out << "(" << counts[0] << " of " << r.result->checks.size() << " checks reproduced, "
        << counts[1] << " not reproduced, " << counts[2] << " inconclusive)\n\n";
  } else {
    out << "**Verdict: " << outcome_name(r.result->outcome) << "** (" << counts[0] << " of "
        << r.result->checks.size() << " checks reproduced, " << counts[1] << " not reproduced, "
        << counts[2] << " inconclusive)\n\n";
  }
  out << "**The finding, as published.** " << c.claim;
  if (!c.source.empty()) out << " (" << c.source << ")";
  out << "\n\n";
  if (!c.workload.empty()) out << "**This experiment.** " << c.workload << "\n\n";
  out << "**Runs.** " << r.run_count << " run logs";
  if (r.run_count > 0) {
    out << "; their wall times add up to " << minutes(r.runs_wall_s) << " (one thread each), "
        << "the longest " << minutes(r.longest_run_s);
  }
  out << ". Rerun: `slowpipe sweep " << r.sweep_path;
  if (r.scale != 1) out << " --scale " << r.scale;
  out << "` (complete runs are skipped).\n\n";
  if (!r.provenance.empty()) {
    out << "**Made by.**";
    for (const auto& [k, v] : r.provenance) out << " " << k << ": " << escape(v) << ";";
    out << " the numbers of every run are in runs.tsv beside this file, the checks in "
           "checks.tsv; the plots are not committed (`slowpipe plot` on the runs).\n\n";
  }
  write_checks(r, out);
  write_spreads(r, out);
  if (!c.notes.empty()) {
    out << "## Assumptions and differences from the paper\n\n";
    for (const auto& n : c.notes) out << "- " << n << "\n";
    out << "\n";
  }
  out << "## Results\n\n";
  if (r.summary != nullptr && !r.summary->groups.empty()) {
    write_summary(*r.summary, SummaryFormat::kMarkdown, out);
    out << "\n";
  }
  write_tables(r, out);
  if (!r.plots.empty()) {
    out << "## Plots\n\n";
    for (const auto& p : r.plots) out << "![" << p << "](" << p << ")\n\n";
  }
}

}  // namespace slowpipe::study
