// Network scenarios: closed forms on small topologies, and parsing errors that
// name the file and the field.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "netmodel/internal/event_engine.h"
#include "netmodel/internal/flow_network.h"
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

namespace {

// Hosts a, b, c; links ab, bc; flows and extras spliced in.
std::string two_links(const std::string& link_extra, const std::string& flows,
                      const std::string& top_extra = "") {
  return R"({"hosts": ["a", "b", "c"], "links": [
    {"name": "ab", "between": ["a", "b"], "bandwidth": "1Gbps", "latency": "1ms")" +
         link_extra + R"(},
    {"name": "bc", "between": ["b", "c"], "bandwidth": "1Gbps", "latency": "1ms"}],
    "flows": [)" +
         flows + "]" + top_extra + "}";
}
const char* kFlow = R"({"name": "f1", "from": "a", "to": "b", "bytes": "1MB"})";

}  // namespace

TEST_CASE("Netsim: unknown keys are errors that name the nearest valid key") {
  CHECK(error_of(two_links("", kFlow)).empty());
  CHECK_THAT(error_of(two_links("", R"({"from": "a", "to": "b", "bytes": 1, "strat": "0s"})")),
             Catch::Contains("flows[0]") && Catch::Contains("unknown key 'strat'") &&
                 Catch::Contains("did you mean 'start'?"));
  CHECK_THAT(error_of(two_links(R"(, "duplx": "half")", kFlow)),
             Catch::Contains("links[0]") && Catch::Contains("did you mean 'duplex'?"));
  CHECK_THAT(error_of(two_links("", kFlow, R"(, "flws": [])")),
             Catch::Contains("(top level)") && Catch::Contains("'flws'") &&
                 Catch::Contains("did you mean 'flows'?"));
  CHECK_THAT(error_of(two_links("", kFlow, R"(, "routes": [{"from": "a", "to": "c",
             "links": ["ab", "bc"], "via": "b"}])")),
             Catch::Contains("routes[0]") && Catch::Contains("'via'") &&
                 Catch::Contains("valid keys: from, to, links"));
  // Far from every valid key: no guess, but the list.
  CHECK_THAT(error_of(two_links(R"(, "colour": "red")", kFlow)),
             !Catch::Contains("did you mean") && Catch::Contains("valid keys: name, between"));
  // A key given twice in one object would silently keep the last value.
  CHECK_THAT(error_of(two_links(R"(, "latency": "2ms")", kFlow)),
             Catch::Contains("duplicate key 'latency'"));
  // The same key in two objects, or in an object inside another, is no duplicate.
  CHECK(error_of(two_links(R"(, "duplex": "full")", kFlow)).empty());
  // Nesting beyond 32 levels and broken JSON are refused with a reason.
  std::string deep = R"({"hosts": ["a"], "x": )";
  for (int i = 0; i < 40; ++i) deep += "[";
  for (int i = 0; i < 40; ++i) deep += "]";
  CHECK_THAT(error_of(deep + "}"), Catch::Contains("nested deeper than 32"));
  CHECK_THAT(error_of(R"({"hosts": ["a"], )"), Catch::Contains("not valid JSON"));
}

TEST_CASE("Netsim: duplicate names, a second link for one pair, routes that loop") {
  CHECK_THAT(error_of(two_links("", std::string(kFlow) + ", " + kFlow)),
             Catch::Contains("flows[1]") && Catch::Contains("duplicate flow name 'f1'"));
  // Default names count too: flow 1 is "f1" by default.
  CHECK_THAT(error_of(two_links("", R"({"name": "f1", "from": "a", "to": "b", "bytes": 1},
             {"from": "b", "to": "c", "bytes": 1})")),
             Catch::Contains("flows[1]") && Catch::Contains("'f1'"));
  const std::string second_ab = R"({"hosts": ["a", "b"], "links": [
    {"name": "ab", "between": ["a", "b"], "bandwidth": 1e9, "latency": 0},
    {"name": "ba", "between": ["b", "a"], "bandwidth": 1e9, "latency": 0}], "flows": []})";
  CHECK_THAT(error_of(second_ab), Catch::Contains("links[1].between") &&
                                      Catch::Contains("already joined by links[0] 'ab'"));
  CHECK_THAT(error_of(two_links("", kFlow, R"(, "routes": [
             {"from": "a", "to": "c", "links": ["ab", "bc"]},
             {"from": "a", "to": "c", "links": ["ab", "bc"]}])")),
             Catch::Contains("routes[1]") && Catch::Contains("second route"));
  // The reverse direction may be given explicitly.
  CHECK(error_of(two_links("", kFlow, R"(, "routes": [
             {"from": "a", "to": "c", "links": ["ab", "bc"]},
             {"from": "c", "to": "a", "links": ["bc", "ab"]}])"))
            .empty());
  CHECK_THAT(error_of(two_links("", kFlow, R"(, "routes": [
             {"from": "a", "to": "b", "links": ["ab", "bc", "bc"]}])")),
             Catch::Contains("routes[0].links[2]") && Catch::Contains("comes back to host 'b'"));
  CHECK_THAT(error_of(two_links("", R"({"name": "f\nx", "from": "a", "to": "b", "bytes": 1})")),
             Catch::Contains("flows[0].name") && Catch::Contains("control character"));
  CHECK_THAT(error_of(R"({"hosts": [""], "links": [], "flows": []})"),
             Catch::Contains("hosts[0]") && Catch::Contains("empty"));
}

TEST_CASE("Netsim: units in scenarios (B bytes, b bits) and values out of range") {
  // 1 GB/s = 8 Gbit/s; 8 Mb = 1 MB: the lone flow takes 1 ms + 1 ms latency.
  const auto r = nm::simulate(nm::parse_scenario(R"({"hosts": ["a", "b"], "links": [
    {"name": "ab", "between": ["a", "b"], "bandwidth": "1GBps", "latency": "1ms"}],
    "flows": [{"from": "a", "to": "b", "bytes": "8Mb"}, {"from": "b", "to": "a", "bytes": "1MB"}]})",
                                                 "u.json"));
  CHECK(r[0].finish_s == Approx(2e-3));
  CHECK(r[1].finish_s == Approx(2e-3));
  auto link = [](const std::string& bw, const std::string& lat) {
    return R"({"hosts": ["a", "b"], "links": [{"name": "ab", "between": ["a", "b"], "bandwidth": )" +
           bw + R"(, "latency": )" + lat + R"(}], "flows": []})";
  };
  CHECK_THAT(error_of(link(R"("1e-320bps")", "0")),
             Catch::Contains("links[0].bandwidth") && Catch::Contains("underflows"));
  CHECK_THAT(error_of(link("1e-300", "0")), Catch::Contains("links[0].bandwidth"));
  CHECK_THAT(error_of(link("0", "0")), Catch::Contains("links[0].bandwidth"));
  CHECK_THAT(error_of(link(R"("10Gbsp")", "0")),
             Catch::Contains("links[0].bandwidth") && Catch::Contains("accepted"));
  CHECK_THAT(error_of(link("1e9", R"("1e999s")")),
             Catch::Contains("links[0].latency") && Catch::Contains("overflows"));
  CHECK_THAT(error_of(link("1e9", "1e999")), Catch::Contains("number overflow"));
  CHECK_THAT(error_of(link("1e9", "1e300")), Catch::Contains("links[0].latency"));
  CHECK_THAT(error_of(link("1e9", "-1")), Catch::Contains("links[0].latency"));
  CHECK_THAT(error_of(two_links("", R"({"from": "a", "to": "b", "bytes": "1e300GB"})")),
             Catch::Contains("flows[0].bytes") && Catch::Contains("overflows"));
  CHECK_THAT(error_of(two_links("", R"({"from": "a", "to": "b", "bytes": -5})")),
             Catch::Contains("flows[0].bytes"));
  CHECK_THAT(
      error_of(two_links("", R"({"from": "a", "to": "b", "bytes": 1, "start": "1e308min"})")),
      Catch::Contains("flows[0].start") && Catch::Contains("overflows"));
  CHECK_THAT(error_of(two_links("", kFlow, R"(, "efficiency": 1e-300)")),
             Catch::Contains("efficiency"));
}

TEST_CASE("Netsim: rows are never cut and always end in a newline") {
  const std::string long_name(300, 'n');
  std::vector<nm::FlowResult> results(2);
  results[0].name = long_name;
  results[0].from = "a";
  results[0].to = std::string(250, 't');
  results[0].bytes = 1e18;
  results[0].start_s = 1e12;
  results[0].finish_s = 8e18;
  results[0].finished = true;
  results[1].name = "short";
  results[1].finished = true;
  std::ostringstream os;
  nm::print_flow_table(results, os);
  const std::string out = os.str();
  REQUIRE(!out.empty());
  CHECK(out.back() == '\n');
  std::istringstream lines(out);
  std::string header, row0, row1;
  std::getline(lines, header);
  std::getline(lines, row0);
  std::getline(lines, row1);
  CHECK_THAT(row0, Catch::StartsWith(long_name) && Catch::Contains(std::string(250, 't')) &&
                       Catch::Contains("1e+18") && Catch::Contains("8000000000000000000.000000"));
  CHECK_THAT(row1, Catch::StartsWith("short"));
  // Columns line up: every row is as wide as the header up to its last column.
  CHECK(header.find("bytes") + 5 == row1.find(" 0 ") + 2);
}

// The table as fmt printed it before print_flow_table wrote its own digits.
std::string fmt_table(const std::vector<nm::FlowResult>& results) {
  size_t wname = 12, wfrom = 10, wto = 10;
  for (const auto& r : results) {
    wname = std::max(wname, r.name.size());
    wfrom = std::max(wfrom, r.from.size());
    wto = std::max(wto, r.to.size());
  }
  std::string out =
      fmt::format("{:<{}} {:<{}} {:<{}} {:>12} {:>12} {:>12} {:>12}\n", "flow", wname, "from",
                  wfrom, "to", wto, "bytes", "start_s", "finish_s", "duration_s");
  for (const auto& r : results) {
    out += fmt::format("{:<{}} {:<{}} {:<{}} {:>12.15g} {:>12.6f} ", r.name, wname, r.from, wfrom,
                       r.to, wto, r.bytes, r.start_s);
    out += r.finished ? fmt::format("{:>12.6f} {:>12.6f}\n", r.finish_s, r.finish_s - r.start_s)
                      : fmt::format("{:>12} {:>12}\n", "never", "never");
  }
  return out;
}

TEST_CASE("Netsim: the table is byte for byte what fmt prints, on random rows") {
  std::mt19937_64 rng(20261126);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  // Values of every kind: random bit patterns, halfway cases of the 6th
  // decimal (multiples of 2^-7), integers, huge and tiny, zeros, non-finite.
  auto value = [&]() -> double {
    switch (pick(9)) {
      case 0: {
        const uint64_t bits = rng();
        double d;
        std::memcpy(&d, &bits, sizeof d);
        return d;
      }
      case 1:
        return static_cast<double>(pick(1u << 30)) / 128.0;
      case 2:
        return static_cast<double>(rng() >> pick(64));
      case 3:
        return std::ldexp(static_cast<double>(rng() >> 11), static_cast<int>(pick(140)) - 100);
      case 4:
        return std::uniform_real_distribution<double>(0, 1000)(rng);
      case 5:
        return pick(2) ? 0.0 : -0.0;
      case 6:
        return pick(2) ? INFINITY : NAN;
      case 7:
        return -std::uniform_real_distribution<double>(0, 1e6)(rng);
      default:
        return std::pow(10.0, static_cast<double>(pick(40)) - 20) * static_cast<double>(pick(1000));
    }
  };
  static const char* const kNames[] = {"f1",
                                       "a",
                                       "h12",
                                       "Z\xc3\xbcrich",
                                       "\xe6\x9d\xb1\xe4\xba\xac",
                                       "\xf0\x9f\x98\x80x",
                                       "flow-with-a-long-name-over-12",
                                       ""};
  for (int table = 0; table < 20; ++table) {
    std::vector<nm::FlowResult> rows(500);
    for (auto& r : rows) {
      r.name = kNames[pick(8)] + std::to_string(pick(table % 2 ? 1000000 : 10));
      r.from = kNames[pick(8)];
      r.to = kNames[pick(3)];
      r.bytes = value();
      r.start_s = value();
      r.finish_s = value();
      r.finished = pick(5) != 0;
    }
    std::ostringstream os;
    nm::print_flow_table(rows, os);
    REQUIRE(os.str() == fmt_table(rows));
  }
}

// simulate() as it was, every start queued up front, for scenarios whose flows
// all cross one direct link: the finish time of each flow (infinity: never).
std::vector<double> queued_up_front(const nm::Scenario& sc) {
  constexpr uint32_t kDown = ~0u;
  nm::FlowNetwork net;
  std::vector<std::pair<uint32_t, uint32_t>> res;  // per link: a->b, b->a
  for (const auto& l : sc.links) {
    const double cap = l.bandwidth_bps * sc.efficiency;
    const uint32_t fwd = cap > 0 ? net.add_resource(l.name + "+", cap) : kDown;
    res.emplace_back(fwd, cap > 0 && l.full_duplex ? net.add_resource(l.name + "-", cap) : fwd);
  }
  std::vector<uint32_t> resource(sc.flows.size());
  std::vector<double> latency_s(sc.flows.size());
  nm::EventEngine engine;
  for (size_t i = 0; i < sc.flows.size(); ++i) {
    const auto& f = sc.flows[i];
    for (size_t k = 0; k < sc.links.size(); ++k) {
      const auto& l = sc.links[k];
      if ((l.host_a == f.from && l.host_b == f.to) || (l.host_b == f.from && l.host_a == f.to)) {
        resource[i] = l.host_a == f.from ? res[k].first : res[k].second;
        latency_s[i] = l.latency_s;
      }
    }
    if (resource[i] != kDown && std::isfinite(f.start_s)) engine.schedule(f.start_s, 0, i);
  }
  std::vector<double> finish_s(sc.flows.size(), INFINITY);
  std::vector<uint32_t> flow_of_id, done;
  uint64_t wake_version = ~0ull;
  auto schedule_wake = [&] {
    if (!std::isinf(net.next_finish_s()) && wake_version != net.version()) {
      wake_version = net.version();
      engine.schedule(net.next_finish_s(), 1, 0, wake_version);
    }
  };
  engine.run([&](const nm::Event& ev) {
    if (ev.type == 0) {
      const uint32_t id =
          net.start_flow(engine.now(), &resource[ev.target], 1, 8.0 * sc.flows[ev.target].bytes);
      if (flow_of_id.size() <= id) flow_of_id.resize(id + 1);
      flow_of_id[id] = ev.target;
      schedule_wake();
    } else if (ev.type == 1 && ev.aux == net.version()) {
      done.clear();
      net.collect_finished(engine.now(), done);
      for (uint32_t id : done) {
        engine.schedule(engine.now() + latency_s[flow_of_id[id]], 2, flow_of_id[id]);
      }
      schedule_wake();
    } else if (ev.type == 2) {
      finish_s[ev.target] = engine.now();
    }
  });
  return finish_s;
}

TEST_CASE("Netsim: starts merged into the event loop keep the queue's order, ties included") {
  // Round numbers everywhere, so that flows start exactly when others finish
  // or arrive; starts before 0 (clamped), infinite starts and a link that is
  // down come from scenarios built in code.
  std::mt19937_64 rng(7);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  size_t ties = 0;
  for (int round = 0; round < 200; ++round) {
    nm::Scenario sc;
    sc.source = "ties";
    sc.hosts = {"a", "b", "c", "d"};
    for (size_t x = 0; x < 4; ++x) {
      for (size_t y = x + 1; y < 4; ++y) {
        nm::ScenarioLink l{sc.hosts[x] + sc.hosts[y], sc.hosts[x], sc.hosts[y]};
        l.bandwidth_bps = pick(40) == 0 ? 0.0 : 1e6 * static_cast<double>(1 << pick(4));
        l.latency_s = 0.5 * static_cast<double>(pick(3));
        l.full_duplex = pick(4) != 0;
        sc.links.push_back(l);
      }
    }
    for (size_t i = 0, n = 10 + pick(50); i < n; ++i) {
      const size_t x = pick(4), y = (x + 1 + pick(3)) % 4;
      nm::ScenarioFlow f{"f" + std::to_string(i), sc.hosts[x], sc.hosts[y]};
      f.bytes = 125000.0 * static_cast<double>(1 << pick(3));
      f.start_s = pick(30) == 0 ? (pick(2) ? -1.0 : INFINITY) : static_cast<double>(pick(5));
      sc.flows.push_back(f);
    }
    const std::vector<double> want = queued_up_front(sc);
    const std::vector<nm::FlowResult> got = nm::simulate(sc);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("round " << round << ", flow " << i);
      // Bit for bit (both infinite for a flow that never finishes).
      CHECK((got[i].finish_s == want[i] && std::signbit(got[i].finish_s) == std::signbit(want[i])));
      CHECK(got[i].finished == std::isfinite(want[i]));
      for (size_t j = 0; j < i; ++j) ties += std::isfinite(want[i]) && want[i] == want[j];
    }
  }
  CHECK(ties > 1000);  // simultaneous events were the rule, not the exception
}

TEST_CASE("Netsim: a flow that never finishes is reported and is an error") {
  nm::Scenario sc = nm::parse_scenario(
      two_links("", R"({"name": "cut", "from": "a", "to": "c",
      "bytes": "1MB"}, {"name": "ok", "from": "b", "to": "c", "bytes": "1MB"})",
                R"(, "routes": [{"from": "a", "to": "c", "links": ["ab", "bc"]}])"),
      "never.json");
  sc.links[0].bandwidth_bps = 0;  // link ab is down (only possible in code)
  const auto r = nm::simulate(sc);
  CHECK_FALSE(r[0].finished);
  CHECK(std::isinf(r[0].finish_s));
  CHECK(r[1].finished);
  CHECK(r[1].finish_s == Approx(1e-3 + 8e6 / 1e9));
  std::ostringstream os;
  CHECK_THROWS_AS(nm::run_scenario(sc, os), slowpipe::DataError);
  CHECK_THAT(os.str(), Catch::Contains("never") && Catch::EndsWith("\n"));
  try {
    nm::run_scenario(sc, os);
  } catch (const slowpipe::DataError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("never.json") && Catch::Contains("'cut'") &&
                                          !Catch::Contains("'ok'"));
  }
}

TEST_CASE("Netsim: routes longer than 16 links work") {
  // A chain h0 - h1 - ... - h40, one route over its 40 links.
  const int n = 40;
  std::ostringstream s;
  s << R"({"hosts": [)";
  for (int i = 0; i <= n; ++i) s << (i ? ", " : "") << "\"h" << i << "\"";
  s << R"(], "links": [)";
  for (int i = 0; i < n; ++i) {
    s << (i ? ", " : "") << R"({"name": "l)" << i << R"(", "between": ["h)" << i << R"(", "h)"
      << i + 1 << R"("], "bandwidth": ")" << (i == 30 ? "100Mbps" : "1Gbps")
      << R"(", "latency": "1ms"})";
  }
  s << R"(], "routes": [{"from": "h0", "to": "h40", "links": [)";
  for (int i = 0; i < n; ++i) s << (i ? ", " : "") << "\"l" << i << "\"";
  s << R"(]}], "flows": [{"name": "far", "from": "h40", "to": "h0", "bytes": "1MB"}]})";
  const auto r = nm::simulate(nm::parse_scenario(s.str(), "chain.json"));
  REQUIRE(r.size() == 1);
  CHECK(r[0].finished);
  CHECK(r[0].finish_s == Approx(n * 1e-3 + 8e6 / 100e6));
}

TEST_CASE("Netsim: a directory or a device is not a scenario file") {
  CHECK_THROWS_WITH(nm::load_scenario(SLOWPIPE_SOURCE_DIR), Catch::Contains("is a directory"));
  CHECK_THROWS_WITH(nm::load_scenario("/dev/zero"), Catch::Contains("not a regular file"));
}
