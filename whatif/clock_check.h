// The compute clock against published training throughput (`slowpipe clock`,
// docs/compute-clock.md): each row of a published set (experiments/clock/
// published.csv) becomes a one-device step of its model shape on its device,
// timed by a compute model; the prediction is compared with the published
// tokens per second and GPU. The fit chooses the shape-aware model's
// constants on the rows of the calibration split only.
//
// What a row's step is: one GPU's share of the global batch (global tokens /
// GPUs), cut into micro-batches of micro_batch sequences, forward and backward
// (a recomputed forward under activation checkpointing) and one AdamW step.
// A row with a parallel layout (clock_layout.h) is one GPU's share of a
// tensor-parallel group on one pipeline stage, with its exchanges; without
// one, the data-parallel and sharding communication is left out (the
// published codes overlap it with compute).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "netmodel/shaped_model.h"
#include "whatif/clock_layout.h"

namespace slowpipe::whatif {

struct PublishedRow {
  std::string id, source_id, gpu, dtype, execution, attention, act_ckpt, model, split;
  std::string mlp;  // gelu, relu2, swiglu (gated: three d x ffn matrices); "" = gelu
  int gpus = 1, layers = 0, micro_batch = 1;
  int64_t d_model = 0, heads = 0, ffn = 0, vocab = 0, seq = 0;
  int64_t kv_heads = 0;  // key/value heads (grouped-query attention); 0 = heads
  double global_batch_tokens = 0;
  double published_tokens_per_s = 0;  // tokens per second and GPU, as published (or derived)
  bool has_layout = false;            // set by apply_layouts (clock_layout.h)
  RowLayout layout;
};

// The rows of a published set (a CSV with a header line; the columns above
// by name; `mlp` and `kv_heads` may be absent). Rows without a published
// tokens/s or a complete shape, and rows whose GPU, dtype, mode or attention
// the clock does not know, are skipped, each listed in `skipped` as "ID (the
// columns missing or unusable, or why the clock cannot time it)". DataError
// naming the file and line for a malformed file.
std::vector<PublishedRow> read_published(const std::string& path,
                                         std::vector<std::string>* skipped = nullptr);

// The device preset of a row's GPU: a chip, an optional SXM form factor and
// memory size ("A100-80GB", "A100-SXM4-80GB" -> "A100-80GB", "H100-SXM" and
// "H800-80GB" -> "H100"); a UsageError when slowpipe has none (a PCIe part,
// an unknown chip).
std::string device_of(const std::string& gpu);
// A GPU label's dash-separated parts, upper-cased: the chip first
// ("a100-sxm4-80gb" -> A100, SXM4, 80GB).
std::vector<std::string> gpu_label_parts(const std::string& gpu);

// A row's compute spec: "shaped:DEVICE:mode=M:dtype=D[:attn=A]", or
// "analytic:DEVICE" when `model` is "analytic".
std::string row_compute_spec(const PublishedRow& row, const std::string& model);

// Seconds of a one-device, one-replica trace: the sum of its compute ops
// (what the replay gives when no message crosses a link).
double single_device_step_s(const netmodel::StepTrace& trace, netmodel::ComputeModel& model);

struct Prediction {
  double step_s = 0;        // one GPU's step
  double tokens_per_s = 0;  // per GPU
  double error = 0;         // published / predicted tokens per second - 1 (step-time error)
};
Prediction predict(const PublishedRow& row, const std::string& model,
                   const netmodel::ShapedConstants& constants);

// Median and largest |error| of the rows of one split ("" = all).
struct ErrorSummary {
  int rows = 0;
  double median_abs = 0, worst_abs = 0;
};
ErrorSummary summarise(const std::vector<PublishedRow>& rows,
                       const std::vector<Prediction>& predictions, const std::string& split);

// Within one publisher (docs/compute-clock.md, "One stack at a time"): each
// row's prediction scaled by the median of published / predicted over the
// other rows of its source (leave one out: its own number is not used), as
// a user would scale the clock to steps measured on their own stack. A row
// alone in its source gets none.
std::vector<std::optional<Prediction>> per_source(const std::vector<PublishedRow>& rows,
                                                  const std::vector<Prediction>& predictions);
// summarise over the rows that have one.
ErrorSummary summarise(const std::vector<PublishedRow>& rows,
                       const std::vector<std::optional<Prediction>>& predictions,
                       const std::string& split);

// The grid point of ShapedConstants (docs/compute-clock.md, "Fit") with the
// least mean |ln(predicted / published)| over the calibration rows.
netmodel::ShapedConstants fit_constants(const std::vector<PublishedRow>& rows);

}  // namespace slowpipe::whatif
