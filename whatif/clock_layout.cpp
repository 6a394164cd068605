// The parallel layout of a published row and its exchanges (clock_layout.h).
#include "whatif/clock_layout.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "common/errors.h"
#include "whatif/clock_check.h"
#include "whatif/internal/csv_line.h"

namespace slowpipe::whatif {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

CsvHeader open_csv(std::ifstream& in, const std::string& path, const std::string& what,
                   std::initializer_list<const char*> need) {
  in.open(path);
  if (!in) throw DataError("cannot read " + what + " '" + path + "'");
  std::string line;
  if (!std::getline(in, line)) throw DataError(path + ": empty (no header line)");
  CsvHeader h;
  const auto names = split_csv(line);
  h.fields = names.size();
  for (size_t i = 0; i < names.size(); ++i) h.columns[names[i]] = i;
  for (const char* n : need)
    if (!h.columns.count(n)) throw DataError(path + ": no column '" + n + "'");
  return h;
}

LinkRates clock_link_rates(const std::string& gpu) {
  // NVLink per direction: half the datasheet's bidirectional total (V100 300
  // GB/s, A100 600, A800 and H800 400, H100 and H200 900); the PCIe cards
  // PCIe 4.0 x16, 31.5 GB/s. Between nodes, the reference designs' NICs per
  // GPU: DGX-1 (V100) 4 x 100 Gb/s for 8 GPUs, DGX A100 8 x 200 Gb/s, DGX
  // H100 8 x 400 Gb/s; other cards one 100 Gb/s NIC per node of 8
  // (docs/netmodel.md, "Round 5"). To the host (round 6): PCIe 3.0 x16
  // (15.75 GB/s) on the V100, 4.0 (31.5) on Ampere and the other cards, 5.0
  // (63) on Hopper.
  struct Chip {
    const char* name;
    double nvlink_GBps, internode_Gbps, pcie_GBps;
  };
  static const Chip chips[] = {
      {"V100", 150, 50, 15.75}, {"A100", 300, 200, 31.5}, {"A800", 200, 200, 31.5},
      {"H100", 450, 400, 63},   {"H800", 200, 400, 63},   {"H200", 450, 400, 63},
  };
  const std::string chip = gpu_label_parts(gpu).front();
  for (const auto& c : chips) {
    if (chip == c.name) return {c.nvlink_GBps * 1e9, c.internode_Gbps * 1e9 / 8, c.pcie_GBps * 1e9};
  }
  return {31.5e9, 100e9 / 8 / 8, 31.5e9};
}

namespace {

int positive_int(const std::string& s) {
  if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::stoi(s);
}

// One layout.csv line's layout (apply_layouts); `bad` makes its DataError.
template <class Bad>
RowLayout parse_layout(const std::vector<std::string>& f, const std::map<std::string, size_t>& col,
                       const Bad& bad) {
  RowLayout l;
  l.tp = positive_int(f[col.at("tp")]);
  l.pp = positive_int(f[col.at("pp")]);
  l.gpus_per_node = positive_int(f[col.at("gpus_per_node")]);
  l.dp_mode = f[col.at("dp_mode")];
  if (col.count("vpp")) l.vpp = positive_int(f[col.at("vpp")]);
  if (col.count("offload") && !f[col.at("offload")].empty()) l.offload = f[col.at("offload")];
  const std::string& link = f[col.at("internode_gbps_per_gpu")];
  if (l.tp < 1 || l.pp < 1 || l.vpp < 1 || l.gpus_per_node < 1)
    throw bad("tp, pp, vpp, gpus_per_node: >= 1");
  if (l.vpp > 1 && l.pp == 1) throw bad("vpp " + std::to_string(l.vpp) + " needs pp > 1");
  if (l.dp_mode != "none" && l.dp_mode != "ddp" && l.dp_mode != "zero1" && l.dp_mode != "zero2" &&
      l.dp_mode != "zero3")
    throw bad("dp_mode '" + l.dp_mode + "' (none, ddp, zero1, zero2, zero3)");
  if (l.offload != "none" && l.offload != "optimizer" && l.offload != "params")
    throw bad("offload '" + l.offload + "' (none, optimizer, params, or empty)");
  if (!link.empty()) {
    size_t used = 0;
    try {
      l.internode_gbps_per_gpu = std::stod(link, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != link.size() || !(l.internode_gbps_per_gpu > 0))
      throw bad("internode_gbps_per_gpu '" + link + "': a positive number or empty");
  }
  return l;
}

}  // namespace

int apply_layouts(const std::string& path, std::vector<PublishedRow>& rows) {
  std::ifstream in;
  const CsvHeader header =
      open_csv(in, path, "the layout file",
               {"id", "tp", "pp", "dp_mode", "gpus_per_node", "internode_gbps_per_gpu"});
  std::string line;
  std::map<std::string, PublishedRow*> by_id;
  for (auto& r : rows) by_id[r.id] = &r;
  int set = 0;
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.empty() || line == "\r") continue;
    const auto f = split_csv(line);
    const auto bad = [&](const std::string& what) {
      return DataError(path + ":" + std::to_string(n) + ": " + what);
    };
    if (f.size() != header.fields) throw bad("fields do not match the header");
    const RowLayout l = parse_layout(f, header.columns, bad);
    const auto it = by_id.find(f[header.columns.at("id")]);
    if (it == by_id.end()) continue;
    PublishedRow& r = *it->second;
    if (r.gpus % (l.tp * l.pp) != 0)
      throw bad("row " + r.id + ": tp x pp = " + std::to_string(l.tp * l.pp) +
                " does not divide its " + std::to_string(r.gpus) + " GPUs");
    r.layout = l;
    r.has_layout = true;
    ++set;
  }
  return set;
}

namespace {

// Seconds of a micro-batch's tensor-parallel all-reduces (the file comment).
double tp_exchange_s(const PublishedRow& row, const LinkRates& links, double across_node_Bps,
                     double act) {
  const RowLayout& l = row.layout;
  if (l.tp <= 1) return 0;
  const double t = l.tp;
  const double layers = std::ceil(static_cast<double>(row.layers) / l.pp);
  const double bytes = static_cast<double>(row.micro_batch * row.seq * row.d_model) * act;
  return (row.act_ckpt == "full" ? 6 : 4) * layers * 2 * (t - 1) / t * bytes /
         (l.tp <= l.gpus_per_node ? links.nvlink_Bps : across_node_Bps);
}

// Parameters a node's host updates a second under offload: the median of
// six seen offload rows (docs/netmodel.md, "Round 6"), calibrated, not a
// datasheet's figure.
constexpr double kHostUpdateParamsPerS = 0.43e9;

// What the host side of a step costs under offload (the file comment):
// seconds on the critical path after the backward (the update), seconds a
// micro-batch's copies take, and seconds hidden behind the last backward.
struct HostWork {
  double update_s = 0, per_micro_s = 0, end_s = 0;
};

HostWork host_work(const PublishedRow& row, const LinkRates& links, double shard, double act) {
  const RowLayout& l = row.layout;
  HostWork w;
  if (l.offload == "none") return w;
  // The host updates a node's parameters at kHostUpdateParamsPerS, shared
  // by the node's GPUs (each waits for all of them).
  w.update_s = shard * std::min(row.gpus, l.gpus_per_node) / kHostUpdateParamsPerS;
  const double copy_s = shard * act / links.host_link_Bps;
  if (l.offload == "params") {
    w.per_micro_s = (row.act_ckpt == "full" ? 3 : 2) * copy_s;  // in; gradients out alongside
  } else {
    w.end_s = copy_s;      // gradients out
    w.update_s += copy_s;  // parameters back in
  }
  return w;
}

}  // namespace

double layout_step_s(const PublishedRow& row, const StepParts& parts, int micro,
                     double stage_params) {
  const RowLayout& l = row.layout;
  const double t = l.tp, p = l.pp, d = row.gpus / (l.tp * l.pp), m = micro;
  const double act = row.dtype == "fp32" || row.dtype == "tf32" ? 4 : 2;
  const bool recompute = row.act_ckpt == "full";
  const bool sharded = l.dp_mode.rfind("zero", 0) == 0;
  const LinkRates links = clock_link_rates(row.gpu);
  const double inter =
      l.internode_gbps_per_gpu > 0 ? l.internode_gbps_per_gpu * 1e9 / 8 : links.internode_Bps;
  const double mb = (parts.forward_s + parts.backward_s) / m;  // one micro-batch's compute
  // A group's collective between nodes runs on the NICs of all its members
  // in a node at once (one ring per NIC): members per node x NIC rate, at
  // most NVLink's.
  const auto across = [&](double members_per_node) {
    return std::min(links.nvlink_Bps, inter * std::max(1.0, members_per_node));
  };
  const double node = l.gpus_per_node;
  const double tp_mb = tp_exchange_s(row, links, across(node), act);
  double per_micro = 0, at_end = 0;  // data-parallel seconds a micro-batch, a step
  if (d > 1) {
    // The data-parallel group's members in a node: tensor- and pipeline-
    // parallel groups fill nodes first.
    const double link = row.gpus <= l.gpus_per_node ? links.nvlink_Bps : across(node / (t * p));
    const double bytes = stage_params * act;
    if (l.dp_mode == "zero3") {
      per_micro = (recompute ? 4 : 3) * (d - 1) / d * bytes / link;
    } else {
      at_end = 2 * (d - 1) / d * bytes / link;
    }
  }
  const HostWork host = host_work(row, links, sharded ? stage_params / d : stage_params, act);
  const double exposed = m * std::max(0.0, per_micro + host.per_micro_s - mb) +
                         std::max(0.0, at_end + host.end_s - parts.backward_s / m);
  // The GPU's update stays whole under zero1..3: the constants were fitted
  // with it (docs/netmodel.md, "Round 6").
  const double update = l.offload != "none" ? host.update_s : parts.other_s;
  return (mb + tp_mb) * (m + (p - 1) / l.vpp) + exposed + update;
}

}  // namespace slowpipe::whatif
