// The compute clock against published throughput (clock_check.h).
#include "whatif/clock_check.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>

#include "common/errors.h"
#include "compressors/codecs/channel_spec.h"
#include "netmodel/net_config.h"
#include "netmodel/replay.h"
#include "whatif/internal/csv_line.h"
#include "whatif/synthetic_trace.h"

namespace slowpipe::whatif {

namespace {

// A row's field by column name; "" when absent.
struct Record {
  const std::map<std::string, size_t>& columns;
  const std::vector<std::string>& fields;
  std::string operator[](const std::string& name) const {
    const auto it = columns.find(name);
    return it == columns.end() || it->second >= fields.size() ? "" : fields[it->second];
  }
  double number(const std::string& name) const {
    const std::string s = (*this)[name];
    if (s.empty()) return 0;
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    return used == s.size() ? v : -1;  // -1: not a number
  }
};

std::string fill_row(const Record& r, PublishedRow& row) {
  row.id = r["id"];
  row.source_id = r["source_id"];
  row.gpu = r["gpu"];
  row.dtype = r["dtype"];
  row.execution = r["execution"];
  row.attention = r["attention"];
  row.act_ckpt = r["act_ckpt"];
  row.model = r["model"];
  row.split = r["split"];
  row.mlp = r["mlp"];
  row.kv_heads = static_cast<int64_t>(r.number("kv_heads"));
  row.gpus = static_cast<int>(r.number("gpus"));
  row.layers = static_cast<int>(r.number("layers"));
  row.micro_batch = static_cast<int>(r.number("micro_batch"));
  row.d_model = static_cast<int64_t>(r.number("d_model"));
  row.heads = static_cast<int64_t>(r.number("heads"));
  row.ffn = static_cast<int64_t>(r.number("ffn"));
  row.vocab = static_cast<int64_t>(r.number("vocab"));
  row.seq = static_cast<int64_t>(r.number("seq"));
  row.global_batch_tokens = r.number("global_batch_tokens");
  row.published_tokens_per_s = r.number("tokens_per_s_per_gpu");
  // What the clock needs, by column name: empty when the row can be timed.
  std::string missing;
  const auto need = [&missing](bool ok, const char* column) {
    if (!ok) missing += std::string(missing.empty() ? "" : ", ") + column;
  };
  need(row.mlp.empty() || row.mlp == "gelu" || row.mlp == "relu2" || row.mlp == "swiglu", "mlp");
  need(row.kv_heads >= 0, "kv_heads");
  need(row.gpus > 0, "gpus");
  need(row.layers > 0, "layers");
  need(row.micro_batch > 0, "micro_batch");
  need(row.d_model > 0, "d_model");
  need(row.vocab > 0, "vocab");
  need(row.seq > 0, "seq");
  need(row.global_batch_tokens > 0, "global_batch_tokens");
  need(row.published_tokens_per_s > 0, "tokens_per_s_per_gpu");
  return missing;
}

}  // namespace

std::vector<PublishedRow> read_published(const std::string& path,
                                         std::vector<std::string>* skipped) {
  std::ifstream in;
  const CsvHeader header =
      open_csv(in, path, "the published set",
               {"id", "gpu", "dtype", "execution", "layers", "d_model", "vocab", "seq",
                "micro_batch", "global_batch_tokens", "gpus", "tokens_per_s_per_gpu"});
  const std::map<std::string, size_t>& columns = header.columns;
  std::string line;
  std::vector<PublishedRow> rows;
  if (skipped) skipped->clear();
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.empty() || line == "\r") continue;
    const auto fields = split_csv(line);
    if (fields.size() != header.fields) {
      throw DataError(path + ":" + std::to_string(n) + ": " + std::to_string(fields.size()) +
                      " fields, the header has " + std::to_string(header.fields));
    }
    PublishedRow row;
    const std::string missing = fill_row(Record{columns, fields}, row);
    if (!missing.empty()) {
      if (skipped) skipped->push_back(row.id + " (" + missing + ")");
      continue;
    }
    try {  // a device, mode, dtype and attention slowpipe knows; else skipped
      netmodel::parse_compute_spec(row_compute_spec(row, "shaped"), "row");
    } catch (const UsageError& e) {
      if (skipped) skipped->push_back(row.id + " (" + e.what() + ")");
      continue;
    }
    rows.push_back(row);
  }
  return rows;
}

std::vector<std::string> gpu_label_parts(const std::string& gpu) {
  std::vector<std::string> parts(1);
  for (const char c : gpu) {
    if (c == '-') {
      parts.emplace_back();
    } else {
      parts.back() += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
  }
  return parts;
}

// A GPU label is a chip and optional parts, dash-separated: a form factor
// (SXM, SXM2, SXM4, SXM5: the presets are the SXM parts; PCIe differs in
// clocks and power, so it is not mapped) and a memory size (40GB, 80GB, ...:
// it picks the A100's preset and is otherwise ignored). The A800 and H800 are
// the A100 SXM4 and H100 SXM5 with a slower NVLink, which a one-device
// prediction does not use (docs/compute-clock.md, "Devices").
std::string device_of(const std::string& gpu) {
  static const std::map<std::string, std::string> chips = {
      {"V100", "V100"},       {"A100", "A100"},       {"A800", "A100"},
      {"H100", "H100"},       {"H800", "H100"},       {"H200", "H200"},
      {"RTX3090", "RTX3090"}, {"RTX4090", "RTX4090"}, {"L40S", "L40S"}};
  const auto fail = [&gpu] {
    return UsageError("GPU '" + gpu + "' has no device preset (devices " +
                      netmodel::device_presets().known() + ")");
  };
  const std::vector<std::string> parts = gpu_label_parts(gpu);
  const auto chip = chips.find(parts[0]);
  if (chip == chips.end()) throw fail();
  std::string device = chip->second;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    const bool sxm = p.rfind("SXM", 0) == 0 && p.find_first_not_of("0123456789", 3) == p.npos;
    const bool memory = p.size() > 2 && p.compare(p.size() - 2, 2, "GB") == 0 &&
                        p.find_first_not_of("0123456789") == p.size() - 2;
    if (!sxm && !memory) throw fail();
    if (memory && device == "A100" && p == "80GB") device = "A100-80GB";
  }
  return device;
}

std::string row_compute_spec(const PublishedRow& row, const std::string& model) {
  const std::string device = device_of(row.gpu);
  if (model == "analytic") return "analytic:" + device;
  std::string spec = "shaped:" + device + ":mode=" + row.execution + ":dtype=" + row.dtype;
  if (row.attention == "flash" || row.attention == "materialised") spec += ":attn=" + row.attention;
  return spec;
}

namespace {

models::ModelShape row_shape(const PublishedRow& row) {
  models::ModelShape s;
  s.name = row.id;
  s.layers = row.layers;
  s.hidden = row.d_model;
  s.heads = static_cast<int>(row.heads);
  s.mlp_width = row.ffn;
  s.vocab = row.vocab;
  s.seq = row.seq;
  s.stages = 1;
  s.microbatch_size = row.micro_batch;
  // Tokens of one replica's step: the global batch over the data-parallel
  // replicas (every GPU without a layout).
  const int group = row.has_layout ? row.layout.tp * row.layout.pp : 1;
  const double per_replica = row.global_batch_tokens * group / row.gpus;
  const int micro =
      std::max(1, static_cast<int>(std::lround(per_replica / (row.micro_batch * row.seq))));
  s.batch = micro * row.micro_batch;
  if (row.has_layout) {  // one stage of the most layers, with the LM head
    s.layers = (row.layers + row.layout.pp - 1) / row.layout.pp;
    s.tensor_parallel = row.layout.tp;
  }
  s.recompute = row.act_ckpt == "full";
  s.kv_heads = static_cast<int>(row.kv_heads);
  s.gated_mlp = row.mlp == "swiglu";
  return s;
}

// A row's one-device step (no messages) and what times it.
struct RowStep {
  netmodel::StepTrace trace;
  netmodel::ComputeSpec spec;
  double tokens = 0;
  int micro = 1;            // micro-batches of the step
  double stage_params = 0;  // parameters one GPU holds
};

RowStep row_step(const PublishedRow& row, const std::string& model) {
  const models::ModelShape shape = row_shape(row);
  RowStep r;
  r.spec = netmodel::parse_compute_spec(row_compute_spec(row, model), "gpu");
  const compressors::ChannelSpec none;  // "none": one device, no messages
  const CodecSpecs codecs{none, none, none};
  r.trace = make_synthetic_trace(shape, "gpipe", 1, codecs, codec_wire_bytes(none),
                                 netmodel::find_device("gpu", r.spec.device));
  r.tokens = static_cast<double>(shape.batch) * static_cast<double>(shape.seq);
  r.micro = shape.batch / shape.microbatch_size;
  r.stage_params = models::stage_parameters(shape, 0);
  return r;
}

StepParts step_parts(const netmodel::StepTrace& trace, netmodel::ComputeModel& model) {
  model.observe(trace);
  StepParts p;
  for (const auto& op : trace.ops) {
    if (op.kind == netmodel::OpKind::kSendActivation ||
        op.kind == netmodel::OpKind::kSendGradient || op.kind == netmodel::OpKind::kAllReduce) {
      continue;
    }
    const double s = model.compute_s(op);
    if (op.kind == netmodel::OpKind::kForward) {
      p.forward_s += s;
    } else if (op.kind == netmodel::OpKind::kOptimizer) {
      p.other_s += s;
    } else {
      p.backward_s += s;
    }
  }
  return p;
}

Prediction predict_step(const RowStep& step, const PublishedRow& row,
                        netmodel::ComputeModel& model) {
  Prediction p;
  if (row.has_layout) {
    p.step_s = layout_step_s(row, step_parts(step.trace, model), step.micro, step.stage_params);
    p.tokens_per_s = step.tokens / p.step_s / (row.layout.tp * row.layout.pp);
  } else {
    p.step_s = single_device_step_s(step.trace, model);
    p.tokens_per_s = step.tokens / p.step_s;
  }
  p.error = row.published_tokens_per_s / p.tokens_per_s - 1;
  return p;
}

std::unique_ptr<netmodel::ComputeModel> row_model(const RowStep& step,
                                                  const netmodel::ShapedConstants& constants) {
  if (step.spec.model == "shaped") return netmodel::make_shaped_model(step.spec, constants);
  return netmodel::make_compute_model(step.spec);
}

}  // namespace

double single_device_step_s(const netmodel::StepTrace& trace, netmodel::ComputeModel& model) {
  model.observe(trace);
  double s = 0;
  for (const auto& op : trace.ops) {
    if (op.kind == netmodel::OpKind::kSendActivation ||
        op.kind == netmodel::OpKind::kSendGradient || op.kind == netmodel::OpKind::kAllReduce) {
      continue;
    }
    s += model.compute_s(op);
  }
  return s;
}

Prediction predict(const PublishedRow& row, const std::string& model,
                   const netmodel::ShapedConstants& constants) {
  const RowStep step = row_step(row, model);
  return predict_step(step, row, *row_model(step, constants));
}

namespace {

double median_of(std::vector<double> v) {  // v not empty
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

ErrorSummary summary_of(std::vector<double> abs_errors) {
  ErrorSummary s;
  s.rows = static_cast<int>(abs_errors.size());
  if (abs_errors.empty()) return s;
  s.median_abs = median_of(abs_errors);
  s.worst_abs = *std::max_element(abs_errors.begin(), abs_errors.end());
  return s;
}

}  // namespace

ErrorSummary summarise(const std::vector<PublishedRow>& rows,
                       const std::vector<Prediction>& predictions, const std::string& split) {
  std::vector<double> errors;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (split.empty() || rows[i].split == split) errors.push_back(std::fabs(predictions[i].error));
  }
  return summary_of(errors);
}

ErrorSummary summarise(const std::vector<PublishedRow>& rows,
                       const std::vector<std::optional<Prediction>>& predictions,
                       const std::string& split) {
  std::vector<double> errors;
  for (size_t i = 0; i < rows.size(); ++i) {
    if ((split.empty() || rows[i].split == split) && predictions[i])
      errors.push_back(std::fabs(predictions[i]->error));
  }
  return summary_of(errors);
}

std::vector<std::optional<Prediction>> per_source(const std::vector<PublishedRow>& rows,
                                                  const std::vector<Prediction>& predictions) {
  std::vector<std::optional<Prediction>> out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    std::vector<double> logs;  // ln(published / predicted) of the source's other rows
    for (size_t j = 0; j < rows.size(); ++j)
      if (j != i && rows[j].source_id == rows[i].source_id)
        logs.push_back(std::log1p(predictions[j].error));
    if (logs.empty()) continue;
    const double scale = std::exp(median_of(logs));  // published / predicted, typically
    Prediction p = predictions[i];
    p.tokens_per_s *= scale;
    p.step_s /= scale;
    p.error = rows[i].published_tokens_per_s / p.tokens_per_s - 1;
    out[i] = p;
  }
  return out;
}

netmodel::ShapedConstants fit_constants(const std::vector<PublishedRow>& rows) {
  std::vector<std::pair<const PublishedRow*, RowStep>> calibration;
  for (const auto& r : rows) {
    if (r.split == "calibration") calibration.emplace_back(&r, row_step(r, "shaped"));
  }
  if (calibration.empty()) throw DataError("the published set has no calibration rows to fit");
  netmodel::ShapedConstants best;
  double best_loss = INFINITY;
  for (double ceiling : {0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95})
    for (double half : {16.0, 32.0, 64.0, 96.0, 128.0, 192.0, 256.0})
      for (double attention : {0.3, 0.4, 0.5, 0.6, 0.7, 0.8})
        for (double backward : {0.6, 0.7, 0.8, 0.9, 1.0})
          for (double memory : {0.6, 0.7, 0.8, 0.9}) {
            const netmodel::ShapedConstants c{ceiling, half, attention, backward, memory};
            double loss = 0;
            for (const auto& [row, step] : calibration) {
              loss += std::fabs(std::log(1 + predict_step(step, *row, *row_model(step, c)).error));
            }
            if (loss < best_loss) {
              best_loss = loss;
              best = c;
            }
          }
  return best;
}

}  // namespace slowpipe::whatif
