// Scenario parsing (nlohmann-json, every field checked with its path in the
// message) and the flow simulation on FlowNetwork + EventEngine.
#include "netmodel/netsim.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/errors.h"
#include "common/units.h"
#include "netmodel/event_engine.h"
#include "netmodel/flow_network.h"

namespace slowpipe::netmodel {
namespace {

using Json = nlohmann::json;

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw UsageError(source_ + ": " + field + ": " + why);
  }
  const Json& member(const Json& obj, const std::string& path, const char* key) const {
    if (!obj.is_object()) fail(path, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end()) fail(path, std::string("missing field '") + key + "'");
    return *it;
  }
  const Json& array(const Json& obj, const std::string& path, const char* key) const {
    const Json& a = member(obj, path, key);
    if (!a.is_array()) fail(join(path, key), "expected an array");
    return a;
  }
  std::string string(const Json& obj, const std::string& path, const char* key) const {
    const Json& v = member(obj, path, key);
    if (!v.is_string()) fail(join(path, key), "expected a string");
    return v.get<std::string>();
  }
  // A number in base units or a string with a unit, parsed by `parse`.
  template <class Parse>
  double quantity(const Json& obj, const std::string& path, const char* key, Parse parse) const {
    const Json& v = member(obj, path, key);
    const std::string field = join(path, key);
    if (v.is_number()) {
      const double x = v.get<double>();
      if (!std::isfinite(x) || x < 0) fail(field, "must be a finite number >= 0");
      return x;
    }
    if (!v.is_string()) fail(field, "expected a number or a string with a unit");
    try {
      return parse(field, v.get<std::string>());
    } catch (const UsageError& e) {
      throw UsageError(source_ + ": " + e.what());
    }
  }
  static std::string join(const std::string& path, const char* key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string item(const char* key, size_t i) {
    return std::string(key) + "[" + std::to_string(i) + "]";
  }

 private:
  std::string source_;
};

}  // namespace

Scenario parse_scenario(const std::string& text, const std::string& source) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw UsageError(source + ": not valid JSON: " + e.what());
  }
  Reader rd(source);
  Scenario sc;
  sc.source = source;
  if (!doc.is_object()) rd.fail("(top level)", "expected an object");
  if (doc.contains("efficiency")) {
    const Json& e = doc["efficiency"];
    if (!e.is_number() || !(e.get<double>() > 0) || e.get<double>() > 1) {
      rd.fail("efficiency", "expected a number in (0, 1]");
    }
    sc.efficiency = e.get<double>();
  }
  std::map<std::string, int> host_index;
  const Json& hosts = rd.array(doc, "", "hosts");
  for (size_t i = 0; i < hosts.size(); ++i) {
    const std::string field = Reader::item("hosts", i);
    if (!hosts[i].is_string()) rd.fail(field, "expected a host name (string)");
    const std::string name = hosts[i].get<std::string>();
    if (!host_index.emplace(name, static_cast<int>(i)).second)
      rd.fail(field, "duplicate host '" + name + "'");
    sc.hosts.push_back(name);
  }
  auto known_host = [&](const std::string& field, const std::string& name) {
    if (!host_index.count(name)) rd.fail(field, "unknown host '" + name + "'");
  };
  std::map<std::string, size_t> link_index;
  const Json& links = rd.array(doc, "", "links");
  for (size_t i = 0; i < links.size(); ++i) {
    const std::string p = Reader::item("links", i);
    ScenarioLink l;
    l.name = rd.string(links[i], p, "name");
    const Json& between = rd.member(links[i], p, "between");
    if (!between.is_array() || between.size() != 2 || !between[0].is_string() ||
        !between[1].is_string()) {
      rd.fail(p + ".between", "expected two host names");
    }
    l.host_a = between[0].get<std::string>();
    l.host_b = between[1].get<std::string>();
    known_host(p + ".between", l.host_a);
    known_host(p + ".between", l.host_b);
    if (l.host_a == l.host_b) rd.fail(p + ".between", "a link joins two different hosts");
    l.bandwidth_bps = rd.quantity(links[i], p, "bandwidth", parse_bandwidth_bps);
    if (!(l.bandwidth_bps > 0)) rd.fail(p + ".bandwidth", "must be > 0");
    l.latency_s = rd.quantity(links[i], p, "latency", parse_duration_s);
    if (links[i].contains("duplex")) {
      const std::string d = rd.string(links[i], p, "duplex");
      if (d != "full" && d != "half") rd.fail(p + ".duplex", "expected \"full\" or \"half\"");
      l.full_duplex = d == "full";
    }
    if (!link_index.emplace(l.name, i).second)
      rd.fail(p + ".name", "duplicate link '" + l.name + "'");
    sc.links.push_back(l);
  }
  if (doc.contains("routes")) {
    const Json& routes = rd.array(doc, "", "routes");
    for (size_t i = 0; i < routes.size(); ++i) {
      const std::string p = Reader::item("routes", i);
      ScenarioRoute r;
      r.from = rd.string(routes[i], p, "from");
      r.to = rd.string(routes[i], p, "to");
      known_host(p + ".from", r.from);
      known_host(p + ".to", r.to);
      const Json& ls = rd.array(routes[i], p, "links");
      if (ls.empty()) rd.fail(p + ".links", "a route needs at least one link");
      std::string at = r.from;
      for (size_t k = 0; k < ls.size(); ++k) {
        const std::string f = p + ".links[" + std::to_string(k) + "]";
        if (!ls[k].is_string()) rd.fail(f, "expected a link name");
        const std::string name = ls[k].get<std::string>();
        auto it = link_index.find(name);
        if (it == link_index.end()) rd.fail(f, "unknown link '" + name + "'");
        const ScenarioLink& l = sc.links[it->second];
        if (l.host_a == at) {
          at = l.host_b;
        } else if (l.host_b == at) {
          at = l.host_a;
        } else {
          rd.fail(f, "link '" + name + "' does not touch host '" + at + "'");
        }
        r.links.push_back(name);
      }
      if (at != r.to) rd.fail(p + ".links", "the links end at '" + at + "', not '" + r.to + "'");
      sc.routes.push_back(r);
    }
  }
  const Json& flows = rd.array(doc, "", "flows");
  for (size_t i = 0; i < flows.size(); ++i) {
    const std::string p = Reader::item("flows", i);
    ScenarioFlow f;
    f.name = flows[i].contains("name") ? rd.string(flows[i], p, "name") : "f" + std::to_string(i);
    f.from = rd.string(flows[i], p, "from");
    f.to = rd.string(flows[i], p, "to");
    known_host(p + ".from", f.from);
    known_host(p + ".to", f.to);
    if (f.from == f.to) rd.fail(p + ".to", "source and destination are the same host");
    f.bytes = rd.quantity(flows[i], p, "bytes", parse_bytes);
    f.start_s =
        flows[i].contains("start") ? rd.quantity(flows[i], p, "start", parse_duration_s) : 0;
    sc.flows.push_back(f);
  }
  // Every flow needs a route: explicit (either direction) or one direct link.
  for (size_t i = 0; i < sc.flows.size(); ++i) {
    const ScenarioFlow& f = sc.flows[i];
    bool ok = false;
    for (const auto& r : sc.routes)
      ok |= (r.from == f.from && r.to == f.to) || (r.from == f.to && r.to == f.from);
    for (const auto& l : sc.links)
      ok |= (l.host_a == f.from && l.host_b == f.to) || (l.host_a == f.to && l.host_b == f.from);
    if (!ok)
      rd.fail(Reader::item("flows", i),
              "no route from '" + f.from + "' to '" + f.to + "' (add one to 'routes')");
  }
  return sc;
}

Scenario load_scenario(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot open scenario file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_scenario(ss.str(), path);
}

std::vector<FlowResult> simulate(const Scenario& sc) {
  FlowNetwork net;
  // Resources: per link, [forward (a->b), backward (b->a)]; half duplex shares one.
  std::map<std::string, std::pair<uint32_t, uint32_t>> res;
  std::map<std::string, const ScenarioLink*> by_name;
  for (const auto& l : sc.links) {
    const double cap = l.bandwidth_bps * sc.efficiency;
    const uint32_t fwd = net.add_resource(l.name + ":" + l.host_a + "->" + l.host_b, cap);
    const uint32_t bwd =
        l.full_duplex ? net.add_resource(l.name + ":" + l.host_b + "->" + l.host_a, cap) : fwd;
    res[l.name] = {fwd, bwd};
    by_name[l.name] = &l;
  }
  struct Path {
    std::vector<uint32_t> resources;
    double latency_s = 0;
  };
  auto walk = [&](const std::string& from, const std::vector<std::string>& names) {
    Path p;
    std::string at = from;
    for (const auto& n : names) {
      const ScenarioLink& l = *by_name.at(n);
      const bool forward = l.host_a == at;
      p.resources.push_back(forward ? res[n].first : res[n].second);
      p.latency_s += l.latency_s;
      at = forward ? l.host_b : l.host_a;
    }
    return p;
  };
  std::vector<Path> paths;
  for (const auto& f : sc.flows) {
    const ScenarioRoute* chosen = nullptr;
    bool reversed = false;
    for (const auto& r : sc.routes) {
      if (r.from == f.from && r.to == f.to) {
        chosen = &r;
        reversed = false;
        break;
      }
    }
    if (!chosen) {
      for (const auto& r : sc.routes) {
        if (r.from == f.to && r.to == f.from) {
          chosen = &r;
          reversed = true;
          break;
        }
      }
    }
    if (chosen) {
      std::vector<std::string> names = chosen->links;
      if (reversed) names.assign(chosen->links.rbegin(), chosen->links.rend());
      paths.push_back(walk(f.from, names));
    } else {
      for (const auto& l : sc.links) {
        if ((l.host_a == f.from && l.host_b == f.to) || (l.host_a == f.to && l.host_b == f.from)) {
          paths.push_back(walk(f.from, {l.name}));
          break;
        }
      }
    }
  }
  enum : uint32_t { kStart, kWake, kDeliver };
  EventEngine engine;
  std::vector<FlowResult> out;
  std::vector<uint32_t> flow_of_id;
  for (size_t i = 0; i < sc.flows.size(); ++i) {
    const auto& f = sc.flows[i];
    out.push_back({f.name, f.from, f.to, f.bytes, f.start_s, 0});
    engine.schedule(f.start_s, kStart, static_cast<uint32_t>(i));
  }
  std::vector<uint32_t> done;
  uint64_t wake_version = ~0ull;
  auto schedule_wake = [&] {
    if (!std::isinf(net.next_finish_s()) && wake_version != net.version()) {
      wake_version = net.version();
      engine.schedule(net.next_finish_s(), kWake, 0, wake_version);
    }
  };
  engine.run([&](const Event& ev) {
    if (ev.type == kStart) {
      const Path& p = paths[ev.target];
      const uint32_t id = net.start_flow(engine.now(), p.resources.data(), p.resources.size(),
                                         8.0 * sc.flows[ev.target].bytes);
      if (flow_of_id.size() <= id) flow_of_id.resize(id + 1);
      flow_of_id[id] = ev.target;
      schedule_wake();
    } else if (ev.type == kWake) {
      if (ev.aux != net.version()) return;
      done.clear();
      net.collect_finished(engine.now(), done);
      for (uint32_t id : done) {
        const uint32_t f = flow_of_id[id];
        engine.schedule(engine.now() + paths[f].latency_s, kDeliver, f);
      }
      schedule_wake();
    } else {
      out[ev.target].finish_s = engine.now();
    }
  });
  return out;
}

void print_flow_table(const std::vector<FlowResult>& results, std::ostream& os) {
  char line[200];
  std::snprintf(line, sizeof line, "%-12s %-10s %-10s %12s %12s %12s %12s\n", "flow", "from", "to",
                "bytes", "start_s", "finish_s", "duration_s");
  os << line;
  for (const auto& r : results) {
    std::snprintf(line, sizeof line, "%-12s %-10s %-10s %12.0f %12.6f %12.6f %12.6f\n",
                  r.name.c_str(), r.from.c_str(), r.to.c_str(), r.bytes, r.start_s, r.finish_s,
                  r.finish_s - r.start_s);
    os << line;
  }
}

void run_netsim(const std::string& path, std::ostream& os) {
  const Scenario sc = load_scenario(path);
  os << "scenario " << path << ": " << sc.hosts.size() << " hosts, " << sc.links.size()
     << " links, " << sc.flows.size() << " flows, efficiency " << sc.efficiency << "\n";
  print_flow_table(simulate(sc), os);
}

}  // namespace slowpipe::netmodel
