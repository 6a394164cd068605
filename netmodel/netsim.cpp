// The flow simulation of a netsim scenario on FlowNetwork, and
// its table. Reading scenarios: netsim_scenario.cpp.
#include "netmodel/netsim.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>
#include <utility>

#include "common/errors.h"
#include "netmodel/internal/flow_network.h"

namespace slowpipe::netmodel {
namespace {

struct Path {
  std::vector<uint32_t> resources;  // FlowNetwork resources, in order
  double latency_s = 0;
  bool down = false;  // crosses a link that is down: never completes
};

// The paths of a scenario's flows: one per ordered pair of hosts that some
// flow uses (the routing of a pair is fixed), so a scenario of many flows
// between few hosts walks its routes once per pair, not once per flow.
struct FlowPaths {
  std::vector<Path> unique;       // one per (from, to) pair used by a flow
  std::vector<uint32_t> of_flow;  // index into `unique`, per flow
};

constexpr uint32_t kDown = ~0u;

// The resources of every link direction, and the walk of a route over them.
struct LinkResources {
  // Per link: [forward (a->b), backward (b->a)]; half duplex shares one.
  std::map<std::string, std::pair<uint32_t, uint32_t>> res;
  std::map<std::string, const ScenarioLink*> by_name;

  LinkResources(const Scenario& sc, FlowNetwork& net) {
    for (const auto& l : sc.links) {
      const double cap = l.bandwidth_bps * sc.efficiency;
      by_name[l.name] = &l;
      if (!(cap > 0)) {
        res[l.name] = {kDown, kDown};
        continue;
      }
      const uint32_t fwd = net.add_resource(l.name + ":" + l.host_a + "->" + l.host_b, cap);
      const uint32_t bwd =
          l.full_duplex ? net.add_resource(l.name + ":" + l.host_b + "->" + l.host_a, cap) : fwd;
      res[l.name] = {fwd, bwd};
    }
  }

  // The path from host `from` over the links `names`, in order.
  Path walk(const std::string& from, const std::vector<std::string>& names) const {
    Path p;
    std::string at = from;
    for (const auto& n : names) {
      const ScenarioLink& l = *by_name.at(n);
      const bool forward = l.host_a == at;
      const uint32_t r = forward ? res.at(n).first : res.at(n).second;
      if (r == kDown) {
        p.down = true;
      } else {
        p.resources.push_back(r);
      }
      p.latency_s += l.latency_s;
      at = forward ? l.host_b : l.host_a;
    }
    return p;
  }
};

// A flow's route: its pair's route (either way round), else the direct link.
class Router {
 public:
  Router(const Scenario& sc, const LinkResources& links) : sc_(sc), links_(links) {
    for (const auto& r : sc.routes) routes_.emplace(std::make_pair(r.from, r.to), &r);
    for (const auto& l : sc.links) {
      direct_.emplace(std::make_pair(l.host_a, l.host_b), &l);
      direct_.emplace(std::make_pair(l.host_b, l.host_a), &l);
    }
  }

  Path path_of(const ScenarioFlow& f) const {
    if (auto it = routes_.find({f.from, f.to}); it != routes_.end()) {
      return links_.walk(f.from, it->second->links);
    }
    if (auto back = routes_.find({f.to, f.from}); back != routes_.end()) {
      const auto& names = back->second->links;
      return links_.walk(f.from, {names.rbegin(), names.rend()});
    }
    if (auto d = direct_.find({f.from, f.to}); d != direct_.end()) {
      return links_.walk(f.from, {d->second->name});
    }
    throw UsageError(sc_.source + ": flow '" + f.name + "': no route from '" + f.from + "' to '" +
                     f.to + "'");
  }

 private:
  const Scenario& sc_;
  const LinkResources& links_;
  std::map<std::pair<std::string, std::string>, const ScenarioRoute*> routes_;
  std::map<std::pair<std::string, std::string>, const ScenarioLink*> direct_;
};

// The resources of every link direction and the path of every flow.
FlowPaths build_paths(const Scenario& sc, FlowNetwork& net) {
  const LinkResources links(sc, net);
  const Router router(sc, links);
  std::unordered_map<std::string, uint64_t> host_id;
  for (const auto& h : sc.hosts) host_id.emplace(h, host_id.size());
  auto id_of = [&](const std::string& h) {
    const auto it = host_id.find(h);
    return it != host_id.end() ? it->second : host_id.emplace(h, host_id.size()).first->second;
  };
  std::unordered_map<uint64_t, uint32_t> pair_path;  // from * 2^32 + to -> unique path
  FlowPaths out;
  out.of_flow.reserve(sc.flows.size());
  for (const auto& f : sc.flows) {
    const uint64_t key = id_of(f.from) << 32 | id_of(f.to);
    auto [it, added] = pair_path.emplace(key, static_cast<uint32_t>(out.unique.size()));
    if (added) out.unique.push_back(router.path_of(f));
    out.of_flow.push_back(it->second);
  }
  return out;
}

// The table's rows before the simulation: names, sizes, starts.
std::vector<FlowResult> result_rows(const Scenario& sc) {
  std::vector<FlowResult> out(sc.flows.size());
  for (size_t i = 0; i < sc.flows.size(); ++i) {
    const auto& f = sc.flows[i];
    out[i].name = f.name;
    out[i].from = f.from;
    out[i].to = f.to;
    out[i].bytes = f.bytes;
    out[i].start_s = f.start_s;
  }
  return out;
}

// What the event loop reads of a flow, copied in flow order: in time order,
// the scenario's rows would be read at random, a cache miss per start.
struct Start {
  double time_s;  // a time before 0 is 0, as the event queue it came from held it
  uint32_t flow;
  uint32_t path;  // into FlowPaths::unique
  double bits;
};

// The flows that can start (finite start, a route that is up) in the order
// an event queue given them all at time 0 popped them: by time, then by index.
std::vector<Start> sorted_starts(const Scenario& sc, const FlowPaths& paths) {
  std::vector<Start> starts;
  starts.reserve(sc.flows.size());
  for (size_t i = 0; i < sc.flows.size(); ++i) {
    const double t = sc.flows[i].start_s;
    const uint32_t path = paths.of_flow[i];
    if (paths.unique[path].down || !std::isfinite(t)) continue;
    starts.push_back({t < 0 ? 0.0 : t, static_cast<uint32_t>(i), path, 8.0 * sc.flows[i].bytes});
  }
  std::stable_sort(starts.begin(), starts.end(),
                   [](const Start& a, const Start& b) { return a.time_s < b.time_s; });
  return starts;
}

}  // namespace

std::vector<FlowResult> simulate(const Scenario& sc) {
  FlowNetwork net;
  const FlowPaths paths = build_paths(sc, net);
  // The events are the starts, in time order, and one wake-up: the network's
  // next finish as of its last change (at most one is ever current; an event
  // queue held a stale one per change). A start goes before a wake-up at the
  // same time. A flow is delivered its route's latency after its last bit
  // left; nothing depends on a delivery, so it is written when the flow
  // leaves the network (kept per start, since flows that end close in time
  // mostly started close in time, and copied into the rows at the end). This
  // is the order and the arithmetic of the event queue this loop replaced
  // (tests/netmodel/test_netsim.cpp keeps it as the reference).
  const std::vector<Start> starts = sorted_starts(sc, paths);
  std::vector<double> finish_s(starts.size(), std::numeric_limits<double>::infinity());
  struct InFlight {  // per flow id: what a finish needs, without reading the starts again
    uint32_t start;
    double latency_s;
  };
  std::vector<InFlight> in_flight;
  std::vector<uint32_t> done;
  constexpr double kNever = std::numeric_limits<double>::infinity();
  double wake_s = kNever;  // the wake-up's time (kNever: none)
  uint64_t wake_version = ~0ull;
  auto schedule_wake = [&](double now_s) {
    if (wake_version == net.version()) return;  // the current one still holds
    wake_version = net.version();
    wake_s = std::isinf(net.next_finish_s()) ? kNever : std::max(net.next_finish_s(), now_s);
  };
  for (size_t next = 0; next < starts.size() || wake_s != kNever;) {
    if (next < starts.size() && starts[next].time_s <= wake_s) {
      const Start& s = starts[next];
      const Path& p = paths.unique[s.path];
      const uint32_t id = net.start_flow(s.time_s, p.resources.data(), p.resources.size(), s.bits);
      if (in_flight.size() <= id) in_flight.resize(id + 1);
      in_flight[id] = {static_cast<uint32_t>(next++), p.latency_s};
      schedule_wake(s.time_s);
      continue;
    }
    const double now_s = wake_s;
    wake_s = kNever;
    done.clear();
    net.collect_finished(now_s, done);
    for (uint32_t id : done) {
      const double at_s = now_s + in_flight[id].latency_s;
      finish_s[in_flight[id].start] = at_s < now_s ? now_s : at_s;
    }
    schedule_wake(now_s);
  }
  std::vector<FlowResult> out = result_rows(sc);
  for (size_t k = 0; k < starts.size(); ++k) {
    FlowResult& r = out[starts[k].flow];
    r.finish_s = finish_s[k];
    r.finished = std::isfinite(r.finish_s);
  }
  return out;
}

namespace {

// `v` with 6 decimals, rounded exactly (half to even) as "{:.6f}" and
// to_chars round: v = m / 2^shift, so v * 10^6 = m * 10^6 / 2^shift is
// divided in 128-bit integers. Writes to `out` and returns the length, or 0
// where |v| >= 9e12 or v is not finite (v * 10^6 would not fit 63 bits).
size_t fixed6_digits(double v, char* out) {
  if (!(std::fabs(v) < 9e12)) return 0;
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const int exponent = static_cast<int>(bits >> 52 & 0x7ff);
  const uint64_t fraction = bits & ((uint64_t{1} << 52) - 1);
  const uint64_t m = exponent == 0 ? fraction : fraction | uint64_t{1} << 52;
  const int shift = exponent == 0 ? 1074 : 1075 - exponent;
  uint64_t q = 0;  // round(|v| * 10^6); shift >= 9, as |v| < 2^44
  if (shift < 128) {
    const unsigned __int128 p = static_cast<unsigned __int128>(m) * 1000000;
    const unsigned __int128 low = p & ((static_cast<unsigned __int128>(1) << shift) - 1);
    const unsigned __int128 half = static_cast<unsigned __int128>(1) << (shift - 1);
    q = static_cast<uint64_t>(p >> shift);
    q += low > half || (low == half && (q & 1));
  }  // else |v| < 2^-75: 0
  char* at = out;
  if (std::signbit(v)) *at++ = '-';
  at = std::to_chars(at, out + 24, q / 1000000).ptr;
  *at++ = '.';
  for (int i = 5, f = static_cast<int>(q % 1000000); i >= 0; --i, f /= 10) at[i] = '0' + f % 10;
  return static_cast<size_t>(at + 6 - out);
}

// The table's text. fmt's general formatting took about 12,000 instructions
// a row; this writes the same bytes for a fraction: names left-aligned and
// padded, numbers through std::to_chars, which rounds exactly as fmt does
// (tests/netmodel/test_netsim.cpp compares the two on random rows).
// Names with non-ASCII bytes and numbers that are not finite go through fmt,
// which owns their widths and spellings.
class TableText {
 public:
  explicit TableText(size_t reserve_bytes) { text_.reserve(reserve_bytes); }
  // `s` left-aligned in a column of `width`, then one space.
  void left(const std::string& s, size_t width) {
    const bool ascii = std::all_of(s.begin(), s.end(), [](char c) { return c >= 0; });
    if (!ascii) {
      fmt::format_to(std::back_inserter(text_), "{:<{}} ", s, width);
      return;
    }
    text_ += s;
    text_.append(width > s.size() ? width - s.size() + 1 : 1, ' ');
  }
  // `v` right-aligned in 12 columns as "{:>12.6f}" writes it.
  void fixed6(double v) {
    char digits[32];
    const size_t n = fixed6_digits(v, digits);
    if (n == 0) return right(v, std::chars_format::fixed, 6);
    pad_to_12(n);
    text_.append(digits, n);
  }
  // `v` right-aligned in 12 columns as "{:>12.15g}" writes it.
  void general15(double v) {
    // An integer below 10^15 is its digits; anything else goes to to_chars.
    if (!(v >= 0 && v < 1e15 && v == std::floor(v) && !std::signbit(v)))
      return right(v, std::chars_format::general, 15);
    char digits[24];
    const auto r = std::to_chars(digits, digits + sizeof digits, static_cast<uint64_t>(v));
    const size_t n = static_cast<size_t>(r.ptr - digits);
    pad_to_12(n);
    text_.append(digits, n);
  }
  void put(const char* s) { text_ += s; }
  const std::string& text() const { return text_; }

 private:
  void pad_to_12(size_t n) {
    if (n < 12) text_.append(12 - n, ' ');
  }
  // `v` right-aligned in 12 columns, "{:>12.{precision}f}" or "...g}".
  void right(double v, std::chars_format format, int precision) {
    char digits[400];  // fixed notation of DBL_MAX: 309 digits, the point, 6 decimals
    const auto r = std::isfinite(v)
                       ? std::to_chars(digits, digits + sizeof digits, v, format, precision)
                       : std::to_chars_result{digits, std::errc::value_too_large};
    if (r.ec != std::errc()) {
      const char* spec = format == std::chars_format::fixed ? "{:>12.{}f}" : "{:>12.{}g}";
      fmt::format_to(std::back_inserter(text_), fmt::runtime(spec), v, precision);
      return;
    }
    const size_t n = static_cast<size_t>(r.ptr - digits);
    pad_to_12(n);
    text_.append(digits, n);
  }
  std::string text_;
};

}  // namespace

void print_flow_table(const std::vector<FlowResult>& results, std::ostream& os) {
  // Columns widen to fit; nothing is cut.
  size_t wname = 12, wfrom = 10, wto = 10;
  for (const auto& r : results) {
    wname = std::max(wname, r.name.size());
    wfrom = std::max(wfrom, r.from.size());
    wto = std::max(wto, r.to.size());
  }
  TableText out((results.size() + 1) * (wname + wfrom + wto + size_t{4 * 13 + 3}));
  out.left("flow", wname);
  out.left("from", wfrom);
  out.left("to", wto);
  out.put("       bytes      start_s     finish_s   duration_s\n");
  for (const auto& r : results) {
    out.left(r.name, wname);
    out.left(r.from, wfrom);
    out.left(r.to, wto);
    out.general15(r.bytes);
    out.put(" ");
    out.fixed6(r.start_s);
    out.put(" ");
    if (r.finished) {
      out.fixed6(r.finish_s);
      out.put(" ");
      out.fixed6(r.finish_s - r.start_s);
      out.put("\n");
    } else {
      out.put("       never        never\n");
    }
  }
  os.write(out.text().data(), static_cast<std::streamsize>(out.text().size()));
}

void run_scenario(const Scenario& sc, std::ostream& os) {
  os << "scenario " << sc.source << ": " << sc.hosts.size() << " hosts, " << sc.links.size()
     << " links, " << sc.flows.size() << " flows, efficiency " << sc.efficiency << "\n";
  const std::vector<FlowResult> results = simulate(sc);
  print_flow_table(results, os);
  std::string never;
  size_t count = 0;
  for (const auto& r : results) {
    if (r.finished) continue;
    if (++count <= 5) never += (never.empty() ? "'" : ", '") + r.name + "'";
  }
  if (count > 5) never += ", ...";
  if (count > 0) {
    os.flush();
    throw DataError(sc.source + ": " + std::to_string(count) + " flow(s) never finish: " + never +
                    " (a link on the route is down or the rate stays zero)");
  }
}

void run_netsim(const std::string& path, std::ostream& os) {
  run_scenario(load_scenario(path), os);
}

}  // namespace slowpipe::netmodel
