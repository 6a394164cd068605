// Out-of-line parts of the event engine (the hot paths are inline in the header:
// a 4-ary min-heap, moving a hole rather than swapping).
#include "netmodel/internal/event_engine.h"

#include <stdexcept>

namespace slowpipe::netmodel {

void EventEngine::throw_empty() {
  throw std::logic_error("EventEngine::pop on an empty queue");
}

void EventEngine::reset(double start_s) {
  heap_.clear();
  now_s_ = start_s;
  next_seq_ = 0;
  processed_ = 0;
}

}  // namespace slowpipe::netmodel
