// A fresh reproduction beside its committed results (verdict_compare.h).
#include "study/sweeps/verdict_compare.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "common/numbers.h"

namespace slowpipe::study {
namespace {

constexpr size_t kMaxReasons = 8;

bool same_number(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

Agreement worst(Agreement a, Agreement b) {
  return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

void add_reason(Comparison& c, const std::string& reason) {
  if (c.reasons.size() < kMaxReasons) c.reasons.push_back(reason);
}

std::string num(double v) {
  if (std::isnan(v)) return "–";
  if (std::isinf(v)) return v > 0 ? "+inf" : "-inf";
  std::ostringstream s;
  if (std::fabs(v) >= 1e4 && std::fabs(v) < 1e15 && v == std::floor(v)) {
    s << std::fixed << std::setprecision(0) << v;
  } else {
    s << std::setprecision(7) << v;
  }
  return s.str();
}

std::string diff_text(double fresh, double committed) {
  if (same_number(fresh, committed)) return "0";
  const double d = fresh - committed;
  if (!std::isfinite(d)) return "–";
  std::ostringstream s;
  s << std::showpos << std::setprecision(3) << d;
  return s.str();
}

std::string escape(const std::string& s) {
  std::string out;
  for (const char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// The runs of each seed group, by group name, in point order.
std::map<std::string, std::vector<const ResultRun*>> by_group(const Results& r) {
  std::map<std::string, std::vector<const ResultRun*>> out;
  for (const auto& run : r.runs) out[point_group(run.point)].push_back(&run);
  return out;
}

double value_of(const ResultRun& run, const std::string& column) {
  const auto v = run.values.find(column);
  return v != run.values.end() ? v->second : kNaN;
}

MeanStd finite_stat(const std::vector<const ResultRun*>& runs, const std::string& column) {
  std::vector<double> values;
  values.reserve(runs.size());
  for (const ResultRun* r : runs) values.push_back(value_of(*r, column));
  return mean_std(values);
}

// One run's value against the committed one: identical, within `allowed`, or not.
Agreement compare_value(const std::string& column, double fresh, double committed,
                        double group_spread, const CompareTolerance& t, double& allowed) {
  allowed = 0;
  if (same_number(fresh, committed)) return Agreement::kIdentical;
  if (!std::isfinite(fresh) || !std::isfinite(committed)) return Agreement::kDiffers;
  if (machine_independent_column(column)) {
    allowed = t.exact_relative * std::fabs(committed);
  } else {
    allowed = t.relative * std::fabs(committed);
    if (std::isfinite(group_spread)) allowed = std::max(allowed, t.spreads * group_spread);
  }
  return std::fabs(fresh - committed) <= allowed ? Agreement::kWithinTolerance
                                                 : Agreement::kDiffers;
}

// The runs of one group present on both sides, by point name.
std::vector<std::pair<const ResultRun*, const ResultRun*>> match_runs(
    const std::vector<const ResultRun*>& fresh, const std::vector<const ResultRun*>& committed,
    GroupComparison& g) {
  std::vector<std::pair<const ResultRun*, const ResultRun*>> out;
  for (const ResultRun* c : committed) {
    const auto f = std::find_if(fresh.begin(), fresh.end(),
                                [c](const ResultRun* r) { return r->point == c->point; });
    if (f == fresh.end()) {
      g.problems.push_back("run " + c->point + " is committed but not here");
    } else if ((*f)->status != c->status) {
      g.problems.push_back("run " + c->point + " is " + (*f)->status + " here, " + c->status +
                           " committed");
    } else {
      out.emplace_back(*f, c);
    }
  }
  for (const ResultRun* f : fresh) {
    const bool committed_too =
        std::any_of(committed.begin(), committed.end(),
                    [f](const ResultRun* r) { return r->point == f->point; });
    if (!committed_too) g.problems.push_back("run " + f->point + " is here but not committed");
  }
  return out;
}

void compare_group(const std::vector<const ResultRun*>& fresh,
                   const std::vector<const ResultRun*>& committed,
                   const std::vector<std::string>& columns, const CompareTolerance& t,
                   GroupComparison& g, Comparison& all) {
  const auto matched = match_runs(fresh, committed, g);
  all.runs_matched += matched.size();
  for (const auto& column : columns) {
    ValueComparison v;
    v.column = column;
    v.fresh_mean = finite_stat(fresh, column).n > 0 ? finite_stat(fresh, column).mean : kNaN;
    const MeanStd c = finite_stat(committed, column);
    v.committed_mean = c.n > 0 ? c.mean : kNaN;
    const double spread = c.n > 1 ? c.std : kNaN;
    for (const auto& [f, r] : matched) {
      double allowed = 0;
      const double fv = value_of(*f, column), cv = value_of(*r, column);
      const Agreement a = compare_value(column, fv, cv, spread, t, allowed);
      ++all.values_compared;
      if (a == Agreement::kIdentical) ++all.values_identical;
      const double d = std::isfinite(fv - cv) ? std::fabs(fv - cv) : 0;
      if (a == Agreement::kDiffers && v.agreement != Agreement::kDiffers) {
        add_reason(all, "run " + f->point + ": " + column + " " + num(fv) + " here, " + num(cv) +
                            " committed (allowed ±" + num(allowed) + ")");
      }
      if (d >= v.largest_diff) {
        v.largest_diff = d;
        v.allowed = allowed;
      }
      v.agreement = worst(v.agreement, a);
    }
    g.agreement = worst(g.agreement, v.agreement);
    g.values.push_back(v);
  }
  if (!g.problems.empty()) g.agreement = Agreement::kDiffers;
  for (const auto& p : g.problems) add_reason(all, p);
}

void compare_checks(const Results& fresh, const Results& committed, Comparison& out) {
  const size_t n = std::max(fresh.checks.size(), committed.checks.size());
  for (size_t i = 0; i < n; ++i) {
    CheckComparison c;
    c.number = i + 1;
    c.has_fresh = i < fresh.checks.size();
    c.has_committed = i < committed.checks.size();
    if (c.has_fresh) c.fresh = fresh.checks[i];
    if (c.has_committed) c.committed = committed.checks[i];
    c.same_text = c.has_fresh && c.has_committed && c.fresh.text == c.committed.text;
    c.same_outcome = c.same_text && c.fresh.outcome == c.committed.outcome;
    c.identical_numbers = c.same_text &&
                          same_number(c.fresh.numbers.lhs, c.committed.numbers.lhs) &&
                          same_number(c.fresh.numbers.rhs, c.committed.numbers.rhs);
    const std::string name = "check " + std::to_string(c.number);
    if (!c.has_fresh || !c.has_committed) {
      add_reason(out, name + (c.has_fresh ? " is not committed" : " is committed but not here"));
    } else if (!c.same_text) {
      add_reason(out, name + " has changed since it was committed");
    } else if (!c.same_outcome) {
      add_reason(out,
                 name + ": " + c.fresh.outcome + " here, " + c.committed.outcome + " committed");
    }
    if (!c.same_outcome) out.agreement = Agreement::kDiffers;
    if (c.same_outcome && !c.identical_numbers) {
      out.agreement = worst(out.agreement, Agreement::kWithinTolerance);
    }
    out.checks.push_back(std::move(c));
  }
}

void write_headline(const CompareReport& r, std::ostream& out) {
  const Comparison& c = *r.comparison;
  size_t same = 0;
  for (const auto& x : c.checks) same += x.same_outcome ? 1 : 0;
  out << "# " << r.claim_id << ": this machine against the committed results\n\n";
  if (c.agreement == Agreement::kDiffers) {
    out << "**Differs from the committed results.** The same outcome for " << same << " of "
        << c.checks.size() << " checks; " << c.values_compared - c.values_identical << " of "
        << c.values_compared << " numbers of " << c.runs_matched
        << " matched runs not identical. What differs:\n\n";
    for (const auto& reason : c.reasons) out << "- " << escape(reason) << "\n";
    out << "\n";
    return;
  }
  out << "**Agrees with the committed results"
      << (c.agreement == Agreement::kIdentical ? ": identical numbers" : ", within tolerance")
      << ".** The same outcome for " << same << " of " << c.checks.size() << " checks; "
      << c.values_identical << " of " << c.values_compared << " numbers of " << c.runs_matched
      << " runs identical"
      << (c.values_identical < c.values_compared ? ", the rest within tolerance" : "") << ".\n\n";
}

void write_provenance(const CompareReport& r, std::ostream& out) {
  out << "| | here | committed |\n|---|---|---|\n| folder | " << escape(r.fresh_dir) << " | "
      << escape(r.committed_dir) << " |\n";
  std::vector<std::string> keys;
  for (const Results* side : {r.committed, r.fresh}) {
    for (const auto& [k, v] : side->provenance) {
      if (k != "experiment" && std::find(keys.begin(), keys.end(), k) == keys.end()) {
        keys.push_back(k);
      }
    }
  }
  for (const auto& k : keys) {
    const std::string here = r.fresh->provenance_of(k), there = r.committed->provenance_of(k);
    out << "| " << k << " | " << (here.empty() ? "–" : escape(here)) << " | "
        << (there.empty() ? "–" : escape(there)) << " |\n";
  }
  const CompareTolerance& t = r.tolerance;
  out << "\nA run agrees when it has the same status and each number is identical or within its "
         "tolerance: "
      << num(t.exact_relative)
      << " relative for what no CPU changes (steps, bytes, simulated time under the analytic "
         "clock, fp32 ratio); for losses and metrics the larger of "
      << num(t.relative) << " relative and " << num(t.spreads)
      << " of the committed group's seed spread (other CPUs round differently, and training "
         "carries it on; docs/reproduce.md). A check agrees when its outcome is the same.\n\n";
}

void write_check_rows(const CompareReport& r, std::ostream& out) {
  out << "## Checks\n\n| # | check | A here | A committed | ΔA | B here | B committed | ΔB | "
         "here | committed | agrees |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& c : r.comparison->checks) {
    const ResultCheck& any = c.has_fresh ? c.fresh : c.committed;
    const CheckResult& f = c.fresh.numbers;
    const CheckResult& k = c.committed.numbers;
    out << "| " << c.number << " | `" << escape(any.text) << "` | " << num(f.lhs) << " | "
        << num(k.lhs) << " | " << diff_text(f.lhs, k.lhs) << " | " << num(f.rhs) << " | "
        << num(k.rhs) << " | " << diff_text(f.rhs, k.rhs) << " | "
        << (c.has_fresh ? c.fresh.outcome : "–") << " | "
        << (c.has_committed ? c.committed.outcome : "–") << " | "
        << (c.same_outcome                                   ? "yes"
            : !c.same_text && c.has_fresh && c.has_committed ? "**no** (check changed)"
                                                             : "**no**")
        << " |\n";
  }
  out << "\n";
}

void write_group_rows(const CompareReport& r, std::ostream& out) {
  out << "## Groups\n\nMeans over seeds here and committed; the largest difference of one run "
         "and its tolerance decide.\n\n| group | runs here / committed | column | here | "
         "committed | Δ | largest run Δ | allowed | agrees |\n|---|---|---|---|---|---|---|---|"
         "---|\n";
  for (const auto& g : r.comparison->groups) {
    const std::string name = g.label.empty() ? g.group : g.label + " (" + g.group + ")";
    const std::string runs =
        std::to_string(g.fresh_runs) + " / " + std::to_string(g.committed_runs);
    bool first = true;
    for (const auto& v : g.values) {
      out << "| " << (first ? escape(name) : "") << " | " << (first ? runs : "") << " | "
          << v.column << " | " << num(v.fresh_mean) << " | " << num(v.committed_mean) << " | "
          << diff_text(v.fresh_mean, v.committed_mean) << " | " << num(v.largest_diff) << " | "
          << num(v.allowed) << " | "
          << (v.agreement == Agreement::kDiffers ? "**differs**" : agreement_name(v.agreement))
          << " |\n";
      first = false;
    }
    for (const auto& p : g.problems) {
      out << "| " << escape(name) << " | " << runs << " | – | | | | | | **" << escape(p)
          << "** |\n";
    }
  }
  out << "\n";
}

}  // namespace

void write_comparison(const CompareReport& report, std::ostream& out) {
  write_headline(report, out);
  write_provenance(report, out);
  write_check_rows(report, out);
  write_group_rows(report, out);
}

bool machine_independent_column(const std::string& column) {
  const auto ends_with = [&column](const std::string& tail) {
    return column.size() >= tail.size() &&
           column.compare(column.size() - tail.size(), tail.size(), tail) == 0;
  };
  return column == "steps" || column == "sim_time_s" || column == "fp32_ratio" ||
         ends_with("_bytes");
}

const char* agreement_name(Agreement a) {
  switch (a) {
    case Agreement::kIdentical:
      return "identical";
    case Agreement::kWithinTolerance:
      return "within tolerance";
    case Agreement::kDiffers:
      return "differs";
  }
  return "?";
}

Comparison compare_results(const Results& fresh, const Results& committed,
                           const CompareTolerance& tolerance) {
  Comparison out;
  compare_checks(fresh, committed, out);
  std::vector<std::string> columns;
  for (const auto& c : committed.value_columns) {
    const auto& f = fresh.value_columns;
    if (std::find(f.begin(), f.end(), c) != f.end()) columns.push_back(c);
  }
  const auto fresh_groups = by_group(fresh);
  const auto committed_groups = by_group(committed);
  std::set<std::string> names;
  for (const auto& [name, runs] : committed_groups) names.insert(name);
  for (const auto& [name, runs] : fresh_groups) names.insert(name);
  static const std::vector<const ResultRun*> kNone;
  for (const auto& name : names) {
    const auto f = fresh_groups.find(name);
    const auto c = committed_groups.find(name);
    GroupComparison g;
    g.group = name;
    g.fresh_runs = f != fresh_groups.end() ? f->second.size() : 0;
    g.committed_runs = c != committed_groups.end() ? c->second.size() : 0;
    const ResultRun* first = g.committed_runs > 0 ? c->second.front() : f->second.front();
    const auto label = first->keys.find("run.label");
    if (label != first->keys.end()) g.label = label->second;
    compare_group(f != fresh_groups.end() ? f->second : kNone,
                  c != committed_groups.end() ? c->second : kNone, columns, tolerance, g, out);
    out.agreement = worst(out.agreement, g.agreement);
    out.groups.push_back(std::move(g));
  }
  return out;
}

std::string agreement_summary(const Comparison& c) {
  if (c.agreement == Agreement::kIdentical) return "agrees (identical numbers)";
  if (c.agreement == Agreement::kWithinTolerance) return "agrees (within tolerance)";
  return "differs: " + (c.reasons.empty() ? std::string("?") : c.reasons.front());
}

}  // namespace slowpipe::study
