// Resume checkpoints of a training run (docs/reliability.md).
//
// A resume checkpoint holds everything that shapes the rest of a run, so that a
// run resumed from it continues bit for bit as if it had never stopped: the
// engine's state (parameters, buffers, optimizer moments and step counts, every
// channel's feedback state and codec random streams), libtorch's default random
// generator (dropout), the network simulator's carry (jitter stream, clock) and
// the trainer's cursor (steps done, epoch, samples, simulated time, rows
// logged). The data order needs no state: the sampler is a pure function of
// (seed, epoch, batch) and seeks to the cursor.
//
// Files: `<run.out>.ckpt/step-<NNNNNNNNN>.ckpt`, models::write_checked_file
// (CRC-32, written to a temporary file and renamed: a kill mid-write leaves
// the previous checkpoints intact); the newest `keep` are kept.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "netmodel/replay.h"
#include "sim/engine.h"

namespace slowpipe::sim {

struct TrainerCursor {
  int64_t steps_done = 0;  // optimizer steps completed
  int epoch = -1;          // epoch of the last step (-1: none yet)
  int64_t samples = 0;     // samples seen
  double sim_time_s = 0;   // cumulative simulated time
  double wall_time_s = 0;  // measured wall time of the run so far (all attempts)
  int64_t train_rows = 0, eval_rows = 0;  // rows of the run log that belong to this state
  netmodel::Simulator::Carry net;
};

// The folder of a run's resume checkpoints.
std::string checkpoint_dir(const std::string& run_out);

// Writes a checkpoint for `cursor.steps_done` and prunes all but the newest
// `keep`. `fingerprint` identifies the run's configuration. Returns seconds spent.
double write_resume_checkpoint(const std::string& run_out, const StepEngine& engine,
                               const TrainerCursor& cursor, const std::string& fingerprint,
                               int keep);

// Loads the newest checkpoint that reads back whole, matches `fingerprint` and
// whose rows the log still holds (at most `log_rows` train and eval rows: after
// a power loss the log may lag its checkpoint) into `engine` and returns its
// cursor; a checkpoint that fails is skipped (with a warning through `warn`) in
// favour of an older one. nullopt: none.
struct LogRows {
  int64_t train = 0, eval = 0;
};
std::optional<TrainerCursor> load_resume_checkpoint(const std::string& run_out,
                                                    StepEngine& engine,
                                                    const std::string& fingerprint,
                                                    const LogRows& log_rows,
                                                    void (*warn)(const std::string&));

// fsync(2) of a file written through another handle (the run log), so that the
// rows a checkpoint counts on survive a power loss. Errors are ignored.
void sync_file(const std::string& path);

// Removes the checkpoint folder (a completed run, or a run started afresh).
void remove_checkpoints(const std::string& run_out);

// Fault injection for the kill/resume tests: SLOWPIPE_FAULT=<point>:<n> makes
// the process SIGKILL itself the n-th time it reaches <point> (step, eval,
// checkpoint-write), or throw std::runtime_error for an `error-` point
// (error-step). A no-op when the variable is unset.
void fault_point(const char* point);

}  // namespace slowpipe::sim
