// Building a codec from an already-parsed spec (channel_spec.cpp, for the
// checks of channel_spec.h and the channel factories of factory.cpp), and the
// facts of a parse tree the two need. Internal to compressors/: other
// libraries hold a ChannelSpec and ask channel_spec.h or factory.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "compressors/codecs/codec.h"
#include "compressors/codecs/spec.h"

namespace slowpipe::compressors {

// Checks the scheme of a parsed spec (registered; topk:shared only as a direct
// backward) and builds its codec; UsageError naming the position.
std::unique_ptr<Codec> build_codec(const SpecTree& tree, uint64_t seed, bool backward);
// Whether a parsed spec is `topk:shared[+VALUES]`.
bool is_shared(const SpecTree& tree);
// Whether its first stage sparsifies element by element (topk:K or randk:K,
// not topk:shared, not colk:F): a mask a topk:shared backward can reuse.
bool sparsifies(const SpecTree& tree);
// The canonical spec of a parsed spec whose codec is `codec`.
std::string canonical(const SpecTree& tree, const Codec& codec);

}  // namespace slowpipe::compressors
