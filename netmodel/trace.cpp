// Names of op kinds, for tables and trace exports.
#include "netmodel/trace.h"

namespace slowpipe::netmodel {

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kForward:
      return "forward";
    case OpKind::kBackward:
      return "backward";
    case OpKind::kSendActivation:
      return "send_activation";
    case OpKind::kSendGradient:
      return "send_gradient";
    case OpKind::kAllReduce:
      return "all_reduce";
    case OpKind::kOptimizer:
      return "optimizer";
    case OpKind::kBackwardInput:
      return "backward_input";
    case OpKind::kBackwardWeight:
      return "backward_weight";
  }
  return "unknown";
}

}  // namespace slowpipe::netmodel
