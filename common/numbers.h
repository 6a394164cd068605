// Named IEEE special values, one definition for every library (a source that
// defined its own clashed with its neighbours in a unity batch).
#pragma once

#include <limits>

namespace slowpipe {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace slowpipe
