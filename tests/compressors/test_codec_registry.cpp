// The facts every built-in codec registry entry carries (plot facts, exactly
// one reference codec, gradient forms, listed examples). Registration from
// outside: test_outside_registration.cpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>
#include <string>

#include "common/errors.h"
#include "compressors/codecs/channel_spec.h"
#include "compressors/codecs/codec.h"
#include "compressors/codecs/spec.h"

namespace sc = slowpipe::compressors;

TEST_CASE("Codec registry: every entry's facts are consistent") {
  int references = 0;
  for (const sc::CodecInfo& c : sc::codec_registry()) {
    references += c.reference;
    // The plot facts of the entry's own example (its syntax's first word,
    // "q<1..8>" read as q4) are numbers or NaN, never negative.
    if (!c.plot_facts) continue;
    const std::string example = c.name == "q" ? "q4"
                                : c.name == "topk" || c.name == "randk" || c.name == "colk"
                                    ? c.name + ":0.25"
                                    : c.name;
    const sc::CodecPlotFacts f = sc::plot_facts(sc::parse_spec(example).stages.front());
    CHECK((std::isnan(f.bits) || f.bits > 0));
    CHECK((std::isnan(f.keep_fraction) || f.keep_fraction > 0));
  }
  CHECK(references == 1);
  CHECK(sc::reference_codec().name == "none");
  // The reference is the codec of fp32 as is: 4 bytes per element.
  CHECK(sc::make_codec(sc::reference_codec().name)->message_bytes({5, 7}) == 4 * 35);
  // The plot facts the summary plots read (docs/summary.md).
  const auto facts = [](const std::string& spec) {
    return sc::plot_facts(sc::parse_spec(spec).stages.front());
  };
  CHECK(facts("q3").bits == 3);
  CHECK(facts("q8:stochastic").bits == 8);
  CHECK(facts("bf16").bits == 16);
  CHECK(facts("sign").bits == 1);
  CHECK(facts("topk:0.1+q8").keep_fraction == 0.1);
  CHECK(facts("randk:0.2").keep_fraction == 0.2);
  CHECK(std::isnan(facts("topk:shared").keep_fraction));
  CHECK(std::isnan(facts("powersgd:4").bits));
  CHECK(std::isnan(facts("qsgd:s=4").bits));
  CHECK(std::isnan(facts("unknown").bits));
}

TEST_CASE("Codec registry: entries' examples are valid in their role and listed as before") {
  // Every example parses in the role it names (any role when none), and a
  // backward-only one is refused as a forward.
  const auto check = [](const std::vector<sc::SpecExample>& examples) {
    for (const sc::SpecExample& e : examples) {
      INFO(e.spec);
      CHECK_NOTHROW(sc::ChannelSpec::parse(e.spec, /*backward=*/true));
      if (e.only_as.empty()) CHECK_NOTHROW(sc::ChannelSpec::parse(e.spec, /*backward=*/false));
      if (e.only_as == "backward")
        CHECK_THROWS_AS(sc::ChannelSpec::parse(e.spec, /*backward=*/false), slowpipe::UsageError);
    }
  };
  for (const sc::CodecInfo& c : sc::codec_registry()) check(c.examples);
  for (const sc::SchemeInfo& s : sc::scheme_registry()) check(s.examples);
  // The listing's example lines, byte for byte the text written by hand
  // before the entries carried their examples (colk's line added after).
  std::ostringstream listing;
  sc::print_registry(listing);
  const std::string examples =
      "Examples: none  fp16  q4  q2:stochastic  q4:group=64  topk:0.1  topk:0.1+q8  randk:0.2\n"
      "          ef(topk:0.1)  ef21(q4)  aq(q2)  aq(topk:0.3)   backward only: topk:shared\n"
      "          ef(powersgd:4) (PowerSGD as published)  qsgd:s=4  qsgd:s=15:bucket=512\n"
      "          tah:bits=3  tah:bits=3.5:tile=32  tah:bits=3.5:fixed  aq(tah:bits=2)\n"
      "          colk:0.25  colk:0.1+q8\n";
  const std::string text = listing.str();
  REQUIRE(text.size() > examples.size());
  CHECK(text.substr(text.size() - examples.size()) == examples);
  CHECK(text.find("Examples:") == text.size() - examples.size());  // once, at the end
  // A line ends where the entries' lines end: line 0 after randk's example.
  CHECK(text.find("randk:0.2\n          ef(topk:0.1)") != std::string::npos);
}

TEST_CASE("Codec registry: gradient forms say how a codec carries a flat gradient") {
  // Entries with a gradient form: q (group=128 appended), powersgd (square
  // appended, last and rows refused) and colk (refused: a flat gradient has no
  // channels; test_colk.cpp); every other built-in runs as given.
  std::vector<std::string> with_form;
  for (const sc::CodecInfo& c : sc::codec_registry())
    if (c.gradient_form) with_form.push_back(c.name);
  CHECK(with_form == std::vector<std::string>{"q", "powersgd", "colk"});
  const auto form = [](const std::string& spec) {
    const sc::SpecStage stage = sc::parse_spec(spec).stages.front();
    return sc::codec_registry().find(stage.name)->gradient_form(stage);
  };
  const sc::GradientForm q4 = form("q4:stochastic");
  CHECK(q4.refusal.empty());
  REQUIRE(q4.option);
  CHECK(q4.option->key == "group");
  CHECK(q4.option->value == "128");
  CHECK_FALSE(form("q4:row").option);
  CHECK_FALSE(form("q8:group=32").option);
  REQUIRE(form("powersgd:2:fp16").option);
  CHECK(form("powersgd:2:fp16").option->value == "square");
  CHECK(form("powersgd:2:square").refusal.empty());
  CHECK_FALSE(form("powersgd:2:square").option);
  for (const char* view : {"powersgd:2:last", "powersgd:2:rows"}) {
    INFO(view);
    CHECK(form(view).refusal.find("one-row matrix") != std::string::npos);
    // validate_role reports the entry's refusal for the gradient role only.
    std::string what;
    try {
      sc::validate_role("compress.grad", view, sc::ChannelRole::kGradient);
    } catch (const slowpipe::UsageError& e) {
      what = e.what();
    }
    CHECK(what == "compress.grad = " + std::string(view) + ": " + form(view).refusal);
    CHECK_NOTHROW(sc::validate_role("compress.fw", view, sc::ChannelRole::kForward));
  }
}
