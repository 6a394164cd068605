// State dictionaries; see state_dict.h.
#include "compressors/channels/state_dict.h"

#include <ATen/ATen.h>

#include <cstring>

#include "common/errors.h"

namespace slowpipe::compressors {

void put_int(StateDict& out, const std::string& key, int64_t value) {
  out[key] = at::full({1}, value, at::TensorOptions().dtype(at::kLong));
}

void put_u64(StateDict& out, const std::string& key, uint64_t value) {
  int64_t bits;
  std::memcpy(&bits, &value, 8);
  put_int(out, key, bits);
}

void put_floats(StateDict& out, const std::string& key, const std::vector<float>& values) {
  at::Tensor t = at::empty({static_cast<int64_t>(values.size())}, at::kFloat);
  if (!values.empty()) std::memcpy(t.data_ptr<float>(), values.data(), 4 * values.size());
  out[key] = t;
}

at::Tensor get_tensor(const StateDict& in, const std::string& key, at::ScalarType dtype,
                      int64_t numel) {
  auto it = in.find(key);
  if (it == in.end() || !it->second.defined())
    throw DataError("channel state: missing '" + key + "'");
  const at::Tensor& t = it->second;
  if (t.scalar_type() != dtype)
    throw DataError("channel state: '" + key + "' has dtype " +
                    std::string(at::toString(t.scalar_type())) + ", expected " +
                    std::string(at::toString(dtype)));
  if (numel >= 0 && t.numel() != numel)
    throw DataError("channel state: '" + key + "' has " + std::to_string(t.numel()) +
                    " elements, expected " + std::to_string(numel));
  return t.to(at::kCPU).contiguous();
}

int64_t get_int(const StateDict& in, const std::string& key) {
  return get_tensor(in, key, at::kLong, 1).data_ptr<int64_t>()[0];
}

uint64_t get_u64(const StateDict& in, const std::string& key) {
  int64_t bits = get_int(in, key);
  uint64_t value;
  std::memcpy(&value, &bits, 8);
  return value;
}

std::vector<float> get_floats(const StateDict& in, const std::string& key, int64_t numel) {
  at::Tensor t = get_tensor(in, key, at::kFloat, numel);
  const float* p = t.data_ptr<float>();
  return std::vector<float>(p, p + t.numel());
}

void put_codec_state(StateDict& out, const CodecState& state) {
  for (const auto& [key, value] : state) put_u64(out, key, value);
}

CodecState get_codec_state(const StateDict& in, const std::string& prefix) {
  CodecState state;
  for (auto it = in.lower_bound(prefix); it != in.end() && it->first.rfind(prefix, 0) == 0; ++it)
    state[it->first] = get_u64(in, it->first);
  return state;
}

void put_codec_arrays(StateDict& out, const CodecArrays& arrays) {
  for (const auto& [key, values] : arrays) put_floats(out, key, values);
}

CodecArrays get_codec_arrays(const StateDict& in, const std::string& prefix) {
  CodecArrays arrays;
  for (auto it = in.lower_bound(prefix); it != in.end() && it->first.rfind(prefix, 0) == 0; ++it)
    arrays[it->first] = get_floats(in, it->first, -1);
  return arrays;
}

}  // namespace slowpipe::compressors
