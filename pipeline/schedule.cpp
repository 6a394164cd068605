// The schedule family's registry, the checks every schedule passes, and the
// round-robin chunk layout.
#include "pipeline/schedule.h"

#include <stdexcept>

#include "common/errors.h"
#include "common/registry.h"

namespace slowpipe::netmodel {

#define SLOWPIPE_SCHEDULE(f) ScheduleEntry f();
#include "pipeline/schedules/list.h"
#undef SLOWPIPE_SCHEDULE

namespace {

void register_builtins() {
#define SLOWPIPE_SCHEDULE(f) register_schedule(f());
#include "pipeline/schedules/list.h"
#undef SLOWPIPE_SCHEDULE
}

// The registry with the built-ins (schedules/list.h) in it: registered through
// register_schedule on first use, before any other schedule.
Registry<ScheduleEntry>& filled() {
  static LazyRegistry<ScheduleEntry> schedules("schedule", &register_builtins);
  return schedules.get();
}

}  // namespace

const char* pass_name(Pass pass) {
  switch (pass) {
    case Pass::kForward:
      return "F";
    case Pass::kBackward:
      return "B";
    case Pass::kBackwardInput:
      return "B_input";
    case Pass::kBackwardWeight:
      return "B_weight";
  }
  return "?";
}

const Registry<ScheduleEntry>& schedule_registry() {
  return filled();
}

std::vector<std::string> schedule_names() {
  return filled().names();
}

void register_schedule(ScheduleEntry entry) {
  if (!entry.make)
    throw std::logic_error("schedule '" + entry.name + "' registered without a builder");
  filled().add(std::move(entry));
}

const ScheduleEntry& find_schedule(const std::string& name, const std::string& key) {
  return filled().at(key, name);
}

Schedule empty_schedule(const ScheduleRequest& request, bool split_backward) {
  Schedule s;
  s.devices = request.devices;
  s.chunks = request.devices * request.virtual_stages;
  s.microbatches = request.microbatches;
  s.split_backward = split_backward;
  s.device_of.resize(s.chunks);
  for (int c = 0; c < s.chunks; ++c) s.device_of[c] = c % s.devices;
  s.per_device.resize(s.devices);
  return s;
}

Schedule make_schedule(const std::string& name, int devices, int microbatches, int virtual_stages) {
  const ScheduleEntry& entry = find_schedule(name);
  if (devices < 1 || microbatches < 1 || virtual_stages < 1) {
    throw UsageError("schedule '" + name +
                     "': stages, micro-batches and virtual stages must be >= 1");
  }
  if (virtual_stages > 1 && !entry.virtual_stages) {
    throw UsageError("schedule '" + name + "' has one model chunk per stage " +
                     "(pipeline.virtual_stages = " + std::to_string(virtual_stages) +
                     " needs an interleaved schedule)");
  }
  Schedule s = entry.make({devices, microbatches, virtual_stages});
  check_schedule(s);
  return s;
}

void check_schedule(const Schedule& s) {
  const auto fail = [](const std::string& why) { throw std::logic_error("schedule: " + why); };
  if (static_cast<int>(s.device_of.size()) != s.chunks ||
      static_cast<int>(s.per_device.size()) != s.devices) {
    fail("chunk layout or device lists of the wrong size");
  }
  const size_t slots = static_cast<size_t>(s.chunks) * s.microbatches;
  // Per (chunk, micro-batch): 1 once the forward is seen, then the backward
  // pass(es) each add their bit.
  std::vector<uint8_t> seen(slots, 0);
  enum : uint8_t { kF = 1, kB = 2, kBI = 4, kBW = 8 };
  for (int d = 0; d < s.devices; ++d) {
    for (const ScheduledOp& op : s.per_device[d]) {
      if (op.chunk < 0 || op.chunk >= s.chunks || op.microbatch < 0 ||
          op.microbatch >= s.microbatches) {
        fail("chunk or micro-batch out of range");
      }
      if (s.device_of[op.chunk] != d) fail("an op listed on a device that does not hold its chunk");
      uint8_t& bits = seen[static_cast<size_t>(op.chunk) * s.microbatches + op.microbatch];
      uint8_t bit = kF;
      switch (op.pass) {
        case Pass::kForward:
          break;
        case Pass::kBackward:
          bit = kB;
          if (s.split_backward) fail("a whole backward in a split-backward schedule");
          break;
        case Pass::kBackwardInput:
          bit = kBI;
          if (!s.split_backward) fail("a split backward in a schedule without them");
          break;
        case Pass::kBackwardWeight:
          bit = kBW;
          if (!s.split_backward) fail("a split backward in a schedule without them");
          if (!(bits & kBI)) fail("a weight backward before its input backward");
          break;
      }
      if (bits & bit) fail("an op listed twice");
      if (bit != kF && !(bits & kF)) fail("a backward before its forward");
      bits |= bit;
    }
  }
  const uint8_t full = s.split_backward ? (kF | kBI | kBW) : (kF | kB);
  for (uint8_t bits : seen) {
    if (bits != full) fail("expected every pass once per chunk and micro-batch");
  }
}

}  // namespace slowpipe::netmodel
