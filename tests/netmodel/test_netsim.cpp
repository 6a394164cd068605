// Network scenarios: closed forms on small topologies, and parsing errors that
// name the file and the field.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "netmodel/netsim.h"

namespace nm = slowpipe::netmodel;

namespace {

const char* kThreeFlows = R"({
  "hosts": ["a", "b", "c"],
  "links": [
    {"name": "ab", "between": ["a", "b"], "bandwidth": "1Gbps", "latency": "1ms"},
    {"name": "bc", "between": ["b", "c"], "bandwidth": "2Gbps", "latency": "2ms", "duplex": "full"}
  ],
  "routes": [{"from": "a", "to": "c", "links": ["ab", "bc"]}],
  "flows": [
    {"name": "long", "from": "a", "to": "c", "bytes": "125MB", "start": "0s"},
    {"name": "left", "from": "a", "to": "b", "bytes": 125000000},
    {"name": "right", "from": "b", "to": "c", "bytes": "125MB"}
  ]
})";

std::string error_of(const std::string& text) {
  try {
    nm::parse_scenario(text, "s.json");
  } catch (const slowpipe::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("Netsim: the textbook three-flow, two-link example") {
  // 1 Gbit each. ab = 1 Gbit/s shared by long, left: 0.5 each; right gets 1.5 on bc.
  // right ends at 1/1.5 s; long and left keep 0.5 (ab binds) and end at 2 s.
  const auto r = nm::simulate(nm::parse_scenario(kThreeFlows, "three.json"));
  REQUIRE(r.size() == 3);
  CHECK(r[0].finish_s == Approx(2.0 + 3e-3));
  CHECK(r[1].finish_s == Approx(2.0 + 1e-3));
  CHECK(r[2].finish_s == Approx(1.0 / 1.5 + 2e-3));
}

TEST_CASE("Netsim: lone transfer, n equal flows, reverse routes, half duplex") {
  auto scenario = [](int n, const std::string& duplex, bool reverse) {
    std::ostringstream s;
    s << R"({"efficiency": 0.5, "hosts": ["x", "y"], "links": [{"name": "l", "between": ["x", "y"],
          "bandwidth": "100Mbps", "latency": "10ms", "duplex": ")"
      << duplex << R"("}], "flows": [)";
    for (int i = 0; i < n; ++i) {
      const bool back = reverse && i % 2;
      s << (i ? "," : "") << R"({"from": ")" << (back ? "y" : "x") << R"(", "to": ")"
        << (back ? "x" : "y") << R"(", "bytes": "1MB", "start": 0.5})";
    }
    s << "]}";
    return nm::parse_scenario(s.str(), "gen.json");
  };
  const double lone = 10e-3 + 8e6 / (100e6 * 0.5);
  CHECK(nm::simulate(scenario(1, "full", false))[0].finish_s == Approx(0.5 + lone));
  for (int n : {2, 4}) {
    for (const auto& f : nm::simulate(scenario(n, "full", false))) {
      CHECK(f.finish_s == Approx(0.5 + 10e-3 + n * (lone - 10e-3)));
    }
  }
  // Two flows in opposite directions: full duplex does not share, half duplex does.
  for (const auto& f : nm::simulate(scenario(2, "full", true)))
    CHECK(f.finish_s == Approx(0.5 + lone));
  for (const auto& f : nm::simulate(scenario(2, "half", true))) {
    CHECK(f.finish_s == Approx(0.5 + 10e-3 + 2 * (lone - 10e-3)));
  }
}

TEST_CASE("Netsim: errors name the file and the field") {
  CHECK_THAT(error_of("{"), Catch::Contains("s.json") && Catch::Contains("not valid JSON"));
  CHECK_THAT(error_of(R"({"links": [], "flows": []})"), Catch::Contains("missing field 'hosts'"));
  CHECK_THAT(error_of(R"({"hosts": ["a","b"], "links": [{"name": "l", "between": ["a","z"],
             "bandwidth": "1Gbps", "latency": 0}], "flows": []})"),
             Catch::Contains("links[0].between") && Catch::Contains("unknown host 'z'"));
  CHECK_THAT(error_of(R"({"hosts": ["a","b"], "links": [{"name": "l", "between": ["a","b"],
             "latency": 0}], "flows": []})"),
             Catch::Contains("links[0]") && Catch::Contains("'bandwidth'"));
  CHECK_THAT(error_of(R"({"hosts": ["a","b"], "links": [{"name": "l", "between": ["a","b"],
             "bandwidth": "fast", "latency": 0}], "flows": []})"),
             Catch::Contains("s.json") && Catch::Contains("links[0].bandwidth"));
  CHECK_THAT(error_of(R"({"hosts": ["a","b","c"], "links": [{"name": "l", "between": ["a","b"],
             "bandwidth": 1e9, "latency": 0}], "flows": [{"from": "a", "to": "c", "bytes": 1}]})"),
             Catch::Contains("flows[0]") && Catch::Contains("no route"));
  CHECK_THAT(error_of(R"({"hosts": ["a","b","c"], "links": [{"name": "l", "between": ["a","b"],
             "bandwidth": 1e9, "latency": 0}], "routes": [{"from": "a", "to": "c", "links": ["l"]}],
             "flows": []})"),
             Catch::Contains("routes[0].links") && Catch::Contains("end at 'b'"));
  CHECK_THAT(error_of(R"({"hosts": ["a","b"], "links": [{"name": "l", "between": ["a","b"],
             "bandwidth": 1e9, "latency": 0}], "flows": [{"from": "a", "to": "q", "bytes": 1}]})"),
             Catch::Contains("flows[0].to") && Catch::Contains("unknown host 'q'"));
  CHECK_THAT(error_of(R"({"hosts": ["a","b"], "links": [{"name": "l", "between": ["a","b"],
             "bandwidth": 1e9, "latency": 0, "duplex": "simplex"}], "flows": []})"),
             Catch::Contains("links[0].duplex"));
  CHECK_THROWS_WITH(nm::load_scenario("/nonexistent/x.json"),
                    Catch::Contains("/nonexistent/x.json"));
}

TEST_CASE("Netsim: the example scenarios in experiments/netsim run") {
  for (const char* name : {"three_flows.json", "shared_uplink.json", "geo_ring.json"}) {
    const std::string path = std::string(SLOWPIPE_SOURCE_DIR) + "/experiments/netsim/" + name;
    std::ostringstream os;
    REQUIRE_NOTHROW(nm::run_netsim(path, os));
    CHECK_THAT(os.str(), Catch::Contains("finish_s"));
  }
}
