// The replicas' gradient collective of each chunk, as messages (replay.h has
// the semantics): once all D replicas joined, either a ring all-reduce of
// 2(D-1) steps, each replica sending bytes/D to its successor and starting
// step k+1 when step k's chunk arrived, or (StepTrace::sharded_exchange) a
// sharded exchange: bytes/D to every other replica, and each server, once it
// holds all D-1 shards, bytes/D back to every other. Reports which replica a
// message completed; the event loop (replay_loop.h) then wakes its device.
// Leaves out: codec time (the encode and decode are the loop's).
#pragma once

#include <cstdint>
#include <vector>

#include "netmodel/internal/replay_ops.h"
#include "netmodel/internal/replay_transport.h"

namespace slowpipe::netmodel {

class Collective {
 public:
  Collective(const StepOps& ops, Transport& transport) : ops_(ops), transport_(transport) {}

  // Starts a step of `replicas` replicas, the op index already built.
  // Folded (replica-symmetric replay): only replica 0 is followed; a message
  // to replica k stands for the one replica 0 receives from replica D - k at
  // the same time, so replica 0 receives what it sends.
  void reset(int replicas, bool fold);
  // One more replica joined chunk c's collective (after its encode). Returns
  // true when that completed it at once (a single replica).
  bool join(int c);
  // A collective message arrived; returns the replica whose collective of
  // msg.chunk it completed, or -1.
  int on_arrival(const Message& msg);

 private:
  void send(Message m, int c, int from, int to, ConnectionKind kind);
  void start_ring_step(int c, int from, int step);
  void send_shard(int c, int from, int to, uint8_t phase);
  int on_shard_arrival(const Message& msg);

  const StepOps& ops_;
  Transport& transport_;
  int rep(int r) const { return fold_ ? 0 : r; }  // the replica that stands for r

  int replicas_ = 1;
  bool fold_ = false;
  std::vector<int32_t> joined_;  // [chunk]
  // Sharded exchange, [replica * C + chunk]: shards received as the server,
  // averaged shards received back.
  std::vector<int32_t> shards_in_, shards_back_;
};

}  // namespace slowpipe::netmodel
