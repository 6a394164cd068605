// Cutting a model into pipeline stages. A cut is S+1 block boundaries
// [0, c1, ..., n_blocks]: stage s runs blocks [cuts[s], cuts[s+1]).
//
// User cuts (pipeline.cuts = "2,4,6": the blocks where stages 1..S-1 begin) win
// when given. Otherwise the blocks are balanced: the contiguous partition that
// minimises the largest stage cost (exact, by dynamic programming), the cost of a
// block being its parameter count ("params") or its measured forward+backward
// time on a probe batch ("time"). Measured times vary from run to run, so
// "time" cuts are not reproducible; record the resolved cuts in the run log.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "models/torch/dataset.h"
#include "models/torch/model.h"

namespace slowpipe::models {

// Throws UsageError on bad cuts (count != S-1, not strictly increasing, out of
// [1, n_blocks-1]), S < 1, S > n_blocks, an unknown balance, or balance "time"
// with no probe.
std::vector<size_t> resolve_cuts(const Model& model, int stages,
                                 const std::vector<int64_t>& user_cuts,
                                 const std::string& balance /* params|time */, const Batch* probe);

// Cost of each block: its number of scalar parameters.
std::vector<double> block_parameter_costs(const Model& model);

// Seconds of forward + backward of each block on `probe`, run block after block
// (each block's input is the previous block's output, detached), best of
// `repeats`. Runs in eval mode (no dropout draws) and leaves the parameters'
// gradients and training flags as it found them.
std::vector<double> measure_block_times_s(const Model& model, const Batch& probe, int repeats = 3);

// The S+1 boundaries of the contiguous partition of `costs` into `stages`
// non-empty groups that minimises the largest group sum (ties: earliest cuts).
std::vector<size_t> balance_cuts(const std::vector<double>& costs, int stages);

}  // namespace slowpipe::models
