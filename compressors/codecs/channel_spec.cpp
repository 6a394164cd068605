// What a channel spec means without building the channel; see channel_spec.h.
// The scheme registry holds no channel factories (factory.cpp binds them by
// name), so that this file links no libtorch.
#include "compressors/codecs/channel_spec.h"

#include <iomanip>

#include "common/errors.h"
#include "compressors/codecs/build_codec.h"
#include "compressors/codecs/sparsifier.h"

namespace slowpipe::compressors {

namespace {

void register_builtin_schemes() {
  register_scheme({"direct", "CODEC or direct(CODEC)", "send C(x); no state", false, false,
                   /*plot_label=*/"plain"});
  register_scheme({"ef", "ef(CODEC)",
                   "error feedback: send C(x + e), keep e = x + e - C(x + e) (sender)", false,
                   false, "", /*examples=*/{{"ef(topk:0.1)", "", "", /*line=*/1}}});
  register_scheme({"ef21", "ef21(CODEC)",
                   "EF21: send C(x - g), both sides g += D(C(x - g)), output g", false, false, "",
                   /*examples=*/{{"ef21(q4)", "", "", /*line=*/1}}});
  register_scheme({"aq", "aq(CODEC)",
                   "AQ-SGD: per-sample fp16 buffers, send C(a - m(xi)) after warm-up epochs",
                   /*own_warmup=*/true, /*keyed_by_sample=*/true, "",
                   /*examples=*/{{"aq(q2)", "", "", 1}, {"aq(topk:0.3)", "", "", 1}}});
}

Registry<SchemeInfo>& filled_schemes() {
  static LazyRegistry<SchemeInfo> schemes("feedback scheme", &register_builtin_schemes);
  return schemes.get();
}

}  // namespace

const Registry<SchemeInfo>& scheme_registry() {
  return filled_schemes();
}

void register_scheme(SchemeInfo info) {
  filled_schemes().add(std::move(info));
}

bool is_plain_scheme(const std::string& scheme) {
  return scheme == scheme_registry().entries().front().name;
}

std::string scheme_plot_label(const std::string& scheme) {
  const SchemeInfo* s = scheme_registry().find(scheme);
  return s && !s->plot_label.empty() ? s->plot_label : scheme;
}

bool is_shared(const SpecTree& tree) {
  const SpecStage& s = tree.stages.front();
  const CodecInfo* c = codec_registry().find(s.name);
  return c && c->reuses_forward_mask && c->reuses_forward_mask(s);
}
bool sparsifies(const SpecTree& tree) {
  const CodecInfo* c = codec_registry().find(tree.stages.front().name);
  if (!c || !c->with_values || is_shared(tree)) return false;
  // A per-element mask that topk:shared can reuse (a Sparsifier); colk keeps
  // whole columns and publishes none.
  return dynamic_cast<const Sparsifier*>(make_codec(tree, 0).get()) != nullptr;
}

std::string canonical(const SpecTree& tree, const Codec& codec) {
  return is_plain_scheme(tree.scheme) ? codec.spec() : tree.scheme + "(" + codec.spec() + ")";
}

std::unique_ptr<Codec> build_codec(const SpecTree& tree, uint64_t seed, bool backward) {
  if (!scheme_registry().find(tree.scheme))
    spec_error(tree.text, tree.scheme_pos,
               "expected a feedback scheme (" + scheme_registry().known() + "), got '" +
                   tree.scheme + "'");
  std::unique_ptr<Codec> codec = make_codec(tree, seed);
  if (is_shared(tree)) {
    if (!backward)
      spec_error(tree.text, tree.stages.front().pos,
                 "'topk:shared' reuses the forward mask; it is only valid as a backward spec "
                 "(compress.bw)");
    if (!is_plain_scheme(tree.scheme))
      spec_error(tree.text, tree.scheme_pos,
                 "'topk:shared' cannot be wrapped by a feedback scheme");
  }
  return codec;
}

ChannelSpec::ChannelSpec() : text_("none"), tree_(parse_spec("none")) {}

ChannelSpec ChannelSpec::parse(const std::string& text, bool backward) {
  ChannelSpec s;
  s.text_ = text;
  s.tree_ = parse_spec(text);
  build_codec(s.tree_, 0, backward);  // names, arguments, scheme
  s.shared_ = is_shared(s.tree_);
  s.sparsifies_ = compressors::sparsifies(s.tree_);
  return s;
}

ChannelSpec ChannelSpec::with_option(const SpecArg& option) const {
  ChannelSpec s;
  s.tree_ = tree_;
  s.tree_.stages.front().args.push_back(option);
  s.text_ = canonical(s.tree_, *build_codec(s.tree_, 0, /*backward=*/false));
  s.shared_ = is_shared(s.tree_);
  s.sparsifies_ = compressors::sparsifies(s.tree_);
  return s;
}

bool ChannelSpec::keyed_by_sample() const {
  return scheme_registry().find(tree_.scheme)->keyed_by_sample;  // checked by parse
}

void validate_spec(const std::string& spec, bool backward) {
  ChannelSpec::parse(spec, backward);
}

void validate_boundary(const ChannelSpec& fw_spec, const ChannelSpec& bw_spec) {
  build_codec(fw_spec.tree(), 0, false);  // a forward: no topk:shared
  if (bw_spec.shared() && !fw_spec.sparsifies())
    throw UsageError("backward spec '" + bw_spec.text() +
                     "' reuses the forward mask, but the forward spec '" + fw_spec.text() +
                     "' does not sparsify (use topk:K or randk:K forward)");
}

void validate_role(const std::string& key, const ChannelSpec& spec, ChannelRole role,
                   const ChannelSpec& forward_spec) {
  auto fail = [&](const std::string& why) {
    throw UsageError(key + " = " + spec.text() + ": " + why);
  };
  const SpecTree& tree = spec.tree();
  build_codec(tree, 0, /*backward=*/true);
  const bool shared = spec.shared();
  const CodecInfo* codec = codec_registry().find(tree.stages.front().name);  // built above
  if (role == ChannelRole::kGradient && codec->gradient_form) {
    const std::string refusal = codec->gradient_form(tree.stages.front()).refusal;
    if (!refusal.empty()) fail(refusal);
  }
  // build_codec checked the scheme is registered.
  if (role == ChannelRole::kGradient && scheme_registry().find(tree.scheme)->keyed_by_sample)
    fail(
        "AQ-SGD keys its buffers by sample id and cannot carry data-parallel gradients (use a "
        "codec, ef(...) or ef21(...))");
  if (shared && role != ChannelRole::kBackward)
    fail(
        "'topk:shared' reuses the forward mask of a boundary; it is only valid as a backward "
        "spec (compress.bw, compress.bw_at)");
  if (shared) {
    try {
      build_codec(forward_spec.tree(), 0, /*backward=*/false);
    } catch (const UsageError& e) {
      fail(std::string("its forward spec is not valid: ") + e.what());
    }
    if (!forward_spec.sparsifies())
      fail("'topk:shared' reuses the forward mask, but the forward spec '" + forward_spec.text() +
           "' does not sparsify (use topk:K or randk:K forward, e.g. topk:0.1, ef(topk:0.1), "
           "aq(topk:0.3))");
  }
}

void validate_role(const std::string& key, const std::string& spec, ChannelRole role,
                   const std::string& forward_spec) {
  ChannelSpec parsed, forward;
  try {
    parsed = ChannelSpec::parse(spec, /*backward=*/true);
  } catch (const UsageError& e) {
    throw UsageError(key + ": " + e.what());
  }
  if (parsed.shared() && role == ChannelRole::kBackward) {
    try {
      forward = ChannelSpec::parse(forward_spec, /*backward=*/false);
    } catch (const UsageError& e) {
      throw UsageError(key + " = " + spec + ": its forward spec is not valid: " + e.what());
    }
  }
  validate_role(key, parsed, role, forward);
}

std::string canonical_spec(const ChannelSpec& spec) {
  return canonical(spec.tree(), *build_codec(spec.tree(), 0, /*backward=*/true));
}

GradientSpec::GradientSpec() = default;

GradientSpec::GradientSpec(ChannelSpec given) : given_(std::move(given)), resolved_(given_) {
  const SpecTree& tree = given_.tree();
  build_codec(tree, 0, /*backward=*/false);                                  // no topk:shared
  const CodecInfo* codec = codec_registry().find(tree.stages.front().name);  // built above
  if (!codec->gradient_form) return;
  const std::optional<SpecArg> option = codec->gradient_form(tree.stages.front()).option;
  if (option) resolved_ = given_.with_option(*option);
}

GradientSpec GradientSpec::parse(const std::string& text) {
  return GradientSpec(ChannelSpec::parse(text, /*backward=*/false));
}

uint64_t wire_bytes(const ChannelSpec& spec, const Shape& shape) {
  if (spec.shared())
    throw UsageError("wire_bytes('" + spec.text() +
                     "'): the size depends on the forward spec; name it too");
  return build_codec(spec.tree(), 0, false)->message_bytes(shape);
}

uint64_t wire_bytes(const ChannelSpec& fw_spec, const ChannelSpec& bw_spec, const Shape& shape) {
  if (!bw_spec.shared()) return wire_bytes(bw_spec, shape);
  if (!fw_spec.sparsifies())
    throw UsageError("'" + bw_spec.text() + "' needs a sparsifying forward spec, got '" +
                     fw_spec.text() + "'");
  auto fw = make_codec(fw_spec.tree(), 0);
  auto bw = build_codec(bw_spec.tree(), 0, true);
  int64_t rows, m, k;
  dynamic_cast<Sparsifier&>(*fw).geometry(shape, &rows, &m, &k);
  SparseSelection sel;
  sel.rows = rows;
  sel.row_len = m;
  sel.k = k;
  dynamic_cast<Sparsifier&>(*bw).use_selection(sel);
  return bw->message_bytes(shape);
}

namespace {
// "[ONLY_AS only: ]SPEC[ (COMMENT)]" (SpecExample, codec.h).
std::string example_text(const SpecExample& e) {
  return (e.only_as.empty() ? "" : e.only_as + " only: ") + e.spec +
         (e.comment.empty() ? "" : " (" + e.comment + ")");
}

// The example lines: each entry's examples on its line, schemes first.
void print_examples(std::ostream& os) {
  std::vector<std::vector<const SpecExample*>> lines;
  auto collect = [&lines](const std::vector<SpecExample>& examples) {
    for (const SpecExample& e : examples) {
      if (e.line >= static_cast<int>(lines.size())) lines.resize(e.line + 1);
      lines[e.line].push_back(&e);
    }
  };
  for (const SchemeInfo& s : scheme_registry()) collect(s.examples);
  for (const CodecInfo& c : codec_registry()) collect(c.examples);
  bool first_line = true;
  for (const auto& line : lines) {
    if (line.empty()) continue;
    os << (first_line ? "Examples: " : "          ");
    first_line = false;
    for (size_t i = 0; i < line.size(); ++i)
      os << (i == 0 ? "" : line[i]->only_as.empty() ? "  " : "   ") << example_text(*line[i]);
    os << "\n";
  }
}
}  // namespace

void print_registry(std::ostream& os) {
  os << "Codecs (spec grammar: docs/codec-spec.md):\n";
  for (const CodecInfo& c : codec_registry())
    os << "  " << std::left << std::setw(9) << c.name << c.description << "\n"
       << "           " << c.syntax << "\n";
  os << "Feedback schemes (wrap a codec):\n";
  for (const SchemeInfo& s : scheme_registry())
    os << "  " << std::left << std::setw(9) << s.name << s.description << "\n"
       << "           " << s.syntax << "\n";
  print_examples(os);
}

}  // namespace slowpipe::compressors
