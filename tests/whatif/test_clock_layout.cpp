// A published row's parallel layout (whatif/clock_layout.h): the layout file
// and its errors, the link rates, and a step's exchanges against
// hand-computed seconds (tensor-parallel all-reduces, the pipeline bubble,
// data-parallel and sharded exchanges and what the compute hides).
#include <catch2/catch.hpp>
#include <fstream>

#include "common/errors.h"
#include "whatif/clock_check.h"
#include "whatif/clock_layout.h"

namespace wi = slowpipe::whatif;

namespace {

std::string write_file(const std::string& name, const std::string& text) {
  std::string path = std::string(SLOWPIPE_BINARY_DIR) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// 8 layers of d 1024, micro-batch 2 x seq 1024, bf16, on 32 A100s.
wi::PublishedRow row32() {
  wi::PublishedRow r;
  r.id = "a";
  r.gpu = "A100-SXM4-80GB";
  r.gpus = 32;
  r.dtype = "bf16";
  r.act_ckpt = "none";
  r.layers = 8;
  r.d_model = 1024;
  r.micro_batch = 2;
  r.seq = 1024;
  r.has_layout = true;
  return r;
}

}  // namespace

TEST_CASE("Clock layout: link rates by chip") {
  CHECK(wi::clock_link_rates("A100-SXM4-80GB").nvlink_Bps == 300e9);
  CHECK(wi::clock_link_rates("A800-SXM4-80GB").nvlink_Bps == 200e9);
  CHECK(wi::clock_link_rates("h800-80GB").nvlink_Bps == 200e9);
  CHECK(wi::clock_link_rates("H100-SXM").internode_Bps == 50e9);
  CHECK(wi::clock_link_rates("V100").internode_Bps == 6.25e9);
  CHECK(wi::clock_link_rates("RTX4090").nvlink_Bps == 31.5e9);  // PCIe 4.0 x16
  // To the host: PCIe 3.0 / 4.0 / 5.0 x16.
  CHECK(wi::clock_link_rates("V100").host_link_Bps == 15.75e9);
  CHECK(wi::clock_link_rates("A800-SXM4-80GB").host_link_Bps == 31.5e9);
  CHECK(wi::clock_link_rates("H200").host_link_Bps == 63e9);
  CHECK(wi::clock_link_rates("RTX3090").host_link_Bps == 31.5e9);
}

TEST_CASE("Clock layout: tensor-parallel all-reduces and the pipeline bubble") {
  wi::PublishedRow r = row32();
  r.layout.tp = 4;
  r.layout.pp = 2;
  r.layout.dp_mode = "ddp";
  r.layout.gpus_per_node = 8;
  const wi::StepParts parts{0.3, 0.6, 0.01};  // 3 micro-batches: 0.3 s each
  // Per micro-batch: 4 all-reduces x 4 layers of 2 x 1024 x 1024 x 2 bytes,
  // each 2 x 3/4 of it over NVLink (300 GB/s).
  const double bytes = 2.0 * 1024 * 1024 * 2;
  const double tp = 4 * 4 * 1.5 * bytes / 300e9;
  // 4 data-parallel replicas across nodes (4 x 2 GPUs fill a node, one
  // member each): 2 x 3/4 of 1e10 parameters x 2 bytes over one NIC of
  // 25 GB/s, less the last micro-batch's backward (0.2 s); 1e9 hides.
  const double dp = 1.5 * 2e10 / 25e9 - 0.2;
  CHECK(wi::layout_step_s(r, parts, 3, 1e10) == Approx((0.3 + tp) * (3 + 1) + dp + 0.01));
  CHECK(wi::layout_step_s(r, parts, 3, 1e9) == Approx((0.3 + tp) * (3 + 1) + 0.01));
  // Full recompute: two more all-reduces a layer.
  r.act_ckpt = "full";
  CHECK(wi::layout_step_s(r, parts, 3, 1e10) == Approx((0.3 + 1.5 * tp) * 4 + dp + 0.01));
  // A tensor-parallel group across nodes: its 8 members in a node drive 8
  // NICs at once (8 x 25 GB/s = 200 GB/s, under NVLink's 300).
  r.act_ckpt = "none";
  r.layout = {16, 1, 8, "none", 0};
  r.gpus = 16;
  const double tp16 = 4 * 8 * 2 * 15.0 / 16 * bytes / 200e9;
  CHECK(wi::layout_step_s(r, parts, 3, 1e9) == Approx((0.3 + tp16) * 3 + 0.01));
}

TEST_CASE("Clock layout: data-parallel exchanges and what hides them") {
  wi::PublishedRow r = row32();
  r.gpus = 8;
  r.layout = {1, 1, 8, "ddp", 0};
  const wi::StepParts parts{1.0, 2.0, 0};  // 4 micro-batches of 0.75 s
  // One node: 2 x 7/8 of 1e9 x 2 bytes over NVLink, 11.7 ms, hidden by a
  // micro-batch's backward (0.5 s).
  CHECK(wi::layout_step_s(r, parts, 4, 1e9) == Approx(3.0));
  // 64 GPUs on 8 nodes, a printed 100 Gb/s per GPU: 8 members a node share
  // the ring, 8 x 12.5 GB/s; 2 x 63/64 x 20 GB = 39.4 GB in 0.394 s, hidden.
  r.gpus = 64;
  r.layout.internode_gbps_per_gpu = 100;
  CHECK(wi::layout_step_s(r, parts, 4, 1e9) == Approx(3.0));
  // 1e10 parameters: 0.394 s, still hidden; 1e11: 3.94 s, 3.44 s exposed.
  CHECK(wi::layout_step_s(r, parts, 4, 1e10) == Approx(3.0));
  CHECK(wi::layout_step_s(r, parts, 4, 1e11) == Approx(3.0 + 2 * 63.0 / 64 * 2e11 / 100e9 - 0.5));
  // zero3: per micro-batch three passes of 63/64 of the bytes, against that
  // micro-batch's 0.75 s: 1e10 parameters 0.59 s (hidden), 1e11 5.9 s.
  r.layout.dp_mode = "zero3";
  CHECK(wi::layout_step_s(r, parts, 4, 1e10) == Approx(3.0));
  CHECK(wi::layout_step_s(r, parts, 4, 1e11) ==
        Approx(3.0 + 4 * (3 * 63.0 / 64 * 2e11 / 100e9 - 0.75)));
  // fp32 moves 4 bytes an element; one GPU per node of the group: one NIC.
  r.dtype = "fp32";
  CHECK(wi::layout_step_s(r, parts, 4, 1e11) ==
        Approx(3.0 + 4 * (3 * 63.0 / 64 * 4e11 / 100e9 - 0.75)));
  r.layout.gpus_per_node = 1;
  CHECK(wi::layout_step_s(r, parts, 4, 1e10) ==
        Approx(3.0 + 4 * (3 * 63.0 / 64 * 4e10 / 12.5e9 - 0.75)));
}

TEST_CASE("Clock layout: interleaved stages, sharded updates and offload") {
  wi::PublishedRow r = row32();
  r.gpus = 8;
  const wi::StepParts parts{1.0, 2.0, 0.4};  // 4 micro-batches of 0.75 s
  // Interleaved 1F1B: 4 stages of 2 virtual stages each, (4 - 1) / 2 slots.
  r.layout = {1, 4, 8, "ddp", 0};
  r.layout.vpp = 2;
  CHECK(wi::layout_step_s(r, parts, 4, 1e6) == Approx(0.75 * (4 + 1.5) + 0.4));
  r.layout.vpp = 1;
  CHECK(wi::layout_step_s(r, parts, 4, 1e6) == Approx(0.75 * (4 + 3) + 0.4));
  // Optimizer offload, 8 replicas of zero2 on one A100 node: a GPU's shard
  // of 8e9 / 8 parameters; the host updates the node's 8e9 at 0.43e9 a
  // second; the GPU's bf16
  // gradients out (1e9 x 2 B at 31.5 GB/s, 63.5 ms) behind the last
  // backward with the exchange; its parameters back in after the update.
  r.layout = {1, 1, 8, "zero2", 0};
  r.layout.offload = "optimizer";
  const double copy = 1e9 * 2 / 31.5e9;
  const double adam = 8e9 / 0.43e9;
  CHECK(wi::layout_step_s(r, parts, 4, 8e9) == Approx(3.0 + adam + copy));
  // The exchange (2 x 7/8 x 16 GB over NVLink, 93 ms) and the gradients
  // (63.5 ms) no longer hide behind a backward of 0.1 s.
  const double bwd = 0.1;
  const wi::StepParts short_bwd{2.6, 0.4, 0.4};
  CHECK(wi::layout_step_s(r, short_bwd, 4, 8e9) ==
        Approx(3.0 + (2 * 7.0 / 8 * 16e9 / 300e9 + copy - bwd) + adam + copy));
  // Parameter offload: the shard comes in for the forward and the backward
  // of every micro-batch (three passes under full recompute), with zero3's
  // gathers, against that micro-batch's compute; no copy back.
  r.layout = {1, 1, 8, "zero3", 0};
  r.layout.offload = "params";
  const double gather = 3 * 7.0 / 8 * 16e9 / 300e9;  // 0.373 s, with 0.127 s in: hidden
  CHECK(gather + 2 * copy < 0.75);
  CHECK(wi::layout_step_s(r, parts, 4, 8e9) == Approx(3.0 + adam));
  CHECK(wi::layout_step_s(r, parts, 4, 64e9) ==
        Approx(3.0 + 4 * (8 * gather + 2 * 8 * copy - 0.75) + 8 * adam));
  // One GPU alone on its host: 13e9 parameters, fp32.
  r.gpus = 1;
  r.dtype = "fp32";
  r.layout = {1, 1, 1, "none", 0};
  r.layout.offload = "params";
  CHECK(wi::layout_step_s(r, parts, 4, 13e9) ==
        Approx(3.0 + 4 * (2 * 13e9 * 4 / 31.5e9 - 0.75) + 13e9 / 0.43e9));
}

TEST_CASE("Clock layout: the file, its errors, and a row's prediction") {
  const char* header =
      "id,gpu,gpus,dtype,execution,attention,act_ckpt,layers,d_model,heads,ffn,vocab,seq,"
      "micro_batch,global_batch_tokens,tokens_per_s_per_gpu,split\n";
  const std::string rows_csv = std::string(header) +
                               "a,A100-80GB,8,bf16,fused,flash,none,8,1024,16,4096,32000,1024,2,"
                               "65536,20000,held-out\n"
                               "b,A100-80GB,1,bf16,fused,flash,none,8,1024,16,4096,32000,1024,2,"
                               "8192,20000,held-out\n";
  auto rows = wi::read_published(write_file("layout_rows.csv", rows_csv));
  REQUIRE(rows.size() == 2);
  const auto alone = wi::predict(rows[1], "shaped", {});
  const auto replicas = wi::predict(rows[0], "shaped", {});
  const std::string lh = "id,tp,pp,dp_mode,gpus_per_node,internode_gbps_per_gpu,basis\n";
  CHECK(wi::apply_layouts(write_file("layout_ok.csv", lh + "a,2,2,zero1,8,,\"x, y\"\n"
                                                           "b,1,1,none,1,,none stated\n"
                                                           "zz,1,1,ddp,8,,\n"),
                          rows) == 2);
  CHECK((rows[0].layout.tp == 2 && rows[0].layout.dp_mode == "zero1" && rows[1].has_layout));
  // One GPU with no parallelism: the same step as without a layout.
  CHECK(wi::predict(rows[1], "shaped", {}).step_s == Approx(alone.step_s).epsilon(1e-12));
  // Two pipeline stages of 4 layers and two tensor-parallel halves: two
  // replicas of four GPUs, 16 micro-batches each; a GPU's share of the work
  // is the same, plus the bubble and the all-reduces, so fewer tokens a second.
  const auto laid = wi::predict(rows[0], "shaped", {});
  CHECK(laid.tokens_per_s == Approx(16 * 2 * 1024 / laid.step_s / 4));
  CHECK(laid.tokens_per_s < replicas.tokens_per_s);
  CHECK(laid.tokens_per_s > 0.7 * replicas.tokens_per_s);
  using Catch::Matchers::Contains;
  // A layout file of `header` and `body` fails with `what`.
  const auto fails = [&](const std::string& header, const std::string& body,
                         const std::string& what) {
    CHECK_THROWS_WITH(wi::apply_layouts(write_file("layout_bad.csv", header + body), rows),
                      Contains(what));
  };
  fails(lh, "a,3,1,ddp,8,,\n", "tp x pp = 3 does not divide its 8 GPUs");
  fails(lh, "a,1,1,fsdp,8,,\n", "dp_mode 'fsdp'");
  fails(lh, "a,0,1,ddp,8,,\n", "tp, pp, vpp, gpus_per_node: >= 1");
  fails(lh, "a,1,1,ddp,8,fast,\n", "internode_gbps_per_gpu 'fast'");
  fails(lh, "a,1,1,ddp,8\n", "layout_bad.csv:2: fields");
  // The optional columns: virtual stages and offload (empty: none).
  const std::string lh6 =
      "id,tp,pp,vpp,dp_mode,gpus_per_node,internode_gbps_per_gpu,offload,basis\n";
  CHECK(wi::apply_layouts(write_file("layout6.csv", lh6 + "a,1,2,3,zero3,8,,params,x\n"
                                                          "b,1,1,1,none,1,,,y\n"),
                          rows) == 2);
  CHECK((rows[0].layout.vpp == 3 && rows[0].layout.offload == "params"));
  CHECK((rows[1].layout.vpp == 1 && rows[1].layout.offload == "none"));
  fails(lh6, "a,1,1,2,ddp,8,,none,\n", "vpp 2 needs pp > 1");
  fails(lh6, "a,1,2,0,ddp,8,,none,\n", "tp, pp, vpp, gpus_per_node: >= 1");
  fails(lh6, "a,1,1,1,ddp,8,,nvme,\n", "offload 'nvme'");
  CHECK_THROWS_WITH(wi::apply_layouts(write_file("layout_cols.csv", "id,tp\n"), rows),
                    Contains("no column 'pp'"));
  CHECK_THROWS_AS(wi::apply_layouts("/nonexistent/layout.csv", rows), slowpipe::DataError);
}
