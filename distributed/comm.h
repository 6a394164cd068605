// The transport of a distributed run, built on libtorch's c10d (no transport of
// our own): a TCPStore rendezvous served by rank 0, a Gloo process group over
// all ranks (NCCL where a CUDA libtorch is built in, SLOWPIPE_WITH_NCCL), and
// sub-groups per stage (its D replicas: data-parallel gradients) and per
// replica (its S stages: the global gradient norm).
//
// Point-to-point messages are byte tensors: a 64-byte header (payload size,
// rank and dimensions of the tensor it encodes) then the payload, the codec's
// message exactly. Sends complete in the background; wait_sends() waits for
// them. Every failure of c10d comes out as a DistError whose message says why
// the run stopped (the reason another rank posted, when one did: see
// watchdog.h), naming the rank and step.
//
// Rank 0's main thread never waits on a peer for good: once a reason to stop
// is posted (rank 0's watchdog names a rank silent for dist.timeout, e.g. one
// stopped with SIGSTOP or behind a vanished host, whose connections stay open),
// interrupt() ends its current wait, and the DistError lets the trainer write
// `status = failed`. Process groups that may still have an operation in flight
// are leaked at destruction (their destructors would wait for it).
#pragma once

#include <ATen/Tensor.h>
#include <torch/version.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/section_configs.h"
#include "distributed/launch.h"
#include "distributed/layout.h"

namespace c10d {
class Store;
class Work;
#if TORCH_VERSION_MAJOR >= 2
class Backend;
#else
class ProcessGroup;
#endif
}  // namespace c10d

namespace slowpipe::dist {

// A Gloo or NCCL process group: c10d::ProcessGroup in libtorch 1.x; in 2.x the
// backends are c10d::Backend objects with the same collective and
// point-to-point calls (ProcessGroup became a dispatcher over them).
#if TORCH_VERSION_MAJOR >= 2
using GroupImpl = c10d::Backend;
#else
using GroupImpl = c10d::ProcessGroup;
#endif

// A peer died or was unreachable, the run was stopped by another rank, or the
// configurations differ. `diverged`: another rank met a NaN/inf (the run's
// status is then "diverged", not "failed").
class DistError : public std::runtime_error {
 public:
  explicit DistError(const std::string& what, bool diverged = false)
      : std::runtime_error(what), diverged_(diverged) {}
  bool diverged() const { return diverged_; }

 private:
  bool diverged_;
};

using Bytes = std::vector<uint8_t>;
using Dims = std::vector<int64_t>;

// Store keys shared with the watchdog.
inline const char* const kAbortKey = "slowpipe/abort";
inline const char* const kAbortClaimKey = "slowpipe/abort_claim";
inline const char* const kDivergedPrefix = "diverged: ";
// A reason that is a usage error (a doubled rank, another configuration):
// every rank that reads it exits 2, as the one that posted it.
inline const char* const kUsagePrefix = "usage: ";
// `reason` without kUsagePrefix; `usage` says whether it had it.
inline std::string strip_usage(const std::string& reason, bool* usage = nullptr) {
  const bool u = reason.rfind(kUsagePrefix, 0) == 0;
  if (usage != nullptr) *usage = u;
  return u ? reason.substr(std::string(kUsagePrefix).size()) : reason;
}

class Comm {
 public:
  // Rendezvous within cfg.timeout_s (DistError naming the address otherwise):
  // every rank from 0 to world - 1 must join exactly once; a rank started
  // twice, or joining another launch's store, is refused (UsageError naming it).
  Comm(const config::DistConfig& cfg, Layout layout);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  // Connects the process groups (after the rendezvous; the watchdog already runs).
  void connect();

  int rank() const { return rank_; }
  // The c10d backend in use: "gloo" or "nccl" (valid after connect()).
  std::string backend() const { return nccl_ ? "nccl" : "gloo"; }
  const Layout& layout() const { return layout_; }
  const config::DistConfig& config() const { return cfg_; }
  // The rendezvous store (main thread only; the watchdog opens its own client).
  c10d::Store& store() { return *store_; }
  // The step the main thread is in (error messages, the watchdog).
  std::atomic<int64_t>& step() { return step_; }

  // Sends `payload` (the encoding of a tensor of `dims`) to `dst`; returns the
  // bytes handed to c10d (header included). Completes in the background.
  uint64_t send(const Bytes& payload, const Dims& dims, int dst, int tag);
  Bytes recv(int src, int tag, Dims* dims);
  void wait_sends();

  // Receives ahead. Gloo moves a message only once its receive is posted, so
  // a rank that posts each receive when an op needs its input leaves the
  // transfer idle while it computes. prefetch() receives `tags` from `src`, in
  // that order, on a background thread as soon as each arrives; take() hands
  // them out (waiting when needed); end_prefetch() joins the threads once every
  // message has been taken. A failed receive surfaces in take() as recv()'s would.
  void prefetch(int src, std::vector<int> tags);
  Bytes take(int src, int tag, Dims* dims);
  void end_prefetch();

  // Collectives. broadcast, barrier: the world; allreduce_sum, allgather: the
  // D replicas of this rank's stage (results in replica order);
  // allgather_replica: the S stages of this rank's replica ([S, n], stage order).
  void broadcast(at::Tensor& t, int root);
  void barrier();
  void allreduce_sum(at::Tensor& t);
  std::vector<Bytes> allgather(const Bytes& mine);
  at::Tensor allgather_replica(const at::Tensor& mine);

  // Posts the reason the run stops (the first poster wins) for every rank to see.
  void post_abort(const std::string& reason);
  // The posted reason, waiting up to `wait_s` for one to appear; "" if none.
  std::string abort_reason(double wait_s);
  // Throws the DistError for a failed `what`: the posted reason when another
  // rank gives one within dist.timeout + 2 s (rank 0's watchdog names a dead
  // rank after dist.timeout), else this failure (posted for the others).
  [[noreturn]] void fail(const std::string& what, const std::exception& e);

  // From another thread (the watchdog, once a reason is posted): ends the main
  // thread's current and later waits on peers, which then fail with the posted
  // reason. False while the main thread cannot be interrupted (connecting the
  // process groups): the caller then ends the process itself.
  bool interrupt();

 private:
  struct Prefetch;
  void join_rendezvous(const std::string& where);
  // Waits for a point-to-point operation (abortable) or a collective (polled).
  void wait_p2p(const c10::intrusive_ptr<c10d::Work>& work);
  void wait_collective(const c10::intrusive_ptr<c10d::Work>& work);
  [[noreturn]] void interrupted();
  // NCCL moves device tensors only: CPU tensors are staged on the GPU.
  at::Tensor on_wire(const at::Tensor& t) const;

  config::DistConfig cfg_;
  Layout layout_;
  int rank_;
  std::atomic<int64_t> step_{0};
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<GroupImpl> world_;
  c10::intrusive_ptr<GroupImpl> stage_group_, replica_group_;
  std::vector<std::pair<c10::intrusive_ptr<c10d::Work>, std::vector<at::Tensor>>> pending_;
  bool nccl_ = false;
  std::map<int, std::shared_ptr<Prefetch>> prefetch_;  // by source rank
  // interrupt(): the flag, and the point-to-point work the main thread waits on.
  std::mutex interrupt_mu_;
  std::atomic<bool> interrupted_{false}, connecting_{false}, failed_{false};
  c10::intrusive_ptr<c10d::Work> waiting_;
};

}  // namespace slowpipe::dist
