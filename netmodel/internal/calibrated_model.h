// The calibrated compute model (`net.compute = calibrated[:W[:STAT]]`, the
// default): simulated compute and codec seconds that do not follow the load
// of the machine the run happens to share.
//
// Every op of a step trace belongs to a class: its kind, its stage and its
// shape (the FLOPs and memory bytes of a compute op; the wire and raw bytes of
// a send or all-reduce). Replicas and micro-batches of one class are pooled:
// they run the same computation. A class is calibrated over the first W steps
// in which it appears: each such step adds its samples (one per op of the
// class) and the class's seconds become STAT (min, the default, or median) of all samples so
// far; from its W-th step on the seconds are frozen. A class that first
// appears late (AQ-SGD's compressed messages after its warm-up epoch) gets its
// own window then. The window's own steps thus replay a statistic of their
// samples, never one raw measurement.
//
// Samples: compute ops use the CPU time of the thread that ran them when the
// trace says it holds their whole CPU time (StepTrace::thread_cpu: one compute
// thread on a CPU device), else their wall seconds; codec passes use the wall
// seconds the channels measured (a pass of ~0.1 ms is rarely preempted; the
// statistic drops those that were). Leaves out: how a device other than this
// machine would run the ops (use scaled or analytic for that).
#pragma once

#include <memory>
#include <string>

#include "netmodel/compute_model.h"

namespace slowpipe::netmodel {

// `arg` is what follows "calibrated:" ("" for the defaults, "20", "20:median"):
// sets spec.calibration_steps and calibration_median. Throws UsageError naming `key`.
void parse_calibrated_spec(const std::string& arg, const std::string& key, ComputeSpec& spec);
// The model of a parsed calibrated spec (kDefaultCalibrationSteps: compute_model.h).
std::unique_ptr<ComputeModel> make_calibrated_model(const ComputeSpec& spec);

}  // namespace slowpipe::netmodel
