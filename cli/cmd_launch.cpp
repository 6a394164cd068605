// `slowpipe launch --nproc N [train options]`: a distributed run on this host
// (distributed/launch.h, docs/distributed.md). The train options are read here only
// for dist.timeout, which sets how long launch waits for ranks that do not end
// after a failure, and run.out, the log launch marks failed when rank 0 dies;
// the workers check every option themselves.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "common/errors.h"
#include "common/options.h"
#include "config/logged_config.h"
#include "config/train_config.h"
#include "distributed/launch.h"
#include "runlog/runlog.h"

namespace slowpipe::cli {
namespace {

// The workers' configuration as far as launch needs it (dist.timeout, run.out,
// and beside --resume the layout), resolved as they will: the logged run's
// (--resume RUN.h5, which is run.out), then --config files, --set overrides
// and --out, in order; the defaults when it does not parse (the workers then
// say why).
config::TrainConfig worker_config(const std::vector<std::string>& args) {
  config::TrainConfig config;
  OptionSet options;
  config::describe_options(config, options);
  std::vector<std::string> configs, sets;
  const std::pair<const char*, const char*> flags[] = {
      {"--config", ""},      {"-c", ""},         {"--set", "="},   {"-s", "="},
      {"--out", "run.out="}, {"-o", "run.out="}, {"--resume", "@"}};
  std::string resume;
  for (size_t i = 0; i < args.size(); ++i) {
    for (const auto& [flag, into] : flags) {
      const std::string f = flag, prefix = into;
      std::string v;
      if (args[i] == f && i + 1 < args.size()) {
        v = args[++i];
      } else if (args[i].rfind(f + "=", 0) == 0) {
        v = args[i].substr(f.size() + 1);
      } else {
        continue;
      }
      if (prefix == "@")
        resume = v;
      else if (prefix.empty())
        configs.push_back(v);
      else
        sets.push_back(prefix == "=" ? v : prefix + v);
      break;
    }
  }
  try {
    if (!resume.empty()) {
      config::apply_logged_config(runlog::read_attributes(resume), options, "--resume " + resume);
      options.set("run.out", resume);
    }
    for (const auto& f : configs) options.load_ini(f);
    for (const auto& s : sets) options.set_assignment(s);
  } catch (const std::exception&) {
    return config::TrainConfig{};
  }
  return config;
}

// The run log after --resume (or --resume=) in the workers' options; "" if none.
std::string resume_path(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--resume" && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind("--resume=", 0) == 0) return args[i].substr(9);
  }
  return "";
}

// Rank 0 died by a signal, so it could not end its log: launch marks it
// failed, naming rank 0 and the last logged step (a log already ended, or
// none, is left as it is).
void mark_rank0_death(const std::string& out, int signal) {
  try {
    if (out.empty() || !std::filesystem::exists(out)) return;
    if (runlog::read_attributes(out)["status"] != "running") return;
    const int64_t steps = runlog::read_row_counts(out)["train"];
    const std::string why =
        "rank 0 (replica 0, stage 0) died (signal " + std::to_string(signal) + ", SIG" +
        std::string(sigabbrev_np(signal) ? sigabbrev_np(signal) : "?") + ") after step " +
        std::to_string(steps) +
        ", the last it logged; the other ranks ended with it and slowpipe launch "
        "marked this log";
    auto log = runlog::RunLog::reopen(out, {});
    log->set_attribute("status", "failed");
    log->set_attribute("error", why);
    std::fprintf(stderr, "slowpipe launch: %s: status failed: %s\n", out.c_str(), why.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "slowpipe launch: could not mark %s failed: %s\n", out.c_str(), e.what());
  }
}

}  // namespace

int cmd_launch(const Args& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "usage: slowpipe launch --nproc N [--port P] [--master-addr A] [--] "
                 "[slowpipe train options]\n"
                 "       slowpipe launch [--nproc N] [--port P] --resume RUN.h5\n\n"
                 "Starts N `slowpipe train` workers on this host, one per (replica, stage),\n"
                 "N = pipeline.stages x pipeline.replicas, rank = replica x stages + stage,\n"
                 "with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set (a free\n"
                 "port unless --port); rank 0 writes the run log. Lines the other ranks print\n"
                 "start with [rank N]. Workers that do not end after a failure are killed\n"
                 "(within about 2 x dist.timeout). With --resume RUN.h5 the workers continue\n"
                 "that run from its newest resume checkpoint, bit for bit as if it had not\n"
                 "stopped; N defaults to the logged run's. docs/distributed.md\n";
    return 0;
  }
  dist::LaunchOptions options = dist::parse_launch(args);
  const config::TrainConfig workers = worker_config(options.train_args);
  options.timeout_s = workers.dist.timeout_s;
  if (options.nproc == 0) {  // --resume without --nproc: the logged run's layout
    const std::string log = resume_path(options.train_args);
    try {
      (void)runlog::read_attributes(log);
    } catch (const std::exception& e) {
      throw UsageError("--resume " + log + ": " + e.what() +
                       " (launch takes the number of processes from the run log)");
    }
    options.nproc = workers.pipeline.stages * workers.pipeline.replicas;
    std::fprintf(stderr,
                 "slowpipe launch: %d processes (the logged run's %d stage(s) x %d replica(s))\n",
                 options.nproc, workers.pipeline.stages, workers.pipeline.replicas);
  }
  dist::LaunchReport report;
  const int code = dist::launch(options, &report);
  if (report.rank0_signal != 0) mark_rank0_death(workers.run.out, report.rank0_signal);
  return code;
}

}  // namespace slowpipe::cli
