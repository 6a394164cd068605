// The facts every built-in codec registry entry carries (plot facts, exactly
// one reference codec). Registration from outside: test_outside_registration.cpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "compressors/codec.h"
#include "compressors/spec.h"

namespace sc = slowpipe::compressors;

TEST_CASE("Codec registry: every entry's facts are consistent") {
  int references = 0;
  for (const sc::CodecInfo& c : sc::codec_registry()) {
    references += c.reference;
    // The plot facts of the entry's own example (its syntax's first word,
    // "q<1..8>" read as q4) are numbers or NaN, never negative.
    if (!c.plot_facts) continue;
    const std::string example = c.name == "q"                           ? "q4"
                                : c.name == "topk" || c.name == "randk" ? c.name + ":0.25"
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
