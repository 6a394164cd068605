// The shape-aware compute model (`net.compute = shaped:DEVICE[:OPTIONS]`;
// docs/compute-clock.md): each compute op timed kernel class by kernel class
// from its work (op_work.h) on a device's datasheet peaks for the run's dtype.
//
//   GEMM (m, n, k)       2 m n k / (peak(dtype) x ceiling x g(m) g(n) g(k)),
//                        g(x) = x / (x + half_dim): small and skinny GEMMs run
//                        far below peak, large ones near the ceiling;
//   attention, fused     its FLOPs (causal half skipped) at peak x
//                        attention_ceiling x g(q_len), the
//                        backward 2.5x the forward's FLOPs at
//                        backward_ratio of that rate; one kernel each way;
//   attention,           its score and value matmuls as batched GEMMs, the
//     materialised       softmax (2 elements per score read and written, 3 in
//                        the backward) and, unfused, scaling and masking;
//   element-wise passes  elements x dtype bytes / (bandwidth x
//                        memory_efficiency), one kernel each; a compiled or
//                        fused mode drops the fusible ones;
//   other FLOPs          (models not described kernel by kernel) at the GEMM
//                        ceiling;
//   launch floor         an op takes at least kernels x launch(mode) seconds.
// The execution mode (eager, compiled, fused) is named, never a hidden factor.
#pragma once

#include <memory>
#include <string>

#include "common/registry.h"
#include "netmodel/compute_model.h"

namespace slowpipe::netmodel {

// The model's constants (docs/compute-clock.md, "Constants": chosen on the
// calibration half of the published set only).
// `slowpipe clock experiments/clock/published.csv --fit` prints them.
struct ShapedConstants {
  double gemm_ceiling = 0.80;       // fraction of the dtype's peak, large GEMMs
  double half_dim = 192;            // g(half_dim) = 1/2
  double attention_ceiling = 0.40;  // fused attention, forward
  double backward_ratio = 0.70;     // fused attention backward rate / forward rate
  double memory_efficiency = 0.60;  // streaming passes, fraction of peak bandwidth
};

struct ExecutionMode {
  std::string name;      // eager, compiled, fused
  double launch_s;       // host seconds per kernel launch
  bool fuse_passes;      // fusible element-wise passes fold into neighbours
  bool fused_attention;  // the mode's default attention kernel
  std::string description;
};
const Registry<ExecutionMode>& execution_modes();

// Peak FLOP/s of `device` in `dtype` (fp32, tf32, bf16, fp16, fp8); UsageError
// naming `key` when the device has no such tensor rate (V100 and bf16).
double peak_flops(const DevicePreset& device, const std::string& dtype, const std::string& key);
// Bytes per activation element in `dtype` (fp32 and tf32 4, bf16 and fp16 2, fp8 1).
double activation_bytes(const std::string& dtype);

void parse_shaped_spec(const std::string& arg, const std::string& key, ComputeSpec& spec);
std::unique_ptr<ComputeModel> make_shaped_model(const ComputeSpec& spec);
std::unique_ptr<ComputeModel> make_shaped_model(const ComputeSpec& spec,
                                                const ShapedConstants& constants);

}  // namespace slowpipe::netmodel
