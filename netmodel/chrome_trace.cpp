// Chrome trace writer (nlohmann-json builds the document).
#include "netmodel/chrome_trace.h"

#include <nlohmann/json.hpp>
#include <string>

namespace slowpipe::netmodel {

namespace {

void append_metadata(const Timeline& t, nlohmann::json& events) {
  const int S = t.stages;
  // Thread ids: stage s compute = s; wire of stage s forward = S + s; backward = 2S + s;
  // all-reduce of stage s = 3S + s.
  for (int r = 0; r < t.replicas; ++r) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", r},
                      {"args", {{"name", "replica " + std::to_string(r)}}}});
    for (int s = 0; s < S; ++s) {
      const std::string st = std::to_string(s);
      const std::pair<int, std::string> threads[] = {
          {s, "stage " + st + " compute"},
          {S + s, "s" + st + "->s" + std::to_string(s + 1) + " wire (activations)"},
          {2 * S + s, "s" + st + "->s" + std::to_string(s - 1) + " wire (gradients)"},
          {3 * S + s, "stage " + st + " all-reduce"}};
      for (const auto& [tid, name] : threads) {
        events.push_back({{"name", "thread_name"},
                          {"ph", "M"},
                          {"pid", r},
                          {"tid", tid},
                          {"args", {{"name", name}}}});
        events.push_back({{"name", "thread_sort_index"},
                          {"ph", "M"},
                          {"pid", r},
                          {"tid", tid},
                          {"args", {{"sort_index", tid}}}});
      }
    }
  }
}

void append_spans(const Timeline& t, double offset_s, int step, nlohmann::json& events) {
  const int S = t.stages;
  auto span = [&](const std::string& name, const char* cat, int pid, int tid, double a, double b,
                  const nlohmann::json& args) {
    if (b < a || (b == a && std::string(cat) == "codec")) return;  // no empty codec spans
    events.push_back({{"name", name},
                      {"cat", cat},
                      {"ph", "X"},
                      {"pid", pid},
                      {"tid", tid},
                      {"ts", (a + offset_s) * 1e6},
                      {"dur", (b - a) * 1e6},
                      {"args", args}});
  };
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const TraceOp& op = t.ops[i];
    const OpTiming& x = t.timing[i];
    const int s = op.device, r = op.replica;
    const std::string mb = std::to_string(op.microbatch);
    nlohmann::json args = {{"stage", s},
                           {"chunk", op.chunk},
                           {"microbatch", op.microbatch},
                           {"replica", r},
                           {"step", step}};
    switch (op.kind) {
      case OpKind::kForward:
        span("F" + mb, "compute", r, s, x.start_s, x.end_s, args);
        break;
      case OpKind::kBackward:
        span("B" + mb, "compute", r, s, x.start_s, x.end_s, args);
        break;
      case OpKind::kBackwardInput:
        span("B" + mb + " input", "compute", r, s, x.start_s, x.end_s, args);
        break;
      case OpKind::kBackwardWeight:
        span("W" + mb, "compute", r, s, x.start_s, x.end_s, args);
        break;
      case OpKind::kOptimizer:
        span("optimizer", "compute", r, s, x.start_s, x.end_s, args);
        break;
      case OpKind::kSendActivation:
      case OpKind::kSendGradient: {
        const bool act = op.kind == OpKind::kSendActivation;
        const int to = op.peer;
        args["bytes"] = op.bytes;
        span(std::string(act ? "encode a" : "encode g") + mb, "codec", r, s, x.encode_start_s,
             x.encode_end_s, args);
        span(std::string(act ? "act " : "grad ") + mb, "wire", r, (act ? S : 2 * S) + s, x.start_s,
             x.end_s, args);
        span(std::string(act ? "decode a" : "decode g") + mb, "codec", r, to, x.decode_start_s,
             x.decode_end_s, args);
        break;
      }
      case OpKind::kAllReduce:
        args["bytes"] = op.bytes;
        span("encode all-reduce", "codec", r, s, x.encode_start_s, x.encode_end_s, args);
        span("all-reduce", "wire", r, 3 * S + s, x.start_s, x.end_s, args);
        span("decode all-reduce", "codec", r, s, x.decode_start_s, x.decode_end_s, args);
        break;
    }
  }
}

}  // namespace

void write_chrome_trace(const Timeline& t, std::ostream& os, double offset_s) {
  nlohmann::json events = nlohmann::json::array();
  append_metadata(t, events);
  append_spans(t, offset_s, 0, events);
  nlohmann::json doc = {
      {"traceEvents", events},
      {"displayTimeUnit", "ms"},
      {"otherData",
       {{"step_s", t.step_s}, {"bubble_fraction", t.bubble_fraction}, {"schedule", t.schedule}}}};
  os << doc.dump() << "\n";
}

void write_chrome_trace(const std::vector<Timeline>& steps, std::ostream& os) {
  nlohmann::json events = nlohmann::json::array();
  nlohmann::json step_s = nlohmann::json::array();
  double offset_s = 0;
  for (size_t k = 0; k < steps.size(); ++k) {
    if (k == 0 || steps[k].stages != steps[0].stages || steps[k].replicas != steps[0].replicas) {
      append_metadata(steps[k], events);
    }
    append_spans(steps[k], offset_s, static_cast<int>(k), events);
    offset_s += steps[k].step_s;
    step_s.push_back(steps[k].step_s);
  }
  nlohmann::json doc = {{"traceEvents", events},
                        {"displayTimeUnit", "ms"},
                        {"otherData", {{"step_s", step_s}, {"total_s", offset_s}}}};
  os << doc.dump() << "\n";
}

}  // namespace slowpipe::netmodel
