// `slowpipe sweep SWEEP.ini`: a sweep file's grid of training runs, resumably
// and in parallel on this machine, or written out as one shell command per
// point for GNU parallel or a Slurm job array (docs/sweep.md).
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/config_args.h"
#include "cli/handoff.h"
#include "common/errors.h"
#include "study/sweeps/sweep_process.h"
#include "study/sweeps/sweep_runner.h"
#include "study/sweeps/verdict_claim.h"

namespace po = boost::program_options;

namespace slowpipe::cli {
namespace {

const char* const kGrammar =
    "\nA sweep file is a config file (any train keys, [section] form) plus a [sweep]\n"
    "section (full grammar: docs/sweep.md):\n"
    "  [sweep]\n"
    "  compress.fw = none | q4 | aq(q2)     values of any train key, separated by '|'\n"
    "  run.label   = fp32 | q4 | AQ-SGD\n"
    "  run.seed    = 1 | 2\n"
    "  zip     = compress.fw, run.label     keys that vary together ('|' between groups)\n"
    "  exclude = compress.fw=none & run.seed=2 | ...   drop points ('!=' also works)\n"
    "  only    = ...                        keep only points matching a condition\n"
    "  config  = base.ini | more.ini        base configs, relative to the sweep file\n"
    "  name    = NAME                       output folder results/NAME (default: file stem)\n"
    "Points: the cross product, first key outermost. Each runs `slowpipe train` in OUT into\n"
    "OUT/NAME.h5 (output in OUT/NAME.log, resolved config in OUT/NAME.ini). A rerun skips\n"
    "complete and diverged points with the same config, resumes interrupted or killed\n"
    "ones and reruns failed ones. Exit: 0 done, 1 a point failed, 2 bad sweep, 130\n"
    "interrupted.\n"
    "--point K / --only KEY=VALUE run the selected points one at a time in the foreground\n"
    "(output on the terminal and in OUT/NAME.log), into the same files, under the same\n"
    "rules: a later full sweep skips or resumes them. Exit: the first failing point's.\n";

// --dry-run: the points `which`, numbered as --point takes them, with what a
// run would do with each.
void print_points(const study::ResolvedSweep& s, const std::vector<size_t>& which, std::FILE* out) {
  const std::string count = which.size() == s.points.size()
                                ? std::to_string(s.points.size()) + " points"
                                : std::to_string(which.size()) + " of " +
                                      std::to_string(s.points.size()) + " points selected";
  std::fprintf(out, "sweep %s: %s -> %s/\n", s.name.c_str(), count.c_str(), s.out_dir.c_str());
  const std::vector<study::PointDecision> d = study::decide_points(s);
  for (size_t i : which) {
    const auto& p = s.points[i];
    std::string values;
    for (const auto& [k, v] : p.point.values) values += " " + k + "=" + v;
    std::fprintf(out, "%4zu  %-40s%s  [%s]\n", i + 1, p.name.c_str(), values.c_str(),
                 study::plan_text(d[i]).c_str());
  }
}

// Whether running the points `which` now would start a training run.
bool needs_training(const study::ResolvedSweep& s, const std::vector<size_t>& which) {
  const std::vector<study::PointDecision> d = study::decide_points(s);
  return std::any_of(which.begin(), which.end(),
                     [&d](size_t i) { return d[i].action != study::PointAction::kSkip; });
}

// The sweep file's points, resolved; with a [claim], its scale keys applied
// and its checks held against the points.
study::ResolvedSweep resolve_sweep_file(const std::string& file, study::SweepSettings settings) {
  const study::SweepFile sweep = study::read_sweep_file(file);
  study::Claim claim;
  if (sweep.has_claim) {
    claim = study::parse_claim(sweep);
    settings.scale_keys = claim.scale_keys;
  } else if (settings.scale != 1) {
    throw UsageError("--scale needs a [claim] section with scale = KEYS (docs/reproduce.md)");
  }
  study::ResolvedSweep resolved = study::resolve_sweep(sweep, settings);
  if (sweep.has_claim) {
    study::check_claim_points(claim, sweep, resolved);
    resolved.has_claim = true;
    resolved.sweep_path = std::filesystem::absolute(file).lexically_normal().string();
    resolved.has_target = claim.has_target;
    resolved.target = claim.target;
  }
  return resolved;
}

// --emit-jobs FILE: one shell command per point of `which`, run by `tool`;
// the points' NAME.ini files beside their run logs, as a sweep writes them.
void emit_jobs(const study::ResolvedSweep& resolved, const std::vector<size_t>& which,
               const std::string& emit, const std::string& tool) {
  std::ofstream jobs_file(emit);
  if (!jobs_file) throw UsageError("cannot write --emit-jobs file " + emit);
  study::write_point_files(resolved, which);
  for (size_t i : which)
    jobs_file << study::job_command(resolved, resolved.points[i], tool) << "\n";
  if (!jobs_file) throw UsageError("cannot write --emit-jobs file " + emit);
  std::printf("%s: %zu jobs (run them with: parallel < %s); point configurations in %s/\n",
              emit.c_str(), which.size(), emit.c_str(), resolved.out_dir.c_str());
}

struct SweepArgs {
  std::vector<std::string> configs, sets;
  std::string file, out, emit;
  int jobs = 0, scale = 1;
  study::PointSelector selector;
  bool dry_run = false, jobs_given = false;
};

// The command line; false for --help (printed).
bool parse_sweep_args(const Args& args, SweepArgs& a) {
  po::options_description desc(
      "usage: slowpipe sweep SWEEP.ini [--config FILE]... [--set KEY=VALUE]... [-j N]\n"
      "                      [--out DIR] [--scale K] [--dry-run] [--emit-jobs FILE]\n"
      "                      [--point K|NAME]... [--only KEY=VALUE[,KEY=VALUE...]]...\n\nOptions");
  desc.add_options()("help,h", "this help")("sweep", po::value(&a.file), "the sweep file")(
      "config,c", po::value(&a.configs), "INI config under every point (repeatable)")(
      "set,s", po::value(&a.sets), "KEY=VALUE for every point (repeatable)")(
      "jobs,j", po::value(&a.jobs), "points at a time (default: cores / run.threads)")(
      "out,o", po::value(&a.out),
      "output folder (default: results/<sweep name>; results/reproduce/<name>[-x<K>] for a "
      "reproduction)")(
      "scale", po::value(&a.scale),
      "a reproduction's size: multiply the keys its [claim] lists under scale = by K")(
      "dry-run,n", "list the points, their names and what a run would do; run nothing")(
      "emit-jobs", po::value(&a.emit),
      "write one shell command per point to FILE (for GNU parallel or a Slurm array) and the "
      "points' NAME.ini; run nothing")(
      "point,p", po::value(&a.selector.points),
      "select point K (its number in --dry-run) or NAME (repeatable): run it in the foreground, "
      "in the sweep's folder (with --dry-run / --emit-jobs: list / emit it alone)")(
      "only", po::value(&a.selector.only),
      "select the points whose listed KEY (full or short: fw) has VALUE; ',' joins terms, "
      "terms on one key are alternatives (repeatable); run as --point does");
  po::positional_options_description positional;
  positional.add("sweep", 1);
  const po::variables_map vm = parse_command_line(args, desc, positional);
  if (vm.count("help")) {
    std::cout << desc << kGrammar;
    return false;
  }
  a.dry_run = vm.count("dry-run") != 0;
  a.jobs_given = vm.count("jobs") != 0;
  if (a.file.empty()) throw UsageError("name the sweep file: slowpipe sweep SWEEP.ini");
  if (a.jobs_given && a.jobs < 1)
    throw UsageError("-j " + std::to_string(a.jobs) + ": need 1 or more");
  if (a.scale < 1) throw UsageError("--scale " + std::to_string(a.scale) + ": need 1 or more");
  if (a.jobs_given && !a.selector.empty() && !a.dry_run && a.emit.empty()) {
    throw UsageError(
        "-j: --point and --only run the selected points one at a time, in the "
        "foreground (leave -j out)");
  }
  return true;
}

}  // namespace

int cmd_sweep(const Args& args) {
  SweepArgs a;
  if (!parse_sweep_args(args, a)) return 0;
  const study::ResolvedSweep resolved =
      resolve_sweep_file(a.file, study::SweepSettings{a.configs, a.sets, a.out, a.scale, {}});
  const std::vector<size_t> which = study::select_points(resolved, a.selector);
  if (a.dry_run) {
    print_points(resolved, which, stdout);
    return 0;
  }
  const std::string tool = study::self_executable();
  if (!a.emit.empty()) {
    emit_jobs(resolved, which, a.emit, tool);
    return 0;
  }
  // Points train in slowpipe-torch (this binary's `train` hands off to it):
  // refuse before starting any when it is missing and a point would run.
  const std::string torch = torch_binary_path();
  if (::access(torch.c_str(), X_OK) != 0 && needs_training(resolved, which)) {
    std::fprintf(stderr,
                 "slowpipe sweep: cannot run its points: %s not found or not executable (they "
                 "train in %s, built beside slowpipe: cmake --build BUILD_DIR --target %s)\n",
                 torch.c_str(), kTorchBinaryName, kTorchBinaryName);
    return 1;
  }
  study::RunnerOptions options;
  options.tool = tool;
  options.jobs = a.jobs;
  options.tty = ::isatty(STDOUT_FILENO) != 0;
  if (!a.selector.empty()) return study::run_points_foreground(resolved, which, options, stdout);
  return study::run_sweep(resolved, options, stdout).exit_code();
}

}  // namespace slowpipe::cli
