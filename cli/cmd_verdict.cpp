// `slowpipe verdict SWEEP.ini [--dir DIR]`: evaluates the [claim] of a
// reproduction's sweep file on its run logs and prints the report (the sweep
// writes it as DIR/summary.md). `--save [TO]` writes the results to commit
// (summary.md, runs.tsv, checks.tsv: study/sweeps/verdict_results.h); `--compare
// [FROM]` prints this folder beside the committed results
// (study/sweeps/verdict_compare.h). The rules: docs/reproduce.md; the work:
// study/verdict_*.h.

#include <boost/program_options.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/config_args.h"
#include "common/errors.h"
#include "study/summary/summary_inputs.h"
#include "study/sweeps/sweep_process.h"
#include "study/sweeps/verdict_compare.h"
#include "study/sweeps/verdict_report.h"
#include "study/sweeps/verdict_results.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace slowpipe::cli {
namespace {

// Runs `slowpipe ARGS...` (this binary) with its stdout into `path`.
void run_table_command(const study::Claim::Table& t, const std::string& path) {
  std::vector<std::string> argv = {study::self_executable()};
  argv.insert(argv.end(), t.args.begin(), t.args.end());
  study::ChildIo io;
  io.out_path = path + ".tmp";
  io.err_too = false;
  std::fflush(stdout);
  const int code = study::run_child(argv, io, 1);
  if (code != 0) {
    std::error_code ec;
    fs::remove(path + ".tmp", ec);
    throw UsageError("table." + t.name + ": 'slowpipe " + t.args.front() + " ...' exited with " +
                     std::to_string(code));
  }
  fs::rename(path + ".tmp", path);
}

std::vector<std::string> plots_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir + "/plots", ec)) {
    if (e.path().extension() == ".png") out.push_back("plots/" + e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Runs each table command of the claim into DIR/NAME.tsv and reads it back.
study::VerdictTables run_tables(const study::Claim& claim, const std::string& dir) {
  study::VerdictTables tables;
  for (const auto& t : claim.tables) {
    const std::string path = dir + "/" + t.name + ".tsv";
    run_table_command(t, path);
    tables[t.name] = study::read_tsv_table(t.name, path);
  }
  return tables;
}

// The runs' wall times: their sum and the longest (runs without one left out).
void add_run_times(const std::vector<study::RunStats>& runs, study::VerdictReport& report) {
  for (const auto& r : runs) {
    const auto w = r.values.find("wall_time_s");
    if (w == r.values.end() || !std::isfinite(w->second)) continue;
    report.runs_wall_s += w->second;
    report.longest_run_s = std::max(report.longest_run_s, w->second);
  }
}

// Writes `text` to `path` whole (a temporary file, then renamed).
void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path + ".tmp");
  out << text;
  out.close();
  if (!out) throw UsageError("cannot write " + path);
  fs::rename(path + ".tmp", path);
}

// The report on standard output, or into `out_path`.
void print(const std::string& text, const std::string& out_path) {
  if (out_path.empty()) {
    std::cout << text;
  } else {
    write_file(out_path, text);
  }
}

// Everything the verdict is made of, read and decided once.
struct Verdict {
  study::Claim claim;
  study::VerdictTables tables;
  std::vector<study::RunStats> runs;
  study::SummaryTable summary;
  study::VerdictResult result;
};

void evaluate(const std::string& dir, Verdict& v) {
  v.tables = run_tables(v.claim, dir);
  study::SummaryOptions options;
  options.has_target = v.claim.has_target;
  options.target_loss = v.claim.target;
  options.target_on =
      v.claim.target_on == "eval" ? study::TargetRule::kEval : study::TargetRule::kTrain;
  bool any_log = false;
  for (const auto& e : fs::directory_iterator(dir)) any_log |= e.path().extension() == ".h5";
  if (any_log) v.runs = study::read_runs(study::expand_run_paths({dir}), options);
  v.tables[""] = study::summary_verdict_table(v.runs);
  v.summary = study::build_summary_table(v.runs, true, options);
  v.result = study::evaluate_claim(v.claim, v.tables);
}

std::string report_text(const Verdict& v, const std::string& sweep_path, int scale,
                        const std::vector<std::string>& plots,
                        const std::vector<std::pair<std::string, std::string>>& provenance) {
  study::VerdictReport report;
  report.claim = &v.claim;
  report.sweep_path = sweep_path;
  report.scale = scale;
  report.summary = &v.summary;
  report.tables = &v.tables;
  report.result = &v.result;
  report.plots = plots;
  report.run_count = v.runs.size();
  report.provenance = provenance;
  add_run_times(v.runs, report);
  std::ostringstream out;
  study::write_verdict_report(report, out);
  return out.str();
}

std::string compare_text(const Verdict& v, const study::Results& fresh, const std::string& dir,
                         const std::string& committed_dir, std::string& summary) {
  const study::Results committed = study::read_results(committed_dir);
  const study::Comparison comparison = study::compare_results(fresh, committed);
  study::CompareReport report;
  report.claim_id = v.claim.id;
  report.fresh_dir = dir;
  report.committed_dir = committed_dir;
  report.fresh = &fresh;
  report.committed = &committed;
  report.comparison = &comparison;
  std::ostringstream out;
  study::write_comparison(report, out);
  summary = study::agreement_summary(comparison);
  return out.str();
}

const char* const kUsage =
    "usage: slowpipe verdict SWEEP.ini [--dir DIR] [--scale K] [--out FILE]\n"
    "       slowpipe verdict SWEEP.ini [--dir DIR] [--scale K] --save [TO]\n"
    "       slowpipe verdict SWEEP.ini [--dir DIR] [--scale K] --compare [FROM] [--out FILE]\n\n"
    "Evaluates the [claim] section of a reproduction's sweep file (experiments/reproduce/)\n"
    "on the run logs in DIR: runs the claim's table commands into DIR/NAME.tsv, then\n"
    "decides every check (reproduced / not reproduced / inconclusive) and prints the\n"
    "report in Markdown: claim, verdict, checks with their numbers, seed spreads, the\n"
    "summary table, the plots (docs/reproduce.md).\n"
    "--save writes the results of a finished sweep to be committed: TO/summary.md,\n"
    "runs.tsv (every run's numbers, with the commit, CPU, kernels and dates that made\n"
    "them) and checks.tsv; TO defaults to results/NAME[-xK]/ beside the sweep file.\n"
    "--compare prints this folder's checks and numbers beside the committed ones in FROM\n"
    "(same default) and whether they agree. Options";

struct VerdictArgs {
  std::string file, dir, out_path, folder;
  int scale = 1;
  bool save = false, compare = false, help = false;
};

VerdictArgs parse_verdict_args(const Args& args) {
  po::options_description desc(kUsage);
  VerdictArgs a;
  desc.add_options()("help,h", "this help")("sweep", po::value(&a.file), "the sweep file")(
      "dir,d", po::value(&a.dir),
      "the sweep's output folder (default: results/reproduce/<name>[-x<K>])")(
      "scale", po::value(&a.scale), "the sweep's --scale (default 1)")(
      "out,o", po::value(&a.out_path), "write the report to FILE instead of standard output")(
      "save", "write the committed results folder (TO, or its default)")(
      "compare", "compare with the committed results (FROM, or its default)")(
      "folder", po::value(&a.folder), "TO of --save, FROM of --compare");
  po::positional_options_description positional;
  positional.add("sweep", 1).add("folder", 1);
  const po::variables_map vm = parse_command_line(args, desc, positional);
  a.help = vm.count("help") != 0;
  if (a.help) std::cout << desc;
  a.save = vm.count("save") != 0;
  a.compare = vm.count("compare") != 0;
  if (a.help) return a;
  if (a.file.empty()) throw UsageError("name the sweep file: slowpipe verdict SWEEP.ini");
  if (a.scale < 1) throw UsageError("--scale " + std::to_string(a.scale) + ": need 1 or more");
  if (a.save && a.compare) throw UsageError("--save and --compare: one at a time");
  if (!a.folder.empty() && !a.save && !a.compare) {
    throw UsageError("unexpected argument '" + a.folder +
                     "' (a folder follows --save or --compare)");
  }
  if (a.save && !a.out_path.empty()) throw UsageError("--save writes a folder; --out is not used");
  return a;
}

}  // namespace

int cmd_verdict(const Args& args) {
  VerdictArgs a = parse_verdict_args(args);
  if (a.help) return 0;
  const study::SweepFile sweep = study::read_sweep_file(a.file);
  if (!sweep.has_claim) throw UsageError(a.file + ": no [claim] section (docs/reproduce.md)");
  Verdict v;
  v.claim = study::parse_claim(sweep);
  if (a.dir.empty()) a.dir = study::default_sweep_dir(sweep.name, a.scale, true);
  if (!fs::is_directory(a.dir)) throw UsageError(a.dir + ": no such folder (run the sweep first)");
  if (a.folder.empty()) a.folder = study::committed_results_dir(a.file, sweep.name, a.scale);
  if (a.compare && !fs::is_directory(a.folder)) {
    throw UsageError(a.folder + ": no committed results for " + sweep.name +
                     " (write them from a finished sweep with: slowpipe verdict " + a.file +
                     " --save)");
  }
  evaluate(a.dir, v);
  const std::string experiment = sweep.name + (a.scale > 1 ? "-x" + std::to_string(a.scale) : "");
  study::Results results = study::collect_results(v.claim, v.result, v.runs, experiment, a.scale);
  if (a.save) {
    study::check_finished(v.runs, study::expand_points(sweep).size(), a.dir);
    results.provenance.emplace_back("saved", study::utc_now() + " by slowpipe verdict --save");
    study::save_results(results, report_text(v, a.file, a.scale, {}, results.provenance), a.folder);
    std::fprintf(stderr, "saved %s: summary.md, runs.tsv (%zu runs), checks.tsv (%zu checks)\n",
                 a.folder.c_str(), results.runs.size(), results.checks.size());
  } else if (a.compare) {
    std::string summary;
    print(compare_text(v, results, a.dir, a.folder, summary), a.out_path);
    std::fprintf(stderr, "compare %s: %s\n", v.claim.id.c_str(), summary.c_str());
  } else {
    print(report_text(v, a.file, a.scale, plots_in(a.dir), {}), a.out_path);
  }
  for (const auto& [finding, outcome] : v.result.findings) {
    std::fprintf(stderr, "verdict %s: %s\n", finding.c_str(), study::outcome_name(outcome));
  }
  return 0;
}

}  // namespace slowpipe::cli
