// Channel construction from spec strings: each scheme's factory, make_channel,
// make_boundary. What a spec means without building a channel: channel_spec.cpp.
#include "compressors/factory.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "common/errors.h"
#include "compressors/aq_sgd.h"
#include "compressors/feedback.h"
#include "compressors/quantizer.h"
#include "compressors/sparsifier.h"
#include "compressors/warmup.h"

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

}  // namespace

const SchemeFactory& scheme_factory(const std::string& name) {
  static const std::map<std::string, SchemeFactory> factories = [] {
    std::map<std::string, SchemeFactory> f = {
        {"direct",
         [](const SpecTree& t, std::unique_ptr<Codec> c,
            const ChannelContext&) -> std::unique_ptr<Channel> {
           std::string spec = canonical(t, *c);
           return std::make_unique<DirectChannel>(std::move(c), spec);
         }},
        {"ef",
         [](const SpecTree& t, std::unique_ptr<Codec> c,
            const ChannelContext&) -> std::unique_ptr<Channel> {
           std::string spec = canonical(t, *c);
           return std::make_unique<EfChannel>(std::move(c), spec);
         }},
        {"ef21",
         [](const SpecTree& t, std::unique_ptr<Codec> c,
            const ChannelContext&) -> std::unique_ptr<Channel> {
           std::string spec = canonical(t, *c);
           return std::make_unique<Ef21Channel>(std::move(c), spec);
         }},
        {"aq",
         [](const SpecTree& t, std::unique_ptr<Codec> c,
            const ChannelContext& ctx) -> std::unique_ptr<Channel> {
           AqConfig a;
           a.warmup_epochs = std::max(ctx.warmup_epochs, ctx.plain_warmup_epochs);
           a.silent_mask_epochs = ctx.plain_warmup_epochs;
           a.num_samples = ctx.num_samples;
           a.store = ctx.aq_store;
           if (a.store == "disk") {
             a.sender_path = aq_path(ctx, "sender");
             a.receiver_path = aq_path(ctx, "receiver");
           }
           std::string spec = canonical(t, *c);
           return std::make_unique<AqChannel>(std::move(c), spec, a);
         }},
    };
    // One factory per registered scheme, and no other.
    size_t bound = 0;
    for (const SchemeInfo& s : scheme_registry()) {
      if (!f.count(s.name))
        throw std::logic_error("scheme '" + s.name + "' has no channel factory");
      ++bound;
    }
    if (bound != f.size())
      throw std::logic_error("a channel factory names a scheme missing from scheme_registry()");
    return f;
  }();
  auto it = factories.find(name);
  if (it == factories.end()) throw std::logic_error("no channel factory for scheme '" + name + "'");
  return it->second;
}

std::unique_ptr<Channel> make_channel(const std::string& spec, const ChannelContext& ctx) {
  SpecTree tree = parse_spec(spec);
  std::unique_ptr<Codec> codec = parse_codec(tree, ctx.seed, /*backward=*/false);
  return scheme_factory(tree.scheme)(tree, std::move(codec), ctx);
}

Boundary make_boundary(const std::string& fw_spec, const std::string& bw_spec,
                       const ChannelContext& ctx) {
  validate_boundary(fw_spec, bw_spec);
  SpecTree fw_tree = parse_spec(fw_spec);
  SpecTree bw_tree = parse_spec(bw_spec);
  ChannelContext fw_ctx = ctx, bw_ctx = ctx;
  fw_ctx.name = ctx.name + ".fw";
  bw_ctx.name = ctx.name + ".bw";
  bw_ctx.seed = ctx.seed ^ 0xB0B0B0B0B0B0ULL;
  Boundary b;
  std::unique_ptr<Codec> fw_codec = parse_codec(fw_tree, fw_ctx.seed, false);
  std::unique_ptr<Codec> bw_codec = parse_codec(bw_tree, bw_ctx.seed, true);
  b.fw = scheme_factory(fw_tree.scheme)(fw_tree, std::move(fw_codec), fw_ctx);
  if (is_shared(bw_tree)) {
    // One store per side of the boundary (feedback.h).
    auto up = std::make_shared<MaskStore>(), down = std::make_shared<MaskStore>();
    dynamic_cast<CodecChannel&>(*b.fw).share_masks(up, down);
    if (auto* aq = dynamic_cast<AqChannel*>(b.fw.get()))
      aq->set_receiver_mask_codec(parse_codec(fw_tree, fw_ctx.seed, false));
    std::string spec = bw_codec->spec();
    auto bw = std::make_unique<SharedMaskChannel>(std::move(bw_codec), spec);
    bw->share_masks(up, down);
    b.bw = std::move(bw);
  } else {
    b.bw = scheme_factory(bw_tree.scheme)(bw_tree, std::move(bw_codec), bw_ctx);
  }
  // AQ-SGD runs its own warm-up (it fills its buffers); every other channel,
  // topk:shared included, is wrapped. A wrapped forward publishes no mask in
  // warm-up, and its topk:shared backward takes none then.
  const int w = ctx.plain_warmup_epochs;
  if (w > 0 && fw_tree.scheme != "aq") b.fw = std::make_unique<WarmupChannel>(std::move(b.fw), w);
  if (w > 0 && bw_tree.scheme != "aq") b.bw = std::make_unique<WarmupChannel>(std::move(b.bw), w);
  return b;
}

}  // namespace slowpipe::compressors
