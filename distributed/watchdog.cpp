// Watchdog: heartbeats, dead-rank detection and the abort path (watchdog.h).
#include "distributed/internal/watchdog.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "distributed/launch.h"

namespace slowpipe::dist {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string beat_key(int rank) {
  return "slowpipe/heartbeat/" + std::to_string(rank);
}

}  // namespace

Watchdog::Watchdog(Comm& comm)
    : comm_(comm), interval_s_(std::clamp(comm.config().timeout_s / 10, 0.05, 1.0)) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<uint16_t>(comm.config().master_port);
  opts.isServer = false;
  opts.waitWorkers = false;
  opts.timeout = std::chrono::milliseconds(static_cast<int64_t>(comm.config().timeout_s * 1000));
  store_ = c10::make_intrusive<c10d::TCPStore>(comm.config().master_addr, opts);
  const int world = comm.layout().world();
  beats_.assign(static_cast<size_t>(world), -1);
  last_change_s_.assign(static_cast<size_t>(world), now_s());
  if (std::getenv(kLaunchIdVar) != nullptr) launcher_ = ::getppid();
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  stop();
}

void Watchdog::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

// Exits with the reason's code: 4 diverged, 2 a usage error, else 1.
void Watchdog::leave(const std::string& reason) {
  bool usage = false;
  std::string text = strip_usage(reason, &usage);
  const bool diverged = text.rfind(kDivergedPrefix, 0) == 0;
  if (diverged) text = text.substr(std::strlen(kDivergedPrefix));
  std::fprintf(stderr, "slowpipe train: %s stops: %s\n", comm_.layout().name(comm_.rank()).c_str(),
               text.c_str());
  std::fflush(stderr);
  ::_exit(diverged ? 4 : usage ? 2 : 1);
}

bool Watchdog::watch_peers(double now) {
  const Layout& layout = comm_.layout();
  for (int r = 1; r < layout.world(); ++r) {
    const int64_t beat = store_->add(beat_key(r), 0);
    if (beat != beats_[static_cast<size_t>(r)]) {
      beats_[static_cast<size_t>(r)] = beat;
      last_change_s_[static_cast<size_t>(r)] = now;
      continue;
    }
    const double silent = now - last_change_s_[static_cast<size_t>(r)];
    if (silent < comm_.config().timeout_s) continue;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", silent);
    const std::string reason = layout.name(r) + " stopped responding (no heartbeat for " + buf +
                               " s, dist.timeout) during step " +
                               std::to_string(comm_.step().load());
    post(reason);
    return false;
  }
  return true;
}

// The first reason posted wins.
void Watchdog::post(const std::string& reason) {
  if (store_->add(kAbortClaimKey, 1) == 1)
    store_->set(kAbortKey, std::vector<uint8_t>(reason.begin(), reason.end()));
}

bool Watchdog::watch_launcher() {
  if (launcher_ == 0 || ::getppid() == launcher_) return true;
  post("slowpipe launch (pid " + std::to_string(launcher_) + ") ended during step " +
       std::to_string(comm_.step().load()) + "; its workers end with it");
  return false;
}

void Watchdog::run() {
  const int rank = comm_.rank();
  while (!stop_) {
    const double now = now_s();
    try {
      store_->add(beat_key(rank), 1);
      if (rank == 0) {
        if (posted_at_s_ < 0 &&
            (!watch_launcher() || store_->check({kAbortKey}) || !watch_peers(now))) {
          posted_at_s_ = now;
          // The main thread stops waiting on peers and writes the failure to
          // the log; while it connects the process groups there is no log yet.
          if (!comm_.interrupt()) {
            const auto v = store_->get(kAbortKey);
            leave(std::string(v.begin(), v.end()));
          }
        }
        // The main thread normally ends the run itself once its peers are gone.
        if (posted_at_s_ >= 0 && now - posted_at_s_ > comm_.config().timeout_s) {
          const auto v = store_->get(kAbortKey);
          leave(std::string(v.begin(), v.end()) + " (rank 0's main thread did not stop in time)");
        }
      } else if (store_->check({kAbortKey})) {
        const auto v = store_->get(kAbortKey);
        leave(std::string(v.begin(), v.end()));
      }
    } catch (const std::exception& e) {
      if (stop_) return;
      if (rank != 0) leave("lost the rendezvous store on rank 0 (rank 0 died or ended the run)");
    }
    const auto until = now + interval_s_;
    while (!stop_ && now_s() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace slowpipe::dist
