// The what-if front's codec specs are typed (whatif/synthetic_trace.h,
// CodecSpecs): parsed once from the keys' texts (parse_specs), sized by
// compressors::wire_bytes (codec_wire_bytes: a topk:shared backward against
// its forward), and the warm-up of a channel whose scheme keys its state by
// sample asked of the scheme registry, not read from the spec's text. The
// warm-up test loops over the registry, so a new scheme is covered without a
// new test.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/errors.h"
#include "compressors/codecs/channel_spec.h"
#include "netmodel/net_config.h"
#include "whatif/what_if.h"

namespace cx = slowpipe::compressors;
namespace nm = slowpipe::netmodel;
namespace wi = slowpipe::whatif;

TEST_CASE("What-if specs: the keys' texts parsed once, each for its role") {
  wi::SpecTexts texts;
  CHECK(wi::parse_specs(texts).forward.text() == "none");  // fp32 by default
  texts = {"topk:0.1", "topk:shared+q8", "ef(q4)"};
  const wi::CodecSpecs specs = wi::parse_specs(texts);
  CHECK(specs.forward.text() == "topk:0.1");
  CHECK(specs.forward.sparsifies());
  CHECK(specs.backward.shared());  // a backward may share the forward's selection
  CHECK(specs.gradient.scheme() == "ef");
  // A forward may not (parsed as a forward), nor the gradient; a bad spec
  // names its position.
  CHECK_THROWS_AS(wi::parse_specs({"topk:shared", "none", "none"}), slowpipe::UsageError);
  CHECK_THROWS_AS(wi::parse_specs({"none", "none", "topk:shared"}), slowpipe::UsageError);
  CHECK_THROWS_WITH(wi::parse_specs({"q99", "none", "none"}), Catch::Contains("q99"));
}

TEST_CASE("What-if specs: messages sized by compressors::wire_bytes") {
  const std::vector<int64_t> shape = {1, 1024, 1600};
  const wi::CodecSpecs specs = wi::parse_specs({"topk:0.1", "topk:shared+q8", "q8"});
  const wi::WireBytesFn bytes = wi::codec_wire_bytes(specs.forward);
  CHECK(bytes(specs.forward, shape) == cx::wire_bytes(specs.forward, shape));
  CHECK(bytes(specs.gradient, shape) == cx::wire_bytes(specs.gradient, shape));
  // topk:shared sends the values at the forward's selection: sized against it.
  CHECK(bytes(specs.backward, shape) == cx::wire_bytes(specs.forward, specs.backward, shape));
  CHECK(bytes(specs.backward, shape) < bytes(wi::baseline_specs("fp32").backward, shape));
  // The sweep's messages are those sizes.
  wi::WhatIfConfig w;
  w.model = "gpt2-xl";
  w.specs = specs;
  w.bandwidths_bps = {1e9};
  const wi::WhatIfResult r = wi::run_what_if(w, nm::NetConfig{});
  CHECK(r.messages.activation == cx::wire_bytes(specs.forward, shape));
  CHECK(r.messages.activation_gradient == cx::wire_bytes(specs.forward, specs.backward, shape));
  CHECK(r.messages.fp32_activation == 4u * 1024 * 1600);
}

TEST_CASE("What-if specs: a scheme keyed by sample warms up as the registry says") {
  for (const cx::SchemeInfo& scheme : cx::scheme_registry()) {
    const std::string text = cx::is_plain_scheme(scheme.name) ? "q4" : scheme.name + "(q4)";
    CAPTURE(text);
    wi::WhatIfConfig w;
    w.specs.forward = cx::ChannelSpec::parse(text, /*backward=*/false);
    w.specs.backward = cx::ChannelSpec::parse(text, /*backward=*/true);
    w.aq_warmup_epochs = 2;
    const wi::ResolvedWhatIf r = wi::resolve_what_if(w);
    const int expected = scheme.keyed_by_sample ? 2 : 0;
    CHECK(r.warmup[0] == expected);
    CHECK(r.warmup[1] == expected);
    CHECK(r.warmup[2] == 0);  // the gradient all-reduce never warms up
  }
  // The control: AQ-SGD is such a scheme, plain q4 is not.
  CHECK(cx::scheme_registry().find("aq")->keyed_by_sample);
  wi::WhatIfConfig w;
  w.specs = wi::parse_specs({"aq(q4)", "q8", "none"});
  w.aq_warmup_epochs = 3;
  const wi::ResolvedWhatIf r = wi::resolve_what_if(w);
  CHECK(r.warmup[0] == 3);
  CHECK(r.warmup[1] == 0);
}
