// How faithful one transfer was, as every channel measures it: the relative
// error ||x - x_hat|| / ||x|| of what was sent (any device or dtype; compared
// as CPU fp32) against what the receiver reconstructed (CPU fp32, same shape),
// summed in double; 0 when ||x|| = 0. Distributed runs (distributed/) call it
// where the sender decodes its own message with a copy of the receiver's half,
// so their `*_rel_error` columns equal a single process's bit for bit.
#pragma once

#include <ATen/Tensor.h>

namespace slowpipe::compressors {

double transfer_rel_error(const at::Tensor& x, const at::Tensor& x_hat);

}  // namespace slowpipe::compressors
