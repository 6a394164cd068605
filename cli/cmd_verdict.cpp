// `slowpipe verdict SWEEP.ini [--dir DIR]`: evaluates the [claim] of a
// reproduction's sweep file on its run logs and prints the report (the sweep
// writes it as DIR/summary.md). The rules: docs/reproduce.md; the work:
// study/verdict_*.h.

#include <boost/program_options.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/config_args.h"
#include "common/errors.h"
#include "study/summary_inputs.h"
#include "study/sweep_process.h"
#include "study/verdict_report.h"

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

// The report on standard output, or into `out_path` (written whole, then renamed).
void write_report(const study::VerdictReport& report, const std::string& out_path) {
  if (out_path.empty()) {
    study::write_verdict_report(report, std::cout);
    return;
  }
  std::ofstream out(out_path + ".tmp");
  study::write_verdict_report(report, out);
  out.close();
  if (!out) throw UsageError("cannot write " + out_path);
  fs::rename(out_path + ".tmp", out_path);
}

}  // namespace

int cmd_verdict(const Args& args) {
  po::options_description desc(
      "usage: slowpipe verdict SWEEP.ini [--dir DIR] [--scale K] [--out FILE]\n\n"
      "Evaluates the [claim] section of a reproduction's sweep file (experiments/reproduce/)\n"
      "on the run logs in DIR: runs the claim's table commands into DIR/NAME.tsv, then\n"
      "decides every check (reproduced / not reproduced / inconclusive) and prints the\n"
      "report in Markdown: claim, verdict, checks with their numbers, seed spreads, the\n"
      "summary table, the plots (docs/reproduce.md). Options");
  std::string file, dir, out_path;
  int scale = 1;
  desc.add_options()("help,h", "this help")("sweep", po::value(&file), "the sweep file")(
      "dir,d", po::value(&dir),
      "the sweep's output folder (default: results/reproduce/<name>[-x<K>])")(
      "scale", po::value(&scale), "the sweep's --scale (default 1)")(
      "out,o", po::value(&out_path), "write the report to FILE instead of standard output");
  po::positional_options_description positional;
  positional.add("sweep", 1);
  const po::variables_map vm = parse_command_line(args, desc, positional);
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  if (file.empty()) throw UsageError("name the sweep file: slowpipe verdict SWEEP.ini");
  if (scale < 1) throw UsageError("--scale " + std::to_string(scale) + ": need 1 or more");
  const study::SweepFile sweep = study::read_sweep_file(file);
  if (!sweep.has_claim) throw UsageError(file + ": no [claim] section (docs/reproduce.md)");
  const study::Claim claim = study::parse_claim(sweep);
  if (dir.empty()) dir = study::default_sweep_dir(sweep.name, scale, true);
  if (!fs::is_directory(dir)) throw UsageError(dir + ": no such folder (run the sweep first)");

  study::VerdictTables tables = run_tables(claim, dir);
  study::SummaryOptions options;
  options.has_target = claim.has_target;
  options.target_loss = claim.target;
  std::vector<study::RunStats> runs;
  bool any_log = false;
  for (const auto& e : fs::directory_iterator(dir)) any_log |= e.path().extension() == ".h5";
  if (any_log) runs = study::read_runs(study::expand_run_paths({dir}), options);
  tables[""] = study::summary_verdict_table(runs);
  const study::SummaryTable summary = study::build_summary_table(runs, true, options);
  const study::VerdictResult result = study::evaluate_claim(claim, tables);

  study::VerdictReport report;
  report.claim = &claim;
  report.sweep_path = file;
  report.scale = scale;
  report.summary = &summary;
  report.tables = &tables;
  report.result = &result;
  report.plots = plots_in(dir);
  report.run_count = runs.size();
  add_run_times(runs, report);
  write_report(report, out_path);
  for (const auto& [finding, outcome] : result.findings) {
    std::fprintf(stderr, "verdict %s: %s\n", finding.c_str(), study::outcome_name(outcome));
  }
  return 0;
}

}  // namespace slowpipe::cli
