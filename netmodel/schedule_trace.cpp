// The op skeleton of one step from a schedule (schedule_trace.h).
#include "netmodel/schedule_trace.h"

#include "common/errors.h"
#include "pipeline/schedule.h"

namespace slowpipe::netmodel {

StepTrace build_trace(const Schedule& sched, const std::string& name, int replicas,
                      const std::function<void(TraceOp&)>& fill, bool compact) {
  if (replicas < 1) throw UsageError("replicas must be >= 1");
  const int S = sched.devices, C = sched.chunks, M = sched.microbatches;
  StepTrace trace;
  trace.stages = S;
  trace.chunks = C;
  trace.microbatches = M;
  trace.replicas = replicas;
  trace.schedule = name;
  trace.replicated = compact && replicas > 1;
  const int listed = trace.replicated ? 1 : replicas;  // replicas whose ops are listed
  trace.ops.reserve(static_cast<size_t>(listed) * C * (5 * M + 2));
  auto push = [&](OpKind kind, int r, int d, int c, int m, int peer = -1) {
    TraceOp op;
    op.kind = kind;
    op.replica = r;
    op.device = d;
    op.chunk = c;
    op.peer = peer;
    op.microbatch = m;
    if (fill) fill(op);
    trace.ops.push_back(op);
  };
  for (int r = 0; r < listed; ++r) {
    for (int d = 0; d < S; ++d) {
      for (const ScheduledOp& x : sched.per_device[d]) {
        const int c = x.chunk, m = x.microbatch;
        switch (x.pass) {
          case Pass::kForward:
            push(OpKind::kForward, r, d, c, m);
            if (c + 1 < C && sched.device_of[c + 1] != d) {
              push(OpKind::kSendActivation, r, d, c, m, sched.device_of[c + 1]);
            }
            break;
          case Pass::kBackward:
          case Pass::kBackwardInput:
            push(x.pass == Pass::kBackward ? OpKind::kBackward : OpKind::kBackwardInput, r, d, c,
                 m);
            if (c > 0 && sched.device_of[c - 1] != d) {
              push(OpKind::kSendGradient, r, d, c, m, sched.device_of[c - 1]);
            }
            break;
          case Pass::kBackwardWeight:
            push(OpKind::kBackwardWeight, r, d, c, m);
            break;
        }
      }
      for (int c = 0; c < C; ++c) {
        if (sched.device_of[c] != d) continue;
        if (replicas > 1) push(OpKind::kAllReduce, r, d, c, -1);
        push(OpKind::kOptimizer, r, d, c, -1);
      }
    }
  }
  return trace;
}

StepTrace build_trace(const std::string& schedule, int stages, int microbatches, int replicas,
                      const std::function<void(TraceOp&)>& fill, int virtual_stages) {
  return build_trace(make_schedule(schedule, stages, microbatches, virtual_stages), schedule,
                     replicas, fill, false);
}

}  // namespace slowpipe::netmodel
