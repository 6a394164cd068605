// fp32 bytes per step from the logged config (see summary_fp32.h).
#include "study/summary/internal/summary_fp32.h"

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "common/numbers.h"
#include "compressors/codecs/codec.h"
#include "models/facts/model_facts.h"

namespace slowpipe::study {
namespace {

// Bytes per element of the reference codec (none: fp32, 4).
double fp32_bytes_per_element() {
  static const double bytes = static_cast<double>(
      compressors::make_codec(compressors::reference_codec().name)->message_bytes({1}));
  return bytes;
}

// The attribute as a number; NaN when absent or not a number.
double number(const std::map<std::string, std::string>& attrs, const std::string& key) {
  auto it = attrs.find(key);
  if (it == attrs.end() || it->second.empty()) return kNaN;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  return (end && *end == '\0') ? v : kNaN;
}

std::string text(const std::map<std::string, std::string>& attrs, const std::string& key) {
  auto it = attrs.find(key);
  return it == attrs.end() ? std::string() : it->second;
}

std::vector<int> parse_cuts(const std::string& s) {
  std::vector<int> cuts;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    char* end = nullptr;
    const long v = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0') return {};
    cuts.push_back(static_cast<int>(v));
  }
  return cuts;
}

}  // namespace

double block_output_elements(const std::map<std::string, std::string>& attrs, int block) {
  return models::block_output_elements(
      text(attrs, "config.model.name"),
      [&attrs](const std::string& key) { return number(attrs, key); }, block);
}

Fp32Bytes fp32_bytes_per_step(const std::map<std::string, std::string>& attrs) {
  Fp32Bytes out;
  const double batch = number(attrs, "config.pipeline.batch_size");
  const std::vector<int> cuts = parse_cuts(text(attrs, "pipeline.resolved_cuts"));
  if (cuts.size() < 2 || std::isnan(batch)) {
    out.fw = out.bw = kNaN;
  } else {
    for (size_t b = 1; b + 1 < cuts.size(); ++b) {
      out.fw += fp32_bytes_per_element() * batch * block_output_elements(attrs, cuts[b] - 1);
    }
    out.bw = out.fw;
  }
  const double replicas = number(attrs, "config.pipeline.replicas");
  if (replicas > 1)
    out.grad = fp32_bytes_per_element() * number(attrs, "model.parameters") * replicas;
  return out;
}

}  // namespace slowpipe::study
