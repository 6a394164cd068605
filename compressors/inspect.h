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

namespace slowpipe::compressors {

void run_codec_inspection(const std::string& spec, std::vector<int64_t> shape,
                          const std::string& dist, uint64_t seed, std::ostream& os);

}  // namespace slowpipe::compressors
