// Compute-time models: how long each compute op of a trace takes on the
// simulated device (`net.compute`).
//
//   measured          the seconds the pipeline engine measured (this machine);
//   scaled:F          measured / F, standing in for a device F times faster;
//   analytic:DEVICE   model FLOPs / (device peak FLOP/s x efficiency), a
//                     roofline-free "achieved FLOP/s" model (ops without FLOPs
//                     fall back to measured);
//   fixed:S[/B]       every forward takes S seconds and every backward B
//                     (default S); optimizer steps take 0 (closed-form checks).
// Codec (encode/decode) seconds are taken as measured by every model except
// fixed, which sets them to 0. Leaves out: memory-bandwidth-bound kernels,
// kernel launch overheads, overlap of compute and communication on one device
// beyond what the schedule allows.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "netmodel/trace.h"

namespace slowpipe::netmodel {

struct DevicePreset {
  std::string name;
  double peak_flops;  // dense fp16/bf16 tensor-core peak, FLOP/s
  double efficiency;  // achieved fraction of peak (model FLOP utilisation)
  std::string description;
};
const std::vector<DevicePreset>& device_presets();
// Throws UsageError naming `key` and listing the devices.
const DevicePreset& find_device(const std::string& key, const std::string& name);

class ComputeModel {
 public:
  virtual ~ComputeModel() = default;
  // Seconds of compute of a forward, backward or optimizer op.
  virtual double compute_s(const TraceOp& op) const = 0;
  virtual double encode_s(const TraceOp& op) const { return op.encode_s; }
  virtual double decode_s(const TraceOp& op) const { return op.decode_s; }
  virtual std::string spec() const = 0;
};

struct ComputeModelInfo {
  std::string name;         // "measured", "scaled", "analytic", "fixed"
  std::string usage;        // "scaled:F"
  std::string description;  // one line
};
const std::vector<ComputeModelInfo>& compute_models();

// Builds a model from its spec ("analytic:A100"); throws UsageError naming `key`.
std::unique_ptr<ComputeModel> make_compute_model(const std::string& spec,
                                                 const std::string& key = "net.compute");

}  // namespace slowpipe::netmodel
