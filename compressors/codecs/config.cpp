// compress.* options; see config.h.
#include "compressors/codecs/config.h"

#include "common/errors.h"
#include "compressors/codecs/channel_spec.h"
#include "compressors/codecs/spec.h"

namespace slowpipe::compressors {

namespace {
ChannelSpec checked(const std::string& key, const std::string& spec, bool backward) {
  try {
    return ChannelSpec::parse(spec, backward);
  } catch (const UsageError& e) {
    throw UsageError(key + ": " + e.what());
  }
}
}  // namespace

const char* aq_store_name(AqStore store) {
  switch (store) {
    case AqStore::kMemory:
      return "memory";
    case AqStore::kDisk:
      return "disk";
  }
  return "unknown";
}

AqStore parse_aq_store(const std::string& key, const std::string& text) {
  for (AqStore s : {AqStore::kMemory, AqStore::kDisk})
    if (text == aq_store_name(s)) return s;
  throw UsageError("bad value for '" + key + "': '" + text + "' (expected one of memory|disk)");
}

bool uses_aq(const ChannelSpec& spec) {
  return spec.keyed_by_sample();
}

bool uses_aq(const CompressConfig& c, int num_boundaries) {
  for (int b = 0; b < num_boundaries; ++b)
    if (uses_aq(c.fw_for(b)) || uses_aq(c.bw_for(b))) return true;
  return false;
}

const ChannelSpec& CompressConfig::fw_for(int boundary) const {
  auto it = fw_at.find(boundary);
  return it == fw_at.end() ? fw : it->second;
}
const ChannelSpec& CompressConfig::bw_for(int boundary) const {
  auto it = bw_at.find(boundary);
  return it == bw_at.end() ? bw : it->second;
}

void validate_boundary_overrides(const CompressConfig& c, int num_boundaries) {
  for (const auto* m : {&c.fw_at, &c.bw_at}) {
    const std::string key = m == &c.fw_at ? "compress.fw_at" : "compress.bw_at";
    for (const auto& [b, spec] : *m)
      if (b < 0 || b >= num_boundaries)
        throw UsageError(key + " names boundary " + std::to_string(b) + ", but the pipeline has " +
                         (num_boundaries > 0 ? "boundaries 0.." + std::to_string(num_boundaries - 1)
                                             : std::string("no boundary (one stage)")));
  }
}

void validate_compress_config(const CompressConfig& c, int num_boundaries, bool data_parallel) {
  validate_boundary_overrides(c, num_boundaries);
  for (int b = 0; b < num_boundaries; ++b) {
    const std::string at = " (boundary " + std::to_string(b) + ")";
    const ChannelSpec &fw = c.fw_for(b), &bw = c.bw_for(b);
    validate_role((c.fw_at.count(b) ? "compress.fw_at" : "compress.fw") + at, fw,
                  ChannelRole::kForward);
    validate_role((c.bw_at.count(b) ? "compress.bw_at" : "compress.bw") + at, bw,
                  ChannelRole::kBackward, fw);
  }
  if (data_parallel) validate_role("compress.grad", c.grad.given(), ChannelRole::kGradient);
}

std::map<int, ChannelSpec> parse_boundary_specs(const std::string& key, const std::string& text,
                                                bool backward) {
  std::map<int, ChannelSpec> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    size_t colon = item.find(':');
    if (colon == std::string::npos || colon == 0)
      throw UsageError(key + ": expected BOUNDARY:SPEC items separated by ',', got '" + item + "'");
    int64_t b = parse_int(key, item.substr(0, colon));
    if (b < 0) throw UsageError(key + ": boundary index must be >= 0, got " + std::to_string(b));
    out[static_cast<int>(b)] = checked(key, item.substr(colon + 1), backward);
    start = end + 1;
  }
  return out;
}

std::string format_boundary_specs(const std::map<int, ChannelSpec>& specs) {
  std::string s;
  for (const auto& [b, spec] : specs)
    s += (s.empty() ? "" : ",") + std::to_string(b) + ":" + spec.text();
  return s;
}

void describe_options(CompressConfig& c, slowpipe::OptionSet& o) {
  auto spec_option = [&o](const std::string& key, ChannelSpec& field, bool backward,
                          const std::string& help) {
    o.add_custom(
        key, "spec", help,
        [&field, key, backward](const std::string& v) { field = checked(key, v, backward); },
        [&field] { return field.text(); });
  };
  spec_option("compress.fw", c.fw, false,
              "forward (activation) channel of every boundary, e.g. q4, aq(q2)");
  spec_option("compress.bw", c.bw, true,
              "backward (activation-gradient) channel of every boundary; topk:shared reuses the "
              "forward mask");
  o.add_custom(
      "compress.grad", "spec", "data-parallel gradient channel, e.g. ef(topk:0.01)",
      [&c](const std::string& v) { c.grad = GradientSpec(checked("compress.grad", v, false)); },
      [&c] { return c.grad.given().text(); });
  add_grad_sync_option(
      o, "compress.grad_sync", c.grad_sync,
      "what replicas exchange through compress.grad: gradients (all-reduce) or the "
      "optimizer's momentum, sharded (AQ-SGD; docs/grad-sync.md)");
  o.add("compress.momentum_warmup_steps", c.momentum_warmup_steps,
        "grad_sync = momentum: first steps all-reduce uncompressed gradients (AdamW's second "
        "moment is frozen after them)",
        1, int64_t{1} << 40);
  o.add_custom(
      "compress.fw_at", "list", "per-boundary forward overrides, I:SPEC,... (I = 0-based boundary)",
      [&c](const std::string& v) { c.fw_at = parse_boundary_specs("compress.fw_at", v, false); },
      [&c] { return format_boundary_specs(c.fw_at); });
  o.add_custom(
      "compress.bw_at", "list", "per-boundary backward overrides, I:SPEC,...",
      [&c](const std::string& v) { c.bw_at = parse_boundary_specs("compress.bw_at", v, true); },
      [&c] { return format_boundary_specs(c.bw_at); });
  o.add("compress.warmup_epochs", c.warmup_epochs,
        "epochs in which every forward and backward channel sends fp32 (AQ-SGD channels: "
        "max of this and compress.aq_warmup_epochs); not compress.grad",
        0, 1000000);
  o.add("compress.aq_warmup_epochs", c.aq_warmup_epochs,
        "AQ-SGD: epochs sent uncompressed to fill the buffers (at least compress.warmup_epochs)", 0,
        1000000);
  o.add_choice(
      "compress.aq_store", {aq_store_name(AqStore::kMemory), aq_store_name(AqStore::kDisk)},
      "AQ-SGD buffers: in memory or in a memory-mapped file",
      [&c](const std::string& v) { c.aq_store = parse_aq_store("compress.aq_store", v); },
      [&c] { return std::string(aq_store_name(c.aq_store)); });
  o.add("compress.aq_dir", c.aq_dir, "AQ-SGD disk buffers folder (empty: system temp folder)");
}

}  // namespace slowpipe::compressors
