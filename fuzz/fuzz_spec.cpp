// Fuzz target: the channel-spec parser and the channel factory (`--fw`, `--bw`,
// `compress.*`). The input is read as a spec (at most 256 characters). Only
// UsageError may escape: a spec is either refused with a message or accepted.
// An accepted spec must round-trip: its canonical form parses, canonicalizes to
// itself, and builds the same codec (the same message for the same tensor), so
// that a label read back from a run log names exactly the channel that ran.
// Accepted non-shared specs must also build a channel (make_channel) and carry
// one small tensor; `topk:shared` must build as the backward of a TopK boundary.
#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "common/errors.h"
#include "compressors/codecs/codec.h"
#include "compressors/channels/factory.h"

namespace {

[[noreturn]] void fail(const std::string& spec, const std::string& what) {
  std::fprintf(stderr, "fuzz_spec: '%s': %s\n", spec.c_str(), what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace sc = slowpipe::compressors;
  if (size > 256) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string canon;
  try {
    canon = sc::canonical_spec(sc::ChannelSpec::parse(text, /*backward=*/true));
  } catch (const slowpipe::UsageError&) {
    return 0;  // refused, with a message: fine
  }
  // Accepted: the canonical form is a fixed point and parses the same way.
  std::string again;
  try {
    again = sc::canonical_spec(sc::ChannelSpec::parse(canon, /*backward=*/true));
    sc::validate_spec(canon, /*backward=*/true);
  } catch (const slowpipe::UsageError& e) {
    fail(text, "canonical form '" + canon + "' is refused: " + e.what());
  }
  if (again != canon) fail(text, "canonical '" + canon + "' canonicalizes to '" + again + "'");
  const sc::SpecTree tree = sc::parse_spec(canon);
  const bool shared = tree.stages.front().args.size() == 1 &&
                      tree.stages.front().args.front().value == "shared" &&
                      tree.stages.front().name == "topk";
  const at::Tensor x =
      at::arange(24, at::TensorOptions().dtype(at::kFloat)).reshape({2, 3, 4}) - 11.5;
  const at::Tensor ids = at::arange(2, at::TensorOptions().dtype(at::kLong));
  try {
    sc::ChannelContext ctx;
    ctx.num_samples = 2;
    ctx.warmup_epochs = 0;
    if (shared) {
      sc::Boundary b = sc::make_boundary(sc::ChannelSpec::parse("topk:0.5", /*backward=*/false),
                                         sc::ChannelSpec::parse(canon, /*backward=*/true), ctx);
      b.fw->transfer(x, ids, nullptr);
      b.bw->transfer(x, ids, nullptr);
      return 0;
    }
    // The written spec and its canonical form build the same codec.
    auto a = sc::make_codec(sc::parse_spec(text), 3);
    auto b = sc::make_codec(tree, 3);
    if (a->encode(x) != b->encode(x)) fail(text, "differs from its canonical form " + canon);
    auto ch = sc::make_channel(sc::ChannelSpec::parse(canon, /*backward=*/false), ctx);
    if (ch->spec() != canon) fail(text, "channel spec '" + ch->spec() + "' != '" + canon + "'");
    ch->transfer(x, ids, nullptr);
    ch->transfer(x, ids, nullptr);
  } catch (const slowpipe::UsageError& e) {
    fail(text, std::string("accepted spec refused when built: ") + e.what());
  }
  return 0;
}
