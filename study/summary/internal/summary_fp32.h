// What a run would have sent per step with every channel uncompressed (fp32),
// the denominator of the summary's compression ratio (docs/summary.md).
//
// The log does not store tensor shapes, so they are derived from the logged
// config and the resolved cuts, as the models build them: each model's
// registered facts give the tensor leaving each block (models/facts/model_facts.h).
// Boundary b carries the output of block cuts[b+1] - 1, for the global batch B
// = pipeline.batch_size (all micro-batches and replicas), at the reference
// codec's bytes per element (`none`, 4: compressors/codecs/codec.h); backward sends
// the same shape. Gradients (replicas D > 1): that size x model.parameters x D,
// which is what grad{s}_bytes sum to with compress.grad = none. A model without
// facts, or a missing key, gives NaN (the ratio is then shown as missing). No
// libtorch here.
#pragma once

#include <map>
#include <string>

namespace slowpipe::study {

struct Fp32Bytes {
  double fw = 0, bw = 0;  // per step, all boundaries; NaN: unknown
  double grad = 0;        // per step, all stages and replicas; 0 for D = 1; NaN: unknown
};

// `attrs`: a run log's root attributes (read_attributes).
Fp32Bytes fp32_bytes_per_step(const std::map<std::string, std::string>& attrs);

// Elements per sample of the tensor leaving block `block` (0-based) of the
// logged model; NaN when the model or a key is unknown.
double block_output_elements(const std::map<std::string, std::string>& attrs, int block);

}  // namespace slowpipe::study
