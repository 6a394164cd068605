// A tensor's values as a vector of floats, shared by the codec tests.
#pragma once

#include <ATen/ATen.h>

#include <vector>

namespace slowpipe::test {

// t, contiguous and in fp32: its numel() values in order.
inline std::vector<float> floats(const at::Tensor& t) {
  at::Tensor c = t.contiguous().to(at::kFloat);
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

}  // namespace slowpipe::test
