// `slowpipe launch --nproc N [train options]`: a distributed run on this host
// (dist/launch.h, docs/distributed.md).
#include <iostream>

#include "dist/launch.h"
#include "sim/cli/commands.h"

namespace slowpipe::cli {

int cmd_launch(const Args& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "usage: slowpipe launch --nproc N [--port P] [--master-addr A] [--] "
                 "[slowpipe train options]\n\n"
                 "Starts N `slowpipe train` workers on this host, one per (replica, stage),\n"
                 "N = pipeline.stages x pipeline.replicas, rank = replica x stages + stage,\n"
                 "with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set (a free\n"
                 "port unless --port); rank 0 writes the run log. docs/distributed.md\n";
    return 0;
  }
  return dist::launch(dist::parse_launch(args));
}

}  // namespace slowpipe::cli
