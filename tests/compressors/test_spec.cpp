// Spec grammar: the documented examples parse and round-trip to canonical
// form; errors name the 1-based position and what was expected; config keys
// validate specs when set.
#include <catch2/catch.hpp>
#include <sstream>

#include "common/errors.h"
#include "common/options.h"
#include "compressors/config.h"
#include "compressors/factory.h"
#include "compressors/inspect.h"
#include "compressors/spec.h"

namespace sc = slowpipe::compressors;

namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const slowpipe::UsageError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("Spec: the issue's examples build channels with canonical names") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"none", "none"},
      {"fp16", "fp16"},
      {"bf16", "bf16"},
      {"q4", "q4"},
      {"q2:stochastic", "q2:stochastic"},
      {"q2:sr", "q2:stochastic"},
      {"q4:group=64", "q4:group=64"},
      {"q4:channel:fp16:maxabs", "q4"},
      {"topk:0.1", "topk:0.1"},
      {"topk:0.10:row", "topk:0.1"},
      {"topk:0.1+q8", "topk:0.1+q8"},
      {"topk:0.1+q8:row", "topk:0.1+q8"},
      {"topk:0.1+none", "topk:0.1"},
      {"randk:0.2", "randk:0.2"},
      {"ef(topk:0.1)", "ef(topk:0.1)"},
      {"ef21(q4)", "ef21(q4)"},
      {"aq(q2)", "aq(q2)"},
      {"aq(topk:0.3)", "aq(topk:0.3)"},
      {"direct(q4)", "q4"},
      {"sign", "sign"},
      {"q8:tensor:minmax:fp32", "q8:tensor:minmax:fp32"}};
  for (const auto& [spec, canonical] : cases) {
    INFO(spec);
    REQUIRE(sc::canonical_spec(spec) == canonical);
    REQUIRE(sc::make_channel(spec, sc::ChannelContext{})->spec() == canonical);
    REQUIRE(sc::canonical_spec(canonical) == canonical);  // idempotent
  }
}

TEST_CASE("Spec: errors name the position and what was expected") {
  struct Case {
    std::string spec;
    int pos;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"topk:1.5+q9", 6, "fraction kept"},
      {"topk:0.1+q9", 10, "q1..q8"},
      {"q9", 1, "q1..q8"},
      {"", 1, "codec name"},
      {"aq(q2", 6, "expected ')'"},
      {"aq(q2))", 7, "end of spec"},
      {"foo(q4)", 1, "feedback scheme"},
      {"zip", 1, "codec name"},
      {"q4:group=0", 4, "positive integer"},
      {"q4:fast", 4, "quantizer option"},
      {"q4+q8", 3, "'+' may only follow"},
      {"topk", 5, "expected ':K'"},
      {"topk:0.1+topk:0.2", 10, "value codec"},
      {"topk:0.1+q8:channel", 13, "per-channel"},
      {"q4:", 4, "argument"},
      {"ef(aq(q2))", 6, "scheme can only wrap"},
      {"topk:shared", 1, "backward"},
      {"Q4", 1, "codec name"},
      {"q4 ", 3, "end of spec"},
      {"randk:0", 7, "fraction kept"},
      {"sign:3", 6, "'row' or 'tensor'"},
  };
  for (const Case& c : cases) {
    INFO(c.spec);
    std::string msg = error_of([&] { sc::make_channel(c.spec, sc::ChannelContext{}); });
    REQUIRE(msg.find("bad spec '" + c.spec + "' at position " + std::to_string(c.pos) + ":") == 0);
    REQUIRE(msg.find(c.expected) != std::string::npos);
  }
}

TEST_CASE("Spec: topk:shared is a backward-only spec and needs a sparsifying forward") {
  REQUIRE_NOTHROW(sc::make_boundary("topk:0.1", "topk:shared", sc::ChannelContext{}));
  REQUIRE_NOTHROW(sc::make_boundary("ef(topk:0.1+q8)", "topk:shared+q8", sc::ChannelContext{}));
  REQUIRE_THROWS_AS(sc::make_boundary("q4", "topk:shared", sc::ChannelContext{}),
                    slowpipe::UsageError);
  REQUIRE_THROWS_AS(sc::make_boundary("topk:0.1", "ef(topk:shared)", sc::ChannelContext{}),
                    slowpipe::UsageError);
  REQUIRE_THROWS_AS(sc::make_boundary("topk:shared", "q8", sc::ChannelContext{}),
                    slowpipe::UsageError);
}

TEST_CASE("Config: compress.* keys validate specs and per-boundary overrides") {
  sc::CompressConfig config;
  slowpipe::OptionSet options;
  sc::describe_options(config, options);
  REQUIRE(options.get("compress.fw") == "none");
  REQUIRE(options.get("compress.bw") == "none");
  REQUIRE(options.get("compress.grad") == "none");
  REQUIRE(options.get("compress.aq_warmup_epochs") == "1");
  options.set("compress.fw", "aq(q2)");
  options.set("compress.bw", "topk:shared");
  options.set("compress.fw_at", "1:q4,2:topk:0.1+q8");
  REQUIRE(config.fw_for(0) == "aq(q2)");
  REQUIRE(config.fw_for(1) == "q4");
  REQUIRE(config.fw_for(2) == "topk:0.1+q8");
  REQUIRE(config.bw_for(1) == "topk:shared");
  REQUIRE(options.get("compress.fw_at") == "1:q4,2:topk:0.1+q8");
  std::string msg = error_of([&] { options.set("compress.fw", "topk:1.5"); });
  REQUIRE(msg.find("compress.fw") != std::string::npos);
  REQUIRE(msg.find("position 6") != std::string::npos);
  REQUIRE_THROWS_AS(options.set("compress.fw", "topk:shared"), slowpipe::UsageError);
  REQUIRE_THROWS_AS(options.set("compress.fw_at", "x:q4"), slowpipe::UsageError);
  REQUIRE_THROWS_AS(options.set("compress.bw_at", "1q4"), slowpipe::UsageError);
  REQUIRE_THROWS_AS(options.set("compress.aq_store", "tape"), slowpipe::UsageError);
  options.set("compress.aq_store", "disk");
  REQUIRE(config.aq_store == "disk");
}

TEST_CASE("Registry and inspection print what the CLI shows") {
  std::ostringstream reg;
  sc::print_registry(reg);
  for (const char* name :
       {"none", "fp16", "bf16", "q<1..8>", "topk", "randk", "sign", "ef", "ef21", "aq", "direct"})
    REQUIRE(reg.str().find(name) != std::string::npos);
  std::ostringstream out;
  sc::run_codec_inspection("q4", {8, 64, 256}, "normal", 1, out);
  // q4 per channel: 4 * n / (2 C + n / 2) = 7.99 for n = 131072, C = 256.
  REQUIRE(out.str().find("ratio         7.9") != std::string::npos);
  REQUIRE(out.str().find("rel. error") != std::string::npos);
  REQUIRE_THROWS_AS(sc::run_codec_inspection("q4", {8, 64}, "from-run", 1, out),
                    slowpipe::UsageError);
}
