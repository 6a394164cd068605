// Random scenarios for the flow-network benchmarks (see scenario_gen.h).
#include "bench/netmodel/scenario_gen.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

namespace slowpipe::bench {
namespace {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : x_(seed) {}
  uint64_t next() {
    uint64_t z = (x_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  double log_uniform(double lo, double hi) {
    return std::exp(std::log(lo) + uniform() * (std::log(hi) - std::log(lo)));
  }

 private:
  uint64_t x_;
};

struct Graph {
  std::vector<std::pair<int, int>> links;                  // (host_a, host_b)
  std::vector<std::vector<std::pair<int, int>>> adjacent;  // per host: (neighbour, link)
};

Graph random_graph(int hosts, int links, SplitMix64& rng) {
  const long max_links = static_cast<long>(hosts) * (hosts - 1) / 2;
  if (hosts < 2 || links < hosts - 1 || links > max_links)
    throw std::invalid_argument("scenario generator: bad hosts/links");
  Graph g;
  g.adjacent.resize(hosts);
  std::vector<std::vector<bool>> joined(hosts, std::vector<bool>(hosts, false));
  auto add = [&](int a, int b) {
    joined[a][b] = joined[b][a] = true;
    const int l = static_cast<int>(g.links.size());
    g.links.emplace_back(a, b);
    g.adjacent[a].emplace_back(b, l);
    g.adjacent[b].emplace_back(a, l);
  };
  for (int h = 1; h < hosts; ++h) add(rng.below(h), h);  // a random spanning tree
  while (static_cast<int>(g.links.size()) < links) {
    const int a = rng.below(hosts), b = rng.below(hosts);
    if (a != b && !joined[a][b]) add(a, b);
  }
  return g;
}

// A random simple path from `from` to `to` (links in order): depth-first
// search visiting neighbours in random order.
std::vector<int> random_route(const Graph& g, int from, int to, SplitMix64& rng) {
  std::vector<bool> seen(g.adjacent.size(), false);
  std::vector<int> links;
  std::vector<int> hosts{from};
  seen[from] = true;
  std::vector<std::vector<std::pair<int, int>>> todo;
  auto shuffled = [&](int h) {
    auto n = g.adjacent[h];
    for (size_t i = n.size(); i > 1; --i) std::swap(n[i - 1], n[rng.below(static_cast<int>(i))]);
    return n;
  };
  todo.push_back(shuffled(from));
  while (hosts.back() != to) {
    if (todo.back().empty()) {  // dead end: back up
      todo.pop_back();
      hosts.pop_back();
      links.pop_back();
      continue;
    }
    const auto [next, link] = todo.back().back();
    todo.back().pop_back();
    if (seen[next]) continue;
    seen[next] = true;
    hosts.push_back(next);
    links.push_back(link);
    todo.push_back(shuffled(next));
  }
  return links;
}

}  // namespace

ScenarioGenConfig scale_case(int flows) {
  constexpr double kWindowPer10kFlows_s = 55;
  ScenarioGenConfig c;
  c.seed = 20261123;
  c.hosts = 16;
  c.links = 18;
  c.flows = flows;
  c.window_s = kWindowPer10kFlows_s * flows / 10000.0;
  return c;
}

GeneratedScenario generate_scenario(const ScenarioGenConfig& c) {
  SplitMix64 rng(c.seed);
  const Graph g = random_graph(c.hosts, c.links, rng);
  GeneratedScenario out;
  netmodel::Scenario& sc = out.scenario;
  FlowSet& fs = out.flows;
  sc.source = "generated(seed=" + std::to_string(c.seed) + ")";
  for (int h = 0; h < c.hosts; ++h) sc.hosts.push_back("h" + std::to_string(h));
  for (size_t l = 0; l < g.links.size(); ++l) {
    netmodel::ScenarioLink link;
    link.name = "l" + std::to_string(l);
    link.host_a = sc.hosts[g.links[l].first];
    link.host_b = sc.hosts[g.links[l].second];
    link.bandwidth_bps = rng.log_uniform(c.min_bandwidth_bps, c.max_bandwidth_bps);
    link.latency_s = rng.uniform() * c.max_latency_s;
    sc.links.push_back(link);
    fs.capacity_bps.push_back(link.bandwidth_bps);  // host_a -> host_b
    fs.capacity_bps.push_back(link.bandwidth_bps);  // host_b -> host_a
  }
  // One route per unordered pair that no link joins; it serves both directions.
  std::map<std::pair<int, int>, std::vector<int>> routes;  // (a < b) -> links from a
  for (int a = 0; a < c.hosts; ++a) {
    for (const auto& [b, link] : g.adjacent[a]) {
      if (a < b) routes[{a, b}] = {link};
    }
  }
  for (int a = 0; a < c.hosts; ++a) {
    for (int b = a + 1; b < c.hosts; ++b) {
      if (routes.count({a, b})) continue;
      routes[{a, b}] = random_route(g, a, b, rng);
      netmodel::ScenarioRoute r;
      r.from = sc.hosts[a];
      r.to = sc.hosts[b];
      for (int l : routes[{a, b}]) r.links.push_back(sc.links[l].name);
      sc.routes.push_back(r);
    }
  }
  for (int i = 0; i < c.flows; ++i) {
    const int from = rng.below(c.hosts);
    int to = rng.below(c.hosts - 1);
    to += to >= from ? 1 : 0;
    netmodel::ScenarioFlow f;
    f.name = "f" + std::to_string(i);
    f.from = sc.hosts[from];
    f.to = sc.hosts[to];
    f.bytes = std::round(rng.log_uniform(c.min_bytes, c.max_bytes));
    f.start_s = rng.uniform() * c.window_s;
    sc.flows.push_back(f);
    // The same path as netsim's: walk the route from `from`.
    std::vector<int> links = routes[{std::min(from, to), std::max(from, to)}];
    if (from > to) std::reverse(links.begin(), links.end());
    std::vector<uint32_t> path;
    double latency_s = 0;
    int at = from;
    for (int l : links) {
      const bool forward = g.links[l].first == at;
      path.push_back(static_cast<uint32_t>(2 * l + (forward ? 0 : 1)));
      latency_s += sc.links[l].latency_s;
      at = forward ? g.links[l].second : g.links[l].first;
    }
    fs.paths.push_back(path);
    fs.bits.push_back(8.0 * f.bytes);
    fs.start_s.push_back(f.start_s);
    fs.latency_s.push_back(latency_s);
  }
  return out;
}

void write_scenario_json(const netmodel::Scenario& sc, std::ostream& os) {
  const auto old_precision = os.precision(std::numeric_limits<double>::max_digits10);
  auto quoted = [](const std::string& s) { return "\"" + s + "\""; };
  os << "{\n  \"efficiency\": " << sc.efficiency << ",\n  \"hosts\": [";
  for (size_t i = 0; i < sc.hosts.size(); ++i) os << (i ? ", " : "") << quoted(sc.hosts[i]);
  os << "],\n  \"links\": [\n";
  for (size_t i = 0; i < sc.links.size(); ++i) {
    const auto& l = sc.links[i];
    os << "    {\"name\": " << quoted(l.name) << ", \"between\": [" << quoted(l.host_a) << ", "
       << quoted(l.host_b) << "], \"bandwidth\": " << l.bandwidth_bps
       << ", \"latency\": " << l.latency_s << "}" << (i + 1 < sc.links.size() ? ",\n" : "\n");
  }
  os << "  ],\n  \"routes\": [\n";
  for (size_t i = 0; i < sc.routes.size(); ++i) {
    const auto& r = sc.routes[i];
    os << "    {\"from\": " << quoted(r.from) << ", \"to\": " << quoted(r.to) << ", \"links\": [";
    for (size_t k = 0; k < r.links.size(); ++k) os << (k ? ", " : "") << quoted(r.links[k]);
    os << "]}" << (i + 1 < sc.routes.size() ? ",\n" : "\n");
  }
  os << "  ],\n  \"flows\": [\n";
  for (size_t i = 0; i < sc.flows.size(); ++i) {
    const auto& f = sc.flows[i];
    os << "    {\"name\": " << quoted(f.name) << ", \"from\": " << quoted(f.from)
       << ", \"to\": " << quoted(f.to) << ", \"bytes\": " << f.bytes << ", \"start\": " << f.start_s
       << "}" << (i + 1 < sc.flows.size() ? ",\n" : "\n");
  }
  os << "  ]\n}\n";
  os.precision(old_precision);
}

size_t peak_concurrency(const std::vector<double>& start_s, const std::vector<double>& finish_s) {
  std::vector<std::pair<double, int>> edges;  // (time, +1 start / -1 end); ends first on ties
  for (size_t i = 0; i < start_s.size(); ++i) {
    edges.emplace_back(start_s[i], +1);
    edges.emplace_back(finish_s[i], -1);
  }
  std::sort(edges.begin(), edges.end());
  long now = 0, peak = 0;
  for (const auto& e : edges) peak = std::max(peak, now += e.second);
  return static_cast<size_t>(peak);
}

}  // namespace slowpipe::bench
