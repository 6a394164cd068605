// Compute-time models: how long each compute op and each codec pass of a
// trace takes on the simulated device (`net.compute`).
//
//   analytic:DEVICE   (default analytic:RTX4090) a roofline per op with a
//                     launch floor: max(FLOPs / achieved FLOP/s, memory bytes
//                     / achieved bandwidth, kernels x launch seconds); a codec
//                     pass streams its input and output through device memory,
//                     with a floor of kCodecPassKernels launches.
//                     Deterministic and host-independent: no measured second
//                     enters, so the same config gives the same simulated
//                     time, bit for bit, on any machine, loaded or not;
//   calibrated[:W[:STAT]]  each op kind's seconds, per stage and op shape,
//                     measured on this host over the first W steps in which
//                     it appears (STAT = min, default, or median), then
//                     replayed unchanged (calibrated_model.h). Host-dependent:
//                     follows this machine's speed, not its load;
//   measured          the seconds the pipeline engine measured at every step
//                     (wall clock of this machine, load included);
//   scaled:F          measured / F, standing in for a device F times faster;
//   fixed:S[/B]       every forward takes S seconds and every backward B
//                     (default S); optimizer steps and codecs take 0.
// Leaves out: overlap of compute and communication on one device beyond what
// the schedule allows; `analytic` leaves out the memory traffic of forward
// and backward (weights, activations), every codec's own arithmetic, and the
// kernel-by-kernel interplay of launches and work (per op, the longer of the
// two totals: launches are asynchronous).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/registry.h"
#include "netmodel/trace.h"

namespace slowpipe::netmodel {

struct DevicePreset {
  std::string name;
  double peak_flops = 0;            // dense fp16/bf16 tensor-core peak, FLOP/s
  double efficiency = 0;            // achieved fraction of peak (model FLOP utilisation)
  double memory_bandwidth_Bps = 0;  // peak device-memory bandwidth, bytes/s
  double memory_efficiency = 0;     // achieved fraction of it by streaming kernels
  double kernel_launch_s = 0;       // fixed cost of one kernel launch (the launch floor)
  std::string description;
  // Dense datasheet peaks per dtype, FLOP/s (0: none), for the shape-aware
  // model (docs/compute-clock.md, "Devices"), and where they come from.
  double fp32_flops = 0, tf32_flops = 0, bf16_flops = 0, fp16_flops = 0, fp8_flops = 0;
  std::string source;
};
// The device of the default compute model, and kernels of one codec pass (a
// reduction for the scale, norm or threshold, and the pass that writes the
// message).
inline constexpr const char* kDefaultDevice = "RTX4090";
inline constexpr int kCodecPassKernels = 2;
const Registry<DevicePreset>& device_presets();
// Throws UsageError naming `key` and listing the devices.
const DevicePreset& find_device(const std::string& key, const std::string& name);

class ComputeModel {
 public:
  virtual ~ComputeModel() = default;
  // Sees each step's trace before the step is replayed (calibration).
  virtual void observe(const StepTrace&) {}
  // Seconds of compute of a forward, backward or optimizer op.
  virtual double compute_s(const TraceOp& op) const = 0;
  virtual double encode_s(const TraceOp& op) const { return op.encode_s; }
  virtual double decode_s(const TraceOp& op) const { return op.decode_s; }
  virtual std::string spec() const = 0;
  // What the model assumes, as one JSON object for the run log.
  virtual std::string describe_json() const;
  // State that must survive a resume (calibration samples), as text; "" when
  // the model keeps none. load_state() throws DataError on text it cannot read.
  virtual std::string save_state() const { return ""; }
  virtual void load_state(const std::string&) {}
};

// The default of `net.compute`: deterministic, on the default device
// (docs/netmodel.md, "The default device").
inline constexpr const char* kDefaultComputeModel = "analytic:RTX4090";
inline constexpr int kDefaultCalibrationSteps = 20;

// A `net.compute` value, parsed once where the option is read
// (parse_compute_spec): the model's entry and its checked arguments, and the
// text as given, which the run log, banners and messages print.
struct ComputeSpec {
  std::string text = kDefaultComputeModel;           // as given ("calibrated", "fixed:0.01")
  std::string model = "analytic";                    // its compute_models() entry
  std::string device = kDefaultDevice;               // analytic: a device_presets() name
  double scale = 1;                                  // scaled: measured seconds / scale
  double forward_s = 0, backward_s = 0;              // fixed
  int calibration_steps = kDefaultCalibrationSteps;  // calibrated: W
  bool calibration_median = false;                   // calibrated: STAT median (else min)
  std::string mode = "eager";                        // shaped: execution_modes() name
  std::string dtype;      // shaped: what the matmuls compute in; "" = the run's (run.dtype; fp32)
  std::string attention;  // shaped: flash | materialised | "" (the mode's)
  std::string autocast;   // shaped: on | off | "" (off; a run's own bf16: on)
  double speed = 1;       // shaped: the stack against the clock (compute seconds / speed)
};

// Fills the entry's arguments of `spec` from the text after "NAME:" (""
// when there is none); `key` and `spec.text` (the whole value) are for
// UsageErrors. Builds a model from a parsed spec.
using ComputeSpecParser =
    std::function<void(const std::string& arg, const std::string& key, ComputeSpec& spec)>;
using ComputeModelFactory = std::function<std::unique_ptr<ComputeModel>(const ComputeSpec& spec)>;
struct ComputeModelInfo {
  std::string name;         // "calibrated", "measured", "scaled", "analytic", "fixed"
  std::string usage;        // "scaled:F"; how the registry lists it
  std::string description;  // one line
  ComputeSpecParser parse;
  ComputeModelFactory make;
};
// The family and its dispatch: parse_compute_spec calls the parser of the
// entry its name (the text up to ':') finds, make_compute_model its factory.
const Registry<ComputeModelInfo>& compute_models();

// Parses a spec ("analytic:A100", "calibrated:20:median"); throws UsageError
// naming `key`.
ComputeSpec parse_compute_spec(const std::string& text, const std::string& key = "net.compute");
// analytic:DEVICE for a device preset's name (timing.device), unchecked.
ComputeSpec analytic_compute_spec(const std::string& device);

// The device a spec simulates ("RTX4090" for analytic:RTX4090), or its text
// when it names none ("fixed:0.01", "host-timed (measured)"): what banners,
// summaries and plot titles print. The string form labels a value read back
// from a run log (study/), which is printed, never used to time anything.
std::string compute_device_label(const ComputeSpec& spec);
std::string compute_device_label(const std::string& logged_spec);

// Builds a model from its parsed spec.
std::unique_ptr<ComputeModel> make_compute_model(const ComputeSpec& spec);

}  // namespace slowpipe::netmodel
