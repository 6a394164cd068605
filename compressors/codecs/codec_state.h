// The state of a codec that shapes its future messages (the stochastic-rounding
// counter of q<b>, the generator of RandK): named 64-bit words. Plain C++, so
// that codecs need no libtorch; channels keep it in their tensor state
// dictionaries as int64 scalars, bit for bit (state_dict.h: put_codec_state,
// get_codec_state), so checkpoints hold the same keys and values as before.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/errors.h"

namespace slowpipe::compressors {

using CodecState = std::map<std::string, uint64_t>;
// Larger codec state (PowerSGD's warm-start factor Q): named fp32 arrays,
// kept by channels as fp32 tensors (state_dict.h: put_codec_arrays).
using CodecArrays = std::map<std::string, std::vector<float>>;

inline void put_u64(CodecState& out, const std::string& key, uint64_t value) {
  out[key] = value;
}

// DataError "channel state: missing 'KEY'" when absent (the message of state_dict.h).
inline uint64_t get_u64(const CodecState& in, const std::string& key) {
  auto it = in.find(key);
  if (it == in.end()) throw DataError("channel state: missing '" + key + "'");
  return it->second;
}

}  // namespace slowpipe::compressors
