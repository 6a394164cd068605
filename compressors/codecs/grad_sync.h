// What data-parallel replicas exchange each step (docs/grad-sync.md): the one
// enum behind `compress.grad_sync` (training; CompressConfig, config.h) and
// `timing.grad_sync` (the timing model, whatif/), with its one name/parser
// pair. It belongs with the compress config: the momentum exchange is
// AQ-SGD's end-to-end compression. The names are the option
// values, the log attributes and the words of messages; they never change.
// Leaves out what each exchange costs or computes (netmodel, sim).
#pragma once

#include <string>

#include "common/errors.h"
#include "common/options.h"

namespace slowpipe::compressors {

enum class GradSync {
  kAllReduce,  // "allreduce": each stage's gradient, averaged (ring all-reduce)
  kMomentum,   // "momentum": the optimizer's first moment, sharded (AQ-SGD)
};
inline constexpr GradSync kGradSyncs[] = {GradSync::kAllReduce, GradSync::kMomentum};

inline const char* grad_sync_name(GradSync g) {
  switch (g) {
    case GradSync::kAllReduce:
      return "allreduce";
    case GradSync::kMomentum:
      return "momentum";
  }
  return "unknown";
}

// The value named `text`; UsageError naming `key` otherwise (OptionSet's
// choice message).
inline GradSync parse_grad_sync(const std::string& key, const std::string& text) {
  for (GradSync g : kGradSyncs)
    if (text == grad_sync_name(g)) return g;
  throw UsageError("bad value for '" + key + "': '" + text +
                   "' (expected one of allreduce|momentum)");
}

// Binds `g` to the choice option `key` (compress.grad_sync, timing.grad_sync).
inline void add_grad_sync_option(OptionSet& o, const std::string& key, GradSync& g,
                                 const std::string& help) {
  o.add_choice(
      key, {grad_sync_name(GradSync::kAllReduce), grad_sync_name(GradSync::kMomentum)}, help,
      [&g, key](const std::string& v) { g = parse_grad_sync(key, v); },
      [&g] { return std::string(grad_sync_name(g)); });
}

}  // namespace slowpipe::compressors
