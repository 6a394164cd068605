// The compute-time model family (one registry: the listing and the dispatch)
// and the device presets.
//
// Device figures are vendor datasheet numbers (docs/netmodel.md, "Compute-time
// models"): dense fp16/bf16 tensor-core peaks (fp32 accumulate) V100 SXM2 125
// TFLOP/s, A100 312 TFLOP/s, H100 SXM 989 TFLOP/s, GeForce RTX 4090 165.2
// TFLOP/s; memory bandwidths V100 SXM2 900 GB/s, A100 40 GB 1,555 GB/s, H100
// SXM 3,350 GB/s, RTX 4090 1,008 GB/s. The efficiencies are assumptions:
// typical model FLOP utilisations of large transformer training (35-40%) and
// 80% of peak bandwidth for streaming kernels (optimizer steps, codecs). The
// launch cost, 5 us per kernel on every device, is an assumption too: the
// order of a CUDA launch from an eager framework (docs/netmodel.md). Launches
// are asynchronous: the host issues the next kernels while earlier ones run,
// so an op takes the longer of its device work and its launches (a floor),
// not their sum.
#include "netmodel/compute_model.h"

#include <algorithm>
#include <cstdio>

#include "common/errors.h"
#include "common/options.h"
#include "netmodel/internal/calibrated_model.h"
#include "netmodel/shaped_model.h"

namespace slowpipe::netmodel {

namespace {
constexpr double kLaunchS = 5e-6;  // one kernel launch, every device

// One device: the analytic model's figures (bf16 peak at an assumed MFU),
// then the dense per-dtype peaks of the shape-aware model, in TFLOP/s.
DevicePreset device(std::string name, double bf16_tflops, double mfu, double bandwidth_GBps,
                    std::string description, double fp32, double tf32, double fp16, double fp8,
                    std::string source) {
  DevicePreset d;
  d.name = std::move(name);
  d.peak_flops = bf16_tflops * 1e12;
  d.efficiency = mfu;
  d.memory_bandwidth_Bps = bandwidth_GBps * 1e9;
  d.memory_efficiency = 0.80;
  d.kernel_launch_s = kLaunchS;
  d.description = std::move(description);
  d.fp32_flops = fp32 * 1e12;
  d.tf32_flops = tf32 * 1e12;
  d.fp16_flops = fp16 * 1e12;
  d.fp8_flops = fp8 * 1e12;
  d.bf16_flops = d.name == "V100" ? 0 : bf16_tflops * 1e12;
  d.source = std::move(source);
  return d;
}

}  // namespace

const Registry<DevicePreset>& device_presets() {
  static const Registry<DevicePreset> devices(
      "device",
      {
          device("RTX4090", 165.2, 0.40, 1008,
                 "NVIDIA GeForce RTX 4090 (the default): 165.2 TFLOP/s fp16/bf16 tensor with "
                 "fp32 accumulate, 40% MFU assumed; 1008 GB/s GDDR6X, 80% assumed; 5 us per kernel",
                 82.6, 82.6, 165.2, 330.3, "NVIDIA Ada GPU architecture whitepaper, Table 2"),
          device("V100", 125, 0.35, 900,
                 "NVIDIA V100 SXM2: 125 TFLOP/s fp16 tensor, 35% MFU assumed; 900 GB/s HBM2, "
                 "80% assumed; 5 us per kernel",
                 15.7, 0, 125, 0, "NVIDIA Tesla V100 datasheet (SXM2)"),
          device("A100", 312, 0.40, 1555,
                 "NVIDIA A100 40GB: 312 TFLOP/s bf16 dense, 40% MFU assumed; 1555 GB/s HBM2, 80% "
                 "assumed; 5 us per kernel",
                 19.5, 156, 312, 0, "NVIDIA A100 Tensor Core GPU datasheet (40GB SXM)"),
          device("A100-80GB", 312, 0.40, 2039,
                 "NVIDIA A100 80GB SXM: 312 TFLOP/s bf16 dense, 40% MFU assumed; 2039 GB/s "
                 "HBM2e, 80% assumed; 5 us per kernel",
                 19.5, 156, 312, 0, "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM)"),
          device("H100", 989, 0.40, 3350,
                 "NVIDIA H100 SXM: 989 TFLOP/s bf16 dense, 40% MFU assumed; 3350 GB/s HBM3, 80% "
                 "assumed; 5 us per kernel",
                 67, 494.5, 989, 1979, "NVIDIA H100 Tensor Core GPU datasheet (SXM5)"),
          device("H200", 989, 0.40, 4800,
                 "NVIDIA H200 SXM: 989 TFLOP/s bf16 dense, 40% MFU assumed; 4800 GB/s HBM3e, 80% "
                 "assumed; 5 us per kernel",
                 67, 494.5, 989, 1979, "NVIDIA H200 Tensor Core GPU datasheet (SXM)"),
          device("RTX3090", 71, 0.40, 936,
                 "NVIDIA GeForce RTX 3090: 71 TFLOP/s fp16/bf16 tensor with fp32 accumulate, 40% "
                 "MFU assumed; 936 GB/s GDDR6X, 80% assumed; 5 us per kernel",
                 35.6, 35.6, 71, 0, "NVIDIA Ampere GA102 GPU architecture whitepaper"),
          device("L40S", 362, 0.40, 864,
                 "NVIDIA L40S: 362 TFLOP/s fp16/bf16 tensor dense, 40% MFU assumed; 864 GB/s "
                 "GDDR6, 80% assumed; 5 us per kernel",
                 91.6, 183, 362, 733, "NVIDIA L40S GPU datasheet"),
      });
  return devices;
}

const DevicePreset& find_device(const std::string& key, const std::string& name) {
  return device_presets().at(key, name);
}

std::string compute_device_label(const ComputeSpec& spec) {
  if (spec.model == "analytic" || spec.model == "shaped") return spec.device;
  if (spec.model == "fixed") return spec.text;
  return "host-timed (" + spec.text + ")";
}

std::string compute_device_label(const std::string& logged_spec) {
  const std::string analytic = "analytic:";
  if (logged_spec.rfind(analytic, 0) == 0) return logged_spec.substr(analytic.size());
  const std::string shaped = "shaped:";
  if (logged_spec.rfind(shaped, 0) == 0) {
    return logged_spec.substr(shaped.size(), logged_spec.find(':', shaped.size()) - shaped.size());
  }
  if (logged_spec.rfind("fixed", 0) == 0) return logged_spec;
  return "host-timed (" + logged_spec + ")";
}

std::string ComputeModel::describe_json() const {
  return "{\"model\": \"" + spec() + "\"}";
}

namespace {

class MeasuredModel : public ComputeModel {
 public:
  double compute_s(const TraceOp& op) const override { return op.compute_s; }
  std::string spec() const override { return "measured"; }
};

class ScaledModel : public ComputeModel {
 public:
  explicit ScaledModel(double factor) : factor_(factor) {}
  double compute_s(const TraceOp& op) const override { return op.compute_s / factor_; }
  std::string spec() const override { return "scaled:" + std::to_string(factor_); }

 private:
  double factor_;
};

class AnalyticModel : public ComputeModel {
 public:
  explicit AnalyticModel(DevicePreset device) : device_(std::move(device)) {}
  double compute_s(const TraceOp& op) const override {
    return std::max({op.flops / flops_per_s(), op.memory_bytes / bytes_per_s(),
                     op.kernels * device_.kernel_launch_s});
  }
  // A codec pass reads its input and writes its output once: the fp32 tensor
  // and the wire message. A message sent as is (codec none: as many wire
  // bytes as fp32 bytes) has no pass.
  double encode_s(const TraceOp& op) const override { return pass_s(op); }
  double decode_s(const TraceOp& op) const override { return pass_s(op); }
  std::string spec() const override { return "analytic:" + device_.name; }
  std::string describe_json() const override {
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "{\"model\": \"%s\", \"peak_flops\": %.6g, \"efficiency\": %.6g, "
                  "\"memory_bandwidth_Bps\": %.6g, \"memory_efficiency\": %.6g, "
                  "\"kernel_launch_s\": %.6g, \"codec_pass_kernels\": %d}",
                  spec().c_str(), device_.peak_flops, device_.efficiency,
                  device_.memory_bandwidth_Bps, device_.memory_efficiency, device_.kernel_launch_s,
                  kCodecPassKernels);
    return buf;
  }

 private:
  double flops_per_s() const { return device_.peak_flops * device_.efficiency; }
  double bytes_per_s() const { return device_.memory_bandwidth_Bps * device_.memory_efficiency; }
  double pass_s(const TraceOp& op) const {
    if (op.bytes == op.raw_bytes) return 0;
    return std::max(static_cast<double>(op.raw_bytes + op.bytes) / bytes_per_s(),
                    kCodecPassKernels * device_.kernel_launch_s);
  }
  DevicePreset device_;
};

class FixedModel : public ComputeModel {
 public:
  FixedModel(double forward_s, double backward_s)
      : forward_s_(forward_s), backward_s_(backward_s) {}
  double compute_s(const TraceOp& op) const override {
    if (op.kind == OpKind::kForward) return forward_s_;
    if (op.kind == OpKind::kBackward) return backward_s_;
    // A split backward: the input and the weight halves.
    if (op.kind == OpKind::kBackwardInput || op.kind == OpKind::kBackwardWeight) {
      return backward_s_ / 2;
    }
    return 0;
  }
  double encode_s(const TraceOp&) const override { return 0; }
  double decode_s(const TraceOp&) const override { return 0; }
  std::string spec() const override {
    return "fixed:" + std::to_string(forward_s_) + "/" + std::to_string(backward_s_);
  }

 private:
  double forward_s_, backward_s_;
};

}  // namespace

namespace {

// UsageError unless the spec has an argument after ':' ("e.g. NAME:EXAMPLE").
void need_arg(const std::string& arg, const std::string& key, const std::string& spec,
              const char* what, const char* example) {
  if (arg.empty()) {
    throw UsageError("bad value for '" + key + "': '" + spec + "' needs " + what + " (e.g. " +
                     spec.substr(0, spec.find(':')) + ":" + example + ")");
  }
}

void parse_measured(const std::string& arg, const std::string& key, ComputeSpec& spec) {
  if (!arg.empty()) compute_models().unknown(key, spec.text);
}

void parse_scaled(const std::string& arg, const std::string& key, ComputeSpec& spec) {
  need_arg(arg, key, spec.text, "a speed-up factor", "2");
  const double f = parse_float(key, arg);
  if (!(f > 0)) throw UsageError("bad value for '" + key + "': scale factor must be > 0");
  spec.scale = f;
}

void parse_analytic(const std::string& arg, const std::string& key, ComputeSpec& spec) {
  need_arg(arg, key, spec.text, "a device", "A100");
  spec.device = find_device(key, arg).name;
}

void parse_fixed(const std::string& arg, const std::string& key, ComputeSpec& spec) {
  need_arg(arg, key, spec.text, "seconds", "2");
  const auto slash = arg.find('/');
  const double f = parse_float(key, arg.substr(0, slash));
  const double b = slash == std::string::npos ? f : parse_float(key, arg.substr(slash + 1));
  if (f < 0 || b < 0) throw UsageError("bad value for '" + key + "': fixed seconds must be >= 0");
  spec.forward_s = f;
  spec.backward_s = b;
}

std::unique_ptr<ComputeModel> make_measured(const ComputeSpec&) {
  return std::make_unique<MeasuredModel>();
}
std::unique_ptr<ComputeModel> make_scaled(const ComputeSpec& spec) {
  return std::make_unique<ScaledModel>(spec.scale);
}
std::unique_ptr<ComputeModel> make_analytic(const ComputeSpec& spec) {
  return std::make_unique<AnalyticModel>(find_device("net.compute", spec.device));
}
std::unique_ptr<ComputeModel> make_fixed(const ComputeSpec& spec) {
  return std::make_unique<FixedModel>(spec.forward_s, spec.backward_s);
}

}  // namespace

const Registry<ComputeModelInfo>& compute_models() {
  static const Registry<ComputeModelInfo> models(
      "compute model",
      {
          {"analytic", "analytic:DEVICE",
           "(default analytic:RTX4090) roofline: FLOPs / achieved FLOP/s, memory bytes / "
           "achieved bandwidth, with a floor of one launch per kernel; deterministic; devices " +
               device_presets().known(),
           &parse_analytic, &make_analytic},
          {"shaped", "shaped:DEVICE[:mode=M][:dtype=D][:attn=A][:autocast=on|off][:speed=F]",
           "shape-aware: each GEMM at an efficiency of its dimensions, attention fused or "
           "materialised, element-wise passes at a bandwidth fraction, a launch floor per "
           "execution mode (eager, compiled, fused); deterministic; dtype default fp32",
           &parse_shaped_spec, [](const ComputeSpec& s) { return make_shaped_model(s); }},
          {"calibrated", "calibrated[:W[:min|median]]",
           "host-dependent: per op kind, stage and shape, the min (or median) of its first W "
           "steps' seconds on this machine (default W 20), replayed unchanged",
           &parse_calibrated_spec, &make_calibrated_model},
          {"measured", "measured",
           "host-dependent: wall seconds measured by the pipeline engine at every step",
           &parse_measured, &make_measured},
          {"scaled", "scaled:F", "measured seconds divided by F (a device F times faster)",
           &parse_scaled, &make_scaled},
          {"fixed", "fixed:S[/B]",
           "every forward S seconds, every backward B (default S), optimizer and codecs free",
           &parse_fixed, &make_fixed},
      },
      /*key_of=*/{}, [](const ComputeModelInfo& m) { return m.usage; });
  return models;
}

ComputeSpec parse_compute_spec(const std::string& text, const std::string& key) {
  const auto colon = text.find(':');
  const std::string arg = colon == std::string::npos ? "" : text.substr(colon + 1);
  const ComputeModelInfo* m = compute_models().find(text.substr(0, colon));
  if (!m) compute_models().unknown(key, text);
  ComputeSpec spec;
  spec.text = text;
  spec.model = m->name;
  spec.device.clear();
  m->parse(arg, key, spec);
  return spec;
}

ComputeSpec analytic_compute_spec(const std::string& device) {
  ComputeSpec spec;
  spec.text = "analytic:" + device;
  spec.device = device;
  return spec;
}

std::unique_ptr<ComputeModel> make_compute_model(const ComputeSpec& spec) {
  return compute_models().at("net.compute", spec.model).make(spec);
}

}  // namespace slowpipe::netmodel
