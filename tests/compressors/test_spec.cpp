// Spec grammar: the documented examples parse and round-trip to canonical
// form; errors name the 1-based position and what was expected; config keys
// validate specs when set.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <sstream>

#include "common/errors.h"
#include "common/options.h"
#include "compressors/channels/factory.h"
#include "compressors/channels/inspect.h"
#include "compressors/codecs/config.h"
#include "compressors/codecs/spec.h"
#include "tests/common/parsed_spec.h"

namespace sc = slowpipe::compressors;

using slowpipe::test::parsed;

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
    REQUIRE(sc::canonical_spec(parsed(spec)) == canonical);
    REQUIRE(sc::make_channel(parsed(spec), sc::ChannelContext{})->spec() == canonical);
    REQUIRE(sc::canonical_spec(parsed(canonical)) == canonical);  // idempotent
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
    std::string msg = error_of([&] { sc::make_channel(parsed(c.spec), sc::ChannelContext{}); });
    REQUIRE(msg.find("bad spec '" + c.spec + "' at position " + std::to_string(c.pos) + ":") == 0);
    REQUIRE(msg.find(c.expected) != std::string::npos);
  }
}

TEST_CASE("Spec: topk:shared is a backward-only spec and needs a sparsifying forward") {
  REQUIRE_NOTHROW(
      sc::make_boundary(parsed("topk:0.1"), parsed("topk:shared"), sc::ChannelContext{}));
  REQUIRE_NOTHROW(
      sc::make_boundary(parsed("ef(topk:0.1+q8)"), parsed("topk:shared+q8"), sc::ChannelContext{}));
  REQUIRE_THROWS_AS(sc::make_boundary(parsed("q4"), parsed("topk:shared"), sc::ChannelContext{}),
                    slowpipe::UsageError);
  REQUIRE_THROWS_AS(
      sc::make_boundary(parsed("topk:0.1"), parsed("ef(topk:shared)"), sc::ChannelContext{}),
      slowpipe::UsageError);
  REQUIRE_THROWS_AS(sc::make_boundary(parsed("topk:shared"), parsed("q8"), sc::ChannelContext{}),
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
  REQUIRE(config.fw_for(0).text() == "aq(q2)");
  REQUIRE(config.fw_for(1).text() == "q4");
  REQUIRE(config.fw_for(2).text() == "topk:0.1+q8");
  REQUIRE(config.bw_for(1).text() == "topk:shared");
  REQUIRE(options.get("compress.fw_at") == "1:q4,2:topk:0.1+q8");
  std::string msg = error_of([&] { options.set("compress.fw", "topk:1.5"); });
  REQUIRE(msg.find("compress.fw") != std::string::npos);
  REQUIRE(msg.find("position 6") != std::string::npos);
  REQUIRE_THROWS_AS(options.set("compress.fw", "topk:shared"), slowpipe::UsageError);
  REQUIRE_THROWS_AS(options.set("compress.fw_at", "x:q4"), slowpipe::UsageError);
  REQUIRE_THROWS_AS(options.set("compress.bw_at", "1q4"), slowpipe::UsageError);
  REQUIRE_THROWS_AS(options.set("compress.aq_store", "tape"), slowpipe::UsageError);
  options.set("compress.aq_store", "disk");
  REQUIRE(config.aq_store == sc::AqStore::kDisk);
  REQUIRE(options.get("compress.aq_store") == "disk");
}

TEST_CASE("CompressConfig: enumerated options keep their names, AQ found in both directions") {
  sc::CompressConfig config;
  slowpipe::OptionSet options;
  sc::describe_options(config, options);
  // Each enum value round-trips through its one name/parser pair and the option.
  for (slowpipe::compressors::GradSync g : slowpipe::compressors::kGradSyncs) {
    options.set("compress.grad_sync", slowpipe::compressors::grad_sync_name(g));
    REQUIRE(config.grad_sync == g);
    REQUIRE(slowpipe::compressors::parse_grad_sync("k", slowpipe::compressors::grad_sync_name(g)) ==
            g);
  }
  REQUIRE(std::string(slowpipe::compressors::grad_sync_name(
              slowpipe::compressors::GradSync::kMomentum)) == "momentum");
  REQUIRE(std::string(sc::aq_store_name(sc::AqStore::kMemory)) == "memory");
  REQUIRE(error_of([&] { options.set("compress.grad_sync", "ring"); }) ==
          "bad value for 'compress.grad_sync': 'ring' (expected one of allreduce|momentum)");
  REQUIRE(error_of([] { sc::parse_aq_store("compress.aq_store", "tape"); }) ==
          "bad value for 'compress.aq_store': 'tape' (expected one of memory|disk)");

  // The scheme of the parsed spec, not a prefix: "aq" alone is a codec name.
  REQUIRE(sc::uses_aq(parsed("aq(q2)")));
  REQUIRE_FALSE(sc::uses_aq(parsed("ef(q4)")));
  REQUIRE_FALSE(sc::uses_aq(parsed("none")));
  REQUIRE_FALSE(sc::uses_aq(config, 3));
  options.set("compress.bw_at", "2:aq(q4)");  // backward only, last boundary
  REQUIRE_FALSE(sc::uses_aq(config, 2));
  REQUIRE(sc::uses_aq(config, 3));
  options.set("compress.bw_at", "");
  options.set("compress.fw", "aq(q2)");
  REQUIRE(sc::uses_aq(config, 1));
  REQUIRE_FALSE(sc::uses_aq(config, 0));
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

TEST_CASE("Codec inspection: a baseline timed in the same runs, and the count of runs") {
  std::ostringstream out;
  sc::run_codec_inspection("topk:0.1", {4, 64, 128}, "normal", 1, out, {3, "q8"});
  const std::string text = out.str();
  INFO(text);
  // The spec's own lines stay first and unchanged; two lines follow.
  REQUIRE(text.rfind("spec          topk:0.1\n", 0) == 0);
  const size_t against = text.find("against       q8: encode ");
  const size_t relative = text.find("relative      encode ");
  REQUIRE(against != std::string::npos);
  REQUIRE(relative > against);
  REQUIRE(text.find("x q8's   (fastest of 3 interleaved runs each)\n") != std::string::npos);
  // The ratios are the spec's times over the baseline's: inside the range
  // the printed times allow (each rounded to 0.001 ms), the ratio itself
  // rounded to 0.01.
  const auto number_after = [&](const std::string& key, size_t from) {
    return std::stod(text.substr(text.find(key, from) + key.size()));
  };
  const double enc_ms = number_after("(", text.find("encode        "));
  const double dec_ms = number_after("(", text.find("decode        "));
  const double base_enc = number_after("encode ", against),
               base_dec = number_after("decode ", against);
  const double enc_ratio = number_after("encode ", relative);
  const double trip_ratio = number_after("round trip ", relative);
  const auto within = [](double ratio, double num, double den, double terms) {
    const double r = 0.0005 * terms;  // the printed times' rounding
    return ratio >= (num - r) / (den + r) - 0.005 &&
           ratio <= (num + r) / std::max(den - r, 1e-9) + 0.005;
  };
  REQUIRE(enc_ms > 0);
  REQUIRE(base_enc > 0);
  REQUIRE(within(enc_ratio, enc_ms, base_enc, 1));
  REQUIRE(within(trip_ratio, enc_ms + dec_ms, base_enc + base_dec, 2));
  REQUIRE_FALSE(within(trip_ratio * 2 + 1, enc_ms + dec_ms, base_enc + base_dec, 2));  // can fail
  // Without a baseline, neither line, and the spec's error is the same (the
  // baseline decodes into the same output, then the spec's message again).
  std::ostringstream alone;
  sc::run_codec_inspection("topk:0.1", {4, 64, 128}, "normal", 1, alone, {1, ""});
  REQUIRE(alone.str().find("against") == std::string::npos);
  REQUIRE(alone.str().find("relative") == std::string::npos);
  const auto error_line = [](const std::string& t) {
    const size_t at = t.find("rel. error");
    return t.substr(at, t.find('\n', at) - at);
  };
  REQUIRE(error_line(alone.str()) == error_line(text));
  // Bad counts and bad baselines are usage errors.
  for (int repeat : {0, -1, 1001})
    REQUIRE_THROWS_WITH(sc::run_codec_inspection("q4", {8, 8}, "normal", 1, alone, {repeat, ""}),
                        Catch::Contains("--repeat: expected a count of runs in 1..1000"));
  REQUIRE_THROWS_AS(sc::run_codec_inspection("q4", {8, 8}, "normal", 1, alone, {2, "q99"}),
                    slowpipe::UsageError);
}

TEST_CASE("Spec: conflicting or repeated options are usage errors naming both positions") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"q4:row:tensor",
       "at position 8: 'tensor' conflicts with 'row' at position 4 (both set the scale "
       "granularity)"},
      {"q4:stochastic:nearest",
       "at position 15: 'nearest' conflicts with 'stochastic' at position 4 (both set the "
       "rounding)"},
      {"q4:group=8:group=16", "at position 12: 'group=16' conflicts with 'group=8' at position 4"},
      {"q4:row:row", "at position 8: 'row' is given twice (also at position 4)"},
      {"q4:channel:group=4", "'group=4' conflicts with 'channel'"},
      {"q2:sr:rtn", "'rtn' conflicts with 'sr'"},
      {"q4:minmax:maxabs",
       "'maxabs' conflicts with 'minmax' at position 4 (both set the scale statistic)"},
      {"q4:fp32:fp16", "'fp16' conflicts with 'fp32' at position 4 (both set the scale precision)"},
      {"topk:0.1:row:tensor", "'tensor' conflicts with 'row' at position 10"},
      {"randk:0.1:unbiased:unbiased", "'unbiased' is given twice"},
      {"sign:row:tensor", "'tensor' conflicts with 'row'"},
      {"topk:0.1+q8:row:tensor", "at position 17: 'tensor' conflicts with 'row' at position 13"},
      {"ef(q4:tensor:tensor)", "at position 14: 'tensor' is given twice (also at position 7)"},
  };
  for (const auto& [spec_text, message] : cases) {
    const std::string& spec = spec_text;  // a lambda cannot capture a structured binding in C++17
    INFO(spec);
    const std::string e = error_of([&] { sc::validate_spec(spec, false); });
    REQUIRE(e.find("bad spec '" + spec + "'") != std::string::npos);
    REQUIRE(e.find(message) != std::string::npos);
  }
}

TEST_CASE("Spec: canonical K reads back as the same fraction") {
  REQUIRE(sc::canonical_spec(parsed("topk:0.1234567")) == "topk:0.1234567");
  REQUIRE(sc::canonical_spec(parsed("topk:0.1234571")) == "topk:0.1234571");
  REQUIRE(sc::canonical_spec(parsed("randk:0.10")) == "randk:0.1");
  REQUIRE(sc::canonical_spec(parsed("topk:1e-3")) == "topk:0.001");
}

TEST_CASE("Spec roles: what each channel may carry, checked before any data") {
  using sc::ChannelRole;
  auto err = [](const std::string& spec, ChannelRole role, const std::string& fw = "") {
    return error_of([&] { sc::validate_role("compress.x", spec, role, fw); });
  };
  // Valid.
  for (const std::string fw : {"topk:0.1", "ef(topk:0.1)", "aq(topk:0.3)", "topk:0.1+q8",
                               "ef21(randk:0.2)", "randk:0.1+q4"})
    for (const std::string bw : {"topk:shared", "topk:shared+q8"}) {
      INFO(fw << " / " << bw);
      REQUIRE(err(bw, ChannelRole::kBackward, fw).empty());
    }
  REQUIRE(err("aq(q2)", ChannelRole::kForward).empty());
  REQUIRE(err("aq(q2)", ChannelRole::kBackward, "q4").empty());
  REQUIRE(err("ef(topk:0.01)", ChannelRole::kGradient).empty());
  // Invalid.
  REQUIRE(err("aq(q2)", ChannelRole::kGradient).find("compress.x = aq(q2): AQ-SGD") == 0);
  REQUIRE(err("topk:shared", ChannelRole::kGradient).find("only valid as a backward") !=
          std::string::npos);
  REQUIRE(err("topk:shared", ChannelRole::kForward).find("only valid as a backward") !=
          std::string::npos);
  for (const std::string fw : {"none", "q4", "aq(q2)", "ef(sign)", "fp16"})
    REQUIRE(err("topk:shared", ChannelRole::kBackward, fw).find("does not sparsify") !=
            std::string::npos);
  REQUIRE(err("topk:shared", ChannelRole::kBackward, "q9").find("forward spec is not valid") !=
          std::string::npos);
  REQUIRE(err("q4:row:tensor", ChannelRole::kForward).find("compress.x: bad spec") == 0);
}

TEST_CASE("Spec roles: a whole compress config against a boundary count") {
  sc::CompressConfig c;
  c.fw = parsed("aq(topk:0.3)");
  c.bw = parsed("topk:shared");
  c.grad = sc::GradientSpec::parse("ef(topk:0.01)");
  REQUIRE_NOTHROW(sc::validate_compress_config(c, 3, true));
  c.fw_at[1] = parsed("q4");  // boundary 1 no longer sparsifies forward
  std::string e = error_of([&] { sc::validate_compress_config(c, 3, true); });
  REQUIRE(e.find("compress.bw (boundary 1) = topk:shared") == 0);
  c.bw_at[1] = parsed("q8");
  REQUIRE_NOTHROW(sc::validate_compress_config(c, 3, true));
  c.fw_at[3] = parsed("q2");
  e = error_of([&] { sc::validate_compress_config(c, 3, true); });
  REQUIRE(e == "compress.fw_at names boundary 3, but the pipeline has boundaries 0..2");
  c.fw_at.erase(3);
  c.bw_at[0] = parsed("topk:shared");
  REQUIRE_NOTHROW(sc::validate_compress_config(c, 3, true));
  e = error_of([&] { sc::validate_compress_config(c, 0, true); });
  REQUIRE(e.find("but the pipeline has no boundary") != std::string::npos);
  c.grad = sc::GradientSpec::parse("aq(q4)");
  REQUIRE_NOTHROW(sc::validate_compress_config(c, 3, false));  // no replicas: grad unused
  REQUIRE(error_of([&] { sc::validate_compress_config(c, 3, true); }).find("compress.grad") == 0);
}

TEST_CASE("Codec inspection: shapes that cannot be allocated are usage errors up front") {
  std::ostringstream os;
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{100000, 100000, 100},
                                         {int64_t{1} << 40, int64_t{1} << 40, 4},
                                         {1 << 16, 1 << 16},
                                         {0, 3},
                                         {4, -2},
                                         {}}) {
    const std::string e = error_of([&] { sc::run_codec_inspection("q4", shape, "normal", 1, os); });
    INFO(e);
    REQUIRE(e.find("--shape") == 0);
  }
  REQUIRE(error_of([&] {
            sc::check_inspection_shape({100000, 100000, 100});
          }).find("too large to inspect (over 2147483648 elements") != std::string::npos);
  REQUIRE_NOTHROW(sc::check_inspection_shape({16, 64, 128}));
}

TEST_CASE("Schemes: every registered name has a channel factory, and the pairing check agrees") {
  sc::ChannelContext ctx;
  ctx.num_samples = 4;
  for (const sc::SchemeInfo& s : sc::scheme_registry()) {
    INFO(s.name);
    REQUIRE_NOTHROW(sc::scheme_factory(s.name));
    const auto ch = sc::make_channel(parsed(s.name == "direct" ? "q4" : s.name + "(q4)"), ctx);
    REQUIRE(ch->spec() == sc::canonical_spec(parsed(s.name + "(q4)")));
  }
  REQUIRE_THROWS_AS(sc::scheme_factory("nope"), std::logic_error);
  // validate_boundary (torch-free, slowpipe timing) refuses what make_boundary
  // refuses, with the same message, and accepts what it builds.
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"q4", "topk:shared"},
      {"topk:shared", "q4"},
      {"ef(q4)", "topk:shared+q8"},
      {"topk:0.1", "ef(topk:shared)"},
      {"topk:0.1", "topk:shared"},
      {"aq(topk:0.3)", "topk:shared+q4"},
      {"q4", "q8"}};
  for (const auto& pair : pairs) {
    const std::string& fw = pair.first;
    const std::string& bw = pair.second;
    INFO(fw << " / " << bw);
    const std::string plain = error_of([&] { sc::validate_boundary(parsed(fw), parsed(bw)); });
    const std::string built =
        error_of([&] { (void)sc::make_boundary(parsed(fw), parsed(bw), ctx); });
    REQUIRE(plain == built);
  }
  REQUIRE(error_of([] {
            sc::validate_boundary(parsed("q4"), parsed("topk:shared"));
          }).find("does not sparsify") != std::string::npos);
}

TEST_CASE("Codec registry: patterns, roles and the names in messages come from the entries") {
  const auto& codecs = sc::codec_registry();
  REQUIRE(codecs.find("q7") != nullptr);
  REQUIRE(codecs.find("q7")->name == "q");
  REQUIRE(codecs.find("q") == codecs.find("q1"));
  REQUIRE(codecs.find("qq") == nullptr);
  REQUIRE(codecs.known() ==
          "none, fp16, bf16, q1..q8, sign, topk, randk, powersgd, qsgd, tah, colk");
  std::vector<std::string> sparsifiers, values;
  for (const sc::CodecInfo& c : codecs) {
    if (c.with_values) sparsifiers.push_back(c.name);
    if (c.value_codec) values.push_back(c.name);
  }
  REQUIRE(sparsifiers == std::vector<std::string>{"topk", "randk", "colk"});
  REQUIRE(values == std::vector<std::string>{"none", "fp16", "bf16", "q", "qsgd", "tah"});
  // The messages list what the entries say, as they did when the names were
  // written out by hand.
  const auto msg = [](const std::string& spec) { return error_of([&] { sc::make_codec(spec); }); };
  REQUIRE(msg("zip") ==
          "bad spec 'zip' at position 1: expected a codec name (none, fp16, bf16, q1..q8, sign, "
          "topk, randk, powersgd, qsgd, tah, colk), got 'zip'");
  REQUIRE(msg("q4+q8").find(
              "'+' may only follow topk or randk or colk (it encodes their kept values)") !=
          std::string::npos);
  REQUIRE(msg("topk:0.1+sign")
              .find("expected a value codec after '+' (none, fp16, bf16, "
                    "q1..q8, qsgd, tah), got 'sign'") != std::string::npos);
  REQUIRE(msg("topk:0.1+powersgd:2").find("got 'powersgd'") != std::string::npos);
  REQUIRE(error_of([] {
            sc::validate_spec("foo(q4)", false);
          }).find("expected a feedback scheme (direct, ef, ef21, aq") != std::string::npos);
  REQUIRE(error_of([] { sc::validate_spec("foo(q4)", false); }).find("got 'foo'") !=
          std::string::npos);
}

TEST_CASE("Scheme registry: flags replace the scheme names in the factory and the checks") {
  for (const sc::SchemeInfo& s : sc::scheme_registry()) {
    INFO(s.name);
    REQUIRE(s.own_warmup == (s.name == "aq"));
    REQUIRE(s.keyed_by_sample == (s.name == "aq"));
  }
  // A topk:shared backward after a sparsifying forward under every scheme:
  // each factory hands the boundary's mask stores to its channel.
  sc::ChannelContext ctx;
  ctx.num_samples = 8;
  ctx.plain_warmup_epochs = 0;
  ctx.warmup_epochs = 0;
  for (const sc::SchemeInfo& s : sc::scheme_registry()) {
    INFO(s.name);
    const std::string fw = s.name == "direct" ? "topk:0.25" : s.name + "(topk:0.25)";
    sc::Boundary b = sc::make_boundary(parsed(fw), parsed("topk:shared"), ctx);
    const at::Tensor ids = at::arange(2, at::kLong);
    const at::Tensor x = at::randn({2, 8});
    const at::Tensor y = b.fw->transfer(x, ids, nullptr);
    const at::Tensor g = at::randn({2, 8});
    const at::Tensor h = b.bw->transfer(g, ids, nullptr);
    // The backward keeps exactly the forward's positions.
    REQUIRE(at::equal(h.ne(0), y.ne(0).logical_and(g.ne(0))));
  }
}
