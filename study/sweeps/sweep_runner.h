// Runs a resolved sweep on this machine: each point is a child process
// `slowpipe train` (the `tool` binary), at most `jobs` at a time, each with
// OMP_NUM_THREADS = its run.threads and its output in <out>/<name>.log.
//
// Before anything starts it takes an exclusive lock on <out>/.sweep.lock (a
// second sweep on the same folder is refused; the children inherit the lock,
// so it is held until the last of them has exited), decides every point from
// its run log (sweep_resume.h) and writes <out>/<name>.ini. The children run
// in <out> (the INIs' output paths are relative to it). Children run in
// their own process group (a terminal's Ctrl-C reaches the sweep alone, which
// forwards it once) and get SIGTERM when the sweep dies, even by SIGKILL
// (PR_SET_PDEATHSIG): slowpipe train then checkpoints and exits, and a rerun
// resumes them. On SIGINT/SIGTERM the sweep starts nothing more, forwards
// SIGTERM to the running points, waits for them and reports "interrupted".
// One failing point never stops the others.
//
// Not here: scheduling over several machines (--emit-jobs leaves that to GNU
// parallel or Slurm, see docs/sweep.md).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "study/sweeps/sweep_points.h"
#include "study/sweeps/sweep_resume.h"

namespace slowpipe::study {

struct RunnerOptions {
  std::string tool;    // absolute path of the slowpipe binary
  int jobs = 0;        // points at a time; 0: default_jobs()
  bool tty = false;    // redraw one status line (else one line per event)
  bool finish = true;  // run `summary --md` and `plot` on the folder at the end
};

enum class PointResult { kSkipped, kDone, kDiverged, kFailed, kInterrupted, kNotRun };

struct PointOutcome {
  std::string name;
  PointDecision decision;
  PointResult result = PointResult::kNotRun;
  int exit_code = 0;  // of the child; 128 + N when killed by signal N
  double seconds = 0;
  std::string tail;  // last lines of its .log, for failures
};

struct SweepReport {
  std::vector<PointOutcome> points;
  bool interrupted = false;
  int jobs = 0;
  double wall_s = 0;
  int count(PointResult r) const;
  // 130 interrupted, 1 when a point failed, else 0 (diverged points are results).
  int exit_code() const;
};

// Processors this process may run on (its CPU affinity) divided by the
// largest run.threads of the points; at least 1.
int default_jobs(const ResolvedSweep& sweep);

// Decides every point from its run log (no lock, nothing written): for
// --dry-run and for run_sweep.
std::vector<PointDecision> decide_points(const ResolvedSweep& sweep);

// Creates the sweep's folder and writes the NAME.ini of the points `which`
// (indices into sweep.points); UsageError when it cannot.
void write_point_files(const ResolvedSweep& sweep, const std::vector<size_t>& which);

// --point / --only: runs the points `which`, one after the other, in the
// foreground: each as `slowpipe train` in the sweep's folder, exactly as
// run_sweep would (same folder lock, NAME.ini, NAME.h5 and NAME.log, the same
// run / resume / skip decision), its output on `out` as well as in its .log.
// A complete or diverged point is not run again. SIGINT or SIGTERM stops the
// running point (it checkpoints) and returns 130; otherwise the exit code of
// the first point that did not exit 0 (slowpipe train's: 2 bad input, 4
// diverged, ...), else 0. No summary or plots: the full sweep writes them.
int run_points_foreground(const ResolvedSweep& sweep, const std::vector<size_t>& which,
                          const RunnerOptions& options, std::FILE* out);

// Runs the sweep, printing progress and the final report to `out`. Throws
// UsageError when the folder cannot be created or another sweep holds it.
SweepReport run_sweep(const ResolvedSweep& sweep, const RunnerOptions& options, std::FILE* out);

}  // namespace slowpipe::study
