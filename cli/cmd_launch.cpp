// `slowpipe launch --nproc N [train options]`: a distributed run on this host
// (distributed/launch.h, docs/distributed.md). The train options are read here only
// for dist.timeout, which sets how long launch waits for ranks that do not end
// after a failure; the workers check every option themselves.
#include <iostream>

#include "cli/commands.h"
#include "common/options.h"
#include "distributed/launch.h"
#include "config/train_config.h"

namespace slowpipe::cli {
namespace {

// dist.timeout as the workers will resolve it from --config files and --set
// overrides (the default when they do not parse: the workers then say why).
double worker_timeout_s(const std::vector<std::string>& args) {
  config::TrainConfig config;
  OptionSet options;
  config::describe_options(config, options);
  std::vector<std::string> configs, sets;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    for (const auto& [flag, into] : {std::pair{"--config", &configs}, std::pair{"-c", &configs},
                                     std::pair{"--set", &sets}, std::pair{"-s", &sets}}) {
      const std::string f = flag;
      if (a == f && i + 1 < args.size()) {
        into->push_back(args[++i]);
      } else if (a.rfind(f + "=", 0) == 0) {
        into->push_back(a.substr(f.size() + 1));
      }
    }
  }
  try {
    for (const auto& f : configs) options.load_ini(f);
    for (const auto& s : sets) options.set_assignment(s);
  } catch (const std::exception&) {
    return config::DistConfig{}.timeout_s;
  }
  return config.dist.timeout_s;
}

}  // namespace

int cmd_launch(const Args& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "usage: slowpipe launch --nproc N [--port P] [--master-addr A] [--] "
                 "[slowpipe train options]\n\n"
                 "Starts N `slowpipe train` workers on this host, one per (replica, stage),\n"
                 "N = pipeline.stages x pipeline.replicas, rank = replica x stages + stage,\n"
                 "with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set (a free\n"
                 "port unless --port); rank 0 writes the run log. Lines the other ranks print\n"
                 "start with [rank N]. Workers that do not end after a failure are killed\n"
                 "(within about 2 x dist.timeout). docs/distributed.md\n";
    return 0;
  }
  dist::LaunchOptions options = dist::parse_launch(args);
  options.timeout_s = worker_timeout_s(options.train_args);
  return dist::launch(options);
}

}  // namespace slowpipe::cli
