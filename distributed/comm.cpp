// Comm: rendezvous, process groups, framed point-to-point bytes, collectives.
#include "distributed/comm.h"

#include <dlfcn.h>
#include <torch/torch.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef SLOWPIPE_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/errors.h"
#include "common/units.h"

namespace slowpipe::dist {
namespace {

using std::chrono::milliseconds;

constexpr int kHeaderInts = 8;  // size, rank, 6 dimensions: 64 bytes
// c10d ops wait this long at most; failures are found by the watchdog well before.
constexpr milliseconds kOpTimeout{std::chrono::hours(24)};

std::string what_of(const std::exception& e) {
  if (const auto* c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
  return e.what();
}

std::shared_ptr<::gloo::transport::Device> gloo_device() {
  // As torchrun does: GLOO_SOCKET_IFNAME picks the interface (scripts/shaped-net.sh
  // uses it); otherwise the address this host's name resolves to, else loopback.
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

bool use_nccl(const config::DistConfig& cfg) {
#ifdef SLOWPIPE_WITH_NCCL
  return cfg.backend == "nccl" || (cfg.backend == "auto" && torch::cuda::is_available());
#else
  if (cfg.backend == "nccl")
    throw UsageError(
        "dist.backend = nccl, but this slowpipe was built against a CPU-only libtorch (no "
        "NCCL); use gloo");
  return false;
#endif
}

c10::intrusive_ptr<GroupImpl> make_group(const c10::intrusive_ptr<c10d::Store>& store,
                                         const std::string& prefix, int rank, int size, bool nccl) {
  auto scoped = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
#ifdef SLOWPIPE_WITH_NCCL
  if (nccl) {
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = kOpTimeout;
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(scoped, rank, size, opts);
  }
#else
  (void)nccl;
#endif
  auto opts = c10d::ProcessGroupGloo::Options::create(kOpTimeout);
  opts->devices.push_back(gloo_device());
  opts->threads = 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(scoped, rank, size, opts);
}

// c10d logs through the glog that libtorch loaded: its warnings and errors
// (a port in use, a peer gone) repeat, raw, what slowpipe's own message says
// in one line. Unless dist.verbose or the user's GLOG_minloglevel, only
// fatal lines pass. The flag is looked up in the loaded library (linking a
// glog of our own could load a second copy, which libtorch would not read).
void quiet_c10d_logging(bool verbose) {
  if (verbose || std::getenv("GLOG_minloglevel") != nullptr) return;
  if (auto* level = static_cast<int32_t*>(::dlsym(RTLD_DEFAULT, "_ZN3fLI17FLAGS_minloglevelE")))
    *level = 3;  // google::GLOG_FATAL
}

}  // namespace

Comm::Comm(const config::DistConfig& cfg, Layout layout)
    : cfg_(cfg), layout_(layout), rank_(cfg.rank) {
  quiet_c10d_logging(cfg.verbose);
  const auto timeout = milliseconds(static_cast<int64_t>(cfg.timeout_s * 1000));
  const std::string where = cfg.master_addr + ":" + std::to_string(cfg.master_port);
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<uint16_t>(cfg.master_port);
  opts.isServer = rank_ == 0;
  opts.waitWorkers = false;  // waited for below, with the timeout
  opts.timeout = timeout;
  const std::string within = format_duration(cfg.timeout_s) + " (dist.timeout)";
  try {
    store_ = c10::make_intrusive<c10d::TCPStore>(cfg.master_addr, opts);
  } catch (const std::exception& e) {
    if (rank_ == 0) {
      const std::string why =
          "rank 0 could not serve the rendezvous at " + where + ": " + what_of(e);
      // The port is taken (another run, another program): the user's to change.
      if (why.find("Address already in use") != std::string::npos)
        throw UsageError(why + "; choose a free --port (or MASTER_PORT)");
      throw DistError(why);
    }
    throw DistError(
        layout.name(rank_) + " could not reach the rendezvous at " + where + " within " + within +
        "; is rank 0 running, and are MASTER_ADDR and MASTER_PORT right? (" + what_of(e) + ")");
  }
  try {
    join_rendezvous(where);
  } catch (const DistError&) {
    throw;
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {  // the store's own timeout, a broken connection
    throw DistError(layout.name(rank_) + ": lost the rendezvous at " + where +
                    " while joining (did rank 0 stop? see its message; dist.timeout " +
                    format_duration(cfg.timeout_s) + "): " + what_of(e));
  }
}

namespace {

// The rendezvous keys in the store (Comm::join_rendezvous).
const char* const kLaunchIdKey = "slowpipe/launch_id";
const char* const kJoinedKey = "slowpipe/joined";
const char* const kJoinedOkKey = "slowpipe/joined_ok";

std::string rank_key(int r) {
  return "slowpipe/rank/" + std::to_string(r);
}

// A reason another rank posted (e.g. the other process of a doubled rank).
std::string posted_reason(c10d::Store& store) {
  if (!store.check({kAbortKey})) return std::string();
  const auto v = store.get(kAbortKey);
  return strip_usage(std::string(v.begin(), v.end()));
}

// What the ranks of one run share: slowpipe launch's id, else the Slurm job
// and step, else nothing (ranks started by hand).
std::string run_identity() {
  if (const char* id = std::getenv(kLaunchIdVar)) return id;
  if (const char* job = std::getenv("SLURM_JOB_ID")) {
    const char* step = std::getenv("SLURM_STEP_ID");
    return std::string("slurm ") + job + "." + (step ? step : "");
  }
  return "";
}

// Rank 0 writes this run's identity; the others read it before writing
// anything (the store may be another run's).
void check_launch_id(c10d::Store& store, int rank, const std::string& where, milliseconds timeout) {
  const std::string my_id = run_identity();
  if (rank == 0) {
    store.set(kLaunchIdKey, std::vector<uint8_t>(my_id.begin(), my_id.end()));
    return;
  }
  store.wait({kLaunchIdKey}, timeout);
  const auto v = store.get(kLaunchIdKey);
  if (std::string(v.begin(), v.end()) != my_id)
    throw UsageError("the rendezvous at " + where +
                     " belongs to another run (another slowpipe launch or Slurm job serves that "
                     "port); choose a free --port (or MASTER_PORT)");
}

// Rank 0: waits until `world` check-ins, then that each rank checked in once.
void await_every_rank(Comm& comm, const std::string& where, const std::string& within,
                      const std::string& every_rank, std::chrono::steady_clock::time_point until) {
  c10d::Store& store = comm.store();
  const int world = comm.layout().world();
  int64_t n = 0;
  while ((n = store.add(kJoinedKey, 0)) < world) {
    if (const std::string why = posted_reason(store); !why.empty()) {
      std::this_thread::sleep_for(milliseconds(1000));  // as below
      throw UsageError(why);
    }
    if (std::chrono::steady_clock::now() > until)
      throw DistError("only " + std::to_string(n) + " of " + std::to_string(world) +
                      " ranks joined the rendezvous at " + where + " within " + within +
                      "; start every rank with the same WORLD_SIZE and MASTER_ADDR:MASTER_PORT");
    std::this_thread::sleep_for(milliseconds(20));
  }
  std::string twice, never;
  for (int r = 0; r < world; ++r) {
    const int64_t c = store.add(rank_key(r), 0);
    if (c > 1) twice += (twice.empty() ? "" : ", ") + std::to_string(r);
    if (c == 0) never += (never.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!twice.empty() || !never.empty()) {
    const std::string why = "ranks started twice: " + (twice.empty() ? "none" : twice) +
                            "; never started: " + (never.empty() ? "none" : never) + "; " +
                            every_rank + " (rendezvous " + where + ")";
    comm.post_abort(kUsagePrefix + why);
    // The store ends with this process: let the others read the reason first.
    std::this_thread::sleep_for(milliseconds(1000));
    throw UsageError(why);
  }
  store.set(kJoinedOkKey, std::vector<uint8_t>{1});
}

// The other ranks: wait for rank 0 to confirm that all joined.
void await_confirmation(Comm& comm, int rank, const std::string& where, const std::string& within,
                        std::chrono::steady_clock::time_point deadline) {
  c10d::Store& store = comm.store();
  while (!store.check({kJoinedOkKey})) {
    if (const std::string why = posted_reason(store); !why.empty()) throw UsageError(why);
    if (std::chrono::steady_clock::now() > deadline)
      throw DistError(comm.layout().name(rank) + ": rank 0 did not confirm that all " +
                      std::to_string(comm.layout().world()) + " ranks joined the rendezvous at " +
                      where + " within " + within);
    std::this_thread::sleep_for(milliseconds(20));
  }
}

}  // namespace

// Every rank checks in once under its own key; rank 0 waits until all have,
// then confirms. A second process with the same rank stops the run (it is
// the only way the count can be reached while a rank is missing).
void Comm::join_rendezvous(const std::string& where) {
  const auto timeout = milliseconds(static_cast<int64_t>(cfg_.timeout_s * 1000));
  const std::string within = format_duration(cfg_.timeout_s) + " (dist.timeout)";
  const int world = layout_.world();
  const std::string every_rank = "start each rank from 0 to " + std::to_string(world - 1) + " once";
  check_launch_id(*store_, rank_, where, timeout);
  // A run already past its rendezvous is left alone: a late process (a stray
  // duplicate of a rank) only reads the store and leaves.
  const std::string late =
      "the rendezvous at " + where + " serves a run whose " + std::to_string(world) +
      " ranks have all joined already; this process (RANK=" + std::to_string(rank_) +
      ") is not part of it and leaves it alone; " + every_rank;
  if (store_->check({kJoinedOkKey})) throw UsageError(late);
  if (store_->add(rank_key(rank_), 1) > 1) {
    if (store_->check({kJoinedOkKey})) throw UsageError(late);
    const std::string why = "rank " + std::to_string(rank_) +
                            " was started twice (two processes with RANK=" + std::to_string(rank_) +
                            " joined the rendezvous at " + where + "); " + every_rank;
    post_abort(kUsagePrefix + why);
    throw UsageError(why);
  }
  store_->add(kJoinedKey, 1);
  const auto until = std::chrono::steady_clock::now() + timeout;
  if (rank_ == 0) {
    await_every_rank(*this, where, within, every_rank, until);
    return;
  }
  // Rank 0 waits up to dist.timeout for the others; a little longer here.
  await_confirmation(*this, rank_, where, within, until + milliseconds(2000));
}

void Comm::connect() {
  nccl_ = use_nccl(cfg_);
  // The watchdog runs meanwhile; connecting cannot be interrupted (interrupt()).
  connecting_ = true;
  try {
    world_ = make_group(store_, "world/", rank_, layout_.world(), nccl_);
    const int r = layout_.replica_of(rank_), s = layout_.stage_of(rank_);
    stage_group_ =
        make_group(store_, "stage" + std::to_string(s) + "/", r, layout_.replicas, nccl_);
    replica_group_ =
        make_group(store_, "replica" + std::to_string(r) + "/", s, layout_.stages, nccl_);
  } catch (const std::exception& e) {
    connecting_ = false;
    throw DistError(layout_.name(rank_) + ": connecting the process groups failed: " + what_of(e));
  }
  connecting_ = false;
}

// One source's messages received ahead (prefetch()).
struct Comm::Prefetch {
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  std::map<int, std::pair<Bytes, Dims>> ready;  // by tag
  bool failed = false;
  std::string error;
};

Comm::~Comm() {
  // After a failure a prefetch thread may still wait on a peer that is gone;
  // it holds what it uses and ends with the process.
  for (auto& [src, p] : prefetch_)
    if (p->thread.joinable()) p->thread.detach();
  if (failed_ || interrupted_) {
    // A group's destructor joins its worker threads, which may wait on a
    // stopped peer for good: leave them to the end of the process.
    for (auto* g : {&world_, &stage_group_, &replica_group_}) (void)g->release();
    for (auto& [work, tensors] : pending_) (void)work.release();
    (void)waiting_.release();
  }
}

bool Comm::interrupt() {
  std::lock_guard<std::mutex> lock(interrupt_mu_);
  interrupted_ = true;
  if (waiting_) {
    try {
      waiting_->abort();
    } catch (const std::exception&) {
      // A work without abort(): the main thread looks at the flag instead.
    }
  }
  return !connecting_;
}

void Comm::interrupted() {
  fail("waiting on a peer", std::runtime_error("interrupted: the run is stopping"));
}

void Comm::wait_p2p(const c10::intrusive_ptr<c10d::Work>& work) {
  {
    std::lock_guard<std::mutex> lock(interrupt_mu_);
    if (interrupted_) interrupted();
    waiting_ = work;
  }
  bool done = false;
  try {
    done = work->wait(kOpTimeout);
  } catch (...) {
    std::lock_guard<std::mutex> lock(interrupt_mu_);
    waiting_.reset();
    throw;
  }
  {
    std::lock_guard<std::mutex> lock(interrupt_mu_);
    waiting_.reset();
  }
  if (!done) interrupted();  // wait() returns false once aborted
}

void Comm::wait_collective(const c10::intrusive_ptr<c10d::Work>& work) {
  // A collective's work has no abort(): its future's callback wakes this
  // wait, which looks at the flag every 50 ms meanwhile.
  struct Signal {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto signal = std::make_shared<Signal>();
  work->getFuture()->addCallback([signal](c10::ivalue::Future&) {
    std::lock_guard<std::mutex> lock(signal->mu);
    signal->done = true;
    signal->cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(signal->mu);
    while (!signal->cv.wait_for(lock, milliseconds(50), [&] { return signal->done; })) {
      if (interrupted_) {
        lock.unlock();
        interrupted();
      }
    }
  }
  work->wait(kOpTimeout);  // throws what made it fail
}

void Comm::prefetch(int src, std::vector<int> tags) {
  auto p = std::make_shared<Prefetch>();
  auto group = world_;
  const bool nccl = nccl_;
  p->thread = std::thread([p, group, src, tags = std::move(tags), nccl] {
    const auto wire = [nccl](const at::Tensor& t) { return nccl ? t.to(at::kCUDA) : t; };
    try {
      for (int tag : tags) {
        std::vector<at::Tensor> header = {wire(at::zeros({kHeaderInts}, at::kLong))};
        group->recv(header, src, 2 * tag)->wait(kOpTimeout);
        const at::Tensor head = header[0].cpu();
        const int64_t* h = head.data_ptr<int64_t>();
        if (h[0] < 0 || h[1] < 0 || h[1] > kHeaderInts - 2)
          throw DataError("malformed message header");
        Dims dims(h + 2, h + 2 + h[1]);
        std::vector<at::Tensor> body = {wire(at::empty({h[0]}, at::kByte))};
        group->recv(body, src, 2 * tag + 1)->wait(kOpTimeout);
        const at::Tensor bytes = body[0].cpu();
        const uint8_t* b = bytes.data_ptr<uint8_t>();
        std::lock_guard<std::mutex> lock(p->mu);
        p->ready[tag] = {Bytes(b, b + h[0]), std::move(dims)};
        p->cv.notify_all();
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(p->mu);
      p->failed = true;
      p->error = what_of(e);
      p->cv.notify_all();
    }
  });
  prefetch_[src] = std::move(p);
}

Bytes Comm::take(int src, int tag, Dims* dims) {
  const auto it = prefetch_.find(src);
  if (it == prefetch_.end()) return recv(src, tag, dims);
  Prefetch& p = *it->second;
  std::unique_lock<std::mutex> lock(p.mu);
  while (!p.cv.wait_for(lock, milliseconds(50), [&] { return p.ready.count(tag) > 0 || p.failed; }))
    if (interrupted_) {
      lock.unlock();
      interrupted();
    }
  const auto got = p.ready.find(tag);
  if (got == p.ready.end()) {
    const std::runtime_error e(p.error);
    lock.unlock();
    fail("receiving from " + layout_.name(src), e);
  }
  Bytes out = std::move(got->second.first);
  if (dims) *dims = std::move(got->second.second);
  p.ready.erase(got);
  return out;
}

void Comm::end_prefetch() {
  for (auto& [src, p] : prefetch_)
    if (p->thread.joinable()) p->thread.join();
  prefetch_.clear();
}

void Comm::post_abort(const std::string& reason) {
  try {
    if (store_->add(kAbortClaimKey, 1) == 1)
      store_->set(kAbortKey, std::vector<uint8_t>(reason.begin(), reason.end()));
  } catch (const std::exception&) {
    // The store is gone with rank 0: nobody is left to tell.
  }
}

std::string Comm::abort_reason(double wait_s) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(wait_s * 1000));
  try {
    while (true) {
      if (store_->check({kAbortKey})) {
        const auto v = store_->get(kAbortKey);
        return std::string(v.begin(), v.end());
      }
      if (std::chrono::steady_clock::now() >= until) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } catch (const std::exception&) {
    return "the rendezvous store on rank 0 is gone (rank 0 died or ended the run)";
  }
}

void Comm::fail(const std::string& what, const std::exception& e) {
  failed_ = true;
  // A broken connection is most often a dead peer, which rank 0's watchdog
  // names once it has been silent for dist.timeout; a rank that failed on its
  // own posts its reason at once. Wait for either before blaming this failure.
  bool usage = false;
  std::string reason = strip_usage(abort_reason(cfg_.timeout_s + 2.0), &usage);
  if (usage) throw UsageError(reason);
  const bool diverged = reason.rfind(kDivergedPrefix, 0) == 0;
  if (diverged) reason = reason.substr(std::strlen(kDivergedPrefix));
  if (reason.empty()) {
    reason = layout_.name(rank_) + ": " + what + " failed during step " +
             std::to_string(step_.load()) + ": " + what_of(e);
    post_abort(reason);
  }
  throw DistError(reason, diverged);
}

namespace {
// Runs f; any c10d failure becomes comm.fail(what).
template <class F>
auto guarded(Comm& comm, const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const DistError&) {
    throw;
  } catch (const std::exception& e) {
    comm.fail(what, e);
  }
}
}  // namespace

at::Tensor Comm::on_wire(const at::Tensor& t) const {
  return nccl_ ? t.to(at::kCUDA) : t;
}

uint64_t Comm::send(const Bytes& payload, const Dims& dims, int dst, int tag) {
  if (dims.size() > kHeaderInts - 2) throw std::logic_error("dist: tensors of rank > 6");
  at::Tensor header = at::zeros({kHeaderInts}, at::kLong);
  int64_t* h = header.data_ptr<int64_t>();
  h[0] = static_cast<int64_t>(payload.size());
  h[1] = static_cast<int64_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) h[2 + i] = dims[i];
  at::Tensor body = at::empty({static_cast<int64_t>(payload.size())}, at::kByte);
  if (!payload.empty()) std::memcpy(body.data_ptr<uint8_t>(), payload.data(), payload.size());
  guarded(*this, "sending to " + layout_.name(dst), [&] {
    for (int part = 0; part < 2; ++part) {
      std::vector<at::Tensor> v = {on_wire(part == 0 ? header : body)};
      auto work = world_->send(v, dst, 2 * tag + part);
      pending_.emplace_back(std::move(work), std::move(v));
    }
  });
  return static_cast<uint64_t>(header.nbytes() + body.nbytes());
}

Bytes Comm::recv(int src, int tag, Dims* dims) {
  const std::string what = "receiving from " + layout_.name(src);
  std::vector<at::Tensor> header = {on_wire(at::zeros({kHeaderInts}, at::kLong))};
  guarded(*this, what, [&] { wait_p2p(world_->recv(header, src, 2 * tag)); });
  const at::Tensor head = header[0].cpu();
  const int64_t* h = head.data_ptr<int64_t>();
  if (h[0] < 0 || h[1] < 0 || h[1] > kHeaderInts - 2)
    throw DataError(what + ": malformed message header");
  if (dims) dims->assign(h + 2, h + 2 + h[1]);
  std::vector<at::Tensor> body = {on_wire(at::empty({h[0]}, at::kByte))};
  guarded(*this, what, [&] { wait_p2p(world_->recv(body, src, 2 * tag + 1)); });
  const at::Tensor bytes = body[0].cpu();
  const uint8_t* p = bytes.data_ptr<uint8_t>();
  return Bytes(p, p + h[0]);
}

void Comm::wait_sends() {
  guarded(*this, "a send", [&] {
    for (auto& [work, tensors] : pending_) wait_p2p(work);
  });
  pending_.clear();
}

void Comm::broadcast(at::Tensor& t, int root) {
  std::vector<at::Tensor> v = {on_wire(t)};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  guarded(*this, "a broadcast from rank " + std::to_string(root),
          [&] { wait_collective(world_->broadcast(v, opts)); });
  if (nccl_) t.copy_(v[0].cpu());
}

void Comm::barrier() {
  std::vector<at::Tensor> v = {on_wire(at::zeros({1}, at::kLong))};
  guarded(*this, "the final barrier", [&] { wait_collective(world_->allreduce(v)); });
}

void Comm::allreduce_sum(at::Tensor& t) {
  std::vector<at::Tensor> v = {on_wire(t)};
  guarded(*this, "the gradient all-reduce of stage " + std::to_string(layout_.stage_of(rank_)),
          [&] { wait_collective(stage_group_->allreduce(v)); });
  if (nccl_) t.copy_(v[0].cpu());
}

std::vector<Bytes> Comm::allgather(const Bytes& mine) {
  const int D = layout_.replicas;
  return guarded(*this, "the gradient exchange of stage " + std::to_string(layout_.stage_of(rank_)),
                 [&] {
                   // Sizes first (codecs may vary), then the payloads padded to the largest.
                   std::vector<at::Tensor> in = {
                       on_wire(at::full({1}, static_cast<int64_t>(mine.size()), at::kLong))};
                   std::vector<std::vector<at::Tensor>> sizes(1);
                   for (int r = 0; r < D; ++r)
                     sizes[0].push_back(on_wire(at::empty({1}, at::kLong)));
                   wait_collective(stage_group_->allgather(sizes, in));
                   int64_t largest = 0;
                   for (const auto& t : sizes[0])
                     largest = std::max(largest, t.cpu().item<int64_t>());
                   at::Tensor body = at::zeros({largest}, at::kByte);
                   if (!mine.empty())
                     std::memcpy(body.data_ptr<uint8_t>(), mine.data(), mine.size());
                   std::vector<at::Tensor> in2 = {on_wire(body)};
                   std::vector<std::vector<at::Tensor>> out(1);
                   for (int r = 0; r < D; ++r)
                     out[0].push_back(on_wire(at::empty({largest}, at::kByte)));
                   wait_collective(stage_group_->allgather(out, in2));
                   std::vector<Bytes> result;
                   for (int r = 0; r < D; ++r) {
                     const at::Tensor got = out[0][r].cpu();
                     const uint8_t* p = got.data_ptr<uint8_t>();
                     result.emplace_back(p, p + sizes[0][r].cpu().item<int64_t>());
                   }
                   return result;
                 });
}

at::Tensor Comm::allgather_replica(const at::Tensor& mine) {
  std::vector<at::Tensor> in = {on_wire(mine.contiguous())};
  std::vector<std::vector<at::Tensor>> out(1);
  for (int s = 0; s < layout_.stages; ++s) out[0].push_back(at::empty_like(in[0]));
  guarded(*this,
          "the gradient-norm exchange of replica " + std::to_string(layout_.replica_of(rank_)),
          [&] { wait_collective(replica_group_->allgather(out, in)); });
  return at::stack(out[0]).cpu();
}

}  // namespace slowpipe::dist
