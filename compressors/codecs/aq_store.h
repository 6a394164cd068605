// Where AQ-SGD keeps its per-sample buffers (compress.aq_store), as the one
// enum every layer passes on: the option parser (config.h), the channel
// context (factory.h) and the buffers themselves (sample_buffer.h).
#pragma once

#include <string>

namespace slowpipe::compressors {

enum class AqStore {
  kMemory,  // "memory": a growing vector
  kDisk,    // "disk": a memory-mapped file in compress.aq_dir
};
const char* aq_store_name(AqStore store);
// The value named `text`; UsageError naming `key` otherwise.
AqStore parse_aq_store(const std::string& key, const std::string& text);

}  // namespace slowpipe::compressors
