// Generic network scenarios for teaching and checking (`slowpipe netsim`):
// hosts, links, routes and flows read from JSON; each flow's start and
// completion time printed as a table.
//
// Each flow sends its bytes over its route from its start time; the route's
// link directions are max-min fair shared (flow_network.h); the flow completes
// when its last bit has left plus the sum of the route's link latencies.
// A full-duplex link has one resource per direction, a half-duplex link one
// shared by both. Routes apply in both directions unless the reverse is given;
// a pair of hosts joined by one link needs no route. Routes may be of any
// length. `efficiency` (top level, default 1.0) scales every link's bandwidth.
// Format and limits: docs/netmodel.md.
#pragma once

#include <limits>
#include <ostream>
#include <string>
#include <vector>

namespace slowpipe::netmodel {

struct ScenarioLink {
  std::string name, host_a, host_b;
  double bandwidth_bps = 0;  // a link built in code with <= 0 is down: nothing crosses it
  double latency_s = 0;
  bool full_duplex = true;
};
struct ScenarioRoute {
  std::string from, to;
  std::vector<std::string> links;  // in order from `from` to `to`
};
struct ScenarioFlow {
  std::string name, from, to;
  double bytes = 0;
  double start_s = 0;
};
struct Scenario {
  std::string source;  // file name, for messages
  double efficiency = 1.0;
  std::vector<std::string> hosts;
  std::vector<ScenarioLink> links;
  std::vector<ScenarioRoute> routes;
  std::vector<ScenarioFlow> flows;
};

// Parses and validates; throws UsageError naming `source` and the field
// ("flows[2].to: unknown host 'x'"; "flows[0]: unknown key 'strat' (did you
// mean 'start'? ...)"). Unknown and duplicate keys, duplicate names, two links
// joining one pair of hosts, two routes for one direction are refused.
Scenario parse_scenario(const std::string& json_text, const std::string& source);
// Reads a regular file (UsageError if missing, not a file, unreadable or
// larger than kMaxScenarioBytes) and parses it.
constexpr size_t kMaxScenarioBytes = size_t{64} << 20;
Scenario load_scenario(const std::string& path);

struct FlowResult {
  std::string name, from, to;
  double bytes = 0;
  double start_s = 0;
  // Delivery time; infinity when the flow never completes (its route crosses
  // a link that is down, or its rate stays zero).
  double finish_s = std::numeric_limits<double>::infinity();
  bool finished = false;
};
// Results in the scenario's flow order. Throws UsageError if a flow has no
// route (parse_scenario already checks this).
std::vector<FlowResult> simulate(const Scenario& scenario);
// One row per flow, never truncated, each ending in a newline; a flow that
// never finishes shows `never` as its finish and duration.
void print_flow_table(const std::vector<FlowResult>& results, std::ostream& os);

// Prints the summary line and the table of `scenario`; throws DataError
// naming the flows that never finish (after printing the table).
void run_scenario(const Scenario& scenario, std::ostream& os);
// What `slowpipe netsim SCENARIO.json` does: load_scenario + run_scenario.
void run_netsim(const std::string& scenario_json_path, std::ostream& os);

}  // namespace slowpipe::netmodel
