// Building channels from spec strings: each feedback scheme's channel factory,
// make_channel / make_boundary. What a spec means without building a channel
// (the scheme registry, validation, canonical and gradient specs, exact wire
// sizes, the listing behind `slowpipe codecs`) is in channel_spec.h, plain C++
// in slowpipe::codecs; included here for the callers that build channels.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compressors/codecs/aq_store.h"
#include "compressors/channels/channel.h"
#include "compressors/codecs/channel_spec.h"
#include "compressors/codecs/codec.h"

namespace slowpipe::compressors {

class MaskStore;  // feedback.h

struct ChannelContext {
  std::string name = "channel";  // e.g. "b0.fw"; names AQ's disk files
  int64_t num_samples = 0;       // sample ids are in [0, num_samples); 0 = unknown
  int warmup_epochs = 1;         // compress.aq_warmup_epochs: AQ-SGD's own warm-up
  // compress.warmup_epochs: make_boundary sends every forward and backward
  // channel uncompressed (fp32) during epochs [0, plain_warmup_epochs)
  // (WarmupChannel, warmup.h); AQ-SGD channels warm up for
  // max(warmup_epochs, plain_warmup_epochs) epochs. make_channel ignores it.
  int plain_warmup_epochs = 0;
  AqStore aq_store = AqStore::kMemory;
  std::string aq_dir;  // disk store folder; "" = the system temp folder
  uint64_t seed = 0;   // stochastic rounding, RandK
  // A forward channel whose backward is `topk:shared`: the stores it publishes
  // its masks to, sender side (up) and receiver side (down); null otherwise.
  // Set by make_boundary; every scheme's factory passes them to its channel.
  std::shared_ptr<MaskStore> up_masks, down_masks;
};

// The channel factory of each scheme of scheme_registry() (channel_spec.h),
// bound by name: the names, syntax, descriptions and flags live there alone
// (that registry links no libtorch). Throws std::logic_error when the scheme
// has no factory, or a built-in factory names no registered scheme (a
// programming error).
using SchemeFactory = std::function<std::unique_ptr<Channel>(
    const SpecTree&, std::unique_ptr<Codec>, const ChannelContext&)>;
const SchemeFactory& scheme_factory(const std::string& name);
// Binds a factory to a scheme that outside code added with register_scheme
// (channel_spec.h); std::logic_error when the scheme is not registered or
// already has one.
void register_scheme_channel(const std::string& name, SchemeFactory make);

// Builds a channel. Throws UsageError for a bad spec. `topk:shared` is refused
// here: it only exists as the backward half of a boundary (make_boundary).
std::unique_ptr<Channel> make_channel(const ChannelSpec& spec, const ChannelContext& ctx);

// The forward and backward channels of one pipeline boundary, each behind a
// WarmupChannel when ctx.plain_warmup_epochs > 0 (AQ-SGD channels excepted). A backward spec
// `topk:shared[+VALUES]` reuses the mask of the forward transfer of the same
// micro-batch (looked up by its sample ids); the forward spec must then sparsify
// (topk/randk, under any scheme).
struct Boundary {
  std::unique_ptr<Channel> fw, bw;
};
Boundary make_boundary(const ChannelSpec& fw_spec, const ChannelSpec& bw_spec,
                       const ChannelContext& ctx);

}  // namespace slowpipe::compressors
