// ModelConfig: the `model.*` keys. One plain struct with defaults and one
// function binding its fields to dotted keys (see common/options.h).
//
// The defaults give a small byte-level GPT (4 layers, d_model 128, 4 heads,
// seq_len 64, 867 k parameters) that trains usefully on 2 CPU cores in a few
// minutes. `layers` is shared by the three models: transformer layers (gpt),
// residual blocks (cnn), hidden layers (mlp).
#pragma once

#include <string>

namespace slowpipe {
class OptionSet;
}

namespace slowpipe::models {

struct ModelConfig {
  std::string name = "gpt";  // registry name: gpt | cnn | mlp
  int layers = 4;            // gpt: transformer blocks; cnn: residual blocks; mlp: hidden layers
  int d_model = 128;         // gpt: embedding width C
  int heads = 4;             // gpt: attention heads (d_model % heads == 0)
  int seq_len = 64;          // gpt: context length T (also the text window length)
  int channels = 16;         // cnn: width of the first stage (the stride-2 stage doubles it)
  int hidden = 256;          // mlp: hidden width
  std::string init_from;     // checkpoint to start from (fine-tuning); empty = fresh init
  double dropout = 0.0;      // dropout probability (gpt: embeddings, attention, residuals)
  int subspace = 0;        // gpt, protocol-gpt: residual stream in a fixed k-dim subspace; 0 = off
  int ffn = 0;             // gpt, protocol-gpt: MLP hidden width; 0 = 4 d_model
  int vocab = 256;         // gpt, protocol-gpt: vocabulary V (256: bytes)
  std::string bottleneck;  // gpt: learned bottlenecks at block boundaries ("" = none;
                           // models/facts/bottleneck_spec.h)
};

// Binds model.name, model.layers, model.d_model, model.heads, model.seq_len,
// model.channels, model.hidden, model.init_from, model.dropout, model.subspace,
// model.ffn, model.vocab, model.bottleneck.
void describe_options(ModelConfig& cfg, slowpipe::OptionSet& opts);

}  // namespace slowpipe::models
