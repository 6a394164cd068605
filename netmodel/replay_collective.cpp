// Ring all-reduce and sharded exchange as chains of messages (replay_collective.h).
#include "netmodel/internal/replay_collective.h"

namespace slowpipe::netmodel {

void Collective::reset(int replicas, bool fold) {
  replicas_ = replicas;
  fold_ = fold && replicas > 1;
  const size_t chunk_slots =
      static_cast<size_t>(ops_.chunks()) * static_cast<size_t>(fold_ ? 1 : replicas);
  joined_.assign(ops_.chunks(), 0);
  shards_in_.assign(chunk_slots, 0);
  shards_back_.assign(chunk_slots, 0);
}

bool Collective::join(int c) {
  if (replicas_ == 1) return true;
  if (fold_ || ++joined_[c] == replicas_) {  // folded, all join with replica 0
    for (int k = 0; k < (fold_ ? 1 : replicas_); ++k) {
      if (!ops_.trace().sharded_exchange) {
        start_ring_step(c, k, 0);
        continue;
      }
      for (int j = 0; j < replicas_; ++j) {
        if (j != k) send_shard(c, k, j, 1);
      }
    }
  }
  return false;
}

// A message of chunk c's collective from replica `from` to replica `to`:
// 1/D of the sender's all-reduce message (ring step, or exchange shard).
void Collective::send(Message m, int c, int from, int to, ConnectionKind kind) {
  const int32_t op = ops_.all_reduce(from, c);
  const double bytes = static_cast<double>(ops_.op(op).bytes) / replicas_;
  m.collective = true;
  m.chunk = c;
  m.from = from;
  m.to = to;
  const int s = ops_.chunk_device(c);
  const Topology& topo = transport_.topology();
  transport_.send(m, ops_.device(from, s), ops_.device(to, s), kind, topo.host(from, s),
                  topo.host(to, s), bytes);
}

void Collective::start_ring_step(int c, int from, int step) {
  Message m;
  m.step = step;
  send(m, c, from, (from + 1) % replicas_, ConnectionKind::kRing);
}

// Sharded exchange: phase 1 to the shard's server `to`, phase 2 back from it.
void Collective::send_shard(int c, int from, int to, uint8_t phase) {
  Message m;
  m.shard_phase = phase;
  send(m, c, from, to, ConnectionKind::kExchange);
}

int Collective::on_arrival(const Message& msg) {
  if (msg.shard_phase != 0) return on_shard_arrival(msg);
  const int to = rep((msg.from + 1) % replicas_);
  if (msg.step + 1 < 2 * (replicas_ - 1)) {
    start_ring_step(msg.chunk, to, msg.step + 1);
    return -1;
  }
  return to;
}

// Replica `to` has its averaged moment once it served its own shard (all D-1
// shards in) and got every other server's average back.
int Collective::on_shard_arrival(const Message& msg) {
  const int c = msg.chunk, at = rep(msg.to);
  const size_t k = ops_.chunk_slot(at, c);
  if (msg.shard_phase == 1) {
    if (++shards_in_[k] == replicas_ - 1) {
      for (int j = 0; j < replicas_; ++j) {
        if (j != at) send_shard(c, at, j, 2);
      }
    }
  } else {
    ++shards_back_[k];
  }
  return shards_in_[k] == replicas_ - 1 && shards_back_[k] == replicas_ - 1 ? at : -1;
}

}  // namespace slowpipe::netmodel
