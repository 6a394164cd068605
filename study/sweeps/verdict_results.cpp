// A reproduction's committed results: built from the runs and the verdict,
// written and read as runs.tsv and checks.tsv (verdict_results.h).
#include "study/sweeps/verdict_results.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/errors.h"
#include "common/host_info.h"
#include "common/numbers.h"
#include "study/summary/summary_group.h"
#include "study/sweeps/verdict_report.h"

namespace slowpipe::study {
namespace {

std::string cell(double v) {
  if (std::isnan(v)) return "";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

bool parse_number(const std::string& text, double& out) {
  if (text.empty()) {
    out = kNaN;
    return true;
  }
  char* end = nullptr;
  errno = 0;
  out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && (errno == 0 || std::isinf(out));
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1) {
    out.push_back(line.substr(start, tab - start));
  }
  out.push_back(line.substr(start));
  return out;
}

std::string no_tabs(std::string s) {
  std::replace(s.begin(), s.end(), '\t', ' ');
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// The distinct values of a root attribute over the runs, in first-seen order.
std::string distinct_attr(const std::vector<RunStats>& runs, const std::string& attr) {
  std::vector<std::string> seen;
  for (const auto& r : runs) {
    const auto a = r.attrs.find(attr);
    if (a == r.attrs.end() || a->second.empty()) continue;
    if (std::find(seen.begin(), seen.end(), a->second) == seen.end()) seen.push_back(a->second);
  }
  std::string out;
  for (const auto& s : seen) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// "abc123 (uncommitted changes)" per distinct commit and dirty flag.
std::string commits_of(const std::vector<RunStats>& runs) {
  std::vector<RunStats> tagged = runs;
  for (auto& r : tagged) {
    const auto dirty = r.attrs.find("slowpipe.git_dirty");
    const bool is_dirty =
        dirty != r.attrs.end() && (dirty->second == "true" || dirty->second == "1");
    r.attrs["commit"] = r.attrs["slowpipe.git_commit"] + (is_dirty ? " (uncommitted changes)" : "");
  }
  return distinct_attr(tagged, "commit");
}

std::string start_times(const std::vector<RunStats>& runs) {
  std::vector<std::string> times;
  for (const auto& r : runs) {
    const auto a = r.attrs.find("start_time");
    if (a != r.attrs.end() && !a->second.empty()) times.push_back(a->second);
  }
  if (times.empty()) return "";
  std::sort(times.begin(), times.end());
  return times.front() + " .. " + times.back() + " (first and last start)";
}

std::vector<std::pair<std::string, std::string>> provenance_of_runs(
    const std::vector<RunStats>& runs, const std::string& experiment, int scale) {
  const std::string kernels = distinct_attr(runs, "kernels.policy");
  const std::string blas = distinct_attr(runs, "kernels.openblas_core");
  const std::string cpu = distinct_attr(runs, "host.cpu");
  return {{"experiment", experiment},
          {"scale", std::to_string(scale)},
          {"commit", commits_of(runs)},
          {"cpu", cpu.empty() ? cpu_model_name() + " (this machine; the run logs name none)" : cpu},
          {"kernels", kernels + (blas.empty() ? "" : " (OpenBLAS " + blas + ")")},
          {"torch", distinct_attr(runs, "torch.version")},
          {"runs", start_times(runs)}};
}

std::vector<std::string> value_columns_of(const Claim& claim, const std::vector<RunStats>& runs) {
  std::vector<std::string> columns = {"steps",    "train_loss", "eval_loss",
                                      "accuracy", "wire_bytes", "sim_time_s"};
  for (const auto& c : checked_summary_columns(claim)) {
    if (std::find(columns.begin(), columns.end(), c) == columns.end()) columns.push_back(c);
  }
  std::vector<std::string> kept;
  for (const auto& c : columns) {
    const bool any = std::any_of(runs.begin(), runs.end(), [&c](const RunStats& r) {
      const auto v = r.values.find(c);
      return v != r.values.end() && !std::isnan(v->second);
    });
    if (any) kept.push_back(c);
  }
  return kept;
}

// A TSV file as lines: "# key: value" comments, the header, the rows.
struct TsvLines {
  std::string path;
  std::vector<std::pair<std::string, std::string>> comments;
  std::vector<std::string> header;
  std::vector<std::pair<int, std::vector<std::string>>> rows;  // line number, cells
};

TsvLines read_tsv_lines(const std::string& path, const std::string& dir) {
  std::ifstream in(path);
  if (!in) {
    throw UsageError(path + ": missing; " + dir +
                     " is not a complete results folder (write one with: slowpipe verdict "
                     "SWEEP.ini --save DIR)");
  }
  TsvLines out;
  out.path = path;
  int lineno = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineno;
    if (line.empty()) continue;
    if (line[0] == '#') {
      const auto colon = line.find(": ");
      if (colon != std::string::npos && out.header.empty()) {
        out.comments.emplace_back(line.substr(2, colon - 2), line.substr(colon + 2));
      }
      continue;
    }
    std::vector<std::string> cells = split_tabs(line);
    if (out.header.empty()) {
      out.header = std::move(cells);
    } else if (cells.size() != out.header.size()) {
      throw DataError(path + ":" + std::to_string(lineno) + ": " + std::to_string(cells.size()) +
                      " cells, the header has " + std::to_string(out.header.size()));
    } else {
      out.rows.emplace_back(lineno, std::move(cells));
    }
  }
  if (out.header.empty()) throw DataError(path + ": no header line");
  return out;
}

double number_at(const TsvLines& f, int lineno, const std::string& text) {
  double v = 0;
  if (!parse_number(text, v)) {
    throw DataError(f.path + ":" + std::to_string(lineno) + ": '" + text + "' is not a number");
  }
  return v;
}

void read_runs_tsv(const TsvLines& f, Results& out) {
  const auto status = std::find(f.header.begin(), f.header.end(), "status");
  if (f.header.front() != "point" || status == f.header.end()) {
    throw DataError(f.path + ": the header must start with 'point' and have a 'status' column");
  }
  out.provenance = f.comments;
  out.key_columns.assign(f.header.begin() + 1, status);
  out.value_columns.assign(status + 1, f.header.end());
  const size_t at = static_cast<size_t>(status - f.header.begin());
  for (const auto& [lineno, cells] : f.rows) {
    ResultRun r;
    r.point = cells[0];
    for (size_t c = 1; c < at; ++c) r.keys[f.header[c]] = cells[c];
    r.status = cells[at];
    for (size_t c = at + 1; c < cells.size(); ++c) {
      r.values[f.header[c]] = number_at(f, lineno, cells[c]);
    }
    out.runs.push_back(std::move(r));
  }
}

void read_checks_tsv(const TsvLines& f, Results& out) {
  const std::vector<std::string> expect = {"check", "finding", "outcome",    "A",      "B",
                                           "d",     "t",       "t_at_least", "spread", "text"};
  if (f.header != expect) throw DataError(f.path + ": not a checks.tsv header");
  for (const auto& [lineno, c] : f.rows) {
    ResultCheck r;
    r.finding = c[1];
    r.outcome = c[2];
    if (r.outcome != outcome_name(Outcome::kReproduced) &&
        r.outcome != outcome_name(Outcome::kNotReproduced) &&
        r.outcome != outcome_name(Outcome::kInconclusive)) {
      throw DataError(f.path + ":" + std::to_string(lineno) + ": unknown outcome '" + c[2] + "'");
    }
    r.numbers.lhs = number_at(f, lineno, c[3]);
    r.numbers.rhs = number_at(f, lineno, c[4]);
    r.numbers.diff = number_at(f, lineno, c[5]);
    r.numbers.tolerance = number_at(f, lineno, c[6]);
    r.numbers.tolerance_is_lower_bound = c[7] == "1";
    r.numbers.spread = number_at(f, lineno, c[8]);
    r.text = c[9];
    out.checks.push_back(std::move(r));
  }
}

}  // namespace

void check_finished(const std::vector<RunStats>& runs, size_t points, const std::string& dir) {
  if (runs.size() < points) {
    throw UsageError(dir + ": " + std::to_string(runs.size()) + " of the sweep's " +
                     std::to_string(points) +
                     " points have a run log; save the results of a finished sweep");
  }
  for (const auto& r : runs) {
    if (r.status != "complete" && r.status != "diverged") {
      throw UsageError(r.path + " is " + r.status +
                       "; save the results of a finished sweep (rerun it to finish)");
    }
  }
}

void save_results(const Results& results, const std::string& summary_md, const std::string& dir) {
  std::filesystem::create_directories(dir);
  const auto write = [&dir](const std::string& name, const std::string& text) {
    const std::string path = dir + "/" + name;
    std::ofstream out(path + ".tmp");
    out << text;
    out.close();
    if (!out) throw UsageError("cannot write " + path);
    std::filesystem::rename(path + ".tmp", path);
  };
  std::ostringstream runs, checks;
  write_runs_tsv(results, runs);
  write_checks_tsv(results, checks);
  write("summary.md", summary_md);
  write("runs.tsv", runs.str());
  write("checks.tsv", checks.str());
}

Results read_results(const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) {
    throw UsageError(dir +
                     ": no committed results there (write them from a finished sweep with: "
                     "slowpipe verdict SWEEP.ini --save)");
  }
  Results out;
  read_runs_tsv(read_tsv_lines(dir + "/runs.tsv", dir), out);
  read_checks_tsv(read_tsv_lines(dir + "/checks.tsv", dir), out);
  return out;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Results::provenance_of(const std::string& key) const {
  for (const auto& [k, v] : provenance) {
    if (k == key) return v;
  }
  return "";
}

std::string point_group(const std::string& point) {
  std::istringstream in(point);
  std::string part, out;
  while (std::getline(in, part, '_')) {
    if (part.rfind("seed=", 0) != 0) out += (out.empty() ? "" : "_") + part;
  }
  return out.empty() ? point : out;
}

std::string committed_results_dir(const std::string& sweep_path, const std::string& name,
                                  int scale) {
  const std::filesystem::path base = std::filesystem::path(sweep_path).parent_path();
  const std::string folder = name + (scale > 1 ? "-x" + std::to_string(scale) : "");
  return (base / "results" / folder).string();
}

Results collect_results(const Claim& claim, const VerdictResult& result,
                        const std::vector<RunStats>& runs, const std::string& experiment,
                        int scale) {
  Results out;
  out.provenance = provenance_of_runs(runs, experiment, scale);
  out.key_columns = {"run.label", "run.seed"};
  for (const auto& k : varying_keys(runs, /*group_seeds=*/true)) out.key_columns.push_back(k);
  out.value_columns = value_columns_of(claim, runs);
  for (const auto& r : runs) {
    ResultRun row;
    row.point = std::filesystem::path(r.path).stem().string();
    for (const auto& k : out.key_columns) {
      const auto v = r.config.find(k);
      row.keys[k] = v != r.config.end() ? v->second : "";
    }
    row.status = r.status;
    for (const auto& c : out.value_columns) {
      const auto v = r.values.find(c);
      row.values[c] = v != r.values.end() ? v->second : kNaN;
    }
    out.runs.push_back(std::move(row));
  }
  std::sort(out.runs.begin(), out.runs.end(),
            [](const ResultRun& a, const ResultRun& b) { return a.point < b.point; });
  for (size_t i = 0; i < claim.checks.size() && i < result.checks.size(); ++i) {
    ResultCheck c;
    c.finding = claim.checks[i].finding;
    c.text = claim.checks[i].text;
    c.outcome = outcome_name(result.checks[i].outcome);
    c.numbers = result.checks[i];
    c.numbers.why.clear();
    out.checks.push_back(std::move(c));
  }
  return out;
}

void write_runs_tsv(const Results& results, std::ostream& out) {
  for (const auto& [k, v] : results.provenance) out << "# " << k << ": " << no_tabs(v) << "\n";
  out << "point";
  for (const auto& k : results.key_columns) out << "\t" << k;
  out << "\tstatus";
  for (const auto& c : results.value_columns) out << "\t" << c;
  out << "\n";
  for (const auto& r : results.runs) {
    out << r.point;
    for (const auto& k : results.key_columns) out << "\t" << no_tabs(r.keys.at(k));
    out << "\t" << r.status;
    for (const auto& c : results.value_columns) out << "\t" << cell(r.values.at(c));
    out << "\n";
  }
}

void write_checks_tsv(const Results& results, std::ostream& out) {
  out << "# experiment: " << results.provenance_of("experiment")
      << " (its runs and provenance: runs.tsv)\n"
      << "check\tfinding\toutcome\tA\tB\td\tt\tt_at_least\tspread\ttext\n";
  for (size_t i = 0; i < results.checks.size(); ++i) {
    const ResultCheck& c = results.checks[i];
    const CheckResult& n = c.numbers;
    out << i + 1 << "\t" << c.finding << "\t" << c.outcome << "\t" << cell(n.lhs) << "\t"
        << cell(n.rhs) << "\t" << cell(n.diff) << "\t" << cell(n.tolerance) << "\t"
        << (n.tolerance_is_lower_bound ? 1 : 0) << "\t" << cell(n.spread) << "\t" << no_tabs(c.text)
        << "\n";
  }
}

}  // namespace slowpipe::study
