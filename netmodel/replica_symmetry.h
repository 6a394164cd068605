// When are the data-parallel replicas of a replay interchangeable? Turning
// the cluster by one replica (replica r -> r + 1 mod D, host h -> h + hosts
// per replica) maps every device, link, NIC and message of a step to another
// one; when it also maps each to one of the same parameters, every replica
// sees the same step at the same times, and the replay needs to follow only
// replica 0 (the folded replay, replay.h; the proof and its limits:
// docs/netmodel.md, "Replica-symmetric replay"). That holds unless
//  * net.jitter > 0 (every message draws its own delay),
//  * a net.links override is not repeated on every replica's copy of the
//    pair (e.g. one slow link in one replica), or
//  * the replicas' ops differ (a recorded trace: each replica measured its
//    own seconds).
// Also here: moving between a full trace and its compact form (replica 0's
// ops standing for all, StepTrace::replicated).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "netmodel/net_config.h"
#include "netmodel/trace.h"

namespace slowpipe::netmodel {

// Why the replicas of `config` (S stages, D replicas) are not interchangeable,
// or "" when they are (D = 1 included).
std::string net_asymmetry(const NetConfig& config, int stages, int replicas);

// True when trace.replicas >= 2 and each replica's ops are replica 0's, in
// the same order, field for field (the replica field apart).
bool replicas_alike(const StepTrace& trace);

// Replica 0's ops of a full trace, with replicated set. `op_of` (if given)
// receives, per op of `full`, the index of its copy in the compact trace.
StepTrace compact_trace(const StepTrace& full, std::vector<int32_t>* op_of = nullptr);

// Every replica's ops of a compact trace, replica by replica.
StepTrace expand_trace(const StepTrace& compact);

}  // namespace slowpipe::netmodel
