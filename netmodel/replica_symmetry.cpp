// Replica symmetry of a network and a trace; compact and full traces
// (replica_symmetry.h).
#include "netmodel/replica_symmetry.h"

#include <cstring>
#include <map>
#include <utility>

#include "common/errors.h"

namespace slowpipe::netmodel {
namespace {

// A link's (bandwidth, latency) as the overrides leave it; {-1, -1}: the preset's.
using LinkParameters = std::pair<double, double>;

std::map<std::pair<int, int>, LinkParameters> overridden_pairs(
    const std::vector<LinkOverride>& overrides) {
  std::map<std::pair<int, int>, LinkParameters> pairs;  // (low host, high host)
  for (const auto& o : overrides) {
    const auto key = std::minmax(o.host_a, o.host_b);
    auto [it, added] = pairs.emplace(key, LinkParameters{-1, -1});
    it->second.first = o.bandwidth_bps;
    if (o.latency_s >= 0) it->second.second = o.latency_s;
  }
  return pairs;
}

// Equal ops, the replica apart (every field compared, so a new field counts).
bool same_op(const TraceOp& a, const TraceOp& b) {
  TraceOp c = b;
  c.replica = a.replica;
  return a.kind == c.kind && a.device == c.device && a.chunk == c.chunk && a.peer == c.peer &&
         a.microbatch == c.microbatch && a.compute_s == c.compute_s && a.encode_s == c.encode_s &&
         a.decode_s == c.decode_s && a.bytes == c.bytes && a.flops == c.flops &&
         a.thread_cpu_s == c.thread_cpu_s && a.memory_bytes == c.memory_bytes &&
         a.raw_bytes == c.raw_bytes && a.kernels == c.kernels;
}

}  // namespace

std::string net_asymmetry(const NetConfig& config, int stages, int replicas) {
  if (replicas < 2) return "";
  if (config.jitter_s > 0) return "net.jitter draws a delay per message";
  const auto pairs = overridden_pairs(config.links);
  const int per = host_of(config, stages, 1, 0);  // hosts per replica
  const long long hosts = static_cast<long long>(per) * replicas;
  const std::vector<double>& uplinks = config.host_uplink_bps;
  for (size_t h = static_cast<size_t>(per); h < uplinks.size() && h < static_cast<size_t>(hosts);
       ++h) {
    if (uplinks[h] != uplinks[h % static_cast<size_t>(per)]) {
      return "per-host access links differ (host " + std::to_string(h) + ")";
    }
  }
  for (const auto& [pair, parameters] : pairs) {
    if (pair.second >= hosts) return "";  // the topology refuses it with a clear message
    for (int k = 1; k < replicas; ++k) {
      const auto a = static_cast<int>((pair.first + static_cast<long long>(k) * per) % hosts);
      const auto b = static_cast<int>((pair.second + static_cast<long long>(k) * per) % hosts);
      const auto it = pairs.find(std::minmax(a, b));
      if (it == pairs.end() || it->second != parameters) {
        return "net.links sets " + std::to_string(pair.first) + "-" + std::to_string(pair.second) +
               " but not the same on " + std::to_string(a) + "-" + std::to_string(b);
      }
    }
  }
  return "";
}

bool replicas_alike(const StepTrace& trace) {
  const int D = trace.replicas;
  if (D < 2 || trace.replicated) return false;
  std::vector<size_t> first;  // replica 0's ops
  for (size_t i = 0; i < trace.ops.size(); ++i) {
    if (trace.ops[i].replica == 0) first.push_back(i);
  }
  if (first.size() * static_cast<size_t>(D) != trace.ops.size()) return false;
  std::vector<size_t> next(static_cast<size_t>(D), 0);
  for (const TraceOp& op : trace.ops) {
    if (op.replica < 0 || op.replica >= D) return false;
    size_t& k = next[static_cast<size_t>(op.replica)];
    if (k >= first.size() || !same_op(trace.ops[first[k]], op)) return false;
    ++k;
  }
  return true;
}

StepTrace compact_trace(const StepTrace& full, std::vector<int32_t>* op_of) {
  StepTrace compact = full;
  compact.ops.clear();
  compact.replicated = true;
  std::vector<int32_t> count(static_cast<size_t>(full.replicas), 0);
  if (op_of) op_of->assign(full.ops.size(), -1);
  for (size_t i = 0; i < full.ops.size(); ++i) {
    const TraceOp& op = full.ops[i];
    if (op.replica == 0) compact.ops.push_back(op);
    if (op_of) (*op_of)[i] = count[static_cast<size_t>(op.replica)]++;
  }
  return compact;
}

StepTrace expand_trace(const StepTrace& compact) {
  StepTrace full = compact;
  full.replicated = false;
  full.ops.clear();
  full.ops.reserve(compact.ops.size() * static_cast<size_t>(compact.replicas));
  for (int r = 0; r < compact.replicas; ++r) {
    for (TraceOp op : compact.ops) {
      op.replica = r;
      full.ops.push_back(op);
    }
  }
  return full;
}

}  // namespace slowpipe::netmodel
