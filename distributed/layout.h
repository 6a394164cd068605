// Where each process of a distributed run sits in the pipeline: rank =
// replica * stages + stage, so the S stages of replica 0 are ranks 0..S-1 and
// rank 0 (replica 0, stage 0) also writes the run log. Plain C++.
#pragma once

#include <string>

namespace slowpipe::dist {

struct Layout {
  int stages = 1;
  int replicas = 1;
  int world() const { return stages * replicas; }
  int rank(int replica, int stage) const { return replica * stages + stage; }
  int replica_of(int rank) const { return rank / stages; }
  int stage_of(int rank) const { return rank % stages; }
  // "rank 3 (replica 1, stage 1)"
  std::string name(int rank) const {
    return "rank " + std::to_string(rank) + " (replica " + std::to_string(replica_of(rank)) +
           ", stage " + std::to_string(stage_of(rank)) + ")";
  }
};

}  // namespace slowpipe::dist
