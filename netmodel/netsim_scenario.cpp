// Reading netsim scenarios: the JSON text through the strict tape parser
// (internal/netsim_json.h), then every field checked, its path in the message.
// Nothing is ignored: unknown keys (with the nearest valid name), duplicate
// keys, duplicate names, two links between one pair of hosts, two routes for
// one direction are errors. Quantities go through common/units, so strings and
// plain numbers share one set of ranges. A field's path is put into words only
// when a message needs it (a scenario of 100,000 flows reads 500,000 fields).
#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "common/errors.h"
#include "common/units.h"
#include "netmodel/internal/netsim_json.h"
#include "netmodel/netsim.h"

namespace slowpipe::netmodel {
namespace {

using json::Value;

// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// Where a value sits: "flows[2].to", "routes[0].links[1]", "efficiency", or
// the top level (no text); put into words only for a message.
struct Field {
  static constexpr size_t kNone = ~size_t{0};
  const char* list = nullptr;  // a top-level array ("flows"), item `index`
  size_t index = 0;
  const char* key = nullptr;  // a member of that item, or of the top level
  size_t sub = kNone;         // an element of that member

  Field at(const char* k) const {
    Field f = *this;
    f.key = k;
    return f;
  }
  Field element(size_t k) const {
    Field f = *this;
    f.sub = k;
    return f;
  }
  std::string text() const {
    std::string s = list ? std::string(list) + "[" + std::to_string(index) + "]" : "";
    if (key) s += (s.empty() ? "" : ".") + std::string(key);
    if (sub != kNone) s += "[" + std::to_string(sub) + "]";
    return s;
  }
};
const Field kTop{};
Field item(const char* list, size_t i) {
  return Field{list, i};
}

// An object's members looked up in one pass: value[k] is the member named
// names[k], if has[k] (read_flow's path, 100,000 times for a large scenario).
struct Members {
  static constexpr size_t kMax = 8;
  std::array<std::string_view, kMax> names;
  std::array<Value, kMax> value;
  std::array<bool, kMax> has{};
};

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const Field& at, const std::string& why) const {
    const std::string where = at.text();
    throw UsageError(source_ + ": " + (where.empty() ? "(top level)" : where) + ": " + why);
  }
  // Refuses keys of `obj` (an object) that are not in `valid`, naming the
  // nearest; of several, the first in byte order.
  void only_keys(const Value& obj, const Field& at,
                 std::initializer_list<std::string_view> valid) const {
    bool any = false;
    std::string_view unknown;
    json::for_each_member(obj, [&](std::string_view key, const Value&) {
      if (std::find(valid.begin(), valid.end(), key) != valid.end()) return;
      if (!any || key < unknown) unknown = key;
      any = true;
    });
    if (!any) return;
    const std::string key(unknown);
    std::string list, nearest;
    size_t best = std::string::npos;
    for (std::string_view v : valid) {
      list += (list.empty() ? "" : ", ") + std::string(v);
      const size_t d = edit_distance(key, std::string(v));
      if (d < best) best = d, nearest = v;
    }
    const bool close = best <= std::max<size_t>(2, std::min(key.size(), nearest.size()) / 3);
    fail(at, "unknown key '" + key + "'" + (close ? " (did you mean '" + nearest + "'?)" : "") +
                 "; valid keys: " + list);
  }
  // The members of `obj` (an object) named in `valid`; any other key is
  // refused as only_keys does.
  Members members(const Value& obj, const Field& at,
                  std::initializer_list<std::string_view> valid) const {
    object(obj, at);
    Members m;
    const size_t n = std::min(valid.size(), Members::kMax);
    std::copy_n(valid.begin(), n, m.names.begin());
    bool unknown = valid.size() > Members::kMax;
    json::for_each_member(obj, [&](std::string_view key, const Value& v) {
      for (size_t k = 0; k < n; ++k) {
        if (m.names[k].size() == key.size() && m.names[k][0] == key[0] && m.names[k] == key) {
          m.value[k] = v, m.has[k] = true;
          return;
        }
      }
      unknown = true;
    });
    if (unknown) only_keys(obj, at, valid);
    return m;
  }
  // Member k of `m`, which must be there.
  Value need(const Members& m, size_t k, const Field& at) const {
    if (!m.has[k]) fail(at, "missing field '" + std::string(m.names[k]) + "'");
    return m.value[k];
  }
  const Value& object(const Value& v, const Field& at) const {
    if (!v.is_object()) fail(at, "expected an object");
    return v;
  }
  Value member(const Value& obj, const Field& at, const char* key) const {
    Value out = object(obj, at);
    if (!obj.find(key, out)) fail(at, std::string("missing field '") + key + "'");
    return out;
  }
  Value array(const Value& obj, const Field& at, const char* key) const {
    const Value a = member(obj, at, key);
    if (!a.is_array()) fail(at.at(key), "expected an array");
    return a;
  }
  // A non-empty string without control characters (names end up in table rows).
  std::string_view name(const Value& v, const Field& at, const char* what) const {
    if (!v.is_string()) fail(at, std::string("expected ") + what + " (a string)");
    const std::string_view s = v.string();
    if (s.empty()) fail(at, std::string("empty ") + what);
    for (unsigned char c : s) {
      if (c < 0x20 || c == 0x7f) fail(at, std::string(what) + " contains a control character");
    }
    return s;
  }
  std::string_view string(const Value& obj, const Field& at, const char* key,
                          const char* what) const {
    return name(member(obj, at, key), at.at(key), what);
  }
  // A number in base units or a string with a unit; `check` and `parse` are
  // the common/units functions of the quantity.
  template <class Check, class Parse>
  double quantity(const Value& obj, const Field& at, const char* key, Check check,
                  Parse parse) const {
    return quantity_of(member(obj, at, key), at.at(key), check, parse);
  }
  // The same for the value `v` of field `at`.
  template <class Check, class Parse>
  double quantity_of(const Value& v, const Field& at, Check check, Parse parse) const {
    try {
      if (v.is_number()) return keyed(check, at, v.number());
      if (!v.is_string()) fail(at, "expected a number or a string with a unit");
      return keyed(parse, at, std::string(v.string()));
    } catch (const UsageError& e) {
      if (std::string(e.what()).rfind(source_ + ": ", 0) == 0) throw;
      throw UsageError(source_ + ": " + e.what());
    }
  }

 private:
  // fn(key, arg), a common/units check or parse: the key appears only in its
  // messages, so it runs without it and, when it refuses, again with it.
  template <class Fn, class Arg>
  static double keyed(Fn fn, const Field& at, const Arg& arg) {
    try {
      return fn(std::string(), arg);
    } catch (const UsageError&) {
      return fn(at.text(), arg);
    }
  }
  std::string source_;
};

using HostPair = std::pair<std::string, std::string>;
HostPair unordered(const std::string& a, const std::string& b) {
  return a < b ? HostPair{a, b} : HostPair{b, a};
}
// Host name -> index in Scenario::hosts; the names are views of the document.
using HostIds = std::unordered_map<std::string_view, uint32_t>;

void read_links(const Reader& rd, const Value& doc, const HostIds& hosts, Scenario& sc) {
  std::map<std::string, size_t> by_name;
  std::map<HostPair, size_t> by_pair;
  const Value links = rd.array(doc, kTop, "links");
  Value link = links.first_child();
  for (size_t i = 0; i < links.size(); ++i, link = link.next()) {
    const Field p = item("links", i);
    rd.object(link, p);
    rd.only_keys(link, p, {"name", "between", "bandwidth", "latency", "duplex"});
    ScenarioLink l;
    l.name = rd.string(link, p, "name", "a link name");
    if (!by_name.emplace(l.name, i).second)
      rd.fail(p.at("name"), "duplicate link '" + l.name + "'");
    const Value between = rd.member(link, p, "between");
    if (!between.is_array() || between.size() != 2)
      rd.fail(p.at("between"), "expected two host names");
    l.host_a = rd.name(between.first_child(), p.at("between"), "a host name");
    l.host_b = rd.name(between.first_child().next(), p.at("between"), "a host name");
    for (const std::string& h : {l.host_a, l.host_b}) {
      if (!hosts.count(h)) rd.fail(p.at("between"), "unknown host '" + h + "'");
    }
    if (l.host_a == l.host_b) rd.fail(p.at("between"), "a link joins two different hosts");
    const auto pair = by_pair.emplace(unordered(l.host_a, l.host_b), i);
    if (!pair.second) {
      rd.fail(p.at("between"), "'" + l.host_a + "' and '" + l.host_b + "' are already joined by " +
                                   item("links", pair.first->second).text() + " '" +
                                   sc.links[pair.first->second].name +
                                   "' (one link per pair of hosts)");
    }
    l.bandwidth_bps = rd.quantity(link, p, "bandwidth", check_bandwidth_bps, parse_bandwidth_bps);
    l.latency_s = rd.quantity(link, p, "latency", check_duration_s, parse_duration_s);
    if (link.contains("duplex")) {
      const std::string d(rd.string(link, p, "duplex", "\"full\" or \"half\""));
      if (d != "full" && d != "half")
        rd.fail(p.at("duplex"), "expected \"full\" or \"half\", got '" + d + "'");
      l.full_duplex = d == "full";
    }
    sc.links.push_back(l);
  }
}

// The links of route `p`, which must lead from r.from to r.to without coming
// back to a host.
void read_route_links(const Reader& rd, const Value& route, const Field& p,
                      const std::map<std::string, size_t>& link_index, const Scenario& sc,
                      ScenarioRoute& r) {
  const Value ls = rd.array(route, p, "links");
  if (ls.size() == 0) rd.fail(p.at("links"), "a route needs at least one link");
  std::set<std::string> visited = {r.from};
  std::string at = r.from;
  Value lv = ls.first_child();
  for (size_t k = 0; k < ls.size(); ++k, lv = lv.next()) {
    const Field f = p.at("links").element(k);
    const std::string name(rd.name(lv, f, "a link name"));
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
    if (!visited.insert(at).second) rd.fail(f, "the route comes back to host '" + at + "'");
    r.links.push_back(name);
  }
  if (at != r.to) rd.fail(p.at("links"), "the links end at '" + at + "', not '" + r.to + "'");
}

void read_routes(const Reader& rd, const Value& doc, const HostIds& hosts, Scenario& sc) {
  if (!doc.contains("routes")) return;
  std::map<std::string, size_t> link_index;
  for (size_t i = 0; i < sc.links.size(); ++i) link_index[sc.links[i].name] = i;
  std::map<HostPair, size_t> by_direction;
  const Value routes = rd.array(doc, kTop, "routes");
  Value route = routes.first_child();
  for (size_t i = 0; i < routes.size(); ++i, route = route.next()) {
    const Field p = item("routes", i);
    rd.object(route, p);
    rd.only_keys(route, p, {"from", "to", "links"});
    ScenarioRoute r;
    r.from = rd.string(route, p, "from", "a host name");
    r.to = rd.string(route, p, "to", "a host name");
    if (!hosts.count(r.from)) rd.fail(p.at("from"), "unknown host '" + r.from + "'");
    if (!hosts.count(r.to)) rd.fail(p.at("to"), "unknown host '" + r.to + "'");
    if (r.from == r.to) rd.fail(p.at("to"), "a route joins two different hosts");
    const auto dir = by_direction.emplace(HostPair{r.from, r.to}, i);
    if (!dir.second) {
      rd.fail(p, "a second route from '" + r.from + "' to '" + r.to + "' (" +
                     item("routes", dir.first->second).text() + " is one)");
    }
    read_route_links(rd, route, p, link_index, sc, r);
    sc.routes.push_back(r);
  }
}

// A flow's two hosts as one key, either way round.
uint64_t host_pair_key(uint32_t a, uint32_t b) {
  return a < b ? uint64_t{a} << 32 | b : uint64_t{b} << 32 | a;
}

// The flows' names seen so far, for duplicates: open addressing over flow
// indices, hashed by name. The names are the flows' own (Scenario::flows is
// reserved up front, so they never move); no allocation per flow. A slot
// keeps the upper half of its name's hash beside the index, so a probe
// reads another flow's name (a cache miss, at random in the flows) only
// where that half matches.
class FlowNames {
 public:
  FlowNames(const std::vector<ScenarioFlow>& flows, size_t n) : flows_(flows) {
    size_t capacity = 16;
    while (capacity < 2 * n) capacity *= 2;
    slots_.assign(capacity, 0);
  }
  // Starts loading the slot where a later flow's `name` is looked up.
  void prefetch(std::string_view name) const {
    __builtin_prefetch(&slots_[std::hash<std::string_view>{}(name) & (slots_.size() - 1)]);
  }
  // The index of an earlier flow named like flows[i], or i (then recorded).
  size_t add(size_t i) {
    const std::string_view name = flows_[i].name;
    const uint64_t hash = std::hash<std::string_view>{}(name);
    const uint64_t tag = hash >> 32 << 32;
    const size_t mask = slots_.size() - 1;
    for (size_t h = hash & mask;; h = (h + 1) & mask) {
      const uint64_t slot = slots_[h];
      if (slot == 0) {
        slots_[h] = tag | (i + 1);
        return i;
      }
      const size_t j = (slot & 0xffffffffu) - 1;
      if ((slot ^ tag) >> 32 == 0 && flows_[j].name == name) return j;
    }
  }

 private:
  const std::vector<ScenarioFlow>& flows_;
  // Upper hash half << 32 | flow index + 1 (a scenario text is at most
  // kMaxScenarioBytes, 64 MiB: far fewer than 2^32 flows); 0: empty.
  std::vector<uint64_t> slots_;
};

// One flow, checked (in the order the messages always came); returns the key
// of its pair of hosts.
uint64_t read_flow(const Reader& rd, const Value& flow, size_t i, const HostIds& hosts,
                   ScenarioFlow& f, FlowNames& names) {
  const Field p = item("flows", i);
  enum { kName, kFrom, kTo, kBytes, kStart };
  const Members m = rd.members(flow, p, {"name", "from", "to", "bytes", "start"});
  if (m.has[kName]) {
    f.name = rd.name(m.value[kName], p.at("name"), "a flow name");
  } else {
    f.name = "f" + std::to_string(i);
  }
  const size_t first = names.add(i);
  if (first != i) {
    rd.fail(p, "duplicate flow name '" + f.name + "' (" + item("flows", first).text() + " has it)");
  }
  f.from = rd.name(rd.need(m, kFrom, p), p.at("from"), "a host name");
  f.to = rd.name(rd.need(m, kTo, p), p.at("to"), "a host name");
  const auto from = hosts.find(f.from), to = hosts.find(f.to);
  if (from == hosts.end()) rd.fail(p.at("from"), "unknown host '" + f.from + "'");
  if (to == hosts.end()) rd.fail(p.at("to"), "unknown host '" + f.to + "'");
  if (f.from == f.to) rd.fail(p.at("to"), "source and destination are the same host");
  f.bytes = rd.quantity_of(rd.need(m, kBytes, p), p.at("bytes"), check_bytes, parse_bytes);
  if (m.has[kStart]) {
    f.start_s = rd.quantity_of(m.value[kStart], p.at("start"), check_duration_s, parse_duration_s);
  }
  return host_pair_key(from->second, to->second);
}

void read_flows(const Reader& rd, const Value& doc, const HostIds& hosts, Scenario& sc) {
  const Value flows = rd.array(doc, kTop, "flows");
  sc.flows.reserve(flows.size());  // so that `names` may view the flows' names
  FlowNames names(sc.flows, flows.size());
  std::vector<uint64_t> pair_of_flow(flows.size());
  Value flow = flows.first_child();
  for (size_t i = 0; i < flows.size(); ++i) {
    const Value next = flow.next();
    Value name;  // the next flow's, whose slot is loaded while this one is read
    if (i + 1 < flows.size() && next.is_object() && next.find("name", name) && name.is_string())
      names.prefetch(name.string());
    pair_of_flow[i] = read_flow(rd, flow, i, hosts, sc.flows.emplace_back(), names);
    flow = next;
  }
  // Every flow needs a route: explicit (either direction) or one direct link.
  std::unordered_set<uint64_t> reachable;
  for (const auto& r : sc.routes) reachable.insert(host_pair_key(hosts.at(r.from), hosts.at(r.to)));
  for (const auto& l : sc.links)
    reachable.insert(host_pair_key(hosts.at(l.host_a), hosts.at(l.host_b)));
  for (size_t i = 0; i < sc.flows.size(); ++i) {
    const ScenarioFlow& f = sc.flows[i];
    if (!reachable.count(pair_of_flow[i])) {
      rd.fail(item("flows", i), "flow '" + f.name + "': no route from '" + f.from + "' to '" +
                                    f.to + "' (add one to 'routes')");
    }
  }
}

// The scenario of a parsed document.
Scenario read_scenario(const json::Document& doc, const std::string& source) {
  Reader rd(source);
  Scenario sc;
  sc.source = source;
  const Value root = rd.object(doc.root(), kTop);
  rd.only_keys(root, kTop, {"efficiency", "hosts", "links", "routes", "flows"});
  Value e = root;
  if (root.find("efficiency", e)) {
    if (!e.is_number() || !(e.number() >= 1e-6) || !(e.number() <= 1)) {
      rd.fail(kTop.at("efficiency"), "expected a number in [1e-6, 1]");
    }
    sc.efficiency = e.number();
  }
  HostIds hosts;
  const Value hs = rd.array(root, kTop, "hosts");
  Value h = hs.first_child();
  for (size_t i = 0; i < hs.size(); ++i, h = h.next()) {
    const std::string_view name = rd.name(h, item("hosts", i), "a host name");
    if (!hosts.emplace(name, static_cast<uint32_t>(i)).second)
      rd.fail(item("hosts", i), "duplicate host '" + std::string(name) + "'");
    sc.hosts.emplace_back(name);
  }
  read_links(rd, root, hosts, sc);
  read_routes(rd, root, hosts, sc);
  read_flows(rd, root, hosts, sc);
  return sc;
}

}  // namespace

Scenario parse_scenario(const std::string& text, const std::string& source) {
  const json::Document doc(text, source);
  return read_scenario(doc, source);
}

Scenario load_scenario(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    throw UsageError("cannot open scenario file '" + path + "': no such file");
  if (std::filesystem::is_directory(status))
    throw UsageError("scenario file '" + path + "' is a directory");
  if (!std::filesystem::is_regular_file(status))
    throw UsageError("scenario file '" + path + "' is not a regular file");
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxScenarioBytes) {
    throw UsageError("scenario file '" + path + "' is larger than " +
                     std::to_string(kMaxScenarioBytes >> 20) + " MiB");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot open scenario file '" + path + "'");
  // Read straight into one string of the file's size: a stringstream would
  // hold the text twice (its buffer and the copy str() returns).
  std::string text;
  if (!ec) text.reserve(static_cast<size_t>(size));
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw UsageError("cannot read scenario file '" + path + "'");
  const json::Document doc(std::move(text), path);
  return read_scenario(doc, path);
}

}  // namespace slowpipe::netmodel
