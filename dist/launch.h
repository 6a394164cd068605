// `slowpipe launch --nproc N [train options]`: starts N `slowpipe train`
// workers on this host with the torchrun variables (RANK, LOCAL_RANK,
// WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and waits for them. SIGINT/SIGTERM go
// to rank 0, which stops the run after its current step. Exit status: rank
// 0's when non-zero, else the first non-zero of the others, else 0. Plain POSIX.
#pragma once

#include <string>
#include <vector>

namespace slowpipe::dist {

struct LaunchOptions {
  int nproc = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port of this host
  std::vector<std::string> train_args;
};

// Parses `--nproc N [--port P] [--master-addr A] [--] TRAIN-ARGS...`; UsageError when wrong.
LaunchOptions parse_launch(const std::vector<std::string>& args);
int launch(const LaunchOptions& options);

}  // namespace slowpipe::dist
