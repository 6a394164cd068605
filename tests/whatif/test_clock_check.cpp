// The compute clock against published throughput (whatif/clock_check.h) and
// a model shape's kernel-by-kernel work (models/facts/layer_work.h): the work
// adds up to the shape's FLOPs, the one-device sum equals the replay, the
// reader's errors, and the fit recovers constants it generated.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "common/errors.h"
#include "models/facts/layer_work.h"
#include "netmodel/replay.h"
#include "whatif/clock_check.h"
#include "whatif/synthetic_trace.h"

namespace wi = slowpipe::whatif;
namespace nm = slowpipe::netmodel;
namespace md = slowpipe::models;

namespace {

md::ModelShape small_gpt(int stages) {
  md::ModelShape s;
  s.name = "small";
  s.layers = 6;
  s.hidden = 512;
  s.heads = 8;
  s.seq = 1024;
  s.vocab = 32000;
  s.stages = stages;
  s.microbatch_size = 2;
  s.batch = 8;
  return s;
}

std::string write_csv(const std::string& name, const std::string& text) {
  std::string path = std::string(SLOWPIPE_BINARY_DIR) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

const char* kHeader =
    "id,gpu,gpus,dtype,execution,attention,act_ckpt,layers,d_model,heads,ffn,vocab,seq,micro_batch,"
    "global_batch_tokens,tokens_per_s_per_gpu,split\n";

}  // namespace

TEST_CASE("Layer work: the GEMMs and attention add up to the shape's forward FLOPs") {
  for (int stages : {1, 3}) {
    md::ModelShape s = small_gpt(stages);
    s.score_terms = stages == 3 ? 3 : 1;
    for (int st = 0; st < stages; ++st) {
      const nm::OpWork w = md::forward_work(s, st);
      double flops = nm::gemm_flops(w);
      for (const auto& a : w.attention) flops += nm::attention_flops(a, /*fused=*/false);
      CHECK(flops == Approx(md::forward_flops(s, st)).epsilon(1e-12));
      // Fused attention skips the causal half.
      for (const auto& a : w.attention) {
        CHECK(nm::attention_flops(a, true) == Approx(nm::attention_flops(a, false) / 2));
      }
    }
  }
}

TEST_CASE("Layer work: tensor parallelism splits the matrices, heads and vocabulary") {
  md::ModelShape s = small_gpt(2);
  const nm::OpWork whole = md::forward_work(s, 1);
  s.tensor_parallel = 4;
  for (int st = 0; st < 2; ++st) {
    const nm::OpWork w = md::forward_work(s, st);
    double flops = nm::gemm_flops(w);
    for (const auto& a : w.attention) flops += nm::attention_flops(a, /*fused=*/false);
    CHECK(flops == Approx(md::forward_flops(s, st)).epsilon(1e-12));
  }
  const nm::OpWork w = md::forward_work(s, 1);
  // d 512, 8 heads, MLP 2048, vocab 32000 over 4 GPUs: QKV (N, 384, 512), the
  // projection (N, 512, 128), MLP (N, 512, 512) and (N, 512, 512), 2 heads,
  // the head (N, 8000, 512); LayerNorms and residual adds whole.
  REQUIRE(w.gemms.size() == 5);
  CHECK((w.gemms[0].n == 384 && w.gemms[0].k == 512));
  CHECK((w.gemms[1].n == 512 && w.gemms[1].k == 128));
  CHECK((w.gemms[2].n == 512 && w.gemms[3].k == 512));
  CHECK(w.gemms[4].n == 8000);
  CHECK(w.attention[0].heads == 2);
  CHECK(w.passes[0].elements == whole.passes[0].elements);      // LayerNorm
  CHECK(w.passes[2].elements == whole.passes[2].elements / 4);  // transpose copy
  CHECK(w.passes[3].elements == whole.passes[3].elements);      // residual
  CHECK(md::forward_flops(s, 1) == Approx(md::forward_flops(small_gpt(2), 1) / 4));
  CHECK(md::stage_parameters(s, 0) == Approx(md::stage_parameters(small_gpt(2), 0) / 4));
}

TEST_CASE("Layer work: grouped-query attention and a gated MLP, by hand") {
  // Llama-3-8B's layer: d 4096, 32 heads of 128, 8 key/value heads, MLP 14336.
  md::ModelShape s = small_gpt(1);
  s.layers = 1;
  s.hidden = 4096;
  s.heads = 32;
  s.mlp_width = 14336;
  s.lm_head = false;
  s.seq = 1024;
  s.microbatch_size = 1;
  const double plain = md::stage_parameters(s, 0) - 4096.0 * (32000 + 1024);
  CHECK(plain == 4.0 * 4096 * 4096 + 2.0 * 4096 * 14336);
  s.kv_heads = 8;
  s.gated_mlp = true;
  CHECK(md::kv_width(s) == 1024);
  // QKV 4096 x (4096 + 2 x 1024), output 4096^2, gate, up, down 3 x 4096 x 14336:
  // 218.1 M weights, Meta's published 8.03 B over 32 layers less embeddings.
  const double weights = 4096.0 * 6144 + 4096.0 * 4096 + 3.0 * 4096 * 14336;
  CHECK(md::stage_parameters(s, 0) - 4096.0 * (32000 + 1024) == weights);
  CHECK(weights == Approx(218.1e6).epsilon(1e-3));
  const nm::OpWork w = md::forward_work(s, 0);
  REQUIRE(w.gemms.size() == 4);
  CHECK(w.gemms[0].n == 6144);                              // QKV: d + 2 kv
  CHECK((w.gemms[2].n == 14336 && w.gemms[2].count == 2));  // gate and up
  CHECK((w.gemms[3].n == 4096 && w.gemms[3].k == 14336));   // down
  double flops = nm::gemm_flops(w);
  for (const auto& a : w.attention) flops += nm::attention_flops(a, /*fused=*/false);
  CHECK(flops == Approx(md::forward_flops(s, 0)).epsilon(1e-12));
  CHECK(md::forward_flops(s, 0) == Approx(1024 * (2 * weights + 2.0 * 1024 * 4096 * 2)));
  CHECK(md::forward_kernels(s, 0) == 2 * 7 + 2 * 2);  // one more GEMM than GELU's
}

TEST_CASE("Clock: the one-device sum equals the replay of the same step") {
  const md::ModelShape s = small_gpt(1);
  const nm::ComputeSpec spec = nm::parse_compute_spec("shaped:A100:mode=compiled:dtype=bf16");
  const wi::CodecSpecs none;
  const nm::StepTrace trace = wi::make_synthetic_trace(
      s, "gpipe", 1, none, wi::codec_wire_bytes(none.forward), nm::find_device("d", "A100"));
  REQUIRE(trace.chunk_work.size() == 1);
  nm::NetConfig net;
  net.compute = spec;
  const double replayed = nm::replay(trace, net).step_s;
  auto model = nm::make_compute_model(spec);
  CHECK(wi::single_device_step_s(trace, *model) == Approx(replayed).epsilon(1e-12));
  // The work is what times it: a bigger micro-batch count takes longer, and
  // `analytic` on the same trace gives another time.
  auto analytic = nm::make_compute_model(nm::parse_compute_spec("analytic:A100"));
  CHECK(wi::single_device_step_s(trace, *analytic) != Approx(replayed));
}

TEST_CASE("Clock: rows, devices and specs; bad files are data errors") {
  const std::string ok = std::string(kHeader) +
                         "a,A100-80GB,8,bf16,eager,flash,none,12,768,12,3072,50304,1024,4,"
                         "262144,100000,calibration\n"
                         "b,H100-SXM,8,fp8,fused,flash,full,12,768,12,3072,50304,1024,4,262144,"
                         "90000,held-out\n"
                         "c,H100-SXM,8,bf16,fused,flash,none,12,768,12,3072,50304,1024,,262144,"
                         "90000,held-out\n";
  std::vector<std::string> skipped = {"stale"};
  const auto rows = wi::read_published(write_csv("clock_ok.csv", ok), &skipped);
  REQUIRE(rows.size() == 2);
  CHECK(skipped == std::vector<std::string>{"c (micro_batch)"});
  CHECK(wi::row_compute_spec(rows[0], "shaped") ==
        "shaped:A100-80GB:mode=eager:dtype=bf16:attn=flash");
  CHECK(wi::row_compute_spec(rows[1], "analytic") == "analytic:H100");
  CHECK_THROWS_AS(wi::device_of("B200"), slowpipe::UsageError);
  // A row the clock cannot time (an unknown GPU, no dtype) is skipped, named.
  const auto odd = wi::read_published(
      write_csv("clock_odd.csv", std::string(kHeader) +
                                     "d,Quadro RTX 8000,8,bf16,eager,flash,none,12,768,12,3072,"
                                     "50304,1024,4,262144,9000,held-out\n"
                                     "e,A100,8,,eager,flash,none,12,768,12,3072,50304,1024,4,"
                                     "262144,9000,held-out\n"
                                     "f,A100,8,bf16,eager,flash,none,12,768,12,3072,50304,1024,4,"
                                     "262144,9000,held-out\n"),
      &skipped);
  REQUIRE(odd.size() == 1);
  REQUIRE(skipped.size() == 2);
  CHECK_THAT(skipped[0], Catch::Matchers::StartsWith("d (") &&
                             Catch::Matchers::Contains("has no device preset"));
  CHECK_THAT(skipped[1], Catch::Matchers::StartsWith("e ("));
  // Labels with an SXM form factor and a memory size; the export parts.
  CHECK(wi::device_of("A100-SXM4-80GB") == "A100-80GB");
  CHECK(wi::device_of("A100-SXM4-40GB") == "A100");
  CHECK(wi::device_of("A800-SXM4-80GB") == "A100-80GB");
  CHECK(wi::device_of("H100-SXM-80GB") == "H100");
  CHECK(wi::device_of("h800-80GB") == "H100");
  CHECK(wi::device_of("V100-SXM2-16GB") == "V100");
  CHECK(wi::device_of("H200") == "H200");
  for (const char* bad : {"H100-PCIe", "A100-80", "A100-", "A100-SXMX", "RTX4090-GB", ""}) {
    INFO(bad);
    CHECK_THROWS_AS(wi::device_of(bad), slowpipe::UsageError);
  }
  // 262144 tokens / 8 GPUs = 32 sequences = 8 micro-batches of 4.
  const auto p = wi::predict(rows[0], "shaped", nm::ShapedConstants{});
  CHECK(p.tokens_per_s == Approx(32 * 1024 / p.step_s));
  CHECK(p.error == Approx(100000 / p.tokens_per_s - 1));
  // Activation checkpointing recomputes the forward: slower than without.
  wi::PublishedRow no_ckpt = rows[1];
  no_ckpt.act_ckpt = "none";
  CHECK(wi::predict(rows[1], "shaped", {}).step_s > wi::predict(no_ckpt, "shaped", {}).step_s);
  // The optional columns mlp and kv_heads: a gated MLP adds a GEMM, grouped
  // keys and values shrink QKV; an unknown MLP or a negative count skips the row.
  const std::string header2 = std::string(kHeader).substr(0, std::string(kHeader).size() - 1);
  const std::string llama =
      "x,A100-80GB,8,bf16,eager,flash,none,2,4096,32,14336,1000,1024,1,"
      "8192,1000,calibration,";
  const auto gated = wi::read_published(
      write_csv("clock_mlp.csv", header2 + ",mlp,kv_heads\n" + llama + "gelu,32\n" + llama +
                                     "swiglu,8\n" + llama + "swish,8\n" + llama + "gelu,-1\n"),
      &skipped);
  REQUIRE(gated.size() == 2);
  CHECK(skipped == std::vector<std::string>{"x (mlp)", "x (kv_heads)"});
  CHECK((gated[1].mlp == "swiglu" && gated[1].kv_heads == 8));
  const double t_plain = wi::predict(gated[0], "shaped", {}).step_s;
  const double t_llama = wi::predict(gated[1], "shaped", {}).step_s;
  CHECK(t_llama > 1.1 * t_plain);  // 218 M weights a layer against 185 M, plus the gate's pass
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(wi::read_published(write_csv("clock_cols.csv", "id,gpu\na,A100\n")),
                    Contains("no column 'dtype'"));
  CHECK_THROWS_WITH(
      wi::read_published(write_csv("clock_fields.csv", std::string(kHeader) + "a,b\n")),
      Contains("clock_fields.csv:2: 2 fields"));
  CHECK_THROWS_AS(wi::read_published("/nonexistent/clock.csv"), slowpipe::DataError);
}

TEST_CASE("Clock: the fit recovers constants that generated the calibration rows") {
  // Rows whose "published" throughput is the model's own at known constants
  // (a point of the grid); held-out rows must not move the fit.
  const nm::ShapedConstants truth{0.85, 64, 0.5, 0.8, 0.7};
  std::string text = kHeader;
  const char* shapes[] = {"12,768,12,3072,50304,512,16,", "24,2048,16,8192,50304,8192,1,",
                          "32,4096,32,16384,50304,2048,2,", "12,768,12,3072,50304,32768,1,",
                          "4,256,4,1024,256,256,1,"};
  int n = 0;
  for (const char* shape : shapes) {
    for (const char* mode : {"eager", "compiled"}) {
      text += "r" + std::to_string(n++) + ",A100-80GB,1,bf16," + mode + ",flash,none," + shape +
              "65536,1,calibration\n";
    }
  }
  auto rows = wi::read_published(write_csv("clock_fit.csv", text));
  REQUIRE(rows.size() == 10);
  for (auto& r : rows) r.published_tokens_per_s = wi::predict(r, "shaped", truth).tokens_per_s;
  wi::PublishedRow outlier = rows[0];
  outlier.split = "held-out";
  outlier.published_tokens_per_s *= 10;
  rows.push_back(outlier);
  const auto fit = wi::fit_constants(rows);
  CHECK(fit.gemm_ceiling == truth.gemm_ceiling);
  CHECK(fit.half_dim == truth.half_dim);
  CHECK(fit.attention_ceiling == truth.attention_ceiling);
  CHECK(fit.backward_ratio == truth.backward_ratio);
  CHECK(fit.memory_efficiency == truth.memory_efficiency);
  for (auto& r : rows) r.split = "held-out";
  CHECK_THROWS_AS(wi::fit_constants(rows), slowpipe::DataError);
}

TEST_CASE("Clock: per source, each row scaled by its source's other rows (leave one out)") {
  // Source a: errors +10%, -20%, +21%; source b: one row. Hand-computed:
  // row 1 scaled by sqrt(0.8 * 1.21), row 2 by 1.1^1.5, row 3 by sqrt(1.1 * 0.8).
  std::vector<wi::PublishedRow> rows(4);
  std::vector<wi::Prediction> p(4);
  const double errors[] = {0.10, -0.20, 0.21, 0.5};
  for (int i = 0; i < 4; ++i) {
    rows[i].id = "r" + std::to_string(i);
    rows[i].source_id = i < 3 ? "a" : "b";
    rows[i].split = i == 0 ? "calibration" : "held-out";
    rows[i].published_tokens_per_s = 1000;
    p[i].tokens_per_s = 1000 / (1 + errors[i]);
    p[i].step_s = 1 / p[i].tokens_per_s;
    p[i].error = errors[i];
  }
  const auto scaled = wi::per_source(rows, p);
  REQUIRE(scaled.size() == 4);
  REQUIRE(scaled[0]);
  CHECK(scaled[0]->error == Approx(std::sqrt(1.25) - 1).epsilon(1e-12));
  CHECK(scaled[1]->error == Approx(0.8 / std::pow(1.1, 1.5) - 1).epsilon(1e-12));
  CHECK(scaled[2]->error == Approx(1.21 / std::sqrt(0.88) - 1).epsilon(1e-12));
  CHECK(scaled[2]->step_s == Approx(p[2].step_s / std::sqrt(0.88)).epsilon(1e-12));
  CHECK_FALSE(scaled[3]);  // alone in its source
  const wi::ErrorSummary all = wi::summarise(rows, scaled, "");
  CHECK(all.rows == 3);
  CHECK(all.median_abs == Approx(1.21 / std::sqrt(0.88) - 1).epsilon(1e-12));
  CHECK(all.worst_abs == Approx(1 - 0.8 / std::pow(1.1, 1.5)).epsilon(1e-12));
  const wi::ErrorSummary held = wi::summarise(rows, scaled, "held-out");
  CHECK(held.rows == 2);
  CHECK(held.median_abs ==
        Approx(((1 - 0.8 / std::pow(1.1, 1.5)) + (1.21 / std::sqrt(0.88) - 1)) / 2).epsilon(1e-12));
}
