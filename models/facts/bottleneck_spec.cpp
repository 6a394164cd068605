// model.bottleneck's grammar and parameter counts; see bottleneck_spec.h.
#include "models/facts/bottleneck_spec.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "common/errors.h"

namespace slowpipe::models {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) out.push_back(part);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

[[noreturn]] void refuse(const std::string& text, const std::string& why) {
  throw UsageError("model.bottleneck=" + text + ": " + why +
                   " (resbm:r=R[:at=I+J], learned:k=K[:anchor=A][:at=I+J]; docs/models.md)");
}

// A whole decimal integer in [lo, hi], or refuse naming `what`.
int integer(const std::string& text, const std::string& what, const std::string& value, int lo,
            int hi) {
  char* end = nullptr;
  const long v = value.empty() ? 0 : std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v < lo || v > hi) {
    refuse(text, what + " must be a whole number in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], not '" + value + "'");
  }
  return static_cast<int>(v);
}

std::vector<int> positions(const std::string& text, const std::string& value, int layers) {
  std::vector<int> out;
  if (layers < 2) refuse(text, "a bottleneck needs two transformer blocks (model.layers >= 2)");
  for (const auto& part : split(value, '+')) {
    const int b = integer(text, "each at= block", part, 1, layers - 1);
    if (!out.empty() && b <= out.back()) refuse(text, "at= blocks must increase");
    out.push_back(b);
  }
  if (out.empty()) refuse(text, "at= needs at least one block");
  return out;
}

}  // namespace

std::string BottleneckSpec::text() const {
  if (kind == BottleneckKind::kNone) return "";
  std::string s = kind == BottleneckKind::kResbm ? "resbm:r=" + std::to_string(width)
                                                 : "learned:k=" + std::to_string(width);
  if (anchor > 0) s += ":anchor=" + std::to_string(anchor);
  std::string at;
  for (int b : after) at += (at.empty() ? "" : "+") + std::to_string(b);
  return s + ":at=" + at;
}

BottleneckSpec parse_bottleneck(const std::string& text, int layers, int d_model) {
  BottleneckSpec spec;
  if (text.empty()) return spec;
  const auto parts = split(text, ':');
  if (parts[0] == "resbm") {
    spec.kind = BottleneckKind::kResbm;
  } else if (parts[0] == "learned") {
    spec.kind = BottleneckKind::kLearned;
  } else {
    refuse(text, "unknown kind '" + parts[0] + "'");
  }
  const std::string width_key = spec.kind == BottleneckKind::kResbm ? "r" : "k";
  bool have_at = false;
  for (size_t i = 1; i < parts.size(); ++i) {
    const auto eq = parts[i].find('=');
    const std::string key = parts[i].substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : parts[i].substr(eq + 1);
    if (key == width_key) {
      spec.width = integer(text, width_key, value, 1, d_model);
    } else if (key == "anchor" && spec.kind == BottleneckKind::kLearned) {
      spec.anchor = integer(text, "anchor", value, 0, d_model);
    } else if (key == "at") {
      spec.after = positions(text, value, layers);
      have_at = true;
    } else {
      refuse(text, "unknown option '" + parts[i] + "'");
    }
  }
  if (spec.width == 0) refuse(text, "the width " + width_key + "= is required");
  if (!have_at) {
    if (layers < 2) refuse(text, "a bottleneck needs two transformer blocks (model.layers >= 2)");
    for (int b = 1; b < layers; ++b) spec.after.push_back(b);
  }
  return spec;
}

bool bottleneck_after(const BottleneckSpec& spec, int block) {
  return spec.on() && std::find(spec.after.begin(), spec.after.end(), block) != spec.after.end();
}

long long bottleneck_parameters(const BottleneckSpec& spec, int d_model, int vocab) {
  const long long n = static_cast<long long>(spec.after.size()), c = d_model, w = spec.width;
  if (spec.kind == BottleneckKind::kResbm) return n * 2 * w * c;
  if (spec.kind == BottleneckKind::kLearned) {
    const long long a = spec.anchor;
    return n * (c * w + (a > 0 ? vocab * a + a * c : 0));
  }
  return 0;
}

}  // namespace slowpipe::models
