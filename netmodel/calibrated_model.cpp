// The calibrated compute model: per-class samples over a window of steps, a
// robust statistic, then frozen seconds (see calibrated_model.h).
#include "netmodel/internal/calibrated_model.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <tuple>
#include <vector>

#include "common/errors.h"
#include "common/options.h"

namespace slowpipe::netmodel {
namespace {

enum class Statistic { kMedian, kMin };

bool is_message(OpKind k) {
  return k == OpKind::kSendActivation || k == OpKind::kSendGradient || k == OpKind::kAllReduce;
}

// An op class: kind, model chunk and shape. Exact comparison of the doubles is
// intended: the engine computes them the same way at every step.
using Key = std::tuple<int, int32_t, double, double, uint64_t, uint64_t>;

Key key_of(const TraceOp& op) {
  return {static_cast<int>(op.kind), op.chunk, op.flops, op.memory_bytes, op.bytes, op.raw_bytes};
}

struct Entry {
  std::vector<double> first;         // compute seconds, or encode seconds of a message
  std::vector<double> second;        // decode seconds of a message
  int steps = 0;                     // steps that contributed samples (at most the window)
  bool thread_cpu = false;           // compute samples are thread CPU seconds
  double first_s = 0, second_s = 0;  // the statistic of the samples so far
};

double statistic(Statistic stat, std::vector<double> v) {
  if (v.empty()) return 0;
  if (stat == Statistic::kMin) return *std::min_element(v.begin(), v.end());
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string hex(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

class CalibratedModel : public ComputeModel {
 public:
  CalibratedModel(int window, Statistic stat) : window_(window), stat_(stat) {}

  void observe(const StepTrace& trace) override {
    std::map<Key, Entry> step;  // this step's samples per class still calibrating
    for (const TraceOp& op : trace.ops) {
      const Key k = key_of(op);
      const auto it = classes_.find(k);
      if (it != classes_.end() && it->second.steps >= window_) continue;
      Entry& e = step[k];
      if (is_message(op.kind)) {
        e.first.push_back(op.encode_s);
        e.second.push_back(op.decode_s);
      } else {
        e.first.push_back(trace.thread_cpu ? op.thread_cpu_s : op.compute_s);
        e.thread_cpu = trace.thread_cpu;
      }
    }
    for (auto& [k, fresh] : step) {
      Entry& e = classes_[k];
      if (e.steps == 0) e.thread_cpu = fresh.thread_cpu;
      e.first.insert(e.first.end(), fresh.first.begin(), fresh.first.end());
      e.second.insert(e.second.end(), fresh.second.begin(), fresh.second.end());
      ++e.steps;
      update(e);
    }
  }

  double compute_s(const TraceOp& op) const override {
    const Entry* e = find(op);
    return e ? e->first_s : op.compute_s;
  }
  double encode_s(const TraceOp& op) const override {
    const Entry* e = find(op);
    return e ? e->first_s : op.encode_s;
  }
  double decode_s(const TraceOp& op) const override {
    const Entry* e = find(op);
    return e ? e->second_s : op.decode_s;
  }

  std::string spec() const override {
    return "calibrated:" + std::to_string(window_) + ":" + stat_name();
  }

  std::string describe_json() const override {
    std::ostringstream os;
    os << "{\"model\": \"" << spec() << "\", \"window_steps\": " << window_ << ", \"statistic\": \""
       << stat_name() << "\", \"classes\": [";
    bool first = true;
    char buf[600];
    for (const auto& [k, e] : classes_) {
      const auto kind = static_cast<OpKind>(std::get<0>(k));
      const bool msg = is_message(kind);
      std::snprintf(buf, sizeof buf,
                    "%s\n  {\"op\": \"%s\", \"chunk\": %d, \"flops\": %.17g, "
                    "\"memory_bytes\": %.17g, \"bytes\": %llu, \"raw_bytes\": %llu, ",
                    first ? "" : ",", op_kind_name(kind), std::get<1>(k), std::get<2>(k),
                    std::get<3>(k), static_cast<unsigned long long>(std::get<4>(k)),
                    static_cast<unsigned long long>(std::get<5>(k)));
      os << buf;
      if (msg) {
        std::snprintf(buf, sizeof buf,
                      "\"encode_s\": %.9g, \"decode_s\": %.9g, \"clock\": \"wall\"", e.first_s,
                      e.second_s);
      } else {
        std::snprintf(buf, sizeof buf,
                      "\"seconds\": %.9g, \"min_s\": %.9g, \"median_s\": %.9g, \"clock\": \"%s\"",
                      e.first_s, statistic(Statistic::kMin, e.first),
                      statistic(Statistic::kMedian, e.first), e.thread_cpu ? "thread-cpu" : "wall");
      }
      os << buf << ", \"samples\": " << e.first.size() << ", \"steps\": " << e.steps
         << ", \"frozen\": " << (e.steps >= window_ ? "true" : "false") << "}";
      first = false;
    }
    os << "\n]}";
    return os.str();
  }

  // One line per class; doubles as hexadecimal floats, which read back exactly.
  std::string save_state() const override {
    std::ostringstream os;
    os << spec() << "\n";
    for (const auto& [k, e] : classes_) {
      os << std::get<0>(k) << " " << std::get<1>(k) << " " << hex(std::get<2>(k)) << " "
         << hex(std::get<3>(k)) << " " << std::get<4>(k) << " " << std::get<5>(k) << " "
         << e.thread_cpu << " " << e.steps << " " << e.first.size();
      for (double v : e.first) os << " " << hex(v);
      os << " " << e.second.size();
      for (double v : e.second) os << " " << hex(v);
      os << "\n";
    }
    return os.str();
  }

  void load_state(const std::string& text) override {
    if (text.empty()) {  // a checkpoint from before calibration existed: start afresh
      classes_.clear();
      return;
    }
    std::istringstream is(text);
    std::string head;
    std::getline(is, head);
    const auto bad = [](const std::string& why) {
      throw DataError("calibration state of the compute model: " + why);
    };
    if (head != spec()) bad("written for '" + head + "', not '" + spec() + "'");
    std::map<Key, Entry> classes;
    std::string line;
    while (std::getline(is, line)) {
      if (line.empty()) continue;
      std::istringstream ls(line);
      int kind = 0, stage = 0, thread_cpu = 0, steps = 0;
      std::string flops, memory;
      uint64_t bytes = 0, raw = 0;
      size_t n = 0;
      if (!(ls >> kind >> stage >> flops >> memory >> bytes >> raw >> thread_cpu >> steps >> n) ||
          kind < 0 || kind > static_cast<int>(OpKind::kBackwardWeight) || steps < 0 ||
          n > 100000000) {
        bad("unreadable line '" + line.substr(0, 80) + "'");
      }
      Entry e;
      e.thread_cpu = thread_cpu != 0;
      e.steps = steps;
      const auto read = [&](std::vector<double>& v, size_t count) {
        for (size_t i = 0; i < count; ++i) {
          std::string t;
          if (!(ls >> t)) bad("a line ends early");
          v.push_back(std::strtod(t.c_str(), nullptr));
        }
      };
      read(e.first, n);
      if (!(ls >> n) || n > 100000000) bad("a line ends early");
      read(e.second, n);
      update(e);
      classes[Key{kind, stage, std::strtod(flops.c_str(), nullptr),
                  std::strtod(memory.c_str(), nullptr), bytes, raw}] = std::move(e);
    }
    classes_ = std::move(classes);
  }

 private:
  const char* stat_name() const { return stat_ == Statistic::kMin ? "min" : "median"; }
  void update(Entry& e) const {
    e.first_s = statistic(stat_, e.first);
    e.second_s = statistic(stat_, e.second);
  }
  const Entry* find(const TraceOp& op) const {
    const auto it = classes_.find(key_of(op));
    return it == classes_.end() ? nullptr : &it->second;
  }

  int window_;
  Statistic stat_;
  std::map<Key, Entry> classes_;
};

}  // namespace

void parse_calibrated_spec(const std::string& arg, const std::string& key, ComputeSpec& spec) {
  spec.calibration_steps = kDefaultCalibrationSteps;
  spec.calibration_median = false;  // min: more load-stable than the median (docs/netmodel.md)
  if (arg.empty()) return;
  const auto colon = arg.find(':');
  const int64_t w = parse_int(key, arg.substr(0, colon));
  if (w < 1 || w > 100000) {
    throw UsageError("bad value for '" + key + "': calibration window must be 1..100000 steps");
  }
  spec.calibration_steps = static_cast<int>(w);
  if (colon != std::string::npos) {
    const std::string s = arg.substr(colon + 1);
    if (s == "median") {
      spec.calibration_median = true;
    } else if (s != "min") {
      throw UsageError("bad value for '" + key + "': calibration statistic '" + s +
                       "' (known: median, min)");
    }
  }
}

std::unique_ptr<ComputeModel> make_calibrated_model(const ComputeSpec& spec) {
  return std::make_unique<CalibratedModel>(
      spec.calibration_steps, spec.calibration_median ? Statistic::kMedian : Statistic::kMin);
}

}  // namespace slowpipe::netmodel
