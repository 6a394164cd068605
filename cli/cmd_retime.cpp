// `slowpipe retime`: finished runs' simulated wall clock at other network
// settings, without training (sim/retime.h, docs/retime.md). One retimed copy
// of each run log in --out, under the source's file name.
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>

#include "cli/commands.h"
#include "cli/config_args.h"
#include "common/errors.h"
#include "config/output_paths.h"
#include "sim/retime.h"
#include "study/summary/summary_inputs.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace slowpipe::cli {
namespace {

// Retimes one log; prints its line, or its error and returns the exit code.
int retime_one(const sim::RetimeRequest& rq) {
  try {
    const sim::RetimeReport r = sim::retime_run(rq);
    if (r.steps == 0) {
      std::printf("%s -> %s: no step logged, nothing to replay (copied)\n", rq.source.c_str(),
                  rq.out.c_str());
      return 0;
    }
    std::printf(
        "%s -> %s: %lld steps, simulated %.6g s -> %.6g s (logged network reproduced "
        "to %.3g relative; %lld steps slower)\n",
        rq.source.c_str(), rq.out.c_str(), static_cast<long long>(r.steps), r.source_sim_time_s,
        r.sim_time_s, r.own_max_rel_diff, static_cast<long long>(r.slower_steps));
    return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "slowpipe retime: error: %s\n", e.what());
    return 2;
  } catch (const DataError& e) {
    std::fprintf(stderr, "slowpipe retime: data error: %s\n", e.what());
    return 3;
  }
}

// --out: a folder (not a run log given as input, a file or a device) that
// takes new files, checked before anything is created (UsageError, exit 2).
void check_out_folder(const std::string& out, const std::vector<std::string>& logs) {
  std::error_code ec;
  for (const auto& log : logs) {
    if (fs::equivalent(log, out, ec)) {
      throw UsageError("--out " + out +
                       " is a run log to retime, not a folder: name a folder for the copies");
    }
  }
  config::check_writable_folder("--out", out);
}

// Creates --out (UsageError, not std::filesystem's text, if that fails) and,
// however the command ends, removes the folders it created that are left
// empty: a refused retime leaves nothing behind.
class OutFolder {
 public:
  explicit OutFolder(const std::string& out) {
    std::error_code ec;
    for (fs::path p = out; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
      created_.push_back(p);  // deepest first
    }
    fs::create_directories(out, ec);
    if (ec) throw UsageError("--out " + out + ": cannot create the folder (" + ec.message() + ")");
  }
  OutFolder(const OutFolder&) = delete;
  OutFolder& operator=(const OutFolder&) = delete;
  ~OutFolder() {
    std::error_code ec;
    for (const auto& dir : created_) fs::remove(dir, ec);  // fails, as wanted, unless empty
  }

 private:
  std::vector<fs::path> created_;
};

}  // namespace

int cmd_retime(const Args& args) {
  po::options_description desc(
      "usage: slowpipe retime RUN.h5... | DIR... --out DIR [--set net.KEY=VALUE]...\n\n"
      "Replays every step of finished runs at other network settings, without training,\n"
      "and writes a copy of each log to --out (same file name): the new net.* config,\n"
      "sim_step_time_s / sim_time_s replaced, retime.source naming the run; losses,\n"
      "bytes and everything else unchanged. Needs a machine-independent clock\n"
      "(net.compute = analytic:DEVICE, shaped:DEVICE or fixed:S) and first checks that a replay at "
      "the\n"
      "logged network reproduces the logged times (docs/retime.md). Options");
  std::vector<std::string> runs, sets;
  std::string out;
  double tolerance = 1e-9;
  desc.add_options()("help,h", "this help")("runs", po::value(&runs),
                                            "run logs, or folders of run logs (*.h5)")(
      "set,s", po::value(&sets), "net.KEY=VALUE over the logged network (repeatable)")(
      "out,o", po::value(&out), "folder for the retimed copies")(
      "tolerance", po::value(&tolerance)->default_value(1e-9),
      "largest relative difference allowed between the replay at the logged network and the "
      "logged times");
  po::variables_map vm;
  if (!parse_runs_command(args, desc, vm)) return 0;
  if (out.empty()) throw UsageError("--out DIR is required: where the retimed copies go");
  if (!(tolerance >= 0)) throw UsageError("--tolerance must be >= 0");
  for (const auto& s : sets) {
    if (s.rfind("net.", 0) != 0) {
      throw UsageError("--set " + s + ": retime changes the network only (net.* keys)");
    }
  }
  const std::vector<std::string> logs = study::expand_run_paths(runs);
  std::set<std::string> names;
  for (const auto& log : logs) {
    if (!names.insert(fs::path(log).filename().string()).second) {
      throw UsageError("two run logs named " + fs::path(log).filename().string() +
                       ": their copies would share one file");
    }
  }
  check_out_folder(out, logs);
  const OutFolder folder(out);
  int code = 0;
  for (const auto& log : logs) {
    const std::string name = fs::path(log).filename().string();
    const sim::RetimeRequest rq{log, (fs::path(out) / name).string(), sets, tolerance};
    code = std::max(code, retime_one(rq));
  }
  return code;
}

}  // namespace slowpipe::cli
