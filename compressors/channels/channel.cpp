// Channel::transfer: the two halves of a transfer in one process.
#include "compressors/channels/channel.h"

#include "compressors/channels/internal/feedback.h"
#include "compressors/channels/rel_error.h"

namespace slowpipe::compressors {

at::Tensor Channel::transfer(const at::Tensor& x, const at::Tensor& sample_ids,
                             TransferStats* stats) {
  const at::Tensor xc = to_cpu_float(x);
  send(xc, sample_ids, wire_, stats);
  const at::Tensor out = receive(wire_, shape_of(xc), sample_ids, stats);
  set_rel_error(stats, xc, out);
  return like_input(out, x);
}

double transfer_rel_error(const at::Tensor& x, const at::Tensor& x_hat) {
  const at::Tensor xc = to_cpu_float(x);
  const at::Tensor oc = x_hat.contiguous();
  return relative_error(xc.data_ptr<float>(), oc.data_ptr<float>(), xc.numel());
}

}  // namespace slowpipe::compressors
