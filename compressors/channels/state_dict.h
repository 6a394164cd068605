// Named tensors that hold the state of channels and codecs, for checkpoints and
// bitwise resume: Channel::save_state / load_state (channel.h) put everything
// that shapes future transfers under names starting with a caller's prefix
// ("b0.fw." + "error", ...). Counters and generator states are int64 scalars
// (uint64 values stored bit for bit), residuals fp32, AQ-SGD buffers fp16.
// Reading checks presence, dtype and shape and throws DataError naming the key.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compressors/codecs/codec_state.h"

namespace slowpipe::compressors {

using StateDict = std::map<std::string, at::Tensor>;

void put_int(StateDict& out, const std::string& key, int64_t value);
void put_u64(StateDict& out, const std::string& key, uint64_t value);  // bit for bit
void put_floats(StateDict& out, const std::string& key, const std::vector<float>& values);

int64_t get_int(const StateDict& in, const std::string& key);
uint64_t get_u64(const StateDict& in, const std::string& key);
// The tensor under `key`, contiguous on the CPU; DataError when it is missing, of
// another dtype, or (when `numel` >= 0) of another element count.
at::Tensor get_tensor(const StateDict& in, const std::string& key, at::ScalarType dtype,
                      int64_t numel = -1);
std::vector<float> get_floats(const StateDict& in, const std::string& key, int64_t numel);

// A codec's state (codec_state.h): each word under its own key, as put_u64.
void put_codec_state(StateDict& out, const CodecState& state);
// Every key of `in` that starts with `prefix`, read back with get_u64 (so
// DataError for one that is not an int64 scalar); the codec's load_state then
// names any key that is missing.
CodecState get_codec_state(const StateDict& in, const std::string& prefix);
// A codec's arrays (codec_state.h), each as an fp32 tensor; every key of `in`
// that starts with `prefix`, read back as fp32 (DataError for another dtype).
void put_codec_arrays(StateDict& out, const CodecArrays& arrays);
CodecArrays get_codec_arrays(const StateDict& in, const std::string& prefix);

}  // namespace slowpipe::compressors
