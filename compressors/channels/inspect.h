// `slowpipe codec --spec SPEC [--shape B,T,C] [--dist normal|laplace]`: encodes
// a synthetic tensor and prints the message size, the ratio against fp32, the
// relative error and the encode/decode throughput, for teaching.
// For a scheme spec (ef(...), aq(...)) it inspects the inner codec: one
// stateless message, which is also AQ-SGD's steady-state message.
// `--dist from-run` (activations captured from a run) is not implemented.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "compressors/codecs/inspection_shape.h"  // check_inspection_shape

namespace slowpipe::compressors {

// How the timings are taken. Each codec encodes and decodes the tensor
// `repeat` times (1..1000) and reports its fastest; with `against` (a second
// spec, e.g. q4) both codecs run in the same process, their runs interleaved
// (the order swapped every round, so neither always runs second) and
// decoding into the same output, and the spec's times are also printed as
// multiples of the baseline's: a ratio that drifts less than absolute times
// on a noisy machine.
struct InspectOptions {
  int repeat = 5;
  std::string against;  // empty: no baseline
};

void run_codec_inspection(const std::string& spec, const std::vector<int64_t>& shape,
                          const std::string& dist, uint64_t seed, std::ostream& os,
                          const InspectOptions& options = {});

}  // namespace slowpipe::compressors
