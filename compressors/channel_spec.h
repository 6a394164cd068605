// What a channel spec means, without building the channel: the feedback-scheme
// registry (names, syntax, one-line descriptions), validation by role and by
// boundary, the canonical and gradient forms of a spec, the exact wire size of
// a message, and the listing behind `slowpipe codecs`. Plain C++ (library
// slowpipe::codecs, no libtorch): the codecs are built, never run on a tensor,
// so `slowpipe timing` and `slowpipe codecs` need no torch. The channels
// themselves are built by factory.h (slowpipe::compressors), whose factories
// are bound to the names registered here.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "common/registry.h"
#include "compressors/codec.h"
#include "compressors/spec.h"

namespace slowpipe::compressors {

// The feedback schemes; the one list of their names (factory.h binds a channel
// factory to each).
struct SchemeInfo {
  std::string name;         // "direct", "ef", "ef21", "aq"
  std::string syntax;       // "ef(CODEC)"
  std::string description;  // one line
  // Runs its own warm-up (AQ-SGD fills its buffers): make_boundary does not
  // wrap it in a WarmupChannel.
  bool own_warmup = false;
  // Keys its state by sample id: cannot carry data-parallel gradients.
  bool keyed_by_sample = false;
  // The scheme's name in plot legends; empty: its name ("direct" is "plain").
  std::string plot_label = "";
};
// Built-ins first (registered through register_scheme on first use), then
// those added by register_scheme. The first entry is the scheme of a spec
// written without one ("q4" is "direct(q4)"; compressors/spec.h).
const Registry<SchemeInfo>& scheme_registry();
// Adds a feedback scheme; the channel factories (factory.h) need one bound to
// the same name before a channel with it is built. An empty or duplicate name
// throws std::logic_error.
void register_scheme(SchemeInfo info);
// Whether `scheme` is the scheme of a spec written without one (direct).
bool is_plain_scheme(const std::string& scheme);
// The scheme's label in plot legends (plot_label, else its name).
std::string scheme_plot_label(const std::string& scheme);

// A channel spec parsed once, where it enters (an option, a sweep point, a
// test): the text as written (what options print and run logs record) and its
// parse tree, from which the factories build codecs and channels without
// parsing again. Valid by construction: the scheme and codecs exist and their
// arguments check; `topk:shared` only where a backward is allowed. Whether it
// suits a role or a boundary is validate_role's and validate_boundary's
// business. Converts implicitly from text (parsing it, as a backward), so
// that code holding a literal spec can pass it where a ChannelSpec is taken.
class ChannelSpec {
 public:
  ChannelSpec();                         // "none"
  ChannelSpec(const std::string& text);  // NOLINT: parses; UsageError
  ChannelSpec(const char* text);         // NOLINT
  // Parses `text`; `backward` allows topk:shared. UsageError naming the position.
  static ChannelSpec parse(const std::string& text, bool backward);

  const std::string& text() const { return text_; }
  const SpecTree& tree() const { return tree_; }
  const std::string& scheme() const { return tree_.scheme; }
  bool shared() const { return shared_; }          // topk:shared[+VALUES]
  bool sparsifies() const { return sparsifies_; }  // topk:K / randk:K first stage
  // Keys its state by sample id (AQ-SGD's per-sample buffers; the scheme
  // registry's keyed_by_sample): needs compress.aq_dir for a disk store.
  bool keyed_by_sample() const;
  bool operator==(const ChannelSpec& o) const { return text_ == o.text_; }
  bool operator!=(const ChannelSpec& o) const { return text_ != o.text_; }

 private:
  std::string text_;
  SpecTree tree_;
  bool shared_ = false, sparsifies_ = false;
};
inline std::ostream& operator<<(std::ostream& os, const ChannelSpec& s) {
  return os << s.text();
}

// Validates a spec (UsageError); `backward` allows topk:shared.
void validate_spec(const std::string& spec, bool backward);

// What a channel carries. Checked before any data is loaded (CLI, trainer):
//   every role: the spec parses and names existing codecs and options;
//   kForward:   not `topk:shared` (it only exists as a backward);
//   kBackward:  `topk:shared[+V]` only when `forward_spec`, the forward spec of
//               the same boundary, sparsifies (topk:K or randk:K, under any
//               scheme and with any value codec: ef(topk:0.1), aq(topk:0.3),
//               topk:0.1+q8); `aq(...)` is allowed (backward transfers carry
//               sample ids);
//   kGradient:  not `topk:shared`, not `aq(...)` (AQ-SGD keys its buffers by
//               sample id; data-parallel gradients have none).
// Throws UsageError "KEY = SPEC: why" (KEY names the option, e.g.
// "compress.grad" or "compress.bw (boundary 2)").
enum class ChannelRole { kForward, kBackward, kGradient };
void validate_role(const std::string& key, const ChannelSpec& spec, ChannelRole role,
                   const ChannelSpec& forward_spec = ChannelSpec());
// The same for specs still in text: a spec that does not parse is refused as
// "KEY: bad spec ...", a forward that does not parse (needed only behind a
// topk:shared backward) as "KEY = SPEC: its forward spec is not valid: ...".
void validate_role(const std::string& key, const std::string& spec, ChannelRole role,
                   const std::string& forward_spec = "");
inline void validate_role(const std::string& key, const char* spec, ChannelRole role,
                          const char* forward_spec = "") {
  validate_role(key, std::string(spec), role, std::string(forward_spec));
}
// The canonical form of a spec (defaults omitted, aliases resolved).
std::string canonical_spec(const ChannelSpec& spec);

// What a `compress.grad` spec runs as. Gradients cross as one flat [1, N] tensor
// per stage, where the quantizers' default per-channel scales (the last
// dimension) would be one scale per element (q4: 2.5 bytes per element, 1.6x
// smaller than fp32). A q<b> codec without an explicit scale granularity (under
// any scheme: q4, ef(q4), ef21(q2:stochastic)) therefore gets
// group=kGradientGroup: q4 is 0.5 + 2/128 bytes per element, 7.76x smaller than
// fp32. Specs with an explicit granularity (q4:channel, q4:row, q4:group=64),
// other codecs and sparsifier value stages (default: one scale per row) are
// returned as written. The result is a valid spec and a fixed point.
constexpr int64_t kGradientGroup = 128;
ChannelSpec gradient_spec(const ChannelSpec& spec);

// The pairing make_boundary checks, without building the channels: both specs
// valid (the forward as a forward, the backward as a backward), and a
// `topk:shared[+VALUES]` backward only after a forward that sparsifies.
// Throws UsageError.
void validate_boundary(const ChannelSpec& fw_spec, const ChannelSpec& bw_spec);

// Exact bytes of one steady-state message (AQ: after warm-up) for a tensor of
// `shape`. For `topk:shared` use the overload that names the forward spec.
uint64_t wire_bytes(const ChannelSpec& spec, const Shape& shape);
uint64_t wire_bytes(const ChannelSpec& fw_spec, const ChannelSpec& bw_spec, const Shape& shape);

// `slowpipe codecs`: codecs and schemes with syntax and one-line description.
void print_registry(std::ostream& os);

// For the channel factories (factory.cpp) and the checks above.
// Whether a parsed spec is `topk:shared[+VALUES]`.
bool is_shared(const SpecTree& tree);
// Whether its first stage sparsifies (topk:K or randk:K, not topk:shared).
bool sparsifies(const SpecTree& tree);
// The canonical spec of a parsed spec whose codec is `codec`.
std::string canonical(const SpecTree& tree, const Codec& codec);
// Checks the scheme (registered; topk:shared only as a direct backward) and
// builds the codec; UsageError naming the position.
std::unique_ptr<Codec> parse_codec(const SpecTree& tree, uint64_t seed, bool backward);

}  // namespace slowpipe::compressors
