// Failure detection of a distributed run. Every rank runs one watchdog thread
// with its own client of the rendezvous store:
//   - every rank bumps its heartbeat key every `interval` (dist.timeout / 10,
//     between 50 ms and 1 s);
//   - rank 0 watches the others' heartbeats: a rank silent for dist.timeout
//     (killed, frozen, its host gone) is named in the abort reason it posts;
//   - under `slowpipe launch`, rank 0 also watches launch itself: should it
//     end (killed), rank 0 posts that as the reason (its other ranks die with
//     launch, launch.h);
//   - every other rank watches for a posted reason, and for the store itself
//     (it lives in rank 0): either ends the process at once with the reason.
// Rank 0's watchdog then interrupts the main thread's wait on its peers
// (Comm::interrupt: a stopped rank keeps its connections open, so no c10d
// operation fails by itself); the main thread ends the run with `status =
// failed`. Should it not within dist.timeout, or while it connects the process
// groups (no log yet), the watchdog ends rank 0 too. No rank waits longer
// than about 2 x dist.timeout after a death.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <thread>

#include "distributed/comm.h"

namespace c10d {
class Store;
}

namespace slowpipe::dist {

class Watchdog {
 public:
  explicit Watchdog(Comm& comm);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  // Stops watching (a clean end of the run); joins the thread.
  void stop();

 private:
  void run();
  bool watch_peers(double now_s);  // rank 0; false once it posted a reason
  bool watch_launcher();           // rank 0 under launch; false once it posted a reason
  void post(const std::string& reason);
  [[noreturn]] void leave(const std::string& reason);

  Comm& comm_;
  c10::intrusive_ptr<c10d::Store> store_;
  double interval_s_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<int64_t> beats_;
  std::vector<double> last_change_s_;
  double posted_at_s_ = -1;
  pid_t launcher_ = 0;  // slowpipe launch's pid (our parent), 0 when not under launch
};

}  // namespace slowpipe::dist
