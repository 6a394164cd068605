// The torch-free part of `slowpipe train`; see train_options.h.
#include "cli/train_options.h"

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <utility>
#include <vector>

#include "cli/config_args.h"
#include "common/errors.h"
#include "config/logged_config.h"
#include "config/preflight.h"
#include "runlog/runlog.h"

namespace po = boost::program_options;

namespace slowpipe::cli {
namespace {

// The configuration of the run logged in `path`: its config.* attributes
// applied to a fresh set of options.
void load_logged_config(const std::string& path, OptionSet& options,
                        std::map<std::string, std::string>& attrs) {
  attrs = runlog::read_attributes(path);
  config::apply_logged_config(attrs, options, "--resume " + path);
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec, ec2;
  if (std::filesystem::equivalent(a, b, ec)) return true;
  return std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec2) &&
         !ec && !ec2;
}

// --resume X continues X in place (its rows, its checkpoint folder X.ckpt), so
// a run.out given beside it (--out, --set or a config file) must name X too:
// resuming into another file would leave X changed and that file never made.
void refuse_other_out(const std::string& resume, const std::string& logged_out,
                      const std::string& out, bool out_flag_given) {
  if ((!out_flag_given && out == logged_out) || same_file(out, resume)) return;
  throw UsageError("--resume " + resume + " continues that log in place, but run.out = " + out +
                   " names another file (leave --out out; to keep " + resume +
                   " as it is, copy it and its .ckpt folder and resume the copy)");
}

// torchrun's variables (any launcher: slowpipe launch, Slurm, a shell loop)
// give the dist.* keys their defaults; --set and config files override them.
void apply_torchrun_env(OptionSet& options) {
  if (std::getenv("WORLD_SIZE") == nullptr) return;
  const std::pair<const char*, const char*> vars[] = {{"WORLD_SIZE", "dist.world_size"},
                                                      {"RANK", "dist.rank"},
                                                      {"MASTER_ADDR", "dist.master_addr"},
                                                      {"MASTER_PORT", "dist.master_port"}};
  for (const auto& [var, key] : vars) {
    const char* v = std::getenv(var);
    if (v == nullptr) continue;
    try {
      options.set(key, v);
    } catch (const UsageError& e) {
      throw UsageError(std::string("environment variable ") + var + " = '" + v + "': " + e.what());
    }
  }
}

// Options given beside --resume apply on top of the logged ones; any that
// changes what is computed must be what the log holds already.
void refuse_changed_keys(const std::string& resume,
                         const std::vector<std::pair<std::string, std::string>>& logged,
                         const OptionSet& options) {
  std::string differ;
  for (const auto& [k, v] : options.resolved()) {
    const auto it = std::find_if(logged.begin(), logged.end(),
                                 [&k = k](const auto& kv) { return kv.first == k; });
    const std::string was = it == logged.end() ? "(unset)" : it->second;
    if (v != was && !config::resume_key_may_differ(k)) {
      differ += (differ.empty() ? "" : ", ") + k + " = " + v + " (logged: " + was + ")";
    }
  }
  if (!differ.empty()) {
    throw UsageError("--resume " + resume + ": the configuration differs from the logged run in " +
                     differ);
  }
}

// The options of `slowpipe train --resume RESUME`: the logged configuration,
// then what is given beside it. False when the run is complete already
// (said on stdout): nothing to resume.
bool resume_options(const std::string& resume, OptionSet& options,
                    const std::vector<std::string>& configs,
                    const std::vector<std::string>& assignments, bool out_flag_given) {
  std::map<std::string, std::string> attrs;
  load_logged_config(resume, options, attrs);
  apply_torchrun_env(options);  // where this attempt's ranks meet, not the logged run's
  const auto logged = options.resolved();
  const std::string logged_out = options.get("run.out");
  apply_config_args(options, configs, assignments);
  refuse_other_out(resume, logged_out, options.get("run.out"), out_flag_given);
  refuse_changed_keys(resume, logged, options);
  options.set("run.out", resume);
  const auto status = attrs.find("status");
  if (status != attrs.end() && status->second == "complete") {
    std::printf("%s: the run is already complete; nothing to resume\n", resume.c_str());
    return false;
  }
  return true;
}

}  // namespace

TrainSetup setup_train(const Args& args, config::TrainConfig& config, OptionSet& options,
                       std::string& resume, bool front) {
  po::options_description desc(
      "usage: slowpipe train [--config FILE]... [--set KEY=VALUE]... [shortcuts]\n\n"
      "Config files (INI) are read in order, then --set overrides and shortcuts in the\n"
      "order given (the last one of a key wins); shortcuts are --set forms of the most\n"
      "used keys. Options");
  std::vector<std::string> configs, sets;
  std::string fw, bw, grad, net, out, steps, seed, stages;
  desc.add_options()("help,h", "this help, with every configuration key")(
      "config,c", po::value(&configs), "INI config file (repeatable)")(
      "set,s", po::value(&sets), "KEY=VALUE override (repeatable)")(
      "fw", po::value(&fw), "compress.fw: forward (activation) channel spec")(
      "bw", po::value(&bw), "compress.bw: backward (activation-gradient) channel spec")(
      "grad", po::value(&grad), "compress.grad: data-parallel gradient channel spec")(
      "net", po::value(&net), "net.preset: simulated network preset")(
      "steps", po::value(&steps), "run.steps")("seed", po::value(&seed), "run.seed")(
      "stages", po::value(&stages), "pipeline.stages")("out,o", po::value(&out), "run.out")(
      "resume", po::value(&resume),
      "continue the run logged in RUN.h5, in that file, from its newest resume checkpoint "
      "(options given beside it must match the logged ones)");
  const po::variables_map vm = parse_command_line(args, desc);

  config::describe_options(config, options);
  if (front && (vm.count("help") || !resume.empty())) return TrainSetup::kHandOff;
  if (vm.count("help")) {
    std::cout << desc
              << "\nConfiguration keys (also valid in INI files as [section] key = value):\n"
              << options.help_text();
    return TrainSetup::kHelp;
  }
  const std::vector<std::string> assignments = ordered_assignments(args, desc,
                                                                   {{"fw", "compress.fw"},
                                                                    {"bw", "compress.bw"},
                                                                    {"grad", "compress.grad"},
                                                                    {"net", "net.preset"},
                                                                    {"out", "run.out"},
                                                                    {"steps", "run.steps"},
                                                                    {"seed", "run.seed"},
                                                                    {"stages", "pipeline.stages"}});
  if (!resume.empty()) {
    if (!resume_options(resume, options, configs, assignments, !out.empty()))
      return TrainSetup::kNothingToResume;
  } else {
    apply_torchrun_env(options);
    apply_config_args(options, configs, assignments);
  }
  return TrainSetup::kRun;
}

void preflight_train(const Args& args) {
  if (std::getenv("WORLD_SIZE") != nullptr) return;  // a rank: its launcher's checks differ
  config::TrainConfig config;
  OptionSet options;
  std::string resume;
  if (setup_train(args, config, options, resume, /*front=*/true) != TrainSetup::kRun) return;
  if (config.run.device != "cpu" || config.run.kernels != "native") return;
  config::preflight(config, /*resuming=*/false);
}

int cmd_train_preflight(const Args& args) {
  preflight_train(args);
  return 0;
}

}  // namespace slowpipe::cli
