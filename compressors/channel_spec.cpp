// What a channel spec means without building the channel; see channel_spec.h.
// The scheme registry holds no channel factories (factory.cpp binds them by
// name), so that this file links no libtorch.
#include "compressors/channel_spec.h"

#include <iomanip>

#include "common/errors.h"
#include "compressors/powersgd.h"
#include "compressors/quantizer.h"
#include "compressors/sparsifier.h"

namespace slowpipe::compressors {

namespace {

void register_builtin_schemes() {
  register_scheme({"direct", "CODEC or direct(CODEC)", "send C(x); no state", false, false,
                   /*plot_label=*/"plain"});
  register_scheme(
      {"ef", "ef(CODEC)", "error feedback: send C(x + e), keep e = x + e - C(x + e) (sender)"});
  register_scheme(
      {"ef21", "ef21(CODEC)", "EF21: send C(x - g), both sides g += D(C(x - g)), output g"});
  register_scheme({"aq", "aq(CODEC)",
                   "AQ-SGD: per-sample fp16 buffers, send C(a - m(xi)) after warm-up epochs",
                   /*own_warmup=*/true, /*keyed_by_sample=*/true});
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
  return c && c->with_values && !is_shared(tree);
}

std::string canonical(const SpecTree& tree, const Codec& codec) {
  return is_plain_scheme(tree.scheme) ? codec.spec() : tree.scheme + "(" + codec.spec() + ")";
}

// Parses and checks the scheme; builds the codec.
std::unique_ptr<Codec> parse_codec(const SpecTree& tree, uint64_t seed, bool backward) {
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
ChannelSpec::ChannelSpec(const std::string& text) : ChannelSpec(parse(text, /*backward=*/true)) {}
ChannelSpec::ChannelSpec(const char* text) : ChannelSpec(std::string(text)) {}

ChannelSpec ChannelSpec::parse(const std::string& text, bool backward) {
  ChannelSpec s;
  s.text_ = text;
  s.tree_ = parse_spec(text);
  parse_codec(s.tree_, 0, backward);  // names, arguments, scheme
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
  parse_codec(fw_spec.tree(), 0, false);  // a forward: no topk:shared
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
  std::unique_ptr<Codec> codec = parse_codec(tree, 0, /*backward=*/true);
  const bool shared = spec.shared();
  MatrixView view = MatrixView::kSquare;
  if (role == ChannelRole::kGradient && dynamic_cast<const PowerSgd*>(codec.get()) &&
      powersgd_view_given(tree.stages.front(), &view) && view != MatrixView::kSquare)
    fail(
        "gradients cross as one flat [1, N] tensor, a one-row matrix in this view, which "
        "PowerSGD sends uncompressed; leave the view out (compress.grad uses 'square')");
  // parse_codec checked the scheme is registered.
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
      parse_codec(forward_spec.tree(), 0, /*backward=*/false);
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
  return canonical(spec.tree(), *parse_codec(spec.tree(), 0, /*backward=*/true));
}

namespace {
// The canonical spec of a one-stage `tree` with `option` appended to its stage.
ChannelSpec with_option(const SpecTree& tree, const std::string& option) {
  const SpecStage& stage = tree.stages.front();
  std::string codec_text = stage.name;
  for (const SpecArg& a : stage.args)
    codec_text += ":" + (a.key.empty() ? a.value : a.key + "=" + a.value);
  codec_text += option;
  const ChannelSpec grown(is_plain_scheme(tree.scheme) ? codec_text
                                                       : tree.scheme + "(" + codec_text + ")");
  return ChannelSpec(canonical_spec(grown));
}
}  // namespace

ChannelSpec gradient_spec(const ChannelSpec& spec) {
  const SpecTree& tree = spec.tree();
  std::unique_ptr<Codec> codec = parse_codec(tree, 0, /*backward=*/false);
  const SpecStage& stage = tree.stages.front();
  if (dynamic_cast<const PowerSgd*>(codec.get()) && !powersgd_view_given(stage, nullptr))
    return with_option(tree, ":square");  // [1, N] -> a square-ish matrix
  if (tree.stages.size() != 1 || !dynamic_cast<const Quantizer*>(codec.get())) return spec;
  for (const SpecArg& a : stage.args)
    if (a.key == "group" || a.value == "channel" || a.value == "row" || a.value == "tensor")
      return spec;  // explicit granularity
  return with_option(tree, ":group=" + std::to_string(kGradientGroup));
}

uint64_t wire_bytes(const ChannelSpec& spec, const Shape& shape) {
  if (spec.shared())
    throw UsageError("wire_bytes('" + spec.text() +
                     "'): the size depends on the forward spec; name it too");
  return parse_codec(spec.tree(), 0, false)->message_bytes(shape);
}

uint64_t wire_bytes(const ChannelSpec& fw_spec, const ChannelSpec& bw_spec, const Shape& shape) {
  if (!bw_spec.shared()) return wire_bytes(bw_spec, shape);
  if (!fw_spec.sparsifies())
    throw UsageError("'" + bw_spec.text() + "' needs a sparsifying forward spec, got '" +
                     fw_spec.text() + "'");
  auto fw = make_codec(fw_spec.tree(), 0);
  auto bw = parse_codec(bw_spec.tree(), 0, true);
  int64_t rows, m, k;
  dynamic_cast<Sparsifier&>(*fw).geometry(shape, &rows, &m, &k);
  SparseSelection sel;
  sel.rows = rows;
  sel.row_len = m;
  sel.k = k;
  dynamic_cast<Sparsifier&>(*bw).use_selection(sel);
  return bw->message_bytes(shape);
}

void print_registry(std::ostream& os) {
  os << "Codecs (spec grammar: docs/codec-spec.md):\n";
  for (const CodecInfo& c : codec_registry())
    os << "  " << std::left << std::setw(9) << c.name << c.description << "\n"
       << "           " << c.syntax << "\n";
  os << "Feedback schemes (wrap a codec):\n";
  for (const SchemeInfo& s : scheme_registry())
    os << "  " << std::left << std::setw(9) << s.name << s.description << "\n"
       << "           " << s.syntax << "\n";
  os << "Examples: none  fp16  q4  q2:stochastic  q4:group=64  topk:0.1  topk:0.1+q8  randk:0.2\n"
        "          ef(topk:0.1)  ef21(q4)  aq(q2)  aq(topk:0.3)   backward only: topk:shared\n"
        "          ef(powersgd:4) (PowerSGD as published)  qsgd:s=4  qsgd:s=15:bucket=512\n"
        "          tah:bits=3  tah:bits=3.5:tile=32  tah:bits=3.5:fixed  aq(tah:bits=2)\n";
}

}  // namespace slowpipe::compressors
