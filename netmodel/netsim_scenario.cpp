// Reading netsim scenarios: nlohmann-json with every field checked, its path in
// the message. Nothing is ignored: unknown keys (with the nearest valid name),
// duplicate keys, duplicate names, two links between one pair of hosts, two
// routes for one direction are errors. Quantities go through common/units, so
// strings and plain numbers share one set of ranges.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "common/errors.h"
#include "common/units.h"
#include "netmodel/netsim.h"

namespace slowpipe::netmodel {
namespace {

using Json = nlohmann::json;
constexpr int kMaxDepth = 32;  // deeper nesting is never a valid scenario

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

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw UsageError(source_ + ": " + field + ": " + why);
  }
  // Refuses keys of `obj` (an object) that are not in `valid`, naming the nearest.
  void only_keys(const Json& obj, const std::string& path,
                 std::initializer_list<const char*> valid) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      const std::string& key = it.key();
      if (std::find_if(valid.begin(), valid.end(), [&](const char* v) { return key == v; }) !=
          valid.end())
        continue;
      std::string list, nearest;
      size_t best = std::string::npos;
      for (const char* v : valid) {
        list += (list.empty() ? "" : ", ") + std::string(v);
        const size_t d = edit_distance(key, v);
        if (d < best) best = d, nearest = v;
      }
      const bool close = best <= std::max<size_t>(2, std::min(key.size(), nearest.size()) / 3);
      fail(path.empty() ? "(top level)" : path,
           "unknown key '" + key + "'" + (close ? " (did you mean '" + nearest + "'?)" : "") +
               "; valid keys: " + list);
    }
  }
  const Json& object(const Json& v, const std::string& path) const {
    if (!v.is_object()) fail(path.empty() ? "(top level)" : path, "expected an object");
    return v;
  }
  const Json& member(const Json& obj, const std::string& path, const char* key) const {
    auto it = object(obj, path).find(key);
    if (it == obj.end())
      fail(path.empty() ? "(top level)" : path, std::string("missing field '") + key + "'");
    return *it;
  }
  const Json& array(const Json& obj, const std::string& path, const char* key) const {
    const Json& a = member(obj, path, key);
    if (!a.is_array()) fail(join(path, key), "expected an array");
    return a;
  }
  // A non-empty string without control characters (names end up in table rows).
  std::string name(const Json& v, const std::string& field, const char* what) const {
    if (!v.is_string()) fail(field, std::string("expected ") + what + " (a string)");
    std::string s = v.get<std::string>();
    if (s.empty()) fail(field, std::string("empty ") + what);
    for (unsigned char c : s) {
      if (c < 0x20 || c == 0x7f) fail(field, std::string(what) + " contains a control character");
    }
    return s;
  }
  std::string string(const Json& obj, const std::string& path, const char* key,
                     const char* what) const {
    return name(member(obj, path, key), join(path, key), what);
  }
  // A number in base units or a string with a unit; `check` and `parse` are
  // the common/units functions of the quantity.
  template <class Check, class Parse>
  double quantity(const Json& obj, const std::string& path, const char* key, Check check,
                  Parse parse) const {
    const Json& v = member(obj, path, key);
    const std::string field = join(path, key);
    try {
      if (v.is_number()) return check(field, v.get<double>());
      if (!v.is_string()) fail(field, "expected a number or a string with a unit");
      return parse(field, v.get<std::string>());
    } catch (const UsageError& e) {
      if (std::string(e.what()).rfind(source_ + ": ", 0) == 0) throw;
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

// One SAX pass that builds the document and refuses duplicate keys in an
// object and nesting beyond kMaxDepth, in time linear in the text. (nlohmann's
// callback parser would do the same checks but rescans the enclosing array at
// the end of every object: quadratic in the number of flows; a separate
// checking pass before a plain parse reads the text twice.) The document is
// built by nlohmann's own SAX DOM builder, to which every event is forwarded.
class ScenarioChecker : public nlohmann::json_sax<Json> {
 public:
  ScenarioChecker(const std::string& source, Json& doc) : source_(source), dom_(doc, true) {}
  bool null() override { return dom_.null(); }
  bool boolean(bool val) override { return dom_.boolean(val); }
  bool number_integer(number_integer_t val) override { return dom_.number_integer(val); }
  bool number_unsigned(number_unsigned_t val) override { return dom_.number_unsigned(val); }
  bool number_float(number_float_t val, const string_t& s) override {
    return dom_.number_float(val, s);
  }
  bool string(string_t& val) override { return dom_.string(val); }
  bool binary(binary_t& val) override { return dom_.binary(val); }
  bool start_object(std::size_t elements) override {
    open_.emplace_back();
    return enter() && dom_.start_object(elements);
  }
  bool key(string_t& val) override {
    if (!open_.back().insert(val).second) {
      throw UsageError(source_ + ": duplicate key '" + val + "' in one object");
    }
    return dom_.key(val);
  }
  bool end_object() override {
    open_.pop_back();
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t elements) override {
    open_.emplace_back();  // keeps open_.back() the innermost object's keys
    return enter() && dom_.start_array(elements);
  }
  bool end_array() override {
    open_.pop_back();
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) override {
    throw UsageError(source_ + ": not valid JSON: " + ex.what());
  }

 private:
  bool enter() {
    if (++depth_ > kMaxDepth) {
      throw UsageError(source_ + ": nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    return true;
  }
  std::string source_;
  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  std::vector<std::set<std::string>> open_;  // keys seen in each open object or array
  int depth_ = 0;
};

// Parses JSON, refusing duplicate keys in an object and nesting beyond kMaxDepth.
Json parse_json(const std::string& text, const std::string& source) {
  Json doc;
  ScenarioChecker checker(source, doc);
  try {
    Json::sax_parse(text, &checker);
  } catch (const Json::exception& e) {
    throw UsageError(source + ": not valid JSON: " + e.what());
  }
  return doc;
}

using HostPair = std::pair<std::string, std::string>;
HostPair unordered(const std::string& a, const std::string& b) {
  return a < b ? HostPair{a, b} : HostPair{b, a};
}

void read_links(const Reader& rd, const Json& doc, const std::set<std::string>& hosts,
                Scenario& sc) {
  std::map<std::string, size_t> by_name;
  std::map<HostPair, size_t> by_pair;
  const Json& links = rd.array(doc, "", "links");
  for (size_t i = 0; i < links.size(); ++i) {
    const std::string p = Reader::item("links", i);
    rd.object(links[i], p);
    rd.only_keys(links[i], p, {"name", "between", "bandwidth", "latency", "duplex"});
    ScenarioLink l;
    l.name = rd.string(links[i], p, "name", "a link name");
    if (!by_name.emplace(l.name, i).second) rd.fail(p + ".name", "duplicate link '" + l.name + "'");
    const Json& between = rd.member(links[i], p, "between");
    if (!between.is_array() || between.size() != 2)
      rd.fail(p + ".between", "expected two host names");
    l.host_a = rd.name(between[0], p + ".between", "a host name");
    l.host_b = rd.name(between[1], p + ".between", "a host name");
    for (const std::string& h : {l.host_a, l.host_b}) {
      if (!hosts.count(h)) rd.fail(p + ".between", "unknown host '" + h + "'");
    }
    if (l.host_a == l.host_b) rd.fail(p + ".between", "a link joins two different hosts");
    const auto pair = by_pair.emplace(unordered(l.host_a, l.host_b), i);
    if (!pair.second) {
      rd.fail(p + ".between", "'" + l.host_a + "' and '" + l.host_b + "' are already joined by " +
                                  Reader::item("links", pair.first->second) + " '" +
                                  sc.links[pair.first->second].name +
                                  "' (one link per pair of hosts)");
    }
    l.bandwidth_bps =
        rd.quantity(links[i], p, "bandwidth", check_bandwidth_bps, parse_bandwidth_bps);
    l.latency_s = rd.quantity(links[i], p, "latency", check_duration_s, parse_duration_s);
    if (links[i].contains("duplex")) {
      const std::string d = rd.string(links[i], p, "duplex", "\"full\" or \"half\"");
      if (d != "full" && d != "half")
        rd.fail(p + ".duplex", "expected \"full\" or \"half\", got '" + d + "'");
      l.full_duplex = d == "full";
    }
    sc.links.push_back(l);
  }
}

void read_routes(const Reader& rd, const Json& doc, const std::set<std::string>& hosts,
                 Scenario& sc) {
  if (!doc.contains("routes")) return;
  std::map<std::string, size_t> link_index;
  for (size_t i = 0; i < sc.links.size(); ++i) link_index[sc.links[i].name] = i;
  std::map<HostPair, size_t> by_direction;
  const Json& routes = rd.array(doc, "", "routes");
  for (size_t i = 0; i < routes.size(); ++i) {
    const std::string p = Reader::item("routes", i);
    rd.object(routes[i], p);
    rd.only_keys(routes[i], p, {"from", "to", "links"});
    ScenarioRoute r;
    r.from = rd.string(routes[i], p, "from", "a host name");
    r.to = rd.string(routes[i], p, "to", "a host name");
    if (!hosts.count(r.from)) rd.fail(p + ".from", "unknown host '" + r.from + "'");
    if (!hosts.count(r.to)) rd.fail(p + ".to", "unknown host '" + r.to + "'");
    if (r.from == r.to) rd.fail(p + ".to", "a route joins two different hosts");
    const auto dir = by_direction.emplace(HostPair{r.from, r.to}, i);
    if (!dir.second) {
      rd.fail(p, "a second route from '" + r.from + "' to '" + r.to + "' (" +
                     Reader::item("routes", dir.first->second) + " is one)");
    }
    const Json& ls = rd.array(routes[i], p, "links");
    if (ls.empty()) rd.fail(p + ".links", "a route needs at least one link");
    std::set<std::string> visited = {r.from};
    std::string at = r.from;
    for (size_t k = 0; k < ls.size(); ++k) {
      const std::string f = p + ".links[" + std::to_string(k) + "]";
      const std::string name = rd.name(ls[k], f, "a link name");
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
    if (at != r.to) rd.fail(p + ".links", "the links end at '" + at + "', not '" + r.to + "'");
    sc.routes.push_back(r);
  }
}

// Each flow's object is released once read, so that the document shrinks as
// the scenario grows (the peak memory of a large file is the document's).
void read_flows(const Reader& rd, Json& doc, const std::set<std::string>& hosts, Scenario& sc) {
  std::map<std::string, size_t> by_name;
  rd.array(doc, "", "flows");
  Json& flows = doc["flows"];
  for (size_t i = 0; i < flows.size(); ++i) {
    const std::string p = Reader::item("flows", i);
    rd.object(flows[i], p);
    rd.only_keys(flows[i], p, {"name", "from", "to", "bytes", "start"});
    ScenarioFlow f;
    f.name = flows[i].contains("name") ? rd.string(flows[i], p, "name", "a flow name")
                                       : "f" + std::to_string(i);
    const auto named = by_name.emplace(f.name, i);
    if (!named.second) {
      rd.fail(p, "duplicate flow name '" + f.name + "' (" +
                     Reader::item("flows", named.first->second) + " has it)");
    }
    f.from = rd.string(flows[i], p, "from", "a host name");
    f.to = rd.string(flows[i], p, "to", "a host name");
    if (!hosts.count(f.from)) rd.fail(p + ".from", "unknown host '" + f.from + "'");
    if (!hosts.count(f.to)) rd.fail(p + ".to", "unknown host '" + f.to + "'");
    if (f.from == f.to) rd.fail(p + ".to", "source and destination are the same host");
    f.bytes = rd.quantity(flows[i], p, "bytes", check_bytes, parse_bytes);
    if (flows[i].contains("start"))
      f.start_s = rd.quantity(flows[i], p, "start", check_duration_s, parse_duration_s);
    sc.flows.push_back(std::move(f));
    flows[i] = nullptr;
  }
  // Every flow needs a route: explicit (either direction) or one direct link.
  std::set<HostPair> reachable;
  for (const auto& r : sc.routes) reachable.insert(unordered(r.from, r.to));
  for (const auto& l : sc.links) reachable.insert(unordered(l.host_a, l.host_b));
  for (size_t i = 0; i < sc.flows.size(); ++i) {
    const ScenarioFlow& f = sc.flows[i];
    if (!reachable.count(unordered(f.from, f.to))) {
      rd.fail(Reader::item("flows", i), "flow '" + f.name + "': no route from '" + f.from +
                                            "' to '" + f.to + "' (add one to 'routes')");
    }
  }
}

// The scenario of a parsed document.
Scenario read_scenario(Json& doc, const std::string& source) {
  Reader rd(source);
  Scenario sc;
  sc.source = source;
  rd.object(doc, "");
  rd.only_keys(doc, "", {"efficiency", "hosts", "links", "routes", "flows"});
  if (doc.contains("efficiency")) {
    const Json& e = doc["efficiency"];
    if (!e.is_number() || !(e.get<double>() >= 1e-6) || !(e.get<double>() <= 1)) {
      rd.fail("efficiency", "expected a number in [1e-6, 1]");
    }
    sc.efficiency = e.get<double>();
  }
  std::set<std::string> hosts;
  const Json& hs = rd.array(doc, "", "hosts");
  for (size_t i = 0; i < hs.size(); ++i) {
    const std::string field = Reader::item("hosts", i);
    const std::string name = rd.name(hs[i], field, "a host name");
    if (!hosts.insert(name).second) rd.fail(field, "duplicate host '" + name + "'");
    sc.hosts.push_back(name);
  }
  read_links(rd, doc, hosts, sc);
  read_routes(rd, doc, hosts, sc);
  read_flows(rd, doc, hosts, sc);
  return sc;
}

}  // namespace

Scenario parse_scenario(const std::string& text, const std::string& source) {
  Json doc = parse_json(text, source);
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
  Json doc = parse_json(text, path);
  std::string().swap(text);  // the document holds it all now: the peak is the document's
  return read_scenario(doc, path);
}

}  // namespace slowpipe::netmodel
