// `slowpipe train`: config files, --set overrides and shortcuts -> one run
// (the torch-free set-up is train_options.h).
#include <cmath>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/train_options.h"
#include "distributed/dist_engine.h"
#include "sim/kernel_policy.h"
#include "sim/trainer.h"

namespace slowpipe::cli {
namespace {

// Rank 0's last line: where the run is, its losses and times; the exit status.
int report_run(const sim::TrainSummary& s) {
  if (s.status == sim::RunStatus::kDiverged) {
    std::fprintf(stderr, "slowpipe train: error: the run diverged: %s; %lld steps logged in %s\n",
                 s.message.c_str(), static_cast<long long>(s.steps), s.out.c_str());
    return kExitDiverged;
  }
  char eval[64] = "no evaluation";  // an empty validation split
  if (!std::isnan(s.final_eval_loss))
    std::snprintf(eval, sizeof eval, "eval loss %.4f", s.final_eval_loss);
  std::printf("%s: %lld steps, final loss %.4f, %s, simulated time %.2f s, wall %.1f s%s\n",
              s.out.c_str(), static_cast<long long>(s.steps), s.final_loss, eval, s.sim_time_s,
              s.wall_time_s, s.status == sim::RunStatus::kInterrupted ? " (interrupted)" : "");
  return s.status == sim::RunStatus::kInterrupted ? kExitInterrupted : 0;
}

}  // namespace

int cmd_train(const Args& args) {
  config::TrainConfig config;
  OptionSet options;
  std::string resume;
  if (setup_train(args, config, options, resume) != TrainSetup::kRun) return 0;
  for (const std::string& w : sim::apply_kernel_policy(config.run.kernels, config.run.device)) {
    std::fprintf(stderr, "slowpipe train: warning: %s\n", w.c_str());
  }
  const sim::TrainSummary s =
      sim::train(config, options.resolved(), !resume.empty(), dist::engine_factory());
  if (config.dist.enabled() && config.dist.rank != 0) return 0;  // rank 0 reports
  return report_run(s);
}

}  // namespace slowpipe::cli
