// The shape-aware compute model (netmodel/shaped_model.h): its GEMM,
// attention, pass and launch terms against hand-computed seconds, the
// backward rules, fp8's casts, the spec's options and errors, and every
// device entry against the committed datasheet table with its source.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <sstream>

#include "common/errors.h"
#include "netmodel/compute_model.h"
#include "netmodel/shaped_model.h"

namespace nm = slowpipe::netmodel;

namespace {

// Fixed constants, so that a refit of the defaults leaves these sums alone.
const nm::ShapedConstants kC{0.75, 128, 0.40, 0.70, 0.60};

nm::StepTrace one_chunk(const nm::OpWork& w) {
  nm::StepTrace t;
  t.chunk_work = {w};
  return t;
}

double seconds(const std::string& spec, const nm::StepTrace& trace, nm::OpKind kind) {
  auto model = nm::make_shaped_model(nm::parse_compute_spec(spec), kC);
  model->observe(trace);
  nm::TraceOp op;
  op.kind = kind;
  return model->compute_s(op);
}

double g(double x) {
  return x / (x + 128);
}

}  // namespace

TEST_CASE("Shaped: a GEMM at the dtype's peak x ceiling x g(m) g(n) g(k)") {
  nm::OpWork w;
  w.gemms = {{4096, 4096, 4096, 1}};
  // 2 x 4096^3 FLOPs at 312 TFLOP/s x 0.75 x (4096 / 4224)^3 = 0.6441 ms.
  const double hand = 2.0 * 4096 * 4096 * 4096 / (312e12 * 0.75 * std::pow(4096.0 / 4224, 3));
  CHECK(hand == Approx(6.4411e-4).epsilon(1e-4));
  CHECK(seconds("shaped:A100:dtype=bf16:mode=fused", one_chunk(w), nm::OpKind::kForward) ==
        Approx(hand).epsilon(1e-12));
  // fp32 runs on the 19.5 TFLOP/s non-tensor peak: 16x the time.
  CHECK(seconds("shaped:A100:dtype=fp32:mode=fused", one_chunk(w), nm::OpKind::kForward) ==
        Approx(hand * 312 / 19.5).epsilon(1e-12));
  // A skinny GEMM runs far below peak: m = 16 costs g(16) = 1/9 of the rate.
  nm::OpWork skinny;
  skinny.gemms = {{16, 4096, 4096, 1}};
  const double t16 =
      seconds("shaped:A100:dtype=bf16:mode=fused", one_chunk(skinny), nm::OpKind::kForward);
  CHECK(t16 == Approx(2.0 * 16 * 4096 * 4096 / (312e12 * 0.75 * g(16) * g(4096) * g(4096))));
  CHECK(t16 / (2.0 * 16 * 4096 * 4096) > 8 * hand / (2.0 * 4096 * 4096 * 4096));
}

TEST_CASE("Shaped: measured GEMM ceilings scale the fitted one by device (gemm.csv)") {
  nm::OpWork w;
  w.gemms = {{4096, 4096, 4096, 1}};
  const double a100 =
      seconds("shaped:A100:dtype=bf16:mode=fused", one_chunk(w), nm::OpKind::kForward);
  // H100: 794.5 of 989.4 TFLOP/s measured against the A100's 271.2 of 312,
  // so its GEMMs run at 0.75 x 0.8030 / 0.8692 of 989 TFLOP/s.
  const double h100 = 2.0 * 4096 * 4096 * 4096 /
                      (989e12 * 0.75 * (794.5 / 989.4) / (271.2 / 312) * std::pow(g(4096), 3));
  CHECK(seconds("shaped:H100:dtype=bf16:mode=fused", one_chunk(w), nm::OpKind::kForward) ==
        Approx(h100).epsilon(1e-12));
  CHECK(seconds("shaped:H100:dtype=fp16:mode=fused", one_chunk(w), nm::OpKind::kForward) ==
        Approx(h100).epsilon(1e-12));
  CHECK(seconds("shaped:H200:dtype=bf16:mode=fused", one_chunk(w), nm::OpKind::kForward) ==
        Approx(h100).epsilon(1e-12));  // the H100's die and tensor peak
  // The calibration's device keeps the fitted ceiling; unmeasured ones too.
  CHECK(a100 == Approx(2.0 * 4096 * 4096 * 4096 / (312e12 * 0.75 * std::pow(g(4096), 3))));
  CHECK(seconds("shaped:A100-80GB:dtype=bf16:mode=fused", one_chunk(w), nm::OpKind::kForward) ==
        Approx(a100).epsilon(1e-12));
  CHECK(seconds("shaped:RTX4090:dtype=bf16:mode=fused", one_chunk(w), nm::OpKind::kForward) ==
        Approx(a100 * 312 / 165.2).epsilon(1e-12));
  CHECK(seconds("shaped:H100:dtype=tf32:mode=fused", one_chunk(w), nm::OpKind::kForward) ==
        Approx(2.0 * 4096 * 4096 * 4096 / (494.5e12 * 0.75 * std::pow(g(4096), 3))));
}

TEST_CASE("Shaped: the backward's input and weight GEMMs, a recomputed forward, the floor") {
  nm::OpWork w;
  w.gemms = {{4096, 1024, 256, 3}};  // [4096, 256] x [256, 1024], three layers
  // The input gradient (4096, 256, 1024) and the weight gradient (256, 1024,
  // 4096) are the forward's dimensions permuted: g(m) g(n) g(k) is symmetric,
  // so each costs what the forward costs.
  const double fwd = 3 * 2.0 * 4096 * 1024 * 256 / (312e12 * 0.75 * g(4096) * g(1024) * g(256));
  CHECK(fwd == Approx(4.791e-5).epsilon(1e-3));  // 6.442e9 FLOPs at 234 T x 0.5746
  const std::string spec = "shaped:A100:dtype=bf16:mode=fused";
  const auto trace = one_chunk(w);
  CHECK(seconds(spec, trace, nm::OpKind::kForward) == Approx(fwd));
  CHECK(seconds(spec, trace, nm::OpKind::kBackwardInput) == Approx(fwd));
  CHECK(seconds(spec, trace, nm::OpKind::kBackwardWeight) == Approx(fwd));
  CHECK(seconds(spec, trace, nm::OpKind::kBackward) == Approx(2 * fwd));
  w.recompute = true;
  CHECK(seconds(spec, one_chunk(w), nm::OpKind::kBackward) == Approx(3 * fwd));
  CHECK(seconds(spec, one_chunk(w), nm::OpKind::kBackwardInput) == Approx(2 * fwd));
  CHECK(seconds(spec, one_chunk(w), nm::OpKind::kBackwardWeight) == Approx(fwd));
  // 3000 small GEMMs: 3000 launches of 3 us outlast their work.
  nm::OpWork small;
  small.gemms = {{64, 64, 64, 3000}};
  CHECK(seconds(spec, one_chunk(small), nm::OpKind::kForward) == Approx(3000 * 3e-6));
  CHECK(seconds(spec, one_chunk(small), nm::OpKind::kBackward) == Approx(6000 * 3e-6));
}

TEST_CASE("Shaped: fused attention skips the causal half; materialised pays the softmax") {
  nm::OpWork w;
  w.attention = {{2, 16, 2048, 2048, 128, 1, true, 4}};
  const auto trace = one_chunk(w);
  // Fused: 2 x 2 x 2048^2 x 128 per head, halved (causal), x 2 x 16 x 4, at
  // 312 T x 0.40 x g(2048); the backward 2.5x the FLOPs at 0.70 of the rate.
  const double flops = 2.0 * 2 * 2048 * 2048 * 128 * 0.5 * 2 * 16 * 4;
  const double rate = 312e12 * 0.40 * g(2048);
  CHECK(seconds("shaped:A100:dtype=bf16:attn=flash", trace, nm::OpKind::kForward) ==
        Approx(flops / rate));
  CHECK(seconds("shaped:A100:dtype=bf16:attn=flash", trace, nm::OpKind::kBackward) ==
        Approx(2.5 * flops / (rate * 0.70)));
  // Materialised (eager): per head a [2048, 128] x [128, 2048] and a [2048,
  // 2048] x [2048, 128] GEMM, the whole square; softmax 2 x 2048^2 elements
  // and, unfused, scaling and masking 2 x 2 x 2048^2, all at 2 bytes, at
  // 2039 GB/s x 0.60; under autocast the scores cast to fp32 and the
  // probabilities back (2 + 4 bytes each) and the softmax in fp32.
  const double heads = 2 * 16 * 4;
  const double gemms = heads * 2.0 * 2048 * 2048 * 128 *
                       (1 / (g(2048) * g(2048) * g(128)) + 1 / (g(2048) * g(128) * g(2048))) /
                       (312e12 * 0.75);
  const double passes = heads * 2048.0 * 2048 * (2 + 4) * 2 / (2039e9 * 0.60);
  CHECK(seconds("shaped:A100-80GB:dtype=bf16:attn=materialised", trace, nm::OpKind::kForward) ==
        Approx(gemms + passes));
  const double autocast = heads * 2048.0 * 2048 * (2 * 6 + 2 * 4 + 4 * 2) / (2039e9 * 0.60);
  CHECK(seconds("shaped:A100-80GB:dtype=bf16:attn=materialised:autocast=on", trace,
                nm::OpKind::kForward) == Approx(gemms + autocast));
  // fp32 has no casts: the softmax and the passes at 4 bytes.
  CHECK(seconds("shaped:A100-80GB:dtype=fp32:attn=materialised", trace, nm::OpKind::kForward) >
        gemms * 16);
  // Compiled keeps the softmax (its casts folded in), drops scaling and masking.
  const double softmax = heads * 2048.0 * 2048 * 2 * 2 / (2039e9 * 0.60);
  CHECK(seconds("shaped:A100-80GB:dtype=bf16:attn=materialised:mode=compiled", trace,
                nm::OpKind::kForward) == Approx(gemms + softmax));
}

TEST_CASE("Shaped: measured attention ceilings scale the fitted one by device (attention.csv)") {
  nm::OpWork w;
  w.attention = {{2, 16, 2048, 2048, 128, 1, true, 4}};
  const auto trace = one_chunk(w);
  const double flops = 2.0 * 2 * 2048 * 2048 * 128 * 0.5 * 2 * 16 * 4;
  // FlashAttention-2 reaches 335 of 989.4 TFLOP/s on an H100 and 203 of 312
  // on an A100 (forward + backward, the same benchmark): the H100's attention
  // runs at 0.40 x (335 / 989.4) / (203 / 312) = 0.208 of its bf16 peak.
  const double ratio = (335.0 / 989.4) / (203.0 / 312);
  CHECK(ratio == Approx(0.5204).epsilon(1e-3));
  const double h100 = 989e12 * 0.40 * ratio * g(2048);
  CHECK(seconds("shaped:H100:dtype=bf16:attn=flash", trace, nm::OpKind::kForward) ==
        Approx(flops / h100).epsilon(1e-12));
  CHECK(seconds("shaped:H100:dtype=bf16:attn=flash", trace, nm::OpKind::kBackward) ==
        Approx(2.5 * flops / (h100 * 0.70)).epsilon(1e-12));
  for (const char* spec : {"shaped:H100:dtype=fp16:attn=flash", "shaped:H200:dtype=bf16:attn=flash",
                           "shaped:H100:dtype=fp8:attn=flash"}) {  // fp8: attention in bf16
    INFO(spec);
    CHECK(seconds(spec, trace, nm::OpKind::kForward) == Approx(flops / h100).epsilon(1e-12));
  }
  // The calibration's device, the devices and dtypes the source did not
  // measure, and materialised attention (GEMMs) keep the fitted ceiling.
  const double a100 = flops / (312e12 * 0.40 * g(2048));
  CHECK(seconds("shaped:A100-80GB:dtype=bf16:attn=flash", trace, nm::OpKind::kForward) ==
        Approx(a100).epsilon(1e-12));
  CHECK(seconds("shaped:RTX4090:dtype=bf16:attn=flash", trace, nm::OpKind::kForward) ==
        Approx(a100 * 312 / 165.2).epsilon(1e-12));
  CHECK(seconds("shaped:H100:dtype=tf32:attn=flash", trace, nm::OpKind::kForward) ==
        Approx(flops / (494.5e12 * 0.40 * g(2048))).epsilon(1e-12));
  const double h100_mat =
      seconds("shaped:H100:dtype=bf16:attn=materialised", trace, nm::OpKind::kForward);
  const double h200_mat =
      seconds("shaped:H200:dtype=bf16:attn=materialised", trace, nm::OpKind::kForward);
  CHECK(h200_mat < h100_mat);  // only the softmax's bandwidth differs
}

namespace {

// experiments/clock/attention.csv: id,source_id,source,gpu,dtype,kernel,pass,causal,
// head_dim,seq,achieved_tflops,datasheet_tflops,fraction,notes (quoted fields may hold commas).
std::map<std::string, std::vector<std::string>> attention_rows() {
  std::ifstream in(std::string(SLOWPIPE_SOURCE_DIR) + "/experiments/clock/attention.csv");
  std::map<std::string, std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<std::string> f(1);
    bool quoted = false;
    for (const char c : line) {
      if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        f.emplace_back();
      } else {
        f.back() += c;
      }
    }
    rows[f[0]] = f;
  }
  return rows;
}

}  // namespace

TEST_CASE("Shaped: the attention ratio is the committed table's, with its source") {
  const auto rows = attention_rows();
  REQUIRE(rows.size() == 2);
  const auto& a100 = rows.at("a01");
  const auto& h100 = rows.at("a02");
  for (const auto* r : {&a100, &h100}) {
    REQUIRE(r->size() == 14);
    CHECK((*r)[1] == "fa2");
    CHECK((*r)[2].find("arXiv 2307.08691") != std::string::npos);
    CHECK((*r)[6] == "forward+backward");
    CHECK(std::stod((*r)[12]) == Approx(std::stod((*r)[10]) / std::stod((*r)[11])).epsilon(1e-3));
  }
  CHECK(a100[3].rfind("A100", 0) == 0);
  CHECK(h100[3].rfind("H100", 0) == 0);
  const double ratio = std::stod(h100[12]) / std::stod(a100[12]);
  for (const char* device : {"H100", "H200"}) {
    auto model = nm::make_shaped_model(
        nm::parse_compute_spec(std::string("shaped:") + device + ":dtype=bf16"), kC);
    const std::string json = model->describe_json();
    const std::string key = "\"attention_measured_ratio\": ";
    const size_t at = json.find(key);
    REQUIRE(at != std::string::npos);
    CHECK(std::stod(json.substr(at + key.size())) == Approx(ratio).epsilon(1e-3));
  }
}

TEST_CASE("Shaped: passes by mode, the launch floor, fp8 casts, undescribed FLOPs") {
  nm::OpWork w;
  w.passes = {{1e9, false, 2}, {3e9, true, 2}};
  const auto trace = one_chunk(w);
  const double bw = 2039e9 * 0.60;
  CHECK(seconds("shaped:A100-80GB:dtype=bf16", trace, nm::OpKind::kForward) ==
        Approx(2 * (1e9 + 3e9) * 2 / bw));
  CHECK(seconds("shaped:A100-80GB:dtype=bf16:mode=compiled", trace, nm::OpKind::kForward) ==
        Approx(2 * 1e9 * 2 / bw));
  CHECK(seconds("shaped:A100-80GB:dtype=fp32:mode=compiled", trace, nm::OpKind::kBackward) ==
        Approx(2 * 2e9 * 4 / bw));
  nm::OpWork tiny;
  tiny.passes = {{10, false, 7}};
  CHECK(seconds("shaped:A100:dtype=bf16", one_chunk(tiny), nm::OpKind::kForward) ==
        Approx(7 * 10e-6));
  CHECK(seconds("shaped:A100:dtype=bf16:mode=fused", one_chunk(tiny), nm::OpKind::kForward) ==
        Approx(7 * 3e-6));
  // fp8: GEMMs at 1979 TFLOP/s, plus casting the input and the weight (3 bytes
  // per element) in eager; compiled casts the weight only.
  nm::OpWork f8;
  f8.gemms = {{8192, 8192, 8192, 10}};
  // H100 fp8 reaches 1402.6 of 1978.9 TFLOP/s in gemm.csv, the A100 in bf16
  // 271.2 of 312: the ceiling is 0.75 x (1402.6 / 1978.9) / (271.2 / 312).
  const double ceiling = 0.75 * (1402.6 / 1978.9) / (271.2 / 312);
  const double gemm = 10 * 2.0 * 8192 * 8192 * 8192 / (1979e12 * ceiling * std::pow(g(8192), 3));
  const double cast = 10 * 3.0 * 8192 * 8192 / (3350e9 * 0.60);
  CHECK(seconds("shaped:H100:dtype=fp8", one_chunk(f8), nm::OpKind::kForward) ==
        Approx(gemm + 2 * cast));
  CHECK(seconds("shaped:H100:dtype=fp8:mode=compiled", one_chunk(f8), nm::OpKind::kForward) ==
        Approx(gemm + cast));
  // No work table: the op's FLOPs at the device's GEMM ceiling.
  auto model = nm::make_shaped_model(nm::parse_compute_spec("shaped:H100:dtype=bf16"), kC);
  nm::TraceOp op;
  op.flops = 1e15;
  CHECK(model->compute_s(op) == Approx(1e15 / (989e12 * 0.75 * (794.5 / 989.4) / (271.2 / 312))));
}

TEST_CASE("Shaped: autocast=on, fp32 passes and casts in eager and compiled 16-bit modes") {
  nm::OpWork w;
  // A [4096, 1024] x [1024, 512] GEMM whose input arrives in fp32 and whose
  // output goes to an fp32 op; a LayerNorm-like pass on fp32 elements and a
  // GELU-like one on 16-bit elements.
  w.gemms = {{4096, 512, 1024, 1, true, true}};
  w.passes = {{1e8, false, 1, true}, {3e8, true, 1, false}};
  const auto trace = one_chunk(w);
  const double bw = 2039e9 * 0.60;
  const double gemm = 2.0 * 4096 * 512 * 1024 / (312e12 * 0.75 * g(4096) * g(512) * g(1024));
  const double weight = 1024.0 * 512 * 6 / bw, input = 4096.0 * 1024 * 6 / bw,
               output = 4096.0 * 512 * 6 / bw;
  // Eager: the weight, input and output casts (2 + 4 bytes an element), the
  // fp32 pass at 4 bytes, the other at 2.
  CHECK(seconds("shaped:A100-80GB:dtype=bf16:autocast=on", trace, nm::OpKind::kForward) ==
        Approx(gemm + weight + input + output + (1e8 * 4 + 3e8 * 2) / bw));
  // The backward: the input gradient's GEMM with the input's and output's
  // casts back, the weight gradient's with the weight's, passes twice.
  CHECK(seconds("shaped:A100-80GB:dtype=bf16:autocast=on", trace, nm::OpKind::kBackward) ==
        Approx(2 * gemm + weight + input + output + 2 * (1e8 * 4 + 3e8 * 2) / bw));
  // Compiled: activation casts folded into the passes, the weight's kept;
  // the fusible pass dropped, the fp32 one kept at 4 bytes.
  CHECK(seconds("shaped:A100-80GB:dtype=bf16:mode=compiled:autocast=on", trace,
                nm::OpKind::kForward) == Approx(gemm + weight + 1e8 * 4 / bw));
  // A 16-bit model (the default, autocast=off) and fp32 have no casts.
  CHECK(seconds("shaped:A100-80GB:dtype=bf16:mode=fused", trace, nm::OpKind::kForward) ==
        Approx(gemm + 1e8 * 2 / bw));
  CHECK(seconds("shaped:A100-80GB:dtype=bf16", trace, nm::OpKind::kForward) ==
        Approx(gemm + (1e8 + 3e8) * 2 / bw));
  CHECK(seconds("shaped:A100-80GB:dtype=fp32:autocast=on", trace, nm::OpKind::kForward) ==
        Approx(gemm * 312 / 19.5 + (1e8 + 3e8) * 4 / bw));
  CHECK(seconds("shaped:A100-80GB:dtype=fp32:mode=fused", trace, nm::OpKind::kForward) ==
        Approx(gemm * 312 / 19.5 + 1e8 * 4 / bw));
  auto on = nm::make_shaped_model(nm::parse_compute_spec("shaped:A100:dtype=fp16:autocast=on"), kC);
  CHECK(on->describe_json().find("\"autocast\": true") != std::string::npos);
  auto off = nm::make_shaped_model(nm::parse_compute_spec("shaped:A100:dtype=bf16"), kC);
  CHECK(off->describe_json().find("\"autocast\": false") != std::string::npos);
  CHECK_THROWS_WITH(nm::parse_compute_spec("shaped:A100:autocast=yes"),
                    Catch::Matchers::Contains("autocast=on|off"));
}

TEST_CASE("Shaped: spec options and their errors") {
  const auto s = nm::parse_compute_spec("shaped:H100:mode=compiled:dtype=fp8:attn=materialised");
  CHECK(s.model == "shaped");
  CHECK(s.device == "H100");
  CHECK(s.mode == "compiled");
  CHECK(s.dtype == "fp8");
  CHECK(s.attention == "materialised");
  CHECK(nm::compute_device_label(s) == "H100");
  CHECK(nm::compute_device_label(std::string("shaped:L40S:mode=eager")) == "L40S");
  const auto d = nm::parse_compute_spec("shaped:V100");
  CHECK(d.mode == "eager");
  CHECK(d.dtype.empty());  // the run's dtype (fp32 outside a run)
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(nm::parse_compute_spec("shaped"), Contains("needs a device"));
  CHECK_THROWS_WITH(nm::parse_compute_spec("shaped:B200"), Contains("unknown device"));
  CHECK_THROWS_WITH(nm::parse_compute_spec("shaped:A100:mode=jit"), Contains("unknown option"));
  CHECK_THROWS_WITH(nm::parse_compute_spec("shaped:A100:dtype=int4"), Contains("unknown option"));
  CHECK_THROWS_WITH(nm::parse_compute_spec("shaped:V100:dtype=bf16"), Contains("has no bf16"));
  CHECK_THROWS_WITH(nm::parse_compute_spec("shaped:A100:dtype=fp8"), Contains("has no fp8"));
}

TEST_CASE("Shaped: speed=F divides every compute op's seconds, not the codec passes") {
  nm::OpWork w;
  w.gemms = {{4096, 512, 1024, 3}};
  w.passes = {{1e8, false, 2}};
  const auto trace = one_chunk(w);
  for (nm::OpKind kind : {nm::OpKind::kForward, nm::OpKind::kBackward}) {
    const double base = seconds("shaped:A100:dtype=bf16", trace, kind);
    CHECK(seconds("shaped:A100:dtype=bf16:speed=1.25", trace, kind) == Approx(base / 1.25));
    CHECK(seconds("shaped:A100:speed=0.5:dtype=bf16", trace, kind) == Approx(base * 2));
  }
  nm::OpWork tiny;  // under the launch floor: the floor is the stack's too
  tiny.passes = {{10, false, 7}};
  CHECK(seconds("shaped:A100:dtype=bf16:speed=2", one_chunk(tiny), nm::OpKind::kForward) ==
        Approx(7 * 10e-6 / 2));
  auto plain = nm::make_shaped_model(nm::parse_compute_spec("shaped:A100"), kC);
  auto fast = nm::make_shaped_model(nm::parse_compute_spec("shaped:A100:speed=4"), kC);
  nm::TraceOp pass;
  pass.kind = nm::OpKind::kForward;
  pass.memory_bytes = 1e9;
  pass.kernels = 4;
  CHECK(fast->encode_s(pass) == plain->encode_s(pass));
  CHECK(fast->decode_s(pass) == plain->decode_s(pass));
  CHECK(fast->describe_json().find("\"speed\": 4") != std::string::npos);
  CHECK(plain->describe_json().find("\"speed\": 1") != std::string::npos);
  using Catch::Matchers::Contains;
  for (const char* bad : {"shaped:A100:speed=0", "shaped:A100:speed=-1", "shaped:A100:speed=x",
                          "shaped:A100:speed=", "shaped:A100:speed=1.5x", "shaped:A100:speed=inf"})
    CHECK_THROWS_WITH(nm::parse_compute_spec(bad), Contains("is not a positive number"));
}

namespace {

// experiments/clock/devices.csv: device,variant,fp32,tf32,bf16,fp16,fp8,bandwidth,...
std::map<std::string, std::vector<std::string>> datasheet_rows() {
  std::ifstream in(std::string(SLOWPIPE_SOURCE_DIR) + "/experiments/clock/devices.csv");
  REQUIRE(in);
  std::map<std::string, std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; f.size() < 8 && std::getline(ss, cell, ',');) f.push_back(cell);
    rows[f[0] + "/" + f[1]] = f;
  }
  return rows;
}

double tflops(const std::string& s) {
  return s.empty() ? 0 : std::stod(s);
}

}  // namespace

TEST_CASE("Shaped: every device entry cites its source and matches the datasheet table") {
  const auto rows = datasheet_rows();
  // slowpipe's preset -> its row of devices.csv.
  const std::map<std::string, std::string> row_of = {{"V100", "V100/SXM2"},
                                                     {"A100", "A100/SXM4 40GB"},
                                                     {"A100-80GB", "A100/SXM4 80GB"},
                                                     {"H100", "H100/SXM5 80GB"},
                                                     {"H200", "H200/SXM 141GB"},
                                                     {"RTX3090", "RTX3090/GeForce (GA102)"},
                                                     {"RTX4090", "RTX4090/GeForce (AD102)"},
                                                     {"L40S", "L40S/PCIe 48GB"}};
  REQUIRE(nm::device_presets().size() == row_of.size());
  for (const auto& d : nm::device_presets().entries()) {
    INFO(d.name);
    CHECK(d.source.find("NVIDIA") != std::string::npos);
    REQUIRE(row_of.count(d.name));
    const auto& r = rows.at(row_of.at(d.name));
    // The table's dense peaks, to 1% (the presets round as the datasheets do).
    CHECK(d.fp32_flops / 1e12 == Approx(tflops(r[2])).epsilon(0.01));
    CHECK(d.tf32_flops / 1e12 == Approx(tflops(r[3])).epsilon(0.01));
    CHECK(d.bf16_flops / 1e12 == Approx(tflops(r[4])).epsilon(0.01));
    CHECK(d.fp16_flops / 1e12 == Approx(tflops(r[5])).epsilon(0.01));
    CHECK(d.fp8_flops / 1e12 == Approx(tflops(r[6])).epsilon(0.01));
    CHECK(d.memory_bandwidth_Bps / 1e9 == Approx(tflops(r[7])).epsilon(0.01));
  }
}
