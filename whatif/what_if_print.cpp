// The printout of `slowpipe timing` (what_if.h): every assumption the answer
// depends on (set-up, model, pipeline, device and compute model, messages,
// network, baseline, whole run), then the per-step and whole-run tables and
// the price of a run; or the rows as TSV.
#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <string>
#include <vector>

#include "common/units.h"
#include "netmodel/compute_model.h"
#include "whatif/internal/what_if_parts.h"

namespace slowpipe::whatif {

namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// One table row: the first cell left-aligned (10 wide), the others right (w).
std::string table_row(const std::vector<std::string>& cells, const std::vector<int>& widths) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    const int w = widths[i];
    const std::string& x = cells[i];
    const std::string pad(x.size() < static_cast<size_t>(w) ? w - x.size() : 0, ' ');
    line += i == 0 ? x + pad : "  " + pad + x;
  }
  return line + "\n";
}

// The device line and the compute model that times it.
void print_device(const NetConfig& net, const ResolvedWhatIf& r, std::ostream& os) {
  const netmodel::DevicePreset& d = netmodel::find_device("timing.device", r.device);
  os << "device " << d.name << ": peak " << fmt("%.4g", d.peak_flops / 1e12)
     << " TFLOP/s x utilisation " << fmt("%.0f", d.efficiency * 100)
     << "% = " << fmt("%.4g", d.peak_flops * d.efficiency / 1e12) << " TFLOP/s achieved, "
     << fmt("%.4g", d.kernel_launch_s * 1e6)
     << " us per kernel; backward 2 x forward FLOPs, optimizer 28 bytes/parameter, codec passes "
        "stream their bytes\n";
  const netmodel::ComputeSpec cm = with_timing_device(net, r.device).compute;
  const bool analytic = cm.model == "analytic";
  os << "compute model net.compute=" << cm.text
     << (analytic && cm.device == d.name ? " (the device line's roofline plus launch floor)"
         : analytic                      ? " (its own device's roofline replaces the device line)"
         : cm.model == "fixed"           ? " (fixed op seconds replace the device line)"
         : cm.model == "scaled"          ? " (the device line's seconds, divided)"
         : cm.model == "shaped"
             ? " (each GEMM, attention and pass from its shape: docs/compute-clock.md)"
             : " (replays the device line's seconds)")
     << "\n";
}

// "[mb,seq,width]" of a boundary message, what the width holds when narrowed,
// and the token ids beside it.
std::string message_shape_text(const WhatIfConfig& c, const models::ModelShape& m) {
  std::string what;
  if (m.subspace > 0)
    what = c.bottleneck.empty() ? " (subspace coefficients)" : " (bottleneck values)";
  if (m.subspace > 0 && c.token_id_bytes > 0)
    what += " + " + std::to_string(c.token_id_bytes) + " B/token of token ids";
  return "[" + std::to_string(m.microbatch_size) + "," + std::to_string(m.seq) + "," +
         std::to_string(boundary_width(m)) + "]" + what;
}

void print_assumptions(const WhatIfConfig& c, const NetConfig& net, const WhatIfResult& res,
                       std::ostream& os) {
  const ResolvedWhatIf& r = res.setup;
  const models::ModelShape& m = r.shape;
  const MessageSizes& msg = res.messages;
  if (!c.preset.empty()) {
    const TimingPreset& p = find_timing_preset("timing.preset", c.preset);
    os << "set-up " << p.name << ": " << p.description << " (" << p.codecs_used
       << "; docs/netmodel.md)\n";
  }
  os << "model " << m.name << ": " << m.layers << " layers (per stage " << describe_stage_layers(m)
     << "), d " << m.hidden << ", seq " << m.seq << ", vocabulary " << m.vocab
     << (m.mlp_width > 0 ? ", MLP width " + std::to_string(m.mlp_width)
                         : ", MLP ratio " + std::to_string(m.mlp_ratio))
     << ", " << m.score_terms << " attention score matmul(s)"
     << (m.lm_head ? ", LM head on the last stage" : ", no LM head") << "\n";
  const int micro = m.batch / m.microbatch_size;
  os << "pipeline " << m.stages << " stages";
  if (c.virtual_stages > 1) {
    os << " x " << c.virtual_stages << " virtual = " << m.stages * c.virtual_stages
       << " chunks of the layers split evenly";
  }
  os << " x " << c.replicas << " replica(s), schedule " << r.schedule << ", batch " << m.batch
     << " per replica = " << micro << " micro-batches of " << m.microbatch_size << "\n";
  print_device(net, r, os);
  const std::string shape = message_shape_text(c, m);
  const std::string plain = " (fp32 " + format_bytes(static_cast<double>(msg.fp32_activation)) +
                            ", fp16 " + format_bytes(static_cast<double>(msg.fp16_activation)) +
                            ")";
  os << "message activation " << shape << " fw " << c.specs.forward.text() << ": "
     << format_bytes(static_cast<double>(msg.activation)) << plain << ", " << micro
     << " per boundary and step\n";
  os << "message activation-gradient " << shape << " bw " << c.specs.backward.text() << ": "
     << format_bytes(static_cast<double>(msg.activation_gradient)) << plain << ", " << micro
     << " per boundary and step\n";
  const auto [lo, hi] =
      std::minmax_element(msg.parameter_gradient.begin(), msg.parameter_gradient.end());
  const auto [flo, fhi] =
      std::minmax_element(msg.fp32_parameter_gradient.begin(), msg.fp32_parameter_gradient.end());
  os << "message parameter-gradient all-reduce [stage parameters] grad " << c.specs.gradient.text()
     << ": " << format_bytes(static_cast<double>(*lo)) << " .. "
     << format_bytes(static_cast<double>(*hi)) << " per stage (fp32 "
     << format_bytes(static_cast<double>(*flo)) << " .. " << format_bytes(static_cast<double>(*fhi))
     << ")"
     << (c.replicas > 1 ? ", one ring all-reduce per stage and step" : ", not sent with 1 replica")
     << "\n";
  os << "network " << netmodel::describe(net) << ", bandwidth swept\n";
  const HomeLinks home = home_links_of(c);
  if (home.median_bps > 0) {
    os << describe_home_links(home, with_home_links(net, home, m.stages, c.replicas))
       << "; the swept bandwidth is the core between homes\n";
  }
  os << "baseline " << (c.baseline == "both" ? "fp32 and fp16" : c.baseline)
     << ": every channel uncompressed (fp32 = none, fp16 = 2 bytes per element)\n";
  os << "whole run " << r.epochs << " epoch(s) x " << c.steps_per_epoch
     << " steps (timing.steps_per_epoch); warm-up epochs sending the baseline's messages: fw "
     << r.warmup[0] << ", bw " << r.warmup[1] << ", grad " << r.warmup[2] << "\n";
}

}  // namespace

void print_run_price(const WhatIfConfig& c, const WhatIfResult& res, std::ostream& os) {
  const double record_s =
      c.preset.empty() ? 0 : find_timing_preset("timing.preset", c.preset).record_step_s;
  if (record_s <= 0 && c.steps <= 0) return;
  os << "\nsteady-state step (the compressed column's step s)\n";
  for (const WhatIfRow& row : res.rows) {
    os << format_bandwidth(row.bandwidth_bps) << ": step " << fmt("%.3f", row.step_s) << " s";
    if (record_s > 0) {
      os << " (the preset's record " << fmt("%.3f", record_s)
         << " s: " << fmt("%+.2f", (row.step_s / record_s - 1) * 100) << "%)";
    }
    if (c.steps > 0) {
      os << "; T = " << c.steps << " steps x " << fmt("%.3f", row.step_s)
         << " s = " << fmt("%.1f", static_cast<double>(c.steps) * row.step_s) << " s";
    }
    os << "\n";
  }
}

void print_what_if(const WhatIfConfig& c, const NetConfig& net, const WhatIfResult& res,
                   std::ostream& os) {
  print_assumptions(c, net, res, os);
  const auto& bases = res.setup.baselines;
  std::vector<std::string> head = {"bandwidth"};
  for (const auto& b : bases) head.push_back(b + " step s");
  head.push_back("step s");
  for (const auto& b : bases) head.push_back("vs " + b);
  head.push_back("samples/s");
  head.push_back("bubble");
  std::vector<int> widths = {10};
  for (size_t i = 1; i < head.size(); ++i) widths.push_back(std::max<int>(10, head[i].size()));
  os << "\nper step, after warm-up (vs B: speed-up = B step / step)\n" << table_row(head, widths);
  for (const WhatIfRow& row : res.rows) {
    std::vector<std::string> cells = {format_bandwidth(row.bandwidth_bps)};
    for (const auto& b : row.baselines) cells.push_back(fmt("%.4f", b.step_s));
    cells.push_back(fmt("%.4f", row.step_s));
    for (const auto& b : row.baselines) cells.push_back(fmt("%.2fx", b.speedup));
    cells.push_back(fmt("%.3f", row.samples_per_s));
    cells.push_back(fmt("%.1f%%", row.bubble_fraction * 100));
    os << table_row(cells, widths);
  }
  head = {"bandwidth"};
  for (const auto& b : bases) {
    head.push_back(b + " run h");
    head.push_back("run h (" + b + " warm-up)");
    head.push_back("vs " + b);
  }
  widths = {10};
  for (size_t i = 1; i < head.size(); ++i) widths.push_back(std::max<int>(10, head[i].size()));
  os << "\nwhole run, " << res.setup.epochs
     << " epoch(s) with warm-up (vs B: speed-up = B run / run with B warm-up)\n"
     << table_row(head, widths);
  for (const WhatIfRow& row : res.rows) {
    std::vector<std::string> cells = {format_bandwidth(row.bandwidth_bps)};
    for (const auto& b : row.baselines) {
      cells.push_back(fmt("%.3f", b.run_s / 3600));
      cells.push_back(fmt("%.3f", b.compressed_run_s / 3600));
      cells.push_back(fmt("%.2fx", b.run_speedup));
    }
    os << table_row(cells, widths);
  }
  print_run_price(c, res, os);
}

void write_what_if_tsv(const WhatIfResult& res, std::ostream& os, int64_t steps) {
  os << "bandwidth\tbandwidth_bps\tstep_s\tsamples_per_s\tbubble_fraction";
  for (const auto& b : res.setup.baselines) {
    os << "\t" << b << "_step_s\t" << b << "_speedup\t" << b << "_run_s\t" << b
       << "_compressed_run_s\t" << b << "_run_speedup";
  }
  if (steps > 0) os << "\tT_s";
  os << "\n";
  const auto old = os.precision(10);
  for (const auto& row : res.rows) {
    os << format_bandwidth(row.bandwidth_bps) << "\t" << std::setprecision(15) << row.bandwidth_bps
       << std::setprecision(10) << "\t" << row.step_s << "\t" << row.samples_per_s << "\t"
       << row.bubble_fraction;
    for (const auto& b : row.baselines) {
      os << "\t" << b.step_s << "\t" << b.speedup << "\t" << b.run_s << "\t" << b.compressed_run_s
         << "\t" << b.run_speedup;
    }
    if (steps > 0) os << "\t" << static_cast<double>(steps) * row.step_s;
    os << "\n";
  }
  os.precision(old);
}

}  // namespace slowpipe::whatif
