// `slowpipe sweep SWEEP.ini`: a sweep file's grid of training runs, resumably
// and in parallel on this machine, or written out as one shell command per
// point for GNU parallel or a Slurm job array (docs/sweep.md).
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/config_args.h"
#include "cli/handoff.h"
#include "common/errors.h"
#include "study/sweep_process.h"
#include "study/sweep_runner.h"
#include "study/verdict_claim.h"

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
    "Points: the cross product, first key outermost. Each runs `slowpipe train` into\n"
    "OUT/NAME.h5 (output in OUT/NAME.log, resolved config in OUT/NAME.ini). A rerun skips\n"
    "complete and diverged points with the same config, resumes interrupted or killed\n"
    "ones and reruns failed ones. Exit: 0 done, 1 a point failed, 2 bad sweep, 130\n"
    "interrupted.\n";

void print_points(const study::ResolvedSweep& s, std::FILE* out) {
  std::fprintf(out, "sweep %s: %zu points -> %s/\n", s.name.c_str(), s.points.size(),
               s.out_dir.c_str());
  const bool logged = std::filesystem::exists(s.out_dir_absolute);
  const std::vector<study::PointDecision> d =
      logged ? study::decide_points(s) : std::vector<study::PointDecision>();
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    std::string values;
    for (const auto& [k, v] : p.point.values) values += " " + k + "=" + v;
    std::fprintf(out, "%4zu  %-40s%s", i + 1, p.name.c_str(), values.c_str());
    if (logged) std::fprintf(out, "  [%s: %s]", study::action_name(d[i].action), d[i].why.c_str());
    std::fprintf(out, "\n");
  }
}

// Whether running the sweep now would start a training run: no point is
// logged yet, or some logged point is not to be skipped.
bool needs_training(const study::ResolvedSweep& s) {
  if (!std::filesystem::exists(s.out_dir_absolute)) return !s.points.empty();
  for (const auto& d : study::decide_points(s)) {
    if (d.action != study::PointAction::kSkip) return true;
  }
  return false;
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

// --emit-jobs FILE: one shell command per point, run by `tool`.
void emit_jobs(const study::ResolvedSweep& resolved, const std::string& emit,
               const std::string& tool) {
  std::ofstream jobs_file(emit);
  for (const auto& p : resolved.points) jobs_file << study::job_command(resolved, p, tool) << "\n";
  if (!jobs_file) throw UsageError("cannot write --emit-jobs file " + emit);
  std::printf("%s: %zu jobs (run them with: parallel < %s)\n", emit.c_str(), resolved.points.size(),
              emit.c_str());
}

}  // namespace

int cmd_sweep(const Args& args) {
  po::options_description desc(
      "usage: slowpipe sweep SWEEP.ini [--config FILE]... [--set KEY=VALUE]... [-j N]\n"
      "                      [--out DIR] [--scale K] [--dry-run] [--emit-jobs FILE]\n\nOptions");
  std::vector<std::string> configs, sets;
  std::string file, out, emit;
  int jobs = 0, scale = 1;
  desc.add_options()("help,h", "this help")("sweep", po::value(&file), "the sweep file")(
      "config,c", po::value(&configs), "INI config under every point (repeatable)")(
      "set,s", po::value(&sets), "KEY=VALUE for every point (repeatable)")(
      "jobs,j", po::value(&jobs), "points at a time (default: cores / run.threads)")(
      "out,o", po::value(&out),
      "output folder (default: results/<sweep name>; results/reproduce/<name>[-x<K>] for a "
      "reproduction)")(
      "scale", po::value(&scale),
      "a reproduction's size: multiply the keys its [claim] lists under scale = by K")(
      "dry-run,n", "list the points, their names and what a run would do; run nothing")(
      "emit-jobs", po::value(&emit),
      "write one shell command per point to FILE (for GNU parallel or a Slurm array); run "
      "nothing");
  po::positional_options_description positional;
  positional.add("sweep", 1);
  const po::variables_map vm = parse_command_line(args, desc, positional);
  if (vm.count("help")) {
    std::cout << desc << kGrammar;
    return 0;
  }
  if (file.empty()) throw UsageError("name the sweep file: slowpipe sweep SWEEP.ini");
  if (vm.count("jobs") && jobs < 1)
    throw UsageError("-j " + std::to_string(jobs) + ": need 1 or more");

  if (scale < 1) throw UsageError("--scale " + std::to_string(scale) + ": need 1 or more");

  const study::ResolvedSweep resolved =
      resolve_sweep_file(file, study::SweepSettings{configs, sets, out, scale, {}});
  if (vm.count("dry-run")) {
    print_points(resolved, stdout);
    return 0;
  }
  const std::string tool = study::self_executable();
  if (!emit.empty()) {
    emit_jobs(resolved, emit, tool);
    return 0;
  }
  // Points train in slowpipe-torch (this binary's `train` hands off to it):
  // refuse before starting any when it is missing and a point would run.
  const std::string torch = torch_binary_path();
  if (::access(torch.c_str(), X_OK) != 0 && needs_training(resolved)) {
    std::fprintf(stderr,
                 "slowpipe sweep: cannot run its points: %s not found or not executable (they "
                 "train in %s, built beside slowpipe: cmake --build BUILD_DIR --target %s)\n",
                 torch.c_str(), kTorchBinaryName, kTorchBinaryName);
    return 1;
  }
  study::RunnerOptions options;
  options.tool = tool;
  options.jobs = jobs;
  options.tty = ::isatty(STDOUT_FILENO) != 0;
  return study::run_sweep(resolved, options, stdout).exit_code();
}

}  // namespace slowpipe::cli
