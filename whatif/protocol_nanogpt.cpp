// The Protocol NanoGPT presets of `slowpipe timing` (docs/netmodel.md, "The
// Protocol NanoGPT presets"): the benchmark's 8-layer GPT (d 1024, vocabulary
// 50,304, seq 1024, one layer per stage on 8 H100s, 512 sequences a step),
// 1F1B, bf16 on the wire, 200 Mbit/s and 50 ms per boundary under its meter
// (net.link_model = shared-inbound). Two records: the vanilla baseline (64
// micro-batches of 8) and ReparamSSN (rank-160 subspace plus 2-byte token
// ids, MLP width 11,292, 32 micro-batches of 16). Facts from the benchmark's
// train_gpt.py and its records' READMEs (PluralisResearch/ProtocolNanoGPT).
// Leaves out: the optimizer's own cost (Muon's Newton-Schulz iterations: the
// analytic model charges AdamW's memory traffic), the untied LM head's
// parameters on the last stage, rotary instead of position embeddings, the
// 8-byte count the meter bills per message.
#include "whatif/internal/what_if_parts.h"

namespace slowpipe::whatif {
namespace {

models::ModelShape protocol_shape() {
  models::ModelShape m;
  m.name = "protocol-nanogpt";
  m.description = "Protocol NanoGPT's GPT: 8 layers, d 1024, seq 1024, vocabulary 50304";
  m.layers = 8;
  m.hidden = 1024;
  m.seq = 1024;
  m.vocab = 50304;
  m.stages = 8;
  m.batch = 512;  // 8 x 64 x 1024 tokens a step, fixed by the benchmark
  m.microbatch_size = 8;
  return m;
}

TimingPreset protocol_preset() {
  TimingPreset p;
  p.shape = protocol_shape();
  p.schedule = "1f1b";  // torch.distributed.pipelining's Schedule1F1B
  p.device = "H100";    // the benchmark runs on one 8 x H100 machine
  p.epochs = 1;
  p.fw = "bf16";
  p.bw = "bf16";
  p.baseline = "fp16";      // the bf16 wire's bytes (2 per element): the speed-up of a method
  p.bandwidth_bps = 200e6;  // LINK_BANDWIDTH
  p.latency_s = 0.05;       // LINK_LATENCY
  p.link_model = netmodel::kSharedInbound;
  return p;
}

}  // namespace

void add_protocol_nanogpt_presets(Registry<TimingPreset>& v) {
  TimingPreset vanilla = protocol_preset();
  vanilla.name = "protocol-nanogpt";
  vanilla.description =
      "Protocol NanoGPT's vanilla record: 8 layers, d 1024, one per stage, 1F1B, 64 "
      "micro-batches of 8 x 1024 tokens, bf16 wire, 200 Mbit/s + 50 ms under the benchmark's "
      "meter (shared-inbound), H100; record 100.475 s/step";
  vanilla.record_step_s = 100.475;  // records/20260917_vanilla_baseline
  vanilla.codecs_used = "the record sent bf16 activations and gradients, 2048 B/token each way";
  v.add(vanilla);
  TimingPreset ssn = protocol_preset();
  ssn.name = "protocol-nanogpt-ssn";
  ssn.description =
      "Protocol NanoGPT's ReparamSSN record: the same GPT with MLP width 11292, a rank-160 "
      "subspace (160 bf16 coordinates + 2-byte token ids = 322 B/token each way), 32 "
      "micro-batches of 16; record 19.889 s/step";
  ssn.shape.name = "protocol-nanogpt-ssn";
  ssn.shape.mlp_width = 11292;
  ssn.shape.microbatch_size = 16;
  ssn.subspace = 160;
  ssn.token_id_bytes = 2;
  ssn.record_step_s = 19.889;  // records/20260918_reparamssn_baseline
  ssn.codecs_used = "the record sent 160 bf16 coordinates plus the token ids, 322 B/token each way";
  v.add(ssn);
}

}  // namespace slowpipe::whatif
