// The sweep runner: decisions, the child-process loop, progress and the final
// report (see sweep_runner.h).
#include "study/sweeps/sweep_runner.h"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/errors.h"
#include "study/sweeps/sweep_process.h"

namespace slowpipe::study {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string clock_text(double s) {
  const long t = std::lround(s);
  char buf[32];
  if (t >= 3600) {
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  }
  return buf;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

struct Running {
  size_t index;
  pid_t pid;
  Clock::time_point start;
};

// The loop's state and its progress display.
class Runner {
 public:
  Runner(const ResolvedSweep& s, const RunnerOptions& o, std::FILE* out, SweepReport& r)
      : sweep_(s), opt_(o), out_(out), report_(r) {}

  void run(const std::vector<size_t>& todo);

 private:
  void launch(size_t i);
  void reap(pid_t pid, int status);
  void stop_all();
  std::string counts() const;
  void event(const std::string& text);
  void redraw();

  const ResolvedSweep& sweep_;
  const RunnerOptions& opt_;
  std::FILE* out_;
  SweepReport& report_;
  std::deque<size_t> pending_;
  std::vector<Running> running_;
  std::vector<double> durations_;  // of points finished in this sweep
  bool line_drawn_ = false;
};

// `tool train` for point `p`: from its INI (and the values INI cannot hold,
// see point_ini_text), or resuming its run log.
std::vector<std::string> point_argv(const ResolvedSweep& s, const ResolvedPoint& p, bool resume,
                                    const std::string& tool) {
  std::vector<std::string> argv = {tool, "train"};
  if (resume) {
    argv.insert(argv.end(), {"--resume", point_log_path(s, p)});
  } else {
    std::vector<std::string> extra;
    point_ini_text(s, p, extra);
    argv.insert(argv.end(), {"--config", point_ini_path(s, p)});
    for (const auto& e : extra) argv.insert(argv.end(), {"--set", e});
    argv.insert(argv.end(), {"--set", "run.overwrite=true"});
  }
  argv.insert(argv.end(), {"--set", "run.progress=plain"});
  return argv;
}

// The point's output: appended to its .log when resumed, in the sweep's
// folder (its INI's output paths are relative to it).
ChildIo point_io(const ResolvedSweep& s, const ResolvedPoint& p, bool resume) {
  ChildIo io;
  io.out_path = point_output_path(s, p);
  io.append = resume;
  io.header = "# slowpipe sweep " + s.name + " " + utc_now() + ": " +
              (resume ? "resuming" : "running") + " " + p.name;
  io.cwd = s.out_dir_absolute;
  return io;
}

void Runner::launch(size_t i) {
  const ResolvedPoint& p = sweep_.points[i];
  PointOutcome& o = report_.points[i];
  const bool resume = o.decision.action == PointAction::kResume;
  const std::vector<std::string> argv = point_argv(sweep_, p, resume, opt_.tool);
  const ChildIo io = point_io(sweep_, p, resume);
  try {
    running_.push_back({i, spawn_child(argv, io, p.threads), Clock::now()});
    event("start  " + p.name + (o.decision.why == "new" ? "" : " (" + o.decision.why + ")"));
  } catch (const std::exception& e) {
    o.result = PointResult::kFailed;
    o.exit_code = 1;
    o.tail = e.what();
    event("FAILED " + p.name + ": " + e.what());
  }
}

void Runner::reap(pid_t pid, int status) {
  const auto it = std::find_if(running_.begin(), running_.end(),
                               [pid](const Running& r) { return r.pid == pid; });
  if (it == running_.end()) return;  // not a point (cannot happen: all children are points)
  const size_t index = it->index;
  PointOutcome& o = report_.points[index];
  o.seconds = since(it->start);
  o.exit_code = exit_code_of(status);
  running_.erase(it);
  const std::string took = " in " + clock_text(o.seconds);
  if (o.exit_code == 0) {
    o.result = PointResult::kDone;
    durations_.push_back(o.seconds);
    event("done   " + o.name + took);
  } else if (o.exit_code == 4) {  // slowpipe train: the run diverged
    o.result = PointResult::kDiverged;
    durations_.push_back(o.seconds);
    event("diverged " + o.name + took + " (kept as a result)");
  } else if (report_.interrupted && (o.exit_code == 130 || o.exit_code == 128 + SIGTERM)) {
    // 130: train checkpointed and stopped; 143: SIGTERM came before train's handler.
    o.result = PointResult::kInterrupted;
    event("stopped " + o.name + " (rerun the sweep to resume it)");
  } else {
    o.result = PointResult::kFailed;
    o.tail = last_lines(point_output_path(sweep_, sweep_.points[index]), 6);
    event("FAILED " + o.name + " (exit " + std::to_string(o.exit_code) + ")" + took);
  }
}

void Runner::stop_all() {
  if (!report_.interrupted) {
    report_.interrupted = true;
    for (size_t i : pending_) report_.points[i].result = PointResult::kNotRun;
    pending_.clear();
    event("stopping: signal received; the running points checkpoint and stop");
  }
  for (const auto& r : running_) ::kill(r.pid, SIGTERM);
}

std::string Runner::counts() const {
  int done = 0, failed = 0, skipped = 0;
  for (const auto& p : report_.points) {
    done += p.result == PointResult::kDone || p.result == PointResult::kDiverged;
    failed += p.result == PointResult::kFailed;
    skipped += p.result == PointResult::kSkipped;
  }
  std::string eta = "?";
  if (!durations_.empty()) {
    double mean = 0;
    for (double d : durations_) mean += d;
    mean /= static_cast<double>(durations_.size());
    double work = mean * static_cast<double>(pending_.size());
    for (const auto& r : running_) work += std::max(0.0, mean - since(r.start));
    const size_t lanes = std::max<size_t>(
        1, std::min<size_t>(static_cast<size_t>(report_.jobs), pending_.size() + running_.size()));
    eta = clock_text(work / static_cast<double>(lanes));
  } else if (pending_.empty() && running_.empty()) {
    eta = "0:00";
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "[%d/%zu done, %zu running, %d failed, %d skipped, ETA %s]", done,
                report_.points.size() - static_cast<size_t>(skipped), running_.size(), failed,
                skipped, eta.c_str());
  return buf;
}

void Runner::event(const std::string& text) {
  if (line_drawn_) std::fputs("\r\033[K", out_);
  line_drawn_ = false;
  std::fprintf(out_, "%s %s\n", counts().c_str(), text.c_str());
  redraw();
}

void Runner::redraw() {
  if (!opt_.tty) {
    std::fflush(out_);
    return;
  }
  std::string names;
  for (const auto& r : running_) {
    names += (names.empty() ? " running: " : ", ") + sweep_.points[r.index].name + " " +
             clock_text(since(r.start));
  }
  if (names.size() > 120) names = names.substr(0, 117) + "...";
  std::fprintf(out_, "\r\033[K%s%s", counts().c_str(), names.c_str());
  line_drawn_ = true;
  std::fflush(out_);
}

void Runner::run(const std::vector<size_t>& todo) {
  pending_.assign(todo.begin(), todo.end());
  StopSignals signals;
  int forwarded = 0;
  auto last_draw = Clock::now();
  while (!pending_.empty() || !running_.empty()) {
    if (signals.count() > forwarded) {
      forwarded = signals.count();
      stop_all();  // forwards every signal received, once each
    }
    while (!pending_.empty() && static_cast<int>(running_.size()) < report_.jobs) {
      const size_t i = pending_.front();
      pending_.pop_front();
      launch(i);
    }
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) reap(pid, status);
    if (opt_.tty && since(last_draw) >= 1.0) {
      redraw();
      last_draw = Clock::now();
    }
    if (!running_.empty() || !pending_.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  if (line_drawn_) std::fputs("\r\033[K", out_);
  line_drawn_ = false;
}

// `tool plot DIR`, then `tool summary DIR --md` (or, for a reproduction,
// `tool verdict SWEEP --dir DIR`) into DIR/summary.md; a failure is a warning:
// the runs themselves are what the sweep promised.
void finish_folder(const ResolvedSweep& s, const RunnerOptions& o, std::FILE* out) {
  struct Step {
    std::vector<std::string> argv;
    std::string out_path;
  };
  const std::string md = s.out_dir_absolute + "/summary.md";
  std::vector<std::string> plot = {o.tool, "plot", s.out_dir_absolute};
  if (s.has_target) {
    std::ostringstream target;
    target.precision(17);
    target << s.target;
    plot.insert(plot.end(), {"--target", target.str()});
  }
  const std::vector<std::string> table =
      s.has_claim ? std::vector<std::string>{o.tool,
                                             "verdict",
                                             s.sweep_path,
                                             "--dir",
                                             s.out_dir_absolute,
                                             "--scale",
                                             std::to_string(s.scale)}
                  : std::vector<std::string>{o.tool, "summary", s.out_dir_absolute, "--md"};
  const Step steps[] = {{plot, ""}, {table, md + ".tmp"}};
  for (const auto& step : steps) {
    ChildIo io;
    io.out_path = step.out_path;
    io.err_too = false;
    std::fflush(out);
    int code = 0;
    try {
      code = run_child(step.argv, io, 1);
    } catch (const std::exception& e) {
      std::fprintf(out, "slowpipe sweep: warning: %s\n", e.what());
      continue;
    }
    if (code != 0) {
      std::fprintf(out,
                   "slowpipe sweep: warning: 'slowpipe %s' failed (exit %d); the runs are "
                   "complete, run it again by hand\n",
                   step.argv[1].c_str(), code);
    } else if (!step.out_path.empty()) {
      fs::rename(step.out_path, md);
      std::fprintf(out, "summary: %s\n", md.c_str());
    }
    if (code != 0 && !step.out_path.empty()) fs::remove(step.out_path);
  }
}

void print_report(const ResolvedSweep& s, const SweepReport& r, std::FILE* out) {
  std::fprintf(out,
               "sweep %s: %zu points: %d done, %d skipped, %d diverged (kept), %d failed, %d "
               "stopped, %d not started; wall %s\n",
               s.name.c_str(), r.points.size(), r.count(PointResult::kDone),
               r.count(PointResult::kSkipped), r.count(PointResult::kDiverged),
               r.count(PointResult::kFailed), r.count(PointResult::kInterrupted),
               r.count(PointResult::kNotRun), clock_text(r.wall_s).c_str());
  for (const auto& p : r.points) {
    if (p.result == PointResult::kDiverged ||
        (p.result == PointResult::kSkipped && p.decision.diverged)) {
      std::fprintf(out, "  diverged: %s\n", p.name.c_str());
    }
  }
  if (r.count(PointResult::kFailed) == 0) return;
  std::fprintf(out, "failed points (output in %s/NAME.log):\n", s.out_dir.c_str());
  for (const auto& p : r.points) {
    if (p.result != PointResult::kFailed) continue;
    std::fprintf(out, "  %s: exit %d\n", p.name.c_str(), p.exit_code);
    size_t start = 0;
    while (start < p.tail.size()) {
      const size_t nl = p.tail.find('\n', start);
      std::fprintf(out, "    | %s\n", p.tail.substr(start, nl - start).c_str());
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
  }
}

void create_folder(const ResolvedSweep& sweep) {
  std::error_code ec;
  fs::create_directories(sweep.out_dir_absolute, ec);
  if (ec) throw UsageError("cannot create the sweep folder " + sweep.out_dir + ": " + ec.message());
}

// One point in the foreground: what it is and what happens to it, then its
// `slowpipe train` with the output on `out` and in its .log. Its exit code;
// 0 for a point already done.
int run_one_foreground(const ResolvedSweep& sweep, size_t i, const RunnerOptions& options,
                       std::FILE* out, bool& interrupted) {
  const ResolvedPoint& p = sweep.points[i];
  const PointDecision d = decide_point(read_log_state(point_log_path(sweep, p)), p.resolved);
  std::fprintf(out, "sweep %s, point %zu of %zu: %s -> %s/%s.h5\n", sweep.name.c_str(), i + 1,
               sweep.points.size(), p.name.c_str(), sweep.out_dir.c_str(), p.name.c_str());
  if (d.action == PointAction::kSkip) {
    std::fprintf(out, "  %s: nothing to run (delete its .h5 to run it again)\n", d.why.c_str());
    return 0;
  }
  std::fprintf(out, "  %s\n", d.why == "new" ? "running" : d.why.c_str());
  const bool resume = d.action == PointAction::kResume;
  const auto t0 = Clock::now();
  const int code = run_child_teed(point_argv(sweep, p, resume, options.tool),
                                  point_io(sweep, p, resume), p.threads, out, interrupted);
  const std::string took = " in " + clock_text(since(t0));
  if (interrupted) {
    std::fprintf(out, "stopped %s (run it again to resume it)\n", p.name.c_str());
  } else if (code == 0) {
    std::fprintf(out, "done   %s%s\n", p.name.c_str(), took.c_str());
  } else if (code == 4) {
    std::fprintf(out, "diverged %s%s (kept as a result)\n", p.name.c_str(), took.c_str());
  } else {
    std::fprintf(out, "FAILED %s (exit %d)%s; its output: %s\n", p.name.c_str(), code, took.c_str(),
                 point_output_path(sweep, p).c_str());
  }
  std::fflush(out);
  return code;
}

}  // namespace

int run_points_foreground(const ResolvedSweep& sweep, const std::vector<size_t>& which,
                          const RunnerOptions& options, std::FILE* out) {
  create_folder(sweep);
  FolderLock lock(sweep.out_dir_absolute + "/.sweep.lock");
  write_point_files(sweep, which);
  int first_failure = 0;
  for (size_t i : which) {
    bool interrupted = false;
    int code = 0;
    try {
      code = run_one_foreground(sweep, i, options, out, interrupted);
    } catch (const std::runtime_error& e) {  // the pipe, the .log or fork
      std::fprintf(out, "FAILED %s: %s\n", sweep.points[i].name.c_str(), e.what());
      code = 1;
    }
    if (interrupted) return 130;
    if (first_failure == 0) first_failure = code;
  }
  return first_failure;
}

int SweepReport::count(PointResult r) const {
  return static_cast<int>(std::count_if(points.begin(), points.end(),
                                        [r](const PointOutcome& p) { return p.result == r; }));
}

int SweepReport::exit_code() const {
  if (interrupted) return 130;
  return count(PointResult::kFailed) > 0 ? 1 : 0;
}

int default_jobs(const ResolvedSweep& sweep) {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cpus = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  if (cpus <= 0) cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int threads = 1;
  for (const auto& p : sweep.points) threads = std::max(threads, p.threads);
  return std::max(1, cpus / threads);
}

std::vector<PointDecision> decide_points(const ResolvedSweep& sweep) {
  std::vector<PointDecision> out;
  for (const auto& p : sweep.points) {
    out.push_back(decide_point(read_log_state(point_log_path(sweep, p)), p.resolved));
  }
  return out;
}

void write_point_files(const ResolvedSweep& sweep, const std::vector<size_t>& which) {
  create_folder(sweep);
  for (size_t i : which) {
    const ResolvedPoint& p = sweep.points[i];
    std::vector<std::string> extra;
    std::ofstream ini(point_ini_path(sweep, p));
    ini << point_ini_text(sweep, p, extra);
    if (!ini) throw UsageError("cannot write " + point_ini_path(sweep, p));
  }
}

SweepReport run_sweep(const ResolvedSweep& sweep, const RunnerOptions& options, std::FILE* out) {
  const auto t0 = Clock::now();
  std::error_code ec;
  create_folder(sweep);
  FolderLock lock(sweep.out_dir_absolute + "/.sweep.lock");
  SweepReport report;
  report.jobs = options.jobs > 0 ? options.jobs : default_jobs(sweep);
  const std::vector<PointDecision> decisions = decide_points(sweep);
  std::vector<size_t> todo;
  int resumes = 0, skips = 0;
  for (size_t i = 0; i < sweep.points.size(); ++i) {
    PointOutcome o;
    o.name = sweep.points[i].name;
    o.decision = decisions[i];
    if (o.decision.action == PointAction::kSkip) {
      o.result = PointResult::kSkipped;
      ++skips;
    } else {
      todo.push_back(i);
      resumes += o.decision.action == PointAction::kResume;
    }
    report.points.push_back(o);
  }
  std::fprintf(out,
               "sweep %s: %zu points in %s: %zu to run (%d to resume), %d already done; "
               "%d at a time\n",
               sweep.name.c_str(), sweep.points.size(), sweep.out_dir.c_str(), todo.size(), resumes,
               skips, report.jobs);
  for (const auto& o : report.points) {
    if (o.decision.action == PointAction::kSkip) {
      std::fprintf(out, "  skip   %s (%s)\n", o.name.c_str(), o.decision.why.c_str());
    }
  }
  std::fflush(out);
  std::vector<size_t> all(sweep.points.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  write_point_files(sweep, all);
  Runner runner(sweep, options, out, report);
  runner.run(todo);
  report.wall_s = since(t0);
  print_report(sweep, report, out);
  const bool all_logged = std::all_of(sweep.points.begin(), sweep.points.end(), [&](const auto& p) {
    return fs::exists(point_log_path(sweep, p), ec);
  });
  if (options.finish && !report.interrupted && all_logged) finish_folder(sweep, options, out);
  std::fflush(out);
  return report;
}

}  // namespace slowpipe::study
