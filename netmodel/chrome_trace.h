// Export of a timeline as Chrome / Perfetto trace JSON ("traceEvents" with
// complete "X" events, microsecond timestamps), viewable in ui.perfetto.dev or
// chrome://tracing. One process per replica; in it one thread per stage
// (compute, encode, decode) and one per outgoing message direction
// ("s2->s3 wire"). Process and thread names are set with metadata events.
#pragma once

#include <ostream>
#include <vector>

#include "netmodel/replay.h"

namespace slowpipe::netmodel {

// `offset_s` shifts every timestamp.
void write_chrome_trace(const Timeline& timeline, std::ostream& os, double offset_s = 0);
// Several steps laid end to end in one document (each span's args carry "step").
void write_chrome_trace(const std::vector<Timeline>& steps, std::ostream& os);

}  // namespace slowpipe::netmodel
