// The tensor shape `slowpipe codec --shape` may inspect, checked without
// libtorch: the light front runs it before loading libtorch (cli/codec_args.h),
// and compressors/channels/inspect.h before it allocates anything.
#pragma once

#include <cstdint>
#include <vector>

namespace slowpipe::compressors {

// Refuses (UsageError naming --shape) an empty shape, a dimension <= 0, and a
// tensor over kMaxInspectionElements elements or whose buffers (about 16 bytes
// per element) exceed half the physical memory, before anything is allocated.
constexpr int64_t kMaxInspectionElements = int64_t{1} << 31;
void check_inspection_shape(const std::vector<int64_t>& shape);

}  // namespace slowpipe::compressors
