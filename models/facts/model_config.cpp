// The `model.*` option descriptions. Choices for model.name come from the
// models' facts (model_facts.h: every registered model, no libtorch), so a newly
// registered model is selectable without touching this file.
#include "models/facts/model_config.h"

#include "common/options.h"
#include "models/facts/model_facts.h"

namespace slowpipe::models {

void describe_options(ModelConfig& cfg, slowpipe::OptionSet& opts) {
  opts.add_choice("model.name", cfg.name, model_facts_registry().names(),
                  "model architecture (see `docs/models.md`)");
  opts.add("model.layers", cfg.layers,
           "gpt: transformer layers; cnn: residual blocks; mlp: hidden layers", 1, 256);
  opts.add("model.d_model", cfg.d_model, "gpt: embedding width", 1, 65536);
  opts.add("model.heads", cfg.heads, "gpt: attention heads (must divide model.d_model)", 1, 1024);
  opts.add("model.seq_len", cfg.seq_len, "gpt: context length in bytes (also the text window)", 1,
           1 << 20);
  opts.add("model.channels", cfg.channels,
           "cnn: channels of the first stage (doubled after the stride-2 block)", 1, 4096);
  opts.add("model.hidden", cfg.hidden, "mlp: hidden width", 1, 1 << 20);
  opts.add_path("model.init_from", cfg.init_from,
                "checkpoint to initialise from (fine-tuning); empty = fresh init from run.seed");
  opts.add("model.dropout", cfg.dropout, "dropout probability", 0.0, 0.95);
  opts.add("model.subspace", cfg.subspace,
           "gpt, protocol-gpt: k > 0 confines the residual stream to a fixed k-dim subspace and "
           "sends k coefficients per token across each cut (Protocol Models; protocol-gpt: the "
           "ReparamSSN record's form, docs/models.md); 0 = off",
           0, 65536);
  opts.add("model.ffn", cfg.ffn,
           "gpt, protocol-gpt: MLP hidden width (the ReparamSSN record gives a subspace model's "
           "freed parameters to it, docs/benchmark.md); 0 = 4 x model.d_model",
           0, 1 << 20);
  opts.add("model.vocab", cfg.vocab,
           "gpt, protocol-gpt: vocabulary size, the embedding's rows and the head's logits (256: "
           "bytes; GPT-2 token shards need 50257, the benchmark uses 50304)",
           1, 1 << 20);
  opts.add("model.bottleneck", cfg.bottleneck,
           "gpt: a learned bottleneck after transformer blocks, so a cut there sends few values "
           "per token: resbm:r=R (ResBM) or learned:k=K[:anchor=A] (a learned orthonormal "
           "projection, MAPL), each with an optional :at=I+J (the blocks it follows; default "
           "every block but the last); docs/models.md; empty = none");
}

}  // namespace slowpipe::models
