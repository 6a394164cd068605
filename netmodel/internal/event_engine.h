// The discrete-event engine: a time-ordered queue of small typed events.
//
// Narrow contract (after SimGrid's and ASTRA-sim's engines): `schedule` an event
// at an absolute time, read `now`, and `run` a handler over the events in time
// order. Ties at equal time are broken by insertion order (a sequence number),
// so a simulation is deterministic whatever the platform. Events are plain
// 32-byte records (time, sequence, type, target, aux) rather than closures: the handler
// switches on the type, which keeps the hot loop free of allocations.
// Leaves out: cancellation (callers stamp events with a version and drop stale
// ones), parallel execution.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace slowpipe::netmodel {

struct Event {
  double time_s = 0;
  uint64_t seq = 0;     // insertion order: the deterministic tie-break
  uint32_t type = 0;    // the caller's event kind
  uint32_t target = 0;  // e.g. a device or flow index
  uint64_t aux = 0;     // free payload (a version stamp, an op index, ...)
};
static_assert(sizeof(Event) == 32, "the header comment states the event's size");

class EventEngine {
 public:
  // Schedules an event at absolute time `time_s` (>= now()).
  void schedule(double time_s, uint32_t type, uint32_t target, uint64_t aux = 0) {
    if (time_s < now_s_) time_s = now_s_;  // never schedule into the past
    const Event ev{time_s, next_seq_++, type, target, aux};
    size_t hole = heap_.size();
    heap_.push_back(ev);
    while (hole > 0) {
      const size_t parent = (hole - 1) / kArity;
      if (!later(heap_[parent], ev)) break;
      heap_[hole] = heap_[parent];
      hole = parent;
    }
    heap_[hole] = ev;
  }
  double now() const { return now_s_; }
  bool empty() const { return heap_.empty(); }
  // The earliest pending event, which pop() would return (the queue must not be empty).
  const Event& top() const { return heap_.front(); }
  size_t pending() const { return heap_.size(); }
  uint64_t processed() const { return processed_; }
  // Removes and returns the earliest event, advancing now(). Throws
  // std::logic_error on an empty queue.
  Event pop() {
    if (heap_.empty()) throw_empty();
    const Event top = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n > 0) {
      size_t hole = 0;
      for (;;) {
        const size_t first = kArity * hole + 1;
        if (first >= n) break;
        size_t best = first;
        const size_t end = first + kArity < n ? first + kArity : n;
        for (size_t c = first + 1; c < end; ++c) {
          if (later(heap_[best], heap_[c])) best = c;
        }
        if (!later(last, heap_[best])) break;
        heap_[hole] = heap_[best];
        hole = best;
      }
      heap_[hole] = last;
    }
    now_s_ = top.time_s;
    ++processed_;
    return top;
  }
  // Pops events in order and hands each to `handler(const Event&)` until the
  // queue is empty; the handler may schedule more.
  template <class Handler>
  void run(Handler&& handler) {
    while (!heap_.empty()) handler(pop());
  }
  // Empties the queue, zeroes processed() and sets now() back to `start_s`.
  void reset(double start_s = 0);

 private:
  static constexpr size_t kArity = 4;  // a 4-ary heap: shallower, cache-friendlier
  [[noreturn]] static void throw_empty();
  static bool later(const Event& a, const Event& b) {
    return a.time_s > b.time_s || (a.time_s == b.time_s && a.seq > b.seq);
  }
  std::vector<Event> heap_;  // 4-ary min-heap on (time_s, seq)
  double now_s_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t processed_ = 0;
};

}  // namespace slowpipe::netmodel
