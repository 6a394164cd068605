// The messages of `slowpipe timing`: the bytes of an activation, an
// activation gradient and each stage's parameter gradient under the run's
// specs and in fp32 and fp16 (what the printout states), and the token ids a
// subspace message carries beside its values. The sizes themselves are
// compressors::wire_bytes (codec_wire_bytes, synthetic_trace.cpp) or a
// test's own.
#include <cstdint>
#include <vector>

#include "whatif/internal/what_if_parts.h"

namespace slowpipe::whatif {

WireBytesFn with_token_ids(const models::ModelShape& shape, int64_t id_bytes,
                           const WireBytesFn& wire_bytes) {
  if (shape.subspace == 0 || id_bytes == 0) return wire_bytes;
  return [&wire_bytes, id_bytes](const compressors::ChannelSpec& spec,
                                 const std::vector<int64_t>& dims) {
    const uint64_t b = wire_bytes(spec, dims);
    if (dims.size() != 3) return b;  // a parameter-gradient message [P]
    return b + static_cast<uint64_t>(dims[0] * dims[1] * id_bytes);
  };
}

MessageSizes message_sizes(const models::ModelShape& shape, const CodecSpecs& specs,
                           const WireBytesFn& wire_bytes) {
  MessageSizes m;
  const std::vector<int64_t> boundary = {shape.microbatch_size, shape.seq, boundary_width(shape)};
  const std::vector<int64_t> full = {shape.microbatch_size, shape.seq, shape.hidden};
  m.activation = wire_bytes(specs.forward, boundary);
  m.activation_gradient = wire_bytes(specs.backward, boundary);
  const CodecSpecs fp32 = baseline_specs("fp32"), fp16 = baseline_specs("fp16");
  m.fp32_activation = wire_bytes(fp32.forward, full);  // the unconstrained model's
  m.fp16_activation = wire_bytes(fp16.forward, full);
  for (int s = 0; s < shape.stages; ++s) {
    const std::vector<int64_t> params = {static_cast<int64_t>(stage_parameters(shape, s))};
    m.parameter_gradient.push_back(wire_bytes(specs.gradient, params));
    m.fp32_parameter_gradient.push_back(wire_bytes(fp32.gradient, params));
  }
  return m;
}

}  // namespace slowpipe::whatif
