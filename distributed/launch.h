// `slowpipe launch --nproc N [train options]`: starts N `slowpipe train`
// workers on this host with the torchrun variables (RANK, LOCAL_RANK,
// WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and waits for them. SIGINT/SIGTERM go
// to rank 0, which stops the run after its current step (a second signal
// kills every worker). The workers run in a process group of their own;
// once rank 0 has ended, the others get `end_grace_s` to end (30 s more after
// a clean end, complete or interrupted: they only tear down), and once another
// rank has failed, rank 0 gets `failed_grace_s` to log the failure; after that
// every worker left (a stopped or hung one) is killed with SIGKILL, which ends
// even a SIGSTOPped process. The lines the workers write to stderr are
// prefixed "[rank N] ", except rank 0's when launch's stderr is a terminal
// (its progress line redraws in place there).
// Exit status: rank 0's when non-zero, else the first non-zero of the others,
// else 0. The workers die with launch: each asks the kernel for a signal when
// launch ends (Linux PR_SET_PDEATHSIG: SIGTERM for rank 0, which then logs
// the run's end, SIGKILL for the others), and exits at once should launch be
// gone before it asked. Linux (/proc/self/exe, prctl).
#pragma once

#include <string>
#include <vector>

namespace slowpipe::dist {

// The environment variable `slowpipe launch` gives every worker: one id per
// launch, so that a rank reaching another launch's rendezvous store (two
// launches on one port) stops at once instead of joining that run (comm.h).
inline const char* const kLaunchIdVar = "SLOWPIPE_LAUNCH_ID";

struct LaunchOptions {
  int nproc = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port of this host
  std::vector<std::string> train_args;
  // TRAIN-ARGS hold --resume RUN.h5: nproc may be left 0 for the caller to
  // take from the logged run (pipeline.stages x pipeline.replicas).
  bool resume = false;
  // The workers' dist.timeout: how long ranks may take to notice a failure.
  double timeout_s = 30;
};

// Parses `--nproc N [--port P] [--master-addr A] [--] TRAIN-ARGS...`; UsageError when wrong
// (--nproc may be left out beside --resume RUN.h5).
LaunchOptions parse_launch(const std::vector<std::string>& args);

// How rank 0 ended, for the caller (cmd_launch marks the log of a rank 0
// that died by a signal: it could not).
struct LaunchReport {
  int rank0_signal = 0;  // the signal that ended rank 0; 0: it exited
};
int launch(const LaunchOptions& options, LaunchReport* report = nullptr);

// How long the others may run on once rank 0 has ended (every rank notices
// within one heartbeat, at most 1 s), and how long rank 0 may run on once
// another rank failed (it waits up to dist.timeout + 2 s for a reason, then
// writes the log).
double end_grace_s(double timeout_s);
double failed_grace_s(double timeout_s);

}  // namespace slowpipe::dist
