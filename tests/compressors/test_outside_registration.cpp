// The codec and feedback-scheme registries from outside: a codec registered
// by an experiment's own code is valid in every spec (alone, under a scheme,
// as a sparsifier's value stage), sized, listed and plotted from its entry
// alone; a scheme registered so, with its channel factory, is accepted by the
// spec checks and builds channels. A test binary of its own: the registries
// are process-wide, and test_compressors checks the built-in listings exactly.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "compressors/codecs/channel_spec.h"
#include "compressors/codecs/codec.h"
#include "compressors/channels/factory.h"
#include "tests/common/parsed_spec.h"

namespace sc = slowpipe::compressors;

using slowpipe::test::parsed;

namespace {

// Sends -x as fp32: a codec no built-in is, so that a wrong dispatch shows.
class NegateCodec : public sc::Codec {
 public:
  uint64_t payload_bytes(const sc::Shape& shape) const override {
    return 4 * static_cast<uint64_t>(sc::shape_numel(shape));
  }
  void encode_payload(const float* x, const sc::Shape& shape, uint8_t* out) override {
    for (int64_t i = 0; i < sc::shape_numel(shape); ++i) {
      const float v = -x[i];
      std::memcpy(out + 4 * i, &v, 4);
    }
  }
  void decode_payload(const uint8_t* p, const sc::Shape& shape, float* out) const override {
    for (int64_t i = 0; i < sc::shape_numel(shape); ++i) {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      out[i] = -v;
    }
  }
  std::string spec() const override { return "negate"; }
};

void register_negate_once() {
  if (sc::codec_registry().find("negate")) return;
  sc::CodecInfo info{"negate", "negate", "fp32 with the sign flipped (a test's codec)",
                     [](const sc::SpecStage& stage, const sc::CodecBuildContext& ctx) {
                       if (!stage.args.empty())
                         sc::stage_error(ctx, stage.args.front().pos, "negate takes no options");
                       return std::unique_ptr<sc::Codec>(new NegateCodec());
                     },
                     /*value_codec=*/true};
  info.plot_facts = [](const sc::SpecStage&) {
    sc::CodecPlotFacts f;
    f.bits = 32;
    return f;
  };
  sc::register_codec(info);
}

}  // namespace

TEST_CASE("Codec registry: a codec registered from outside works through specs") {
  register_negate_once();
  const sc::Shape shape{2, 3};
  const std::vector<float> x{1, -2, 3.5F, 0, 7, -0.25F};

  auto codec = sc::make_codec("negate");
  sc::Message msg;
  codec->encode_raw(x.data(), shape, msg);
  REQUIRE(msg.size() == 24);
  float first;
  std::memcpy(&first, msg.data(), 4);
  CHECK(first == -1.0F);  // its own encoding, not a built-in's
  std::vector<float> back(6);
  codec->decode_raw(msg.data(), msg.size(), shape, back.data());
  CHECK(back == x);

  // Under a scheme, as a value stage, sized, canonical, listed, plotted.
  CHECK_NOTHROW(sc::validate_spec("ef(negate)", false));
  CHECK(sc::canonical_spec(parsed("direct(negate)")) == "negate");
  CHECK(sc::canonical_spec(parsed("ef21(negate)")) == "ef21(negate)");
  CHECK(sc::wire_bytes(parsed("negate"), shape) == 24);
  CHECK(sc::wire_bytes(parsed("topk:0.5+negate"), shape) ==
        sc::wire_bytes(parsed("topk:0.5+none"), shape));
  CHECK_THROWS_WITH(sc::validate_spec("negate:fast", false), Catch::Contains("no options"));
  CHECK(sc::codec_registry().known().find("negate") != std::string::npos);
  std::ostringstream listing;
  sc::print_registry(listing);
  CHECK(listing.str().find("fp32 with the sign flipped") != std::string::npos);
  CHECK(sc::plot_facts(sc::parse_spec("negate").stages.front()).bits == 32);

  // Registered twice, or as a second reference: a programming error.
  sc::CodecInfo again = *sc::codec_registry().find("negate");
  CHECK_THROWS_AS(sc::register_codec(again), std::logic_error);
  again.name = "negate2";
  again.reference = true;
  CHECK_THROWS_AS(sc::register_codec(again), std::logic_error);
}

TEST_CASE("Scheme registry: a scheme registered from outside passes the spec checks") {
  // Registered once per process, with its channel factory (error feedback's,
  // under its own name), so every other test that loops over the registries
  // sees a complete entry whatever the order the tests run in.
  if (!sc::scheme_registry().find("testfb")) {
    sc::register_scheme({"testfb", "testfb(CODEC)", "a test's feedback scheme"});
    sc::register_scheme_channel("testfb", sc::scheme_factory("ef"));
  }
  CHECK_THROWS_AS(sc::register_scheme_channel("testfb", sc::scheme_factory("ef")),
                  std::logic_error);
  CHECK_THROWS_AS(sc::register_scheme_channel("unregistered", sc::scheme_factory("ef")),
                  std::logic_error);
  sc::ChannelContext ctx;
  ctx.num_samples = 4;
  CHECK(sc::make_channel(parsed("testfb(q4)"), ctx)->spec() == "testfb(q4)");
  CHECK_NOTHROW(sc::validate_spec("testfb(q4)", false));
  CHECK(sc::canonical_spec(parsed("testfb(q4:channel)")) == "testfb(q4)");
  CHECK(sc::scheme_plot_label("testfb") == "testfb");
  CHECK(sc::scheme_plot_label("direct") == "plain");
  CHECK(sc::is_plain_scheme("direct"));
  CHECK_FALSE(sc::is_plain_scheme("testfb"));
  CHECK_THROWS_AS(sc::register_scheme({"ef", "ef(CODEC)", "again"}), std::logic_error);
  CHECK_THROWS_WITH(sc::validate_spec("nofb(q4)", false), Catch::Contains("testfb"));
}
