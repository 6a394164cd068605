// Turns a schedule (each stage's ordered list of forward and backward ops) into
// one global order that a single process can execute: every stage keeps its own
// order, and an op runs only once its input exists — F(s,m) after F(s-1,m) has
// sent its activation, B(s,m) after B(s+1,m) has sent its gradient (the last
// stage's B(S-1,m) after its own F(S-1,m)). Channels therefore see their messages
// in exactly the order a real cluster running the same schedule would produce.
// Plain C++; no libtorch.
#pragma once

#include <vector>

namespace slowpipe::sim {

struct PipelineOp {
  bool forward = true;
  int stage = 0;
  int microbatch = 0;
  bool operator==(const PipelineOp& o) const {
    return forward == o.forward && stage == o.stage && microbatch == o.microbatch;
  }
};

// Throws std::logic_error if the lists deadlock or do not hold F and B exactly
// once per (stage, micro-batch).
std::vector<PipelineOp> global_order(const std::vector<std::vector<PipelineOp>>& per_stage,
                                     int microbatches);

}  // namespace slowpipe::sim
