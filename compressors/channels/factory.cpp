// Channel construction from spec strings: each scheme's factory, make_channel,
// make_boundary. What a spec means without building a channel: channel_spec.cpp.
#include "compressors/channels/factory.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>

#include "common/errors.h"
#include "compressors/channels/internal/aq_sgd.h"
#include "compressors/channels/internal/feedback.h"
#include "compressors/codecs/build_codec.h"
#include "compressors/codecs/quantizer.h"
#include "compressors/codecs/sparsifier.h"
#include "compressors/channels/internal/warmup.h"

namespace slowpipe::compressors {

namespace {

std::string aq_path(const ChannelContext& ctx, const std::string& side) {
  std::filesystem::path dir = ctx.aq_dir.empty()
                                  ? std::filesystem::temp_directory_path() / "slowpipe-aq"
                                  : std::filesystem::path(ctx.aq_dir);
  std::string name;
  for (char c : ctx.name)
    name += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
  return (dir / (name + "." + std::to_string(::getpid()) + "." + side + ".f16")).string();
}

// A scheme's channel, given the mask stores of a topk:shared boundary.
template <class C>
std::unique_ptr<Channel> with_masks(std::unique_ptr<C> channel, const ChannelContext& ctx) {
  if (ctx.up_masks) channel->share_masks(ctx.up_masks, ctx.down_masks);
  return channel;
}

template <class C>
SchemeFactory plain_factory() {
  return [](const SpecTree& t, std::unique_ptr<Codec> c, const ChannelContext& ctx) {
    std::string spec = canonical(t, *c);
    return with_masks(std::make_unique<C>(std::move(c), spec), ctx);
  };
}

std::unique_ptr<Channel> make_aq(const SpecTree& t, std::unique_ptr<Codec> c,
                                 const ChannelContext& ctx) {
  AqConfig a;
  a.warmup_epochs = std::max(ctx.warmup_epochs, ctx.plain_warmup_epochs);
  a.silent_mask_epochs = ctx.plain_warmup_epochs;
  a.num_samples = ctx.num_samples;
  a.store = ctx.aq_store;
  if (a.store == AqStore::kDisk) {
    a.sender_path = aq_path(ctx, "sender");
    a.receiver_path = aq_path(ctx, "receiver");
  }
  std::string spec = canonical(t, *c);
  auto aq = std::make_unique<AqChannel>(std::move(c), spec, a);
  // Its receiver rebuilds the warm-up masks with a codec of its own.
  if (ctx.up_masks) aq->set_receiver_mask_codec(build_codec(t, ctx.seed, false));
  return with_masks(std::move(aq), ctx);
}

struct SchemeChannel {
  std::string name;  // a scheme of scheme_registry()
  SchemeFactory make;
};

}  // namespace

namespace {

// The built-in schemes' factories, then those of register_scheme_channel.
Registry<SchemeChannel>& factory_table() {
  static Registry<SchemeChannel> f = [] {
    Registry<SchemeChannel> t("channel factory");
    t.add({"direct", plain_factory<DirectChannel>()});
    t.add({"ef", plain_factory<EfChannel>()});
    t.add({"ef21", plain_factory<Ef21Channel>()});
    t.add({"aq", &make_aq});
    for (const SchemeChannel& c : t)
      if (!scheme_registry().find(c.name))
        throw std::logic_error("channel factory '" + c.name + "' names no registered scheme");
    return t;
  }();
  return f;
}

}  // namespace

void register_scheme_channel(const std::string& name, SchemeFactory make) {
  if (!scheme_registry().find(name)) {
    throw std::logic_error("register_scheme_channel('" + name +
                           "'): register the scheme first (register_scheme)");
  }
  if (factory_table().find(name)) {
    throw std::logic_error("scheme '" + name + "' already has a channel factory");
  }
  factory_table().add({name, std::move(make)});
}

const SchemeFactory& scheme_factory(const std::string& name) {
  const SchemeChannel* entry = factory_table().find(name);
  if (!entry) {
    throw std::logic_error("no channel factory for scheme '" + name +
                           "' (register_scheme_channel)");
  }
  return entry->make;
}

std::unique_ptr<Channel> make_channel(const ChannelSpec& spec, const ChannelContext& ctx) {
  std::unique_ptr<Codec> codec = build_codec(spec.tree(), ctx.seed, /*backward=*/false);
  return scheme_factory(spec.scheme())(spec.tree(), std::move(codec), ctx);
}

Boundary make_boundary(const ChannelSpec& fw_spec, const ChannelSpec& bw_spec,
                       const ChannelContext& ctx) {
  validate_boundary(fw_spec, bw_spec);
  const SpecTree& fw_tree = fw_spec.tree();
  const SpecTree& bw_tree = bw_spec.tree();
  ChannelContext fw_ctx = ctx, bw_ctx = ctx;
  fw_ctx.name = ctx.name + ".fw";
  bw_ctx.name = ctx.name + ".bw";
  bw_ctx.seed = ctx.seed ^ 0xB0B0B0B0B0B0ULL;
  const bool shared = bw_spec.shared();
  if (shared) {  // one store per side of the boundary (feedback.h)
    fw_ctx.up_masks = std::make_shared<MaskStore>();
    fw_ctx.down_masks = std::make_shared<MaskStore>();
  }
  Boundary b;
  std::unique_ptr<Codec> fw_codec = build_codec(fw_tree, fw_ctx.seed, false);
  std::unique_ptr<Codec> bw_codec = build_codec(bw_tree, bw_ctx.seed, true);
  b.fw = scheme_factory(fw_tree.scheme)(fw_tree, std::move(fw_codec), fw_ctx);
  if (shared) {
    std::string spec = bw_codec->spec();
    auto bw = std::make_unique<SharedMaskChannel>(std::move(bw_codec), spec);
    bw->share_masks(fw_ctx.up_masks, fw_ctx.down_masks);
    b.bw = std::move(bw);
  } else {
    b.bw = scheme_factory(bw_tree.scheme)(bw_tree, std::move(bw_codec), bw_ctx);
  }
  // A scheme with its own warm-up (AQ-SGD fills its buffers) is left as is;
  // every other channel, topk:shared included, is wrapped. A wrapped forward
  // publishes no mask in warm-up, and its topk:shared backward takes none then.
  const int w = ctx.plain_warmup_epochs;
  const auto own_warmup = [](const SpecTree& t) {
    return scheme_registry().find(t.scheme)->own_warmup;  // validated above
  };
  if (w > 0 && !own_warmup(fw_tree)) b.fw = std::make_unique<WarmupChannel>(std::move(b.fw), w);
  if (w > 0 && !own_warmup(bw_tree)) b.bw = std::make_unique<WarmupChannel>(std::move(b.bw), w);
  return b;
}

}  // namespace slowpipe::compressors
