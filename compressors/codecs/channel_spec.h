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
#include "compressors/codecs/codec.h"
#include "compressors/codecs/spec.h"

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
  // Example specs that `slowpipe codecs` lists (codec.h, SpecExample).
  std::vector<SpecExample> examples = {};
};
// Built-ins first (registered through register_scheme on first use), then
// those added by register_scheme. The first entry is the scheme of a spec
// written without one ("q4" is "direct(q4)"; compressors/codecs/spec.h).
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
// business. No implicit conversion from text: code holding a literal spec
// parses it, saying in which role (ChannelSpec::parse(text, backward)).
class ChannelSpec {
 public:
  ChannelSpec();  // "none"
  // Parses `text`; `backward` allows topk:shared. UsageError naming the position.
  static ChannelSpec parse(const std::string& text, bool backward);

  const std::string& text() const { return text_; }
  // The parse tree. For a spec derived from another (GradientSpec's resolved
  // form) it is the other's tree grown by the added option, whose position is
  // 0; text() is then the canonical form.
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
  friend class GradientSpec;
  // This spec with `option` appended to its first stage, in canonical form:
  // built from the grown tree, no text parsed.
  ChannelSpec with_option(const SpecArg& option) const;

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
//               sample id; data-parallel gradients have none), and no first
//               stage its codec's registry entry refuses for a flat [1, N]
//               gradient (CodecInfo::gradient_form: powersgd:R:last or :rows).
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

// compress.grad, resolved once where it is set (CompressConfig::grad): the
// spec as given (what compress.grad prints and run logs record as
// compress.grad) and the spec gradients run as (what the gradient channels are
// built from, recorded as compress.grad_spec). Gradients cross as one flat
// [1, N] tensor per stage; the codec of the spec's first stage says how it
// adapts to that in its registry entry (CodecInfo::gradient_form, codec.h):
//   q<b> without an explicit scale granularity (under any scheme: q4, ef(q4),
//        ef21(q2:stochastic)) gets group=kGradientGroup (quantizer.h): the
//        default per-channel scales (the last dimension) would be one scale
//        per element (q4: 2.5 bytes per element, 1.6x smaller than fp32);
//        grouped, q4 is 0.5 + 2/128 bytes per element, 7.76x smaller;
//   powersgd without a matrix view gets `square` (a one-row matrix would be
//        sent uncompressed).
// A spec with an explicit granularity or view (q4:channel, q4:group=64,
// powersgd:4:square), other codecs and sparsifier value stages (default: one
// scale per row) run as given. The resolved form is canonical when an option
// was added (else the text as given), valid, and a fixed point. It is derived
// from the parse tree: no text is parsed again.
class GradientSpec {
 public:
  GradientSpec();  // none
  // Resolves `given`; UsageError for topk:shared (only valid as a backward).
  explicit GradientSpec(ChannelSpec given);
  // Parses `text` as a forward-role spec (ChannelSpec::parse) and resolves it.
  static GradientSpec parse(const std::string& text);

  const ChannelSpec& given() const { return given_; }
  const ChannelSpec& resolved() const { return resolved_; }

 private:
  ChannelSpec given_, resolved_;
};

// The pairing make_boundary checks, without building the channels: both specs
// valid (the forward as a forward, the backward as a backward), and a
// `topk:shared[+VALUES]` backward only after a forward that sparsifies.
// Throws UsageError.
void validate_boundary(const ChannelSpec& fw_spec, const ChannelSpec& bw_spec);

// Exact bytes of one steady-state message (AQ: after warm-up) for a tensor of
// `shape`. For `topk:shared` use the overload that names the forward spec.
uint64_t wire_bytes(const ChannelSpec& spec, const Shape& shape);
uint64_t wire_bytes(const ChannelSpec& fw_spec, const ChannelSpec& bw_spec, const Shape& shape);

// `slowpipe codecs`: codecs and schemes with syntax and one-line description,
// then the registry entries' examples (SpecExample, codec.h).
void print_registry(std::ostream& os);

}  // namespace slowpipe::compressors
