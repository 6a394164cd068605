// Test shorthand for a channel spec written as text: ChannelSpec has no
// implicit conversion from text, so tests parse their literal specs through
// this, as a backward spec (the role in which every valid spec parses,
// topk:shared included). Code that checks a role parses with
// ChannelSpec::parse(text, backward) itself.
#pragma once

#include <string>

#include "compressors/codecs/channel_spec.h"

namespace slowpipe::test {

inline compressors::ChannelSpec parsed(const std::string& text) {
  return compressors::ChannelSpec::parse(text, /*backward=*/true);
}

}  // namespace slowpipe::test
