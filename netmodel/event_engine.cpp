// Binary min-heap with hand-written sift-up/sift-down (moving a hole rather
// than swapping), the usual fastest layout for a few thousand pending events.
#include "netmodel/event_engine.h"

#include <stdexcept>

namespace slowpipe::netmodel {

void EventEngine::schedule(double time_s, uint32_t type, uint32_t target, uint64_t aux) {
  if (time_s < now_s_) time_s = now_s_;  // never schedule into the past
  Event ev{time_s, next_seq_++, type, target, aux};
  size_t hole = heap_.size();
  heap_.push_back(ev);
  while (hole > 0) {
    const size_t parent = (hole - 1) / 2;
    if (!later(heap_[parent], ev)) break;
    heap_[hole] = heap_[parent];
    hole = parent;
  }
  heap_[hole] = ev;
}

Event EventEngine::pop() {
  if (heap_.empty()) throw std::logic_error("EventEngine::pop on an empty queue");
  const Event top = heap_.front();
  const Event last = heap_.back();
  heap_.pop_back();
  const size_t n = heap_.size();
  if (n > 0) {
    size_t hole = 0;
    for (;;) {
      size_t child = 2 * hole + 1;
      if (child >= n) break;
      if (child + 1 < n && later(heap_[child], heap_[child + 1])) ++child;
      if (!later(last, heap_[child])) break;
      heap_[hole] = heap_[child];
      hole = child;
    }
    heap_[hole] = last;
  }
  now_s_ = top.time_s;
  ++processed_;
  return top;
}

void EventEngine::reset(double start_s) {
  heap_.clear();
  now_s_ = start_s;
  next_seq_ = 0;
}

}  // namespace slowpipe::netmodel
