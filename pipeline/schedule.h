// Pipeline schedules: which device runs which pass of which model chunk for
// which micro-batch, in what order, during one training step.
//
// A model is cut into C chunks; chunk c lives on device device_of[c], and one
// device may hold several chunks (interleaved schedules: C = v * devices).
// Messages cross between chunks c and c + 1 only when they live on different
// devices. A backward is one pass (kBackward: input and weight gradients) or,
// in zero-bubble schedules, two: kBackwardInput (the gradient the previous
// chunk waits for) and kBackwardWeight (the parameters' gradients, needed only
// by the optimizer).
//
// The schedules are a family: each is one file in pipeline/schedules/ and one
// line in pipeline/schedules/list.h (docs/schedules.md lists them with their
// bubble fractions). The pipeline engine (sim/) and the network model both run
// these orders.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/registry.h"

namespace slowpipe::netmodel {

enum class Pass : uint8_t {
  kForward,
  kBackward,        // input and weight gradients in one pass
  kBackwardInput,   // B of a split backward: the gradient w.r.t. the chunk's input
  kBackwardWeight,  // W of a split backward: the gradients of the chunk's parameters
};
const char* pass_name(Pass pass);  // "F", "B", "B_input", "B_weight"

struct ScheduledOp {
  Pass pass = Pass::kForward;
  int32_t chunk = 0;
  int32_t microbatch = 0;
  bool operator==(const ScheduledOp& o) const {
    return pass == o.pass && chunk == o.chunk && microbatch == o.microbatch;
  }
};

struct Schedule {
  int32_t devices = 1;
  int32_t chunks = 1;
  int32_t microbatches = 1;
  bool split_backward = false;     // kBackwardInput + kBackwardWeight instead of kBackward
  std::vector<int32_t> device_of;  // [chunks]: the device holding chunk c
  std::vector<std::vector<ScheduledOp>> per_device;  // [devices]: each device's order
};

// What a schedule is asked for: `devices` pipeline devices, `microbatches` per
// step, `virtual_stages` chunks per device (1 unless the schedule supports more).
struct ScheduleRequest {
  int devices = 1;
  int microbatches = 1;
  int virtual_stages = 1;
};

struct ScheduleEntry {
  std::string name;
  std::string description;  // one line
  std::function<Schedule(const ScheduleRequest&)> make;
  // Accepts virtual_stages > 1 (interleaved); other schedules refuse it.
  bool virtual_stages = false;
};

// The built-in schedules (pipeline/schedules/list.h), then any added by
// register_schedule, in registration order.
const Registry<ScheduleEntry>& schedule_registry();
std::vector<std::string> schedule_names();
// Throws std::logic_error for a duplicate or empty name.
void register_schedule(ScheduleEntry entry);
// Throws UsageError for an unknown name ("bad value for 'KEY': unknown
// schedule ...", listing the known ones).
const ScheduleEntry& find_schedule(const std::string& name,
                                   const std::string& key = "pipeline.schedule");

// Builds a schedule and checks it (check_schedule). Throws UsageError for an
// unknown name, devices/micro-batches/virtual stages < 1, virtual stages > 1
// on a schedule without them, or sizes the schedule cannot do.
Schedule make_schedule(const std::string& name, int devices, int microbatches,
                       int virtual_stages = 1);

// Throws std::logic_error unless every (chunk, micro-batch) has one forward and
// one backward (or one input and one weight backward after it) on the chunk's
// device, each device's list holds only its own chunks' ops, and the forward
// comes before the backward of the same (chunk, micro-batch).
void check_schedule(const Schedule& schedule);

// One global order of the schedule's ops that a single process can execute
// (the pipeline engine's, sim/engine.cpp): every device keeps its own order,
// and an op comes only after its input exists: F(c,m) after F(c-1,m); the
// (input) backward of (c,m) after its forward and after that of (c+1,m); the
// weight backward of (c,m) after its input backward. Throws std::logic_error
// when check_schedule fails or the device lists deadlock.
std::vector<ScheduledOp> single_process_order(const Schedule& schedule);

// Chunks laid out round-robin: chunk c on device c % devices (Megatron's
// interleaving; plain chunk c on device c when virtual_stages = 1).
Schedule empty_schedule(const ScheduleRequest& request, bool split_backward);

}  // namespace slowpipe::netmodel
