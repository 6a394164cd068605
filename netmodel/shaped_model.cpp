// The shape-aware compute model (internal/shaped_model.h; docs/compute-clock.md).
#include "netmodel/shaped_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/errors.h"

namespace slowpipe::netmodel {

const Registry<ExecutionMode>& execution_modes() {
  // Launch costs: docs/compute-clock.md, "Execution modes".
  static const Registry<ExecutionMode> modes(
      "execution mode",
      {
          {"eager", 10e-6, false, false,
           "framework eager mode: one kernel per op, element-wise passes unfused, attention "
           "materialised unless attn=flash; 10 us per launch"},
          {"compiled", 5e-6, true, true,
           "a graph compiler (torch.compile): point-wise passes fused into neighbours, fused "
           "attention; 5 us per launch"},
          {"fused", 3e-6, true, true,
           "hand-written fused kernels launched from C++ (llm.c, Megatron's fused layers): "
           "point-wise passes fused, fused attention; 3 us per launch"},
      });
  return modes;
}

double peak_flops(const DevicePreset& device, const std::string& dtype, const std::string& key) {
  double peak = 0;
  if (dtype == "fp32") peak = device.fp32_flops;
  if (dtype == "tf32") peak = device.tf32_flops;
  if (dtype == "bf16") peak = device.bf16_flops;
  if (dtype == "fp16") peak = device.fp16_flops;
  if (dtype == "fp8") peak = device.fp8_flops;
  if (!(peak > 0)) {
    throw UsageError("bad value for '" + key + "': device " + device.name + " has no " + dtype +
                     " rate (docs/compute-clock.md, \"Devices\")");
  }
  return peak;
}

namespace {

// Measured dense-matmul ceilings (experiments/clock/gemm.csv, source "mamf":
// the best large GEMM a device reached, over its datasheet peak), relative to
// the A100's in bf16, where gemm_ceiling was fitted: the second round of the
// clock (docs/compute-clock.md, "Round 2: measured GEMM ceilings"). fp16 runs
// on the bf16 tensor cores; the A100 80 GB and H200 share the A100's and
// H100's dies. 1 where the source measured nothing.
double measured_gemm_ratio(const std::string& device, const std::string& dtype) {
  struct Row {
    const char* device;
    const char* dtype;
    double fraction;  // achieved / datasheet peak
  };
  static const Row rows[] = {
      {"A100", "bf16", 271.2 / 312},    {"A100-80GB", "bf16", 271.2 / 312},  // g01
      {"H100", "bf16", 794.5 / 989.4},  {"H200", "bf16", 794.5 / 989.4},     // g04
      {"H100", "fp8", 1402.6 / 1978.9}, {"H200", "fp8", 1453.4 / 1978.9},    // g07, g06
  };
  const std::string d = dtype == "fp16" ? "bf16" : dtype;
  for (const auto& r : rows) {
    if (device == r.device && d == r.dtype) return r.fraction / (271.2 / 312);
  }
  return 1;
}

// Measured flash-attention ceilings (experiments/clock/attention.csv, source
// "fa2": FlashAttention-2's own forward + backward benchmark, no causal mask,
// head dimension 128, the best sequence length, run unchanged on both GPUs),
// relative to the A100's, where attention_ceiling was fitted: the fourth round
// of the clock (docs/compute-clock.md, "Round 4: measured attention
// ceilings"). The kernel's dtype is bf16 or fp16 (fp8 training runs its
// attention in bf16); the A100 80 GB and H200 share the A100's and H100's
// dies. 1 where the source measured nothing.
double measured_attention_ratio(const std::string& device) {
  struct Row {
    const char* device;
    double fraction;  // achieved / datasheet bf16 peak
  };
  static const Row rows[] = {
      {"A100", 203.0 / 312},
      {"A100-80GB", 203.0 / 312},  // a01
      {"H100", 335.0 / 989.4},
      {"H200", 335.0 / 989.4},  // a02
  };
  for (const auto& r : rows) {
    if (device == r.device) return r.fraction / (203.0 / 312);
  }
  return 1;
}

}  // namespace

double activation_bytes(const std::string& dtype) {
  return dtype == "fp32" || dtype == "tf32" ? 4 : 2;  // fp8 training keeps bf16 activations
}

namespace {

// Seconds and kernels of a piece of work.
struct Cost {
  double s = 0;
  double kernels = 0;
  Cost& operator+=(const Cost& o) {
    s += o.s;
    kernels += o.kernels;
    return *this;
  }
};

enum class Part { kForward, kInput, kWeight };

class ShapedModel : public ComputeModel {
 public:
  ShapedModel(const ComputeSpec& spec, const ShapedConstants& c)
      : text_(spec.text),
        device_(find_device("net.compute", spec.device)),
        mode_(execution_modes().at("net.compute", spec.mode)),
        dtype_(spec.dtype.empty() ? "fp32" : spec.dtype),
        fused_attention_(spec.attention.empty() ? mode_.fused_attention
                                                : spec.attention == "flash"),
        c_(c),
        peak_(peak_flops(device_, dtype_, "net.compute")),
        gemm_rate_(peak_ * c.gemm_ceiling * measured_gemm_ratio(device_.name, dtype_)),
        // fp8 runs its GEMMs in fp8 and attention in bf16; fp32 and tf32
        // attention runs on no measured kernel (ratio 1).
        attention_peak_(dtype_ == "fp8" ? peak_flops(device_, "bf16", "net.compute") : peak_),
        attention_ratio_(
            dtype_ == "fp32" || dtype_ == "tf32" ? 1.0 : measured_attention_ratio(device_.name)),
        element_bytes_(activation_bytes(dtype_)),
        fp8_(dtype_ == "fp8"),
        // autocast=on: 16-bit matmuls under autocast with an fp32 model
        // (slowpipe's own bf16 runs); off (the default): a 16-bit model.
        autocast_((dtype_ == "bf16" || dtype_ == "fp16") && spec.autocast == "on"),
        speed_(spec.speed) {}

  double compute_s(const TraceOp& op) const override {
    Cost cost;
    if (op.kind == OpKind::kOptimizer) {
      cost.s = op.memory_bytes / bytes_per_s();
      cost.kernels = op.kernels;
    } else if (!work_ || static_cast<size_t>(op.chunk) >= work_->size()) {
      cost = flops_only(op);
    } else {
      const OpWork& w = (*work_)[static_cast<size_t>(op.chunk)];
      const bool recompute = w.recompute && is_input_backward(op.kind);
      if (op.kind == OpKind::kForward || recompute) cost += work_cost(w, Part::kForward);
      if (is_input_backward(op.kind)) cost += work_cost(w, Part::kInput);
      if (op.kind == OpKind::kBackward || op.kind == OpKind::kBackwardWeight) {
        cost += work_cost(w, Part::kWeight);
      }
    }
    return std::max(cost.s, cost.kernels * mode_.launch_s) / speed_;
  }
  // The step's per-chunk work, which its ops refer to (the trace outlives
  // the replay that times it).
  void observe(const StepTrace& trace) override { work_ = &trace.chunk_work; }
  double encode_s(const TraceOp& op) const override { return pass_s(op); }
  double decode_s(const TraceOp& op) const override { return pass_s(op); }
  std::string spec() const override { return text_; }
  std::string describe_json() const override;

 private:
  double bytes_per_s() const { return device_.memory_bandwidth_Bps * c_.memory_efficiency; }
  double g(double x) const { return x / (x + c_.half_dim); }
  double gemm_s(double m, double n, double k) const {
    return 2 * m * n * k / (gemm_rate_ * g(m) * g(n) * g(k));
  }
  double pass_elements_s(double elements) const {
    return elements * element_bytes_ / bytes_per_s();
  }
  // Under autocast: a cast between 16 bits and fp32 (2 + 4 bytes an element).
  double cast_s(double elements) const { return elements * 6 / bytes_per_s(); }
  // A codec pass reads its fp32 input and writes its message (analytic's rule).
  double pass_s(const TraceOp& op) const {
    if (op.bytes == op.raw_bytes) return 0;
    return std::max(static_cast<double>(op.raw_bytes + op.bytes) / bytes_per_s(),
                    kCodecPassKernels * mode_.launch_s);
  }
  Cost flops_only(const TraceOp& op) const {
    return {op.flops / gemm_rate_, static_cast<double>(op.kernels)};
  }
  Cost work_cost(const OpWork& w, Part part) const;
  Cost gemms_cost(const OpWork& w, Part part) const;
  Cost autocast_casts(const GemmWork& gm, Part part) const;
  Cost attention_cost(const AttentionWork& a, Part part) const;
  Cost passes_cost(const OpWork& w, Part part) const;

  std::string text_;
  DevicePreset device_;
  ExecutionMode mode_;
  std::string dtype_;
  bool fused_attention_;
  ShapedConstants c_;
  double peak_, gemm_rate_, attention_peak_, attention_ratio_, element_bytes_;
  bool fp8_, autocast_;
  double speed_;  // speed=F: compute ops (not codec passes) take 1 / F of the clock's seconds
  const std::vector<OpWork>* work_ = nullptr;
};

Cost ShapedModel::work_cost(const OpWork& w, Part part) const {
  Cost cost = gemms_cost(w, part);
  if (part != Part::kWeight) {
    for (const auto& a : w.attention) cost += attention_cost(a, part);
    cost += passes_cost(w, part);
  }
  // Undescribed FLOPs: once per part (the backward's two halves twice the forward).
  cost += {w.other_flops / gemm_rate_, static_cast<double>(w.other_kernels)};
  return cost;
}

// Forward (m, n, k); the input gradient (m, k, n); the weight gradient (k, n, m).
// fp8: each operand first cast from bf16 (2 bytes read, 1 written per
// element): the forward its input [m, k] and weight [k, n], the input
// gradient its [m, n] (the weight gradient reuses both); a compiled or fused
// mode folds the activation's cast into the pass before it.
Cost ShapedModel::gemms_cost(const OpWork& w, Part part) const {
  Cost cost;
  for (const auto& gm : w.gemms) {
    const double m = static_cast<double>(gm.m), n = static_cast<double>(gm.n),
                 k = static_cast<double>(gm.k), count = static_cast<double>(gm.count);
    const double s = part == Part::kForward ? gemm_s(m, n, k)
                     : part == Part::kInput ? gemm_s(m, k, n)
                                            : gemm_s(k, n, m);
    cost += {count * s, count};
    if (autocast_) cost += autocast_casts(gm, part);
    if (!fp8_ || part == Part::kWeight) continue;
    const double activation = part == Part::kForward ? m * k : m * n;
    const double weight = part == Part::kForward ? k * n : 0;
    const double cast = (mode_.fuse_passes ? 0 : activation) + weight;
    const double kernels = (mode_.fuse_passes ? 0 : 1) + (weight > 0 ? 1 : 0);
    cost += {count * 3 * cast / bytes_per_s(), count * kernels};
  }
  return cost;
}

// Autocast's casts around one GEMM (docs/compute-clock.md, "Autocast"): its
// weight [k, n] to 16 bits in the forward and its gradient back to fp32 in
// the weight part; in eager mode (a compiler folds them into the pass
// before), an fp32 input [m, k] to 16 bits (its gradient back in the input
// part) and an output [m, n] for an fp32 op to fp32 (its gradient back).
Cost ShapedModel::autocast_casts(const GemmWork& gm, Part part) const {
  const double m = static_cast<double>(gm.m), n = static_cast<double>(gm.n),
               k = static_cast<double>(gm.k), count = static_cast<double>(gm.count);
  Cost cost;
  if (part != Part::kInput) cost += {count * cast_s(k * n), count};  // the weight, its gradient
  if (part == Part::kWeight || mode_.fuse_passes) return cost;
  if (gm.cast_input) cost += {count * cast_s(m * k), count};
  if (gm.cast_output) cost += {count * cast_s(m * n), count};
  return cost;
}

Cost ShapedModel::attention_cost(const AttentionWork& a, Part part) const {
  const double count = static_cast<double>(a.count);
  const bool backward = part != Part::kForward;
  if (fused_attention_) {
    const double fwd = attention_flops(a, true);
    const double rate =
        attention_peak_ * c_.attention_ceiling * attention_ratio_ * g(static_cast<double>(a.q_len));
    return backward ? Cost{2.5 * fwd / (rate * c_.backward_ratio), count} : Cost{fwd / rate, count};
  }
  // Materialised: per score term a [q, dh] x [dh, kv] matmul, and [q, kv] x
  // [kv, dh]; the backward runs two matmuls of each size.
  const double q = static_cast<double>(a.q_len), kv = static_cast<double>(a.kv_len),
               dh = static_cast<double>(a.head_dim);
  const double batched = static_cast<double>(a.batch * a.heads) * count;
  const double per = a.score_terms * gemm_s(q, kv, dh) + gemm_s(q, dh, kv);
  const double scores = q * kv * batched;
  const double matmuls = (a.score_terms + 1) * count * (backward ? 2 : 1);
  Cost cost{batched * per * (backward ? 2 : 1), matmuls};
  if (autocast_ && !mode_.fuse_passes) {
    // Eager autocast: the 16-bit scores cast to fp32, the softmax in fp32,
    // the probabilities cast back (and the same around its backward).
    cost += {cast_s(2 * scores) + (backward ? 3 : 2) * scores * 4 / bytes_per_s(), 3 * count};
  } else {
    cost += {pass_elements_s((backward ? 3 : 2) * scores), count};  // softmax
  }
  if (!mode_.fuse_passes) cost += {pass_elements_s(2 * 2 * scores), 2 * count};  // scale, mask
  return cost;
}

Cost ShapedModel::passes_cost(const OpWork& w, Part part) const {
  const double factor = part == Part::kForward ? 1 : 2;
  Cost cost;
  for (const auto& p : w.passes) {
    if (p.fusible && mode_.fuse_passes) continue;
    const double count = static_cast<double>(p.count);
    const double bytes = autocast_ && p.full_precision ? 4 : element_bytes_;
    cost += {factor * p.elements * count * bytes / bytes_per_s(), count};
  }
  return cost;
}

std::string ShapedModel::describe_json() const {
  char buf[800];
  std::snprintf(buf, sizeof buf,
                "{\"model\": \"%s\", \"device\": \"%s\", \"mode\": \"%s\", \"dtype\": \"%s\", "
                "\"attention\": \"%s\", \"peak_flops\": %.6g, \"memory_bandwidth_Bps\": %.6g, "
                "\"gemm_ceiling\": %.6g, \"gemm_measured_ratio\": %.6g, \"half_dim\": %.6g, "
                "\"attention_ceiling\": %.6g, \"attention_measured_ratio\": %.6g, "
                "\"backward_ratio\": %.6g, \"memory_efficiency\": %.6g, \"launch_s\": %.6g, "
                "\"autocast\": %s, \"speed\": %.6g}",
                text_.c_str(), device_.name.c_str(), mode_.name.c_str(), dtype_.c_str(),
                fused_attention_ ? "flash" : "materialised", peak_, device_.memory_bandwidth_Bps,
                c_.gemm_ceiling, gemm_rate_ / (peak_ * c_.gemm_ceiling), c_.half_dim,
                c_.attention_ceiling, attention_ratio_, c_.backward_ratio, c_.memory_efficiency,
                mode_.launch_s, autocast_ ? "true" : "false", speed_);
  return buf;
}

}  // namespace

namespace {

// speed=F: a positive, finite number, all of the value.
double parse_speed(const std::string& value, const std::string& key, const std::string& text) {
  char* end = nullptr;
  const double f = value.empty() ? 0 : std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(f) || !(f > 0)) {
    throw UsageError("bad value for '" + key + "': '" + text + "': speed '" + value +
                     "' is not a positive number (the stack's speed against the clock, e.g. "
                     "speed=1.15 for steps measured 15% faster than it predicts)");
  }
  return f;
}

}  // namespace

// DEVICE[:mode=M][:dtype=D][:attn=flash|materialised][:autocast=on|off][:speed=F]
void parse_shaped_spec(const std::string& arg, const std::string& key, ComputeSpec& spec) {
  if (arg.empty()) {
    throw UsageError("bad value for '" + key + "': '" + spec.text +
                     "' needs a device (e.g. shaped:A100:mode=compiled:dtype=bf16)");
  }
  size_t pos = arg.find(':');
  spec.device = find_device(key, arg.substr(0, pos)).name;
  spec.mode = "eager";
  while (pos != std::string::npos) {
    const size_t next = arg.find(':', pos + 1);
    const std::string opt = arg.substr(pos + 1, next == std::string::npos ? next : next - pos - 1);
    pos = next;
    const size_t eq = opt.find('=');
    const std::string name = opt.substr(0, eq),
                      value = eq == std::string::npos ? "" : opt.substr(eq + 1);
    if (name == "mode" && execution_modes().find(value)) {
      spec.mode = value;
    } else if (name == "dtype" && (value == "fp32" || value == "tf32" || value == "bf16" ||
                                   value == "fp16" || value == "fp8")) {
      spec.dtype = value;
    } else if (name == "attn" && (value == "flash" || value == "materialised")) {
      spec.attention = value;
    } else if (name == "autocast" && (value == "on" || value == "off")) {
      spec.autocast = value;
    } else if (name == "speed") {
      spec.speed = parse_speed(value, key, spec.text);
    } else {
      throw UsageError("bad value for '" + key + "': '" + spec.text + "': unknown option '" + opt +
                       "' (mode=" + execution_modes().known() +
                       ", dtype=fp32|tf32|bf16|fp16|fp8, attn=flash|materialised, "
                       "autocast=on|off, speed=F)");
    }
  }
  if (!spec.dtype.empty()) peak_flops(find_device(key, spec.device), spec.dtype, key);
}

std::unique_ptr<ComputeModel> make_shaped_model(const ComputeSpec& spec,
                                                const ShapedConstants& constants) {
  return std::make_unique<ShapedModel>(spec, constants);
}

std::unique_ptr<ComputeModel> make_shaped_model(const ComputeSpec& spec) {
  return make_shaped_model(spec, ShapedConstants{});
}

}  // namespace slowpipe::netmodel
